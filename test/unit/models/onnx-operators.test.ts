// The operators and input names read from an ONNX file's bytes are those the onnx library reads
// (test/fixtures/graph-operators.json, scripts/models/graph_operators.py), for every committed
// graph; the CPU default of runtime.memPattern follows them.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelFolderError } from '../../../src/errors.ts';
import {
  isQuantized,
  readOnnxGraphFacts,
  takesKvCache,
} from '../../../src/models/onnx-operators.ts';
import { compileRuntimeOptions, memPatternFor } from '../../../src/runtime/runtime-options.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const INT8 = join(ROOT, 'models', 'all-MiniLM-L6-v2-int8', 'model.onnx');
const FP32 = join(ROOT, 'test', 'fixtures', 'models', 'bert-feature-extraction', 'model.onnx');
const DECODER = join(ROOT, 'test', 'fixtures', 'models', 'llama-causal-lm', 'model.onnx');

interface Reference {
  graphs: Record<string, { operators: string[]; inputs: string[] }>;
}

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'hugot-operators-'));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

describe('readOnnxGraphFacts', () => {
  it("gives every committed graph's operators and inputs as the onnx library reads them", async () => {
    const reference = JSON.parse(
      await readFile(join(ROOT, 'test', 'fixtures', 'graph-operators.json'), 'utf8'),
    ) as Reference;
    const graphs = Object.entries(reference.graphs);
    expect(graphs.length).toBeGreaterThan(40);
    for (const [path, expected] of graphs) {
      const facts = readOnnxGraphFacts(join(ROOT, path));
      expect([...facts.operators].sort(), path).toEqual(expected.operators);
      expect(facts.inputs, path).toEqual(expected.inputs);
    }
  });

  it('tells a quantized graph and a decoder step from the rest', () => {
    expect(isQuantized(readOnnxGraphFacts(INT8))).toBe(true);
    expect(isQuantized(readOnnxGraphFacts(FP32))).toBe(false);
    expect(takesKvCache(readOnnxGraphFacts(DECODER))).toBe(true);
    expect(takesKvCache(readOnnxGraphFacts(INT8))).toBe(false);
  });

  it('refuses a file that is not ONNX by name', async () => {
    const path = join(scratch, 'not-a-model.onnx');
    await writeFile(path, Buffer.from([0x3a, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 2]));
    expect(() => readOnnxGraphFacts(path)).toThrow(ModelFolderError);
    expect(() => readOnnxGraphFacts(path)).toThrow(/not-a-model\.onnx is not a readable ONNX model/);
    expect(() => readOnnxGraphFacts(join(scratch, 'absent.onnx'))).toThrow(/cannot open/);
  });
});

describe('memPatternFor', () => {
  it("on CPU by default plans every graph's memory but a decoder step's", () => {
    const cpu = compileRuntimeOptions();
    expect(cpu.memPattern).toBe('auto');
    expect(memPatternFor(INT8, cpu)).toBe(true);
    expect(memPatternFor(FP32, cpu)).toBe(true);
    expect(memPatternFor(DECODER, cpu)).toBe(false);
    expect(memPatternFor({ bytes: new Uint8Array(0) }, cpu)).toBe(false);
    // An unreadable file is left to ONNX Runtime's load, which names what is wrong.
    expect(memPatternFor(join(scratch, 'absent.onnx'), cpu)).toBe(false);
  });

  it("with 'quantized' plans a quantized encoder's memory and no other graph's", () => {
    const quantized = compileRuntimeOptions({ memPattern: 'quantized' });
    expect(memPatternFor(INT8, quantized)).toBe(true);
    expect(memPatternFor(FP32, quantized)).toBe(false);
    expect(memPatternFor(DECODER, quantized)).toBe(false);
  });

  it('keeps a memPattern that is written, and the GPU default, for every graph', () => {
    for (const graph of [INT8, FP32]) {
      expect(memPatternFor(graph, compileRuntimeOptions({ memPattern: false }))).toBe(false);
      expect(memPatternFor(graph, compileRuntimeOptions({ memPattern: true }))).toBe(true);
      const gpu = compileRuntimeOptions({ executionProviders: [{ name: 'cuda' }] });
      expect(memPatternFor(graph, gpu)).toBe(true);
    }
  });
});
