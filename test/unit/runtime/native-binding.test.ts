// Our binding over ONNX Runtime's C API against onnxruntime-node on the same library and model:
// same metadata, same numbers, typed errors before any native call, and handles that are freed.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FeedMismatchError, ModelFolderError, OrtStatusError } from '../../../src/errors.ts';
import { createNodeSession } from '../../../src/runtime/node-runtime.ts';
import { compileRuntimeOptions } from '../../../src/runtime/runtime-options.ts';
import type { NativeSession } from '../../../src/runtime/native/native-session.ts';
import { createNativeSession } from '../../../src/runtime/native/open-session.ts';
import { OrtLibrary } from '../../../src/runtime/native/ort-library.ts';
import type { OrtSession } from '../../../src/runtime/session.ts';
import { Tensor } from '../../../src/runtime/tensor.ts';
import { bertFeeds } from './bert-feeds.ts';

const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'models');
const BERT = join(FIXTURES, 'bert-text-classification', 'model.onnx');
const TREE = join(FIXTURES, 'sklearn-decision-tree-iris', 'model.onnx');
const native = compileRuntimeOptions({ binding: 'native' });
const node = compileRuntimeOptions({ binding: 'onnxruntime-node' });

let ours: NativeSession;
let reference: OrtSession;
let scratch: string;

beforeAll(async () => {
  ours = createNativeSession(BERT, native);
  reference = await createNodeSession(BERT, node);
  scratch = await mkdtemp(join(tmpdir(), 'hugot-native-'));
});
afterAll(async () => {
  await ours.release();
  await reference.release();
  await rm(scratch, { recursive: true, force: true });
});

describe('the native binding', () => {
  it("loads the library onnxruntime-node ships, at onnxruntime-node's version", () => {
    const pkg = createRequire(import.meta.url)('onnxruntime-node/package.json') as {
      version: string;
    };
    expect(OrtLibrary.get().version).toBe(pkg.version);
    expect(OrtLibrary.get().path).toMatch(/onnxruntime-node\/bin\//);
  });

  it('reads the same names and metadata as onnxruntime-node', () => {
    expect(ours.inputNames).toEqual(reference.inputNames);
    expect(ours.outputNames).toEqual(reference.outputNames);
    expect(ours.inputMetadata).toEqual(reference.inputMetadata);
    expect(ours.outputMetadata).toEqual(reference.outputMetadata);
    expect(ours.inputMetadata.length).toBeGreaterThan(0);
  });

  it('gives the same logits as onnxruntime-node, bit for bit', async () => {
    for (const ids of [
      [101, 1592, 1088, 102],
      [101, 102],
      [101, 1023, 1003, 1037, 1936, 1251, 102],
    ]) {
      const a = await ours.run(bertFeeds(ours, ids));
      const b = await reference.run(bertFeeds(reference, ids));
      for (const name of ours.outputNames) {
        expect(a[name]?.dims).toEqual(b[name]?.dims);
        expect(a[name]?.type).toBe(b[name]?.type);
        expect(Array.from(a[name]?.data as Float32Array)).toEqual(
          Array.from(b[name]?.data as Float32Array),
        );
      }
    }
  });

  it('runs only the outputs asked for', async () => {
    const name = ours.outputNames[0] as string;
    const out = await ours.run(bertFeeds(ours, [101, 102]), [name]);
    expect(Object.keys(out)).toEqual([name]);
  });

  it('reads float64 inputs and int64 outputs of an ONNX-ML model as onnxruntime-node does', async () => {
    const a = createNativeSession(TREE, native);
    const b = await createNodeSession(TREE, node);
    try {
      const input = a.inputMetadata[0];
      if (input === undefined || !input.isTensor) throw new Error('the tree has no tensor input');
      const make = input.type === 'float64' ? Float64Array : Float32Array;
      const rows = [5.1, 3.5, 1.4, 0.2, 6.7, 3.0, 5.2, 2.3];
      const feeds = { [input.name]: new Tensor(input.type, make.from(rows), [2, 4]) };
      const x = await a.run(feeds);
      const y = await b.run(feeds);
      expect(Object.keys(x).sort()).toEqual(Object.keys(y).sort());
      for (const [name, tensor] of Object.entries(x)) {
        expect(tensor.type).toBe(y[name]?.type);
        expect(Array.from(tensor.data as ArrayLike<unknown>)).toEqual(
          Array.from(y[name]?.data as ArrayLike<unknown>),
        );
      }
    } finally {
      await a.release();
      await b.release();
    }
  });

  it('names the model and the tensor when an input is missing, unknown, of another dtype or rank', () => {
    const feeds = bertFeeds(ours, [101, 102]);
    const missing = { ...feeds };
    delete missing['attention_mask'];
    expect(() => ours.runSync(missing)).toThrow(FeedMismatchError);
    expect(() => ours.runSync(missing)).toThrow(
      /bert-text-classification.*'attention_mask' is missing/,
    );
    expect(() => ours.runSync({ ...feeds, extra: new Tensor('int64', [1n], [1]) })).toThrow(
      /tensor 'extra' is not an input/,
    );
    const wrongType = {
      ...feeds,
      input_ids: new Tensor('int32', Int32Array.from([101, 102]), [1, 2]),
    };
    expect(() => ours.runSync(wrongType)).toThrow(/'input_ids' is int32, the model takes int64/);
    const wrongRank = {
      ...feeds,
      input_ids: new Tensor('int64', BigInt64Array.from([101n, 102n]), [2]),
    };
    expect(() => ours.runSync(wrongRank)).toThrow(/'input_ids' has 1 dimensions/);
    expect(() => ours.runSync(feeds, ['nope'])).toThrow(/tensor 'nope' is not an output/);
    try {
      ours.runSync(missing);
    } catch (err) {
      expect((err as FeedMismatchError).field).toBe('attention_mask');
      expect((err as FeedMismatchError).retriable).toBe(false);
    }
  });

  it("turns ONNX Runtime's own refusal into an OrtStatusError carrying its message", () => {
    // Shapes the metadata allows (both [batch, sequence]) but that disagree with each other.
    const feeds = bertFeeds(ours, [101, 1592, 102]);
    feeds['attention_mask'] = new Tensor('int64', new BigInt64Array(4).fill(1n), [1, 4]);
    let caught: unknown;
    try {
      ours.runSync(feeds);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(OrtStatusError);
    expect((caught as OrtStatusError).message).toMatch(/bert-text-classification.*Run: /);
    expect((caught as OrtStatusError).message).toMatch(/\[ORT_[A-Z_]+\]$/);
    // The session is still usable afterwards.
    expect(Object.keys(ours.runSync(bertFeeds(ours, [101, 102])))).toEqual([...ours.outputNames]);
  });

  it('refuses a file that is not a model with a ModelFolderError naming it', async () => {
    const bad = join(scratch, 'not-a-model.onnx');
    await writeFile(bad, 'this is not protobuf');
    expect(() => createNativeSession(bad, native)).toThrow(ModelFolderError);
    expect(() => createNativeSession(bad, native)).toThrow(/not-a-model\.onnx/);
    expect(() => createNativeSession(join(scratch, 'absent.onnx'), native)).toThrow(
      ModelFolderError,
    );
  });

  it('refuses a released session instead of calling into freed memory', async () => {
    const s = createNativeSession(BERT, native);
    await s.release();
    await s.release();
    expect(() => s.runSync(bertFeeds(s, [101, 102]))).toThrow(/released/);
  });

  it('runs through an IO binding to the same outputs as a plain Run', () => {
    const feeds = bertFeeds(ours, [101, 1592, 1088, 102]);
    const plain = ours.runSync(feeds);
    const binding = ours.ioBinding();
    try {
      for (const [name, tensor] of Object.entries(feeds)) binding.bindInput(name, tensor);
      for (const name of ours.outputNames) binding.bindOutputToCpu(name);
      binding.run();
      const bound = binding.outputs();
      expect(Object.keys(bound).sort()).toEqual(Object.keys(plain).sort());
      for (const [name, tensor] of Object.entries(plain))
        expect(Array.from(bound[name]?.data as Float32Array)).toEqual(
          Array.from(tensor.data as Float32Array),
        );
      // An output bound to a caller's tensor is written in place.
      const name = ours.outputNames[0] as string;
      const target = new Tensor(
        'float32',
        new Float32Array(plain[name]?.data.length ?? 0),
        plain[name]?.dims ?? [],
      );
      binding.clear();
      for (const [input, tensor] of Object.entries(feeds)) binding.bindInput(input, tensor);
      binding.bindOutput(name, target);
      binding.run();
      expect(Array.from(target.data)).toEqual(Array.from(plain[name]?.data as Float32Array));
      expect(() => binding.bindInput('nope', target)).toThrow(FeedMismatchError);
    } finally {
      binding.release();
    }
  });
});
