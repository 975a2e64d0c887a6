// Several batches a message (batching.maxMessageTokens): a backlog's due batches cross to a
// thread together within the message's padded-token room; 0 sends each alone, and a quiet
// stream's batches never wait for mates. The thread here echoes which message brought each input.
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { BatcherOptions } from '../../../src/batching/batcher-options.ts';
import { BatchEngine } from '../../../src/engine/batch-engine.ts';
import { TextTokenizer } from '../../../src/pipelines/runtime/text-tokenizer.ts';
import type { MessageEcho } from '../../fixtures/workers/message-echo-worker.ts';

const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures');
const MODEL = join(FIXTURES, 'models', 'bert-feature-extraction');
const ECHO = join(FIXTURES, 'workers', 'message-echo-worker.ts');
const texts = Array.from({ length: 90 }, (_, i) => `${'record '.repeat(1 + (i % 30))}number ${i}`);

let lengths: number[];
const engines: BatchEngine[] = [];

beforeAll(async () => {
  const tokenizer = await TextTokenizer.load(MODEL);
  lengths = (await tokenizer.encode(texts, { maxLength: 24 })).map((e) => e.ids.length);
});
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close('abort')));
});

async function start(batching: BatcherOptions): Promise<BatchEngine> {
  const engine = await BatchEngine.start({
    models: { fe: { path: MODEL } },
    pipelines: { embed: { task: 'featureExtraction', model: 'fe', options: { maxLength: 24 } } },
    shards: [{ device: 'cpu', threads: 2 }],
    // One record a batch, so that a record's tokens are its batch's padded tokens.
    batching: { maxBatchSize: 1, maxWaitMs: 5, ...batching },
    workerFile: ECHO,
  });
  engines.push(engine);
  return engine;
}

/** Each message's records (their indexes) and the batch count its thread saw. */
function byMessage(echoes: MessageEcho[]): Map<string, { records: number[]; batches: number }> {
  const messages = new Map<string, { records: number[]; batches: number }>();
  echoes.forEach((echo, i) => {
    const seen = messages.get(echo.message) ?? { records: [], batches: echo.batches };
    seen.records.push(i);
    messages.set(echo.message, seen);
  });
  return messages;
}

describe('several batches a message', () => {
  it("carries a backlog's batches together, within the message's padded tokens", async () => {
    const engine = await start({ maxMessageTokens: 100 });
    const echoes = await Promise.all(texts.map((t) => engine.submit<MessageEcho>('embed', t)));
    const messages = [...byMessage(echoes).values()];
    expect(engine.stats.batches).toBe(texts.length);
    expect(messages.length).toBeLessThan(texts.length);
    for (const { records, batches } of messages) {
      expect(batches).toBe(records.length);
      const tokens = records.reduce((sum, i) => sum + (lengths[i] ?? Infinity), 0);
      if (records.length > 1) expect(tokens).toBeLessThanOrEqual(100);
    }
  });

  it('sends each batch alone at 0, and a quiet stream batch by batch by default', async () => {
    const alone = await start({ maxMessageTokens: 0 });
    const echoes = await Promise.all(texts.map((t) => alone.submit<MessageEcho>('embed', t)));
    expect(echoes.every((echo) => echo.batches === 1)).toBe(true);
    expect(byMessage(echoes).size).toBe(texts.length);

    const quiet = await start({});
    for (const text of texts.slice(0, 10))
      expect((await quiet.submit<MessageEcho>('embed', text)).batches).toBe(1);
  });
});
