// What a batch carries to its thread when its pipeline is priced by tokens: the encoding the
// thread's pipeline would make of each single text, made on the main thread; nothing for a pair,
// nor for a pipeline priced by characters. The thread here echoes what it received.
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { BatcherOptions } from '../../../src/batching/batcher-options.ts';
import { BatchEngine } from '../../../src/engine/batch-engine.ts';
import { TextTokenizer } from '../../../src/pipelines/runtime/text-tokenizer.ts';

const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures');
const MODELS = join(FIXTURES, 'models');
const ECHO = join(FIXTURES, 'workers', 'carry-echo-worker.ts');
const texts = Array.from({ length: 90 }, (_, i) => `${'record '.repeat(1 + (i % 30))}number ${i}`);

let tokenizer: TextTokenizer;
const engines: BatchEngine[] = [];

beforeAll(async () => {
  tokenizer = await TextTokenizer.load(join(MODELS, 'bert-feature-extraction'));
});
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close('abort')));
});

async function start(batching?: BatcherOptions): Promise<BatchEngine> {
  const engine = await BatchEngine.start({
    models: {
      fe: { path: join(MODELS, 'bert-feature-extraction') },
      cls: { path: join(MODELS, 'bert-text-classification') },
    },
    pipelines: {
      embed: { task: 'featureExtraction', model: 'fe', options: { maxLength: 24 } },
      classify: { task: 'textClassification', model: 'cls' },
    },
    shards: [{ device: 'cpu', threads: 2 }],
    ...(batching !== undefined ? { batching } : {}),
    workerFile: ECHO,
  });
  engines.push(engine);
  return engine;
}

describe('encodings carried to the inference threads', () => {
  it("carries each single text's encoding at the pipeline's length by default on CPU", async () => {
    const engine = await start({ maxWaitMs: 5 });
    const carried = await Promise.all(texts.map((t) => engine.submit<number[]>('embed', t)));
    const expected = await tokenizer.encode(texts, { maxLength: 24 });
    expect(carried).toEqual(expected.map((e) => e.ids));
    expect(carried.some((ids) => ids.length === 24)).toBe(true);
    // Classification runs at the tokenizer's own limit (64); a pair is encoded on the thread.
    const [single, emptyPair, pair] = await Promise.all([
      engine.submit<number[] | null>('classify', texts[40] as string),
      engine.submit<number[] | null>('classify', { text: texts[41] as string, textPair: '' }),
      engine.submit<number[] | null>('classify', { text: 'a question', textPair: 'an answer' }),
    ]);
    const [one, two] = await tokenizer.encode([texts[40] as string, texts[41] as string], {
      maxLength: 64,
    });
    expect(single).toEqual(one?.ids);
    expect(emptyPair).toEqual(two?.ids);
    expect(pair).toBeNull();
  });

  it('carries nothing when the pipeline is priced by characters or does not truncate', async () => {
    const byCharacters = await start({ maxWaitMs: 5, pricing: 'characters' });
    expect(await byCharacters.submit('embed', texts[0] as string)).toBeNull();
    const engine = await BatchEngine.start({
      models: { fe: { path: join(MODELS, 'bert-feature-extraction') } },
      pipelines: {
        whole: { task: 'featureExtraction', model: 'fe', options: { truncation: false } },
      },
      shards: [{ device: 'cpu', threads: 1 }],
      workerFile: ECHO,
    });
    engines.push(engine);
    expect(await engine.submit('whole', texts[0] as string)).toBeNull();
  });
});
