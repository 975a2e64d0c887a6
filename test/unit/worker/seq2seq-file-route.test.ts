// Summarization through the file route: JSONL texts in, BART's summaries out (checked against the
// Python goldens), an input longer than the model reads dead-lettered with the reason.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load-config.ts';
import { readGoldens } from '../../parity/goldens.ts';
import {
  readJsonl,
  readStreams,
  runToEnd,
  scratchDir,
  writeJsonl,
  type StreamedValue,
} from '../../helpers/file-route.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const MODEL = 'bart-summarization';
const MODEL_PATH = join(ROOT, 'test', 'fixtures', 'models', MODEL);
const dir = scratchDir('seq2seq-route');

describe('summarization file route', () => {
  it("writes Python's summaries in order and dead-letters an over-long input with the reason", async () => {
    const golden = readGoldens(MODEL).pipeline.find((g) => g.name === 'summarization:greedy');
    const texts = (golden?.call.inputs ?? []) as string[];
    const expected = (golden?.output ?? []) as { summary_text: string }[];
    expect(texts.length).toBeGreaterThan(1);
    const long = 'The meeting moved again because nobody could agree on a date. '.repeat(20);
    const lines = texts.map((text, i) => JSON.stringify({ id: `doc-${i}`, text }));
    lines.splice(1, 0, JSON.stringify({ id: 'long', text: long }));
    const input = dir.file('docs.jsonl');
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
    sink: { type: file, path: ${dir.quoted('out.jsonl')} }
    dlq: { type: file, path: ${dir.quoted('dlq.jsonl')} }
`,
      {},
    );
    await runToEnd(config);

    const out = await readJsonl<{ id: string; summary: unknown }>(dir.file('out.jsonl'));
    expect(out.map((r) => r.id)).toEqual(texts.map((_, i) => `doc-${i}`));
    // Python's record for a bare input, key for key: [{summary_text}].
    expect(out.map((r) => r.summary)).toEqual(expected.map((e) => [e]));

    const dlq = await readJsonl<{ value: string; headers: Record<string, string> }>(
      dir.file('dlq.jsonl'),
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

  it('streams partial summaries from the generative engine; partials add up to the final', async () => {
    const golden = readGoldens(MODEL).pipeline.find((g) => g.name === 'summarization:greedy');
    const texts = (golden?.call.inputs ?? []) as string[];
    const expected = (golden?.output ?? []) as { summary_text: string }[];
    const input = dir.file('streamed.jsonl');
    await writeJsonl(
      input,
      texts.map((text, i) => ({ id: `doc-${i}`, text })),
    );
    await runToEnd(`
models: { bart: { path: ${JSON.stringify(MODEL_PATH)} } }
pipelines:
  summarize:
    task: summarization
    model: bart
    options: { maxNewTokens: 16, numBeams: 1 }
    generative: { threads: 1, maxActive: 2 }
routes:
  - source: { type: file, path: ${JSON.stringify(input)} }
    pipeline: summarize
    input: { field: text }
    output: { field: summary, stream: { everyTokens: 4 } }
    sink: { type: file, path: ${dir.quoted('streamed-out.jsonl')} }
`);
    // Partials carry only the request id (not the input record); the final carries both.
    const streams = await readStreams<StreamedValue & { delta: string; text?: string }>(
      dir.file('streamed-out.jsonl'),
      'summary',
    );
    for (const [i, summary] of expected.entries()) {
      const records = streams.get(`doc-${i}`) ?? [];
      const final = records.at(-1);
      expect(final?.final).toBe(true);
      expect(final?.text).toBe(summary.summary_text);
      expect(records.map((r) => r.sequence)).toEqual(records.map((_, n) => n));
      expect(records.map((r) => r.delta).join('')).toBe(summary.summary_text);
      // 16 tokens at most, a partial every 4: every request that ran long streamed partials.
      if (summary.summary_text.length > 8) expect(records.length).toBeGreaterThan(1);
    }
  });
});
