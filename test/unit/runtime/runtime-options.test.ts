// Runtime options: defaults, validation, and what reaches onnxruntime-node's SessionOptions
// (prepacking travels as the session config entry the binding hands to AddConfigEntry).
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/errors.ts';
import { createHugot } from '../../../src/hugot.ts';
import { markCompiled } from '../../../src/options/compiled.ts';
import { compileRuntimeOptions, toSessionOptions } from '../../../src/runtime/runtime-options.ts';

const MODEL = join(
  import.meta.dirname,
  '..',
  '..',
  'fixtures',
  'models',
  'bert-feature-extraction',
);
const MODEL_FILE = join(MODEL, 'model.onnx');
const INT8_FILE = join(
  import.meta.dirname,
  '..',
  '..',
  '..',
  'models',
  'all-MiniLM-L6-v2-int8',
  'model.onnx',
);

describe('runtime options', () => {
  it('defaults to arena, prepacking and memory patterns on for an fp32 CPU encoder, with no config entries', () => {
    const compiled = compileRuntimeOptions();
    expect(compiled).toMatchObject({
      cpuMemArena: true,
      memPattern: 'auto',
      prepacking: true,
    });
    const session = toSessionOptions(compiled, MODEL_FILE);
    expect(session).toMatchObject({ enableCpuMemArena: true, enableMemPattern: true });
    expect(session.extra).toBeUndefined();
    expect(toSessionOptions(compiled, INT8_FILE).enableMemPattern).toBe(true);
  });

  it('keeps memory patterns on by default with a GPU provider, and as written otherwise', () => {
    expect(compileRuntimeOptions({ executionProviders: ['cpu'] }).memPattern).toBe('auto');
    expect(compileRuntimeOptions({ executionProviders: [{ name: 'cuda' }] }).memPattern).toBe(true);
    expect(compileRuntimeOptions({ executionProviders: [{ name: 'tensorrt' }] }).memPattern).toBe(
      true,
    );
    expect(compileRuntimeOptions({ memPattern: true }).memPattern).toBe(true);
    expect(
      compileRuntimeOptions({ executionProviders: [{ name: 'cuda' }], memPattern: false })
        .memPattern,
    ).toBe(false);
  });

  it('returns options a thread received compiled as they are', () => {
    const compiled = markCompiled(compileRuntimeOptions({ memPattern: true }));
    expect(compileRuntimeOptions(compiled)).toBe(compiled);
  });

  it('turns prepacking off through session.disable_prepacking', () => {
    const session = toSessionOptions(compileRuntimeOptions({ prepacking: false }), MODEL_FILE);
    expect(session.extra).toEqual({ session: { disable_prepacking: '1' } });
  });

  it('rejects a prepacking that is not a boolean, naming the field', () => {
    expect(() => compileRuntimeOptions({ prepacking: 'no' as unknown as boolean })).toThrow(
      ConfigError,
    );
    expect(() => compileRuntimeOptions({ prepacking: 'no' as unknown as boolean })).toThrow(
      /prepacking/,
    );
  });

  it('gives the same embedding with arena and prepacking off', async () => {
    const embed = async (runtime: Record<string, boolean>): Promise<Float32Array> => {
      const hugot = createHugot();
      try {
        hugot.registerModel('m', { path: MODEL, runtime });
        await hugot.registerPipeline('e', { task: 'featureExtraction', model: 'm' });
        const [vector] = await hugot.run<Float32Array>('e', ['Meeting moved to Thursday.']);
        return vector as Float32Array;
      } finally {
        await hugot.close();
      }
    };
    const base = await embed({});
    const lean = await embed({ cpuMemArena: false, prepacking: false });
    expect(lean.length).toBe(base.length);
    for (let i = 0; i < base.length; i += 1) expect(lean[i]).toBeCloseTo(base[i] as number, 5);
  });
});
