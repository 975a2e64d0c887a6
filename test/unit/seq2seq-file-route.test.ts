// Summarization through the file route: JSONL texts in, BART's summaries out (checked against the
// Python goldens), an input longer than the model reads dead-lettered with the reason.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load-config.ts';
import { silentLogger } from '../../src/logger.ts';
import { StreamWorker } from '../../src/worker/stream-worker.ts';
import { readGoldens } from '../parity/goldens.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const MODEL = 'bart-summarization';
const MODEL_PATH = join(ROOT, 'test', 'fixtures', 'models', MODEL);
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hugot-seq2seq-route-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function readJsonl<T>(path: string): Promise<T[]> {
  return (await readFile(path, 'utf8'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as T);
}

describe('summarization file route', () => {
  it("writes Python's summaries in order and dead-letters an over-long input with the reason", async () => {
    const golden = readGoldens(MODEL).pipeline.find((g) => g.name === 'summarization:greedy');
    const texts = (golden?.call.inputs ?? []) as string[];
    const expected = (golden?.output ?? []) as { summary_text: string }[];
    expect(texts.length).toBeGreaterThan(1);
    const long = 'The meeting moved again because nobody could agree on a date. '.repeat(20);
    const lines = texts.map((text, i) => JSON.stringify({ id: `doc-${i}`, text }));
    lines.splice(1, 0, JSON.stringify({ id: 'long', text: long }));
    const input = join(dir, 'docs.jsonl');
    await writeFile(input, lines.join('\n'));
    const config = parseConfigText(
      `
models: { bart: { path: ${JSON.stringify(MODEL_PATH)} } }
pipelines:
  summarize: { task: summarization, model: bart, options: { maxNewTokens: 16, numBeams: 1 } }
routes:
  - source: { type: file, path: ${JSON.stringify(input)} }
    pipeline: summarize
    input: { field: text }
    output: { field: summary }
    sink: { type: file, path: ${JSON.stringify(join(dir, 'out.jsonl'))} }
    dlq: { type: file, path: ${JSON.stringify(join(dir, 'dlq.jsonl'))} }
`,
      {},
    );
    const worker = await StreamWorker.start(config, { logger: silentLogger });
    await worker.finished;
    await worker.stop(10_000);

    const out = await readJsonl<{ id: string; summary: { summaryText: string } }>(
      join(dir, 'out.jsonl'),
    );
    expect(out.map((r) => r.id)).toEqual(texts.map((_, i) => `doc-${i}`));
    expect(out.map((r) => r.summary.summaryText)).toEqual(expected.map((e) => e.summary_text));

    const dlq = await readJsonl<{ value: string; headers: Record<string, string> }>(
      join(dir, 'dlq.jsonl'),
    );
    expect(dlq.map((d) => (JSON.parse(d.value) as { id: string }).id)).toEqual(['long']);
    expect(dlq[0]?.headers).toMatchObject({
      'hugot.error.stage': 'inference',
      'hugot.error.code': 'INPUT_INVALID',
    });
    expect(dlq[0]?.headers['hugot.error.message']).toMatch(
      /^summarization: inputs\[0\] is \d+ tokens and the model reads at most 128; .*truncation: true/,
    );
  });
});
