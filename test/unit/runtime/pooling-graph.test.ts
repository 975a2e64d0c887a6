// The pooling graph (src/runtime/graphs/pooling-graph.ts) on ONNX Runtime, on both bindings,
// against featureExtraction's JS pooling (math.ts) over the same hidden states: mean, CLS and
// max, with and without normalization, rows of every length (one with no attended token), and
// fp16 hidden states. The graph sums in float32 where JS sums in float64, hence the tolerance.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { l2Normalize, maskedMean } from '../../../src/pipelines/runtime/math.ts';
import {
  POOLING_INPUTS,
  POOLING_OUTPUT,
  poolingGraph,
  type PoolingGraphSpec,
} from '../../../src/runtime/graphs/pooling-graph.ts';
import { createNativeSession } from '../../../src/runtime/native/open-session.ts';
import { createNodeSession } from '../../../src/runtime/node-runtime.ts';
import { ConfigError } from '../../../src/errors.ts';
import {
  compileRuntimeOptions,
  nodeTakesFloat16Inputs,
} from '../../../src/runtime/runtime-options.ts';
import type { OrtSession } from '../../../src/runtime/session.ts';
import { Tensor } from '../../../src/runtime/tensor.ts';

const BATCH = 4;
const TOKENS = 7;
const HIDDEN = 24;
/** Tokens each row attends to; the last row attends to none. */
const LENGTHS = [7, 3, 1, 0];
const TOLERANCE = 1e-6;

function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state / 2 ** 30 - 1;
  };
}

const random = seeded(7);
const hidden = Float32Array.from({ length: BATCH * TOKENS * HIDDEN }, () => 3 * random());
const masks = LENGTHS.map((n) => Array.from({ length: TOKENS }, (_, t) => (t < n ? 1 : 0)));
const maskTensor = new Tensor('int64', BigInt64Array.from(masks.flat(), BigInt), [BATCH, TOKENS]);

function expected(spec: PoolingGraphSpec, values: Float32Array): Float32Array[] {
  return masks.map((mask, b) => {
    const base = b * TOKENS * HIDDEN;
    let pooled: Float32Array;
    if (spec.pooling === 'mean') pooled = maskedMean(values, base, HIDDEN, mask);
    else if (spec.pooling === 'cls') pooled = values.slice(base, base + HIDDEN);
    else {
      pooled = new Float32Array(HIDDEN).fill(-Infinity);
      mask.forEach((m, t) => {
        if (m !== 1) return;
        for (let h = 0; h < HIDDEN; h += 1)
          pooled[h] = Math.max(pooled[h]!, values[base + t * HIDDEN + h]!);
      });
      pooled = pooled.map((v) => (v === -Infinity ? 0 : v));
    }
    return spec.normalize ? l2Normalize(pooled) : pooled;
  });
}

const SPECS: PoolingGraphSpec[] = (['mean', 'cls', 'max'] as const).flatMap((pooling) =>
  [false, true].map((normalize) => ({ pooling, normalize, hiddenType: 'float32' as const })),
);

const bindings = [
  ['native', (bytes: Uint8Array) => createNativeSession({ name: 'pooling', bytes }, native)],
  ['onnxruntime-node', (bytes: Uint8Array) => createNodeSession({ name: 'pooling', bytes }, node)],
] as const;
const native = compileRuntimeOptions({ binding: 'native' });
const node = compileRuntimeOptions({ binding: 'onnxruntime-node' });

async function pool(
  open: (bytes: Uint8Array) => OrtSession | Promise<OrtSession>,
  spec: PoolingGraphSpec,
  input: Tensor,
): Promise<Float32Array[]> {
  const session = await open(poolingGraph(spec));
  try {
    const out = await session.run({
      [POOLING_INPUTS.hidden]: input,
      [POOLING_INPUTS.mask]: maskTensor,
    });
    const result = out[POOLING_OUTPUT] as Tensor;
    expect(result.dims).toEqual([BATCH, HIDDEN]);
    const data = result.data as Float32Array;
    return LENGTHS.map((_, b) => data.slice(b * HIDDEN, (b + 1) * HIDDEN));
  } finally {
    await session.release();
  }
}

function maxAbsDiff(a: Float32Array[], b: Float32Array[]): number {
  let worst = 0;
  a.forEach((row, i) =>
    row.forEach((v, h) => (worst = Math.max(worst, Math.abs(v - (b[i]?.[h] ?? NaN))))),
  );
  return worst;
}

describe.each(bindings)('the pooling graph on %s', (_, open) => {
  const input = new Tensor('float32', hidden, [BATCH, TOKENS, HIDDEN]);
  it.each(SPECS.map((s) => [`${s.pooling}${s.normalize ? ' + normalize' : ''}`, s] as const))(
    '%s gives the JS pooling of the same hidden states',
    async (_name, spec) => {
      const want = expected(spec, hidden);
      const got = await pool(open, spec, input);
      expect(maxAbsDiff(got, want)).toBeLessThanOrEqual(TOLERANCE);
      // The row with no attended token: zeros from mean and max, as the JS pooling gives.
      if (spec.pooling !== 'cls')
        expect(Array.from(got[3] ?? [])).toEqual(new Array(HIDDEN).fill(0));
    },
  );
});

// onnxruntime-node 1.30 takes no fp16 feed under Node 24 ("not enough space: expected 1344, got
// 0", from a Uint16Array or a Float16Array alike); ours reads the raw half bits.
describe('the pooling graph on fp16 hidden states', () => {
  it('casts them to float before pooling', async () => {
    const half = new Float16Array(hidden);
    const spec: PoolingGraphSpec = { pooling: 'mean', normalize: true, hiddenType: 'float16' };
    const bits = new Uint16Array(half.buffer, half.byteOffset, half.length);
    const input = new Tensor('float16', bits, [BATCH, TOKENS, HIDDEN]);
    const open = (bytes: Uint8Array): OrtSession =>
      createNativeSession({ name: 'pooling', bytes }, native);
    const got = await pool(open, spec, input);
    expect(maxAbsDiff(got, expected(spec, Float32Array.from(half)))).toBeLessThanOrEqual(TOLERANCE);
  });

  it('is refused by onnxruntime-node at load, naming runtime.binding, where it cannot be fed', async () => {
    const spec: PoolingGraphSpec = { pooling: 'mean', normalize: true, hiddenType: 'float16' };
    expect(nodeTakesFloat16Inputs()).toBe(typeof Float16Array === 'undefined');
    const opened = createNodeSession({ name: 'pooling-fp16', bytes: poolingGraph(spec) }, node);
    if (nodeTakesFloat16Inputs()) return void (await (await opened).release());
    const error = await opened.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).field).toBe('runtime.binding');
    expect((error as Error).message).toMatch(
      /pooling-fp16 takes the float16 input 'hidden_states'/,
    );
  });
});

describe('a linked run on the native binding', () => {
  const options = compileRuntimeOptions({ binding: 'native' });
  const spec: PoolingGraphSpec = { pooling: 'mean', normalize: true, hiddenType: 'float32' };
  let identity: OrtSession;
  let pooler: OrtSession;
  // A one-node graph standing in for an encoder: its output is the linked value.
  beforeAll(async () => {
    const { encodeModel, DataType } = await import('../../../src/runtime/graphs/onnx-model.ts');
    const bytes = encodeModel({
      name: 'identity',
      inputs: [{ name: 'x', type: DataType.float, shape: ['b', 't', 'h'] }],
      outputs: [{ name: 'last_hidden_state', type: DataType.float, shape: ['b', 't', 'h'] }],
      constants: [],
      nodes: [{ op: 'Identity', inputs: ['x'], outputs: ['last_hidden_state'] }],
    });
    identity = createNativeSession({ name: 'identity', bytes }, options);
    pooler = createNativeSession({ name: 'pooling', bytes: poolingGraph(spec) }, options);
  });
  afterAll(async () => {
    await identity.release();
    await pooler.release();
  });

  it("feeds the first session's output to the second without a copy through JS", async () => {
    const out = await identity.runLinked({
      feeds: { x: new Tensor('float32', hidden, [BATCH, TOKENS, HIDDEN]) },
      next: pooler,
      link: { [POOLING_INPUTS.hidden]: 'last_hidden_state' },
      nextFeeds: { [POOLING_INPUTS.mask]: maskTensor },
    });
    const data = (out[POOLING_OUTPUT] as Tensor).data as Float32Array;
    const got = LENGTHS.map((_, b) => data.slice(b * HIDDEN, (b + 1) * HIDDEN));
    expect(maxAbsDiff(got, expected(spec, hidden))).toBeLessThanOrEqual(TOLERANCE);
  });

  it('names the output a link asks for that the first session does not have', async () => {
    await expect(
      identity.runLinked({
        feeds: { x: new Tensor('float32', hidden, [BATCH, TOKENS, HIDDEN]) },
        next: pooler,
        link: { [POOLING_INPUTS.hidden]: 'pooler_output' },
        nextFeeds: { [POOLING_INPUTS.mask]: maskTensor },
      }),
    ).rejects.toThrow(/'pooler_output' is not an output of the model/);
  });

  it("names the second session's input that neither the link nor its feeds give", async () => {
    await expect(
      identity.runLinked({
        feeds: { x: new Tensor('float32', hidden, [BATCH, TOKENS, HIDDEN]) },
        next: pooler,
        link: { [POOLING_INPUTS.hidden]: 'last_hidden_state' },
        nextFeeds: {},
      }),
    ).rejects.toThrow(/'attention_mask' is missing from the feeds/);
  });
});
