// The embedded default end to end: JSONL in, a real model, JSONL out, refused lines to the DLQ.
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load-config.ts';
import { createHugot } from '../../../src/hugot.ts';
import type { LabelScore } from '../../../src/pipelines/text/text-classification.ts';
import { readDeadLetters, readJsonl, runToEnd, scratchDir } from '../../helpers/file-route.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const MODEL = join(ROOT, 'test', 'fixtures', 'models', 'bert-text-classification');
const dir = scratchDir('file-route');

describe('file route (the embedded default)', () => {
  it('writes every good line in input order and dead-letters the bad ones, untouched, with the reason', async () => {
    const sample = (
      await readFile(join(ROOT, 'test', 'fixtures', 'corpus', 'sample.jsonl'), 'utf8')
    )
      .trim()
      .split('\n');
    const lines: (string | Buffer)[] = [...sample];
    lines.splice(3, 0, '{"id": "broken", ');
    lines.splice(10, 0, JSON.stringify({ id: 'no-text' }));
    lines.splice(20, 0, JSON.stringify({ id: 'number', text: 42 }));
    lines.splice(30, 0, Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x7d]));
    const input = dir.file('in.jsonl');
    await writeFile(
      input,
      Buffer.concat(lines.map((l) => Buffer.concat([Buffer.from(l), Buffer.from('\n')]))),
    );
    const config = parseConfigText(
      `
models: { cls: { path: ${JSON.stringify(MODEL)} } }
pipelines: { classify: { task: textClassification, model: cls, options: { topK: null } } }
limits: { maxTextLength: 20000 }
routes:
  - source: { type: file, path: ${JSON.stringify(input)} }
    pipeline: classify
    output: { field: labels }
    sink: { type: file, path: ${dir.quoted('out.jsonl')} }
    dlq: { type: file, path: ${dir.quoted('dlq.jsonl')} }
`,
      {},
    );
    const worker = await runToEnd(config);

    const out = (await readFile(dir.file('out.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: string; text: string; labels: LabelScore[] });
    const good = sample.map((l) => JSON.parse(l) as { id: string; text: string });
    expect(out.map((r) => r.id)).toEqual(good.map((r) => r.id));
    const hugot = createHugot();
    hugot.registerModel('cls', { path: MODEL });
    await hugot.registerPipeline('classify', {
      task: 'textClassification',
      model: 'cls',
      options: { topK: null },
    });
    const direct = await hugot.run<LabelScore[]>(
      'classify',
      good.slice(0, 10).map((r) => r.text),
    );
    await hugot.close();
    out.slice(0, 10).forEach((r, i) => {
      expect(r.labels.map((l) => l.label)).toEqual(direct[i]?.map((l) => l.label));
      r.labels.forEach((l, j) => expect(l.score).toBeCloseTo(direct[i]?.[j]?.score ?? NaN, 5));
    });

    const dlq = (await readFile(dir.file('dlq.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map(
        (l) =>
          JSON.parse(l) as {
            value?: string;
            valueBase64?: string;
            headers: Record<string, string>;
          },
      );
    expect(dlq.map((d) => d.headers['hugot.error.code'])).toEqual([
      'INVALID_JSON',
      'FIELD_MISSING',
      'WRONG_TYPE',
      'INVALID_UTF8',
    ]);
    expect(dlq.map((d) => d.headers['hugot.error.origin.line'])).toEqual(['4', '11', '21', '31']);
    expect(dlq[0]?.value).toBe('{"id": "broken", ');
    expect(Buffer.from(dlq[3]?.valueBase64 ?? '', 'base64')).toEqual(
      Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x7d]),
    );
    // The file's own count of its records (blank lines are none) gives the run its total.
    expect(worker.counters()['route-0']).toEqual({
      received: sample.length + 4,
      written: sample.length,
      deadLettered: 4,
      retried: 0,
      truncated: 0,
      total: sample.length + 4,
    });
  });

  it('contains poison pills: a 10,000-deep record is dead-lettered, later lines are written unchanged', async () => {
    const deep = 10_000;
    const lines = [
      JSON.stringify({ id: 'a', text: 'Win a free prize now' }),
      `{"id":"deep","text":"hello","x":${'['.repeat(deep)}${']'.repeat(deep)}}`,
      '{"id": 12345678901234567890, "big": 1e400, "text": "caf\\u00e9 meeting at noon"}',
      JSON.stringify({ id: 'taken', text: 'see you', labels: 'mine' }),
      JSON.stringify({ id: 'b', text: 'Lunch tomorrow?' }),
    ];
    const input = dir.file('pills.jsonl');
    await writeFile(input, lines.join('\n'));
    const config = parseConfigText(
      `
models: { cls: { path: ${JSON.stringify(MODEL)} } }
pipelines: { classify: { task: textClassification, model: cls } }
routes:
  - source: { type: file, path: ${JSON.stringify(input)} }
    pipeline: classify
    output: { field: labels }
    sink: { type: file, path: ${dir.quoted('pills-out.jsonl')} }
    dlq: { type: file, path: ${dir.quoted('pills-dlq.jsonl')} }
`,
      {},
    );
    const worker = await runToEnd(config);
    const out = (await readFile(dir.file('pills-out.jsonl'), 'utf8')).trim().split('\n');
    expect(out).toHaveLength(3);
    // Every byte of the input is kept; the result is added beside it.
    for (const [i, line] of [lines[0], lines[2], lines[4]].entries()) {
      const written = out[i] as string;
      expect(written.startsWith((line as string).slice(0, -1))).toBe(true);
      expect(written.slice((line as string).length - 1)).toMatch(
        /^,"labels":\[\{"label":"\w+","score":[\d.e-]+\}\]\}$/,
      );
    }
    const dlq = await readDeadLetters(dir.file('pills-dlq.jsonl'));
    expect(dlq.map((d) => d.headers['hugot.error.code'])).toEqual([
      'JSON_TOO_DEEP',
      'OUTPUT_FIELD_EXISTS',
    ]);
    expect(dlq[0]?.value).toBe(lines[1]);
    expect(dlq[0]?.headers['hugot.error.message']).toContain('limits.maxJsonDepth');
    expect(dlq[1]?.headers['hugot.error.stage']).toBe('output');
    expect(worker.counters()['route-0']).toMatchObject({
      received: 5,
      written: 3,
      deadLettered: 2,
    });
  });

  it('dead-letters an input the model refuses at the inference stage, between good ones', async () => {
    const input = dir.file('masks.jsonl');
    const texts = [
      'The [MASK] is late.',
      'no mask here',
      'Send the [MASK] today.',
      'A [MASK] offer.',
    ];
    await writeFile(input, texts.map((text, i) => JSON.stringify({ id: i, text })).join('\n'));
    const config = parseConfigText(
      `
models: { mlm: { path: ${JSON.stringify(join(ROOT, 'test', 'fixtures', 'models', 'bert-fill-mask'))} } }
pipelines: { fill: { task: fillMask, model: mlm, options: { topK: 1 } } }
routes:
  - source: { type: file, path: ${JSON.stringify(input)} }
    pipeline: fill
    sink: { type: file, path: ${dir.quoted('masks-out.jsonl')} }
    dlq: { type: file, path: ${dir.quoted('masks-dlq.jsonl')} }
`,
      {},
    );
    await runToEnd(config);
    const out = await readJsonl<{ id: number }>(dir.file('masks-out.jsonl'));
    expect(out.map((r) => r.id)).toEqual([0, 2, 3]);
    const [dead] = await readDeadLetters(dir.file('masks-dlq.jsonl'));
    expect(dead?.value).toBe(JSON.stringify({ id: 1, text: 'no mask here' }));
    expect(dead?.headers).toMatchObject({
      'hugot.error.stage': 'inference',
      'hugot.error.code': 'INPUT_INVALID',
      'hugot.error.origin.line': '2',
    });
  });

  it("is what the README's first command runs: the demo config on the committed model", async () => {
    const output = dir.file('demo.jsonl');
    const { stderr } = await promisify(execFile)(
      process.execPath,
      ['src/cli/main.ts', 'run', '--config', 'config/demo.yaml'],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          HUGOT_DEMO_OUTPUT: output,
          HUGOT_DEMO_DLQ: dir.file('demo-dlq.jsonl'),
          HUGOT_LOG_LEVEL: 'warn',
        },
      },
    );
    const records = (await readFile(output, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { embedding: number[] });
    expect(records).toHaveLength(50);
    for (const r of records) {
      expect(r.embedding).toHaveLength(384);
      expect(Math.hypot(...r.embedding)).toBeCloseTo(1, 4);
    }
    expect(stderr).toMatch(/demo: 50 records, 50 written, 0 dead-lettered/);
  });
});
