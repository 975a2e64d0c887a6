// Resident values on the native binding (CPU memory here; a GPU session's device memory the same
// way): a run's output kept as an OrtValue, fed to a later run as it is, copied to the host on
// demand (directly, or through the copy graph a GPU session uses), and freed. Then the decode
// batch's row moves on resident caches (src/generative/resident-rows.ts) against kv-batch.ts's host
// ones: the same rows, real spans and masks, and the same columns onto and off a shared prefix.
import { afterAll, describe, expect, it } from 'vitest';
import {
  assembleRows,
  dropRows,
  moveOntoPrefix,
  withoutPrefix,
  type KvRowRef,
} from '../../../src/generative/kv-batch.ts';
import { ResidentRows } from '../../../src/generative/resident-rows.ts';
import type {
  KvLayout,
  KvState,
  SharedPrefix,
} from '../../../src/pipelines/generation/kv-cache.ts';
import type { LoadedModel } from '../../../src/pipelines/runtime/model-store.ts';
import { DataType, encodeModel } from '../../../src/runtime/graphs/onnx-model.ts';
import type { NativeSession } from '../../../src/runtime/native/native-session.ts';
import { createNativeSession } from '../../../src/runtime/native/open-session.ts';
import type { ResidentValue } from '../../../src/runtime/native/resident-value.ts';
import { residentStats } from '../../../src/runtime/native/resident-value.ts';
import { compileRuntimeOptions } from '../../../src/runtime/runtime-options.ts';
import { isResident, type ResidentTensor } from '../../../src/runtime/session.ts';
import { Tensor } from '../../../src/runtime/tensor.ts';

const options = compileRuntimeOptions({ binding: 'native' });
const opened: NativeSession[] = [];
afterAll(async () => {
  for (const session of opened) await session.release();
});

function open(name: string, bytes: Uint8Array): NativeSession {
  const session = createNativeSession({ name, bytes }, options);
  opened.push(session);
  return session;
}

/** y = x + 1, over any float tensor. */
const plusOne = open(
  'plus-one',
  encodeModel({
    name: 'plus-one',
    inputs: [{ name: 'x', type: DataType.float, shape: ['a', 'b'] }],
    outputs: [{ name: 'y', type: DataType.float, shape: ['a', 'b'] }],
    constants: [{ name: 'one', type: DataType.float, dims: [], values: [1] }],
    nodes: [{ op: 'Add', inputs: ['x', 'one'], outputs: ['y'] }],
  }),
);

describe('resident values', () => {
  const x = new Tensor('float32', Float32Array.from([1, 2, 3, 4, 5, 6]), [2, 3]);

  it('are fed to the next run as they are, and copied to the host on demand', async () => {
    const before = residentStats();
    const first = await plusOne.runResident({
      feeds: { x },
      hostOutputs: [],
      residentOutputs: ['y'],
    });
    const y = first.resident['y'] as ResidentTensor;
    expect(isResident(y)).toBe(true);
    expect(y.dims).toEqual([2, 3]);
    expect(residentStats().live).toBe(before.live + 1);
    const second = await plusOne.runResident({
      feeds: { x: y },
      hostOutputs: ['y'],
      residentOutputs: [],
    });
    expect(Array.from((second.host['y'] as Tensor).data as Float32Array)).toEqual([
      3, 4, 5, 6, 7, 8,
    ]);
    expect(Array.from(y.toHost().data as Float32Array)).toEqual([2, 3, 4, 5, 6, 7]);
    expect(residentStats().hostCopies).toBe(before.hostCopies + 1);
    y.release();
    expect(residentStats().live).toBe(before.live);
    // The host copy outlives the value; the value itself cannot be fed again.
    expect(Array.from(y.toHost().data as Float32Array)).toEqual([2, 3, 4, 5, 6, 7]);
    await expect(
      plusOne.runResident({ feeds: { x: y }, hostOutputs: ['y'], residentOutputs: [] }),
    ).rejects.toThrow(/used after it was released/);
  });

  it("copy through the copy graph (a GPU session's path) as they would directly", async () => {
    const out = await plusOne.runResident({
      feeds: { x },
      hostOutputs: [],
      residentOutputs: ['y'],
    });
    const y = out.resident['y'] as ResidentValue;
    try {
      const direct = plusOne.copyToHost(y.pointer, false);
      const graph = plusOne.copyToHost(y.pointer, true);
      expect(graph.dims).toEqual(direct.dims);
      expect(Array.from(graph.data as Float32Array)).toEqual(
        Array.from(direct.data as Float32Array),
      );
    } finally {
      y.release();
    }
  });

  it('name a resident feed whose shape the model does not take', async () => {
    const three = open(
      'three-wide',
      encodeModel({
        name: 'three-wide',
        inputs: [{ name: 'x', type: DataType.float, shape: ['a', 4] }],
        outputs: [{ name: 'y', type: DataType.float, shape: ['a', 4] }],
        constants: [],
        nodes: [{ op: 'Identity', inputs: ['x'], outputs: ['y'] }],
      }),
    );
    const out = await plusOne.runResident({
      feeds: { x },
      hostOutputs: [],
      residentOutputs: ['y'],
    });
    const y = out.resident['y'] as ResidentTensor;
    try {
      await expect(
        three.runResident({ feeds: { x: y }, hostOutputs: ['y'], residentOutputs: [] }),
      ).rejects.toThrow(/tensor 'x' has dimension 1 = 3, the model takes 4/);
    } finally {
      y.release();
    }
  });
});

describe('row moves on a resident cache', () => {
  const layout: KvLayout = {
    pastNames: ['past_key_values.0.key', 'past_key_values.0.value'],
    presentNames: ['present.0.key', 'present.0.value'],
    prefixNames: [],
    kvHeads: 2,
    headDim: 3,
    dtype: 'float32',
    logitsName: 'logits',
    hasPositionIds: true,
    hasUseCacheBranch: false,
    appending: false,
  };
  const model = {
    helper: (name: string, bytes: () => Uint8Array) => Promise.resolve(open(name, bytes())),
  } as unknown as LoadedModel;
  const rows = new ResidentRows(model, layout);

  /** `batch` left-padded rows of `length` columns; row r has `spans[r]` real ones. */
  function state(seed: number, spans: readonly number[], length: number): KvState {
    const batch = spans.length;
    const past = [0, 1].map((t) => {
      const data = new Float32Array(batch * 2 * length * 3);
      data.forEach((_, i) => (data[i] = seed * 100_000 + t * 10_000 + i));
      return new Tensor('float32', data, [batch, 2, length, 3]);
    });
    return {
      batch,
      past,
      pastLength: length,
      attentionMask: spans.map((span) =>
        Array.from({ length }, (_, c) => (c >= length - span ? 1 : 0)),
      ),
      realTokens: spans.map((span) => span + seed),
    };
  }

  /** Each row's real columns (where its mask is 1), per tensor, as plain numbers. */
  function realColumns(s: KvState, tensors: readonly Tensor[]): number[][][] {
    return tensors.map((tensor) => {
      const data = tensor.data as Float32Array;
      return s.attentionMask.map((mask, r) =>
        [0, 1].flatMap((h) =>
          mask.flatMap((m, c) =>
            m === 1
              ? Array.from(
                  data.subarray(
                    ((r * 2 + h) * s.pastLength + c) * 3,
                    ((r * 2 + h) * s.pastLength + c + 1) * 3,
                  ),
                )
              : [],
          ),
        ),
      );
    });
  }

  const hostOf = (s: Pick<KvState, 'past'>): Tensor[] =>
    s.past.map((t) => (isResident(t) ? t.toHost() : t));

  it('assemble rows from several states as assembleRows does', async () => {
    const a = state(1, [5, 2, 7], 7);
    const b = state(2, [3], 3);
    const c = state(3, [9, 4], 10);
    const refs: KvRowRef[] = [
      { state: c, row: 1 },
      { state: a, row: 0 },
      { state: b, row: 0 },
      { state: c, row: 0 },
      { state: a, row: 2 },
    ];
    const host = assembleRows(layout, refs);
    const before = residentStats().live;
    const device = await rows.assemble(refs);
    try {
      expect(device.past.every(isResident)).toBe(true);
      expect(device.pastLength).toBe(host.pastLength);
      expect(device.attentionMask).toEqual(host.attentionMask);
      expect(device.realTokens).toEqual(host.realTokens);
      expect(device.past.map((t) => t.dims)).toEqual(host.past.map((t) => t.dims));
      expect(realColumns(device, hostOf(device))).toEqual(realColumns(host, hostOf(host)));
      // The windows it made on the way were freed; only the batch's own values are live.
      expect(residentStats().live).toBe(before + layout.pastNames.length);
    } finally {
      for (const t of device.past) (t as ResidentTensor).release();
    }
  });

  it('keep rows as dropRows does', async () => {
    const source = state(4, [3, 6, 1, 6], 6);
    const device = await rows.keepRows(source, [0, 3]);
    const host = dropRows(layout, state(4, [3, 6, 1, 6], 6), new Set([1, 2]));
    try {
      expect(host.from).toEqual([0, 3]);
      expect(device.attentionMask).toEqual(host.state.attentionMask);
      expect(realColumns(device, hostOf(device))).toEqual(
        realColumns(host.state, hostOf(host.state)),
      );
    } finally {
      for (const t of device.past) (t as ResidentTensor).release();
    }
  });

  /** A shared prefix of `length` columns, resident (as the prefix cache's are). */
  async function prefix(seed: number, length: number): Promise<SharedPrefix> {
    const { past } = await rows.assemble([{ state: state(seed, [length], length), row: 0 }]);
    return { past, length };
  }
  const all = (tensors: readonly Tensor[]): number[][] =>
    tensors.map((t) => Array.from(t.data as Float32Array));
  const release = (s: Pick<KvState, 'past'>): void => {
    for (const t of s.past) (t as ResidentTensor).release();
  };

  it('move a row onto a shared prefix as moveOntoPrefix does, on the device', async () => {
    const shared = await prefix(6, 3);
    // Row 0: 7 real columns of 9, the first 3 the prefix's; row 1: exactly the prefix's.
    const source = state(5, [7, 3, 9], 9);
    const before = residentStats();
    const onto = await rows.moveOntoPrefix(source, 0, shared);
    const empty = await rows.moveOntoPrefix(source, 1, shared);
    try {
      // Each made its batch of one and nothing else, without a copy to the host.
      expect(residentStats().live).toBe(before.live + 2 * layout.pastNames.length);
      expect(residentStats().hostCopies).toBe(before.hostCopies);
      for (const [device, row] of [
        [onto, 0],
        [empty, 1],
      ] as const) {
        const host = moveOntoPrefix(layout, source, row, shared);
        expect(device.past.every(isResident)).toBe(true);
        expect(device.shared).toBe(shared);
        expect({ ...device, past: [] }).toEqual({ ...host, past: [] });
        expect(device.past.map((t) => t.dims)).toEqual(host.past.map((t) => t.dims));
        expect(all(hostOf(device))).toEqual(all(hostOf(host)));
      }
      expect(onto.pastLength).toBe(4);
      expect(empty.pastLength).toBe(0);
      // A prefix longer than the row's real span is not the row's.
      await expect(rows.moveOntoPrefix(source, 1, { past: [], length: 4 })).rejects.toThrow(
        /only from a cache without one/,
      );
    } finally {
      for (const s of [onto, empty, shared]) release(s);
    }
  });

  it('take a shared prefix back into a row as withoutPrefix does, on the device', async () => {
    const shared = await prefix(8, 4);
    // Two rows on the prefix, left-padded: row 0 holds 2 columns of its own, row 1 all 5.
    const source: KvState = { ...state(9, [2, 5], 5), shared };
    const before = residentStats();
    const device = await rows.withoutPrefix(source, 0);
    try {
      // The window it cut was freed; the prefix is the prefix cache's and stays.
      expect(residentStats().live).toBe(before.live + layout.pastNames.length);
      expect(residentStats().hostCopies).toBe(before.hostCopies);
      const host = withoutPrefix(layout, source, 0);
      expect(device.shared).toBeUndefined();
      expect(device.pastLength).toBe(6);
      expect({ ...device, past: [] }).toEqual({ ...host, past: [] });
      expect(device.past.map((t) => t.dims)).toEqual([
        [1, 2, 6, 3],
        [1, 2, 6, 3],
      ]);
      expect(all(hostOf(device))).toEqual(all(hostOf(host)));
      expect(all(hostOf(shared))).toEqual(all(state(8, [4], 4).past as Tensor[]));
    } finally {
      for (const s of [device, shared]) release(s);
    }
  });
});
