// Structured output on a file route, end to end on the tiny LM: records whose output has the
// schema's shape are written with it parsed, and a record whose output ran out of tokens
// mid-object goes to the DLQ with OUTPUT_INVALID and the reason, on the generative engine and on
// the batch path alike.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import Ajv from 'ajv';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load-config.ts';
import { runToEnd, scratchDir } from '../../helpers/file-route.ts';

const MODEL = join(import.meta.dirname, '..', '..', 'fixtures', 'models', 'llama-causal-lm');
const schema = {
  type: 'object',
  properties: {
    label: { enum: ['spam', 'ham'] },
    urgent: { type: 'boolean' },
    note: { type: 'string', maxLength: 6 },
  },
  required: ['label', 'urgent', 'note'],
};
const dir = scratchDir('structured-route');

interface Written {
  id: string;
  out: { text: string; json?: unknown; finishReason: string; formatError?: string };
}

async function runRoute(
  name: string,
  records: object[],
  pipelineExtra: string,
  routeExtra: string,
  maxNewTokens = 80,
): Promise<{ out: Written[]; dlq: { value: string; headers: Record<string, string> }[] }> {
  const input = dir.file(`${name}.jsonl`);
  await writeFile(input, records.map((r) => JSON.stringify(r)).join('\n') + '\n');
  const config = parseConfigText(
    `
models: { lm: { path: ${JSON.stringify(MODEL)} } }
pipelines:
  label:
    task: textGeneration
    model: lm
    options:
      maxNewTokens: ${maxNewTokens}
      responseFormat: { type: json_schema, schema: ${JSON.stringify(schema)} }
    ${pipelineExtra}
routes:
  - source: { type: file, path: ${JSON.stringify(input)} }
    pipeline: label
    input: { field: text }
    # Our own keys: the structured-output mechanics (text, finishReason) are what is checked here.
    output: { field: out, keys: hugot }
    ${routeExtra}
    sink: { type: file, path: ${dir.quoted(`${name}-out.jsonl`)} }
    dlq: { type: file, path: ${dir.quoted(`${name}-dlq.jsonl`)} }
`,
    {},
  );
  await runToEnd(config);
  const lines = async (file: string): Promise<string[]> =>
    (await readFile(dir.file(file), 'utf8').catch(() => '')).split('\n').filter((l) => l !== '');
  return {
    out: (await lines(`${name}-out.jsonl`)).map((l) => JSON.parse(l) as Written),
    dlq: (await lines(`${name}-dlq.jsonl`)).map(
      (l) => JSON.parse(l) as { value: string; headers: Record<string, string> },
    ),
  };
}

const validate = new Ajv().compile(schema);

describe('structured output on a file route', () => {
  it('generative engine: schema outputs are written parsed; one out of tokens is dead-lettered', async () => {
    const records = [
      { id: 'a', text: 'Win a free prize now' },
      { id: 'short', text: 'Lunch tomorrow?', gen: { maxNewTokens: 5 } },
      { id: 'b', text: 'Meeting moved to Tuesday' },
      { id: 'c', text: 'Cheap watches', gen: { temperature: 1.2, seed: 3 } },
    ];
    const { out, dlq } = await runRoute(
      'engine',
      records,
      'generative: { maxActive: 4, maxKvTokens: 1024 }',
      'generation: { optionsField: gen }',
    );
    expect(out.map((r) => r.id)).toEqual(['a', 'b', 'c']);
    for (const r of out) {
      expect(validate(JSON.parse(r.out.text) as unknown), r.out.text).toBe(true);
      expect(r.out.json).toEqual(JSON.parse(r.out.text));
      expect(r.out.formatError).toBeUndefined();
    }
    expect(dlq).toHaveLength(1);
    expect(JSON.parse(dlq[0]?.value ?? '')).toMatchObject({ id: 'short' });
    expect(dlq[0]?.headers).toMatchObject({
      'hugot.error.stage': 'output',
      'hugot.error.code': 'OUTPUT_INVALID',
    });
    expect(dlq[0]?.headers['hugot.error.message']).toMatch(/maxNewTokens was reached/);
  });

  it('batch path: valid outputs are written, outputs cut short are dead-lettered', async () => {
    const records = [
      { id: 'a', text: 'Win a free prize now' },
      { id: 'b', text: 'Meeting moved to Tuesday' },
    ];
    const ok = await runRoute('batch', records, '', '');
    expect(ok.out.map((r) => r.id)).toEqual(['a', 'b']);
    expect(ok.out.every((r) => validate(r.out.json) === true)).toBe(true);
    expect(ok.dlq).toEqual([]);
    const cut = await runRoute('batch-cut', records, '', '', 5);
    expect(cut.out).toEqual([]);
    expect(cut.dlq.map((d) => d.headers['hugot.error.code'])).toEqual([
      'OUTPUT_INVALID',
      'OUTPUT_INVALID',
    ]);
  });
});
