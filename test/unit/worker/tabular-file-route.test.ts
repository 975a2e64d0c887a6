// Tabular rows through the file route: JSONL records in, scikit-learn's predictions out (checked
// against its goldens), malformed rows in the dead-letter file with the stage and the reason.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfigFile, parseConfigText } from '../../../src/config/load-config.ts';
import { compareDeep } from '../../parity/compare.ts';
import { readGoldens } from '../../parity/goldens.ts';
import { type DeadLetter, readJsonl, runToEnd, scratchDir } from '../../helpers/file-route.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const MODEL = 'sklearn-gradient-boosting-wine';
const MODEL_PATH = join(ROOT, 'test', 'fixtures', 'models', MODEL);
const dir = scratchDir('tabular-route');

describe('tabular file route', () => {
  it("writes scikit-learn's predictions for every good row, in order, and dead-letters the bad ones with the reason", async () => {
    const goldens = readGoldens(MODEL);
    const batch = goldens.pipeline.find((g) => g.name === 'held_out_batch');
    const rows = (batch?.call.inputs ?? []) as number[][];
    const expected = (batch?.output ?? []) as unknown[];
    const names = JSON.parse(await readFile(join(MODEL_PATH, 'config.json'), 'utf8')) as {
      feature_names: string[];
    };
    // Odd rows as objects keyed by feature name (in reverse key order), even rows as arrays.
    const good = rows.map((row, i) => ({
      id: `row-${i}`,
      features:
        i % 2 === 0
          ? row
          : Object.fromEntries(
              names.feature_names
                .map((n, j): [string, number | undefined] => [n, row[j]])
                .reverse(),
            ),
    }));
    const bad = [
      '{"id": "infinite", "features": [1e400, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]}',
      JSON.stringify({ id: 'short', features: [1, 2, 3] }),
      JSON.stringify({ id: 'text', features: '13.2,1.78,2.14' }),
      JSON.stringify({ id: 'typo', features: { ...good[1]?.features, alcohool: 13 } }),
      JSON.stringify({ id: 'none' }),
    ];
    const lines = good.map((r) => JSON.stringify(r));
    // Spread among the good rows, so each bad one would share a batch with good ones.
    bad.forEach((line, i) => lines.splice(3 + i * 7, 0, line));
    const input = dir.file('wine.jsonl');
    await writeFile(input, lines.join('\n'));
    const config = parseConfigText(
      `
models: { wine: { path: ${JSON.stringify(MODEL_PATH)} } }
pipelines: { cultivar: { task: tabular, model: wine } }
routes:
  - source: { type: file, path: ${JSON.stringify(input)} }
    pipeline: cultivar
    input: { field: features }
    output: { field: prediction }
    sink: { type: file, path: ${dir.quoted('out.jsonl')} }
    dlq: { type: file, path: ${dir.quoted('dlq.jsonl')} }
`,
      {},
    );
    const worker = await runToEnd(config);

    const out = await readJsonl<{ id: string; prediction: unknown }>(dir.file('out.jsonl'));
    expect(out.map((r) => r.id)).toEqual(good.map((r) => r.id));
    const comparison = compareDeep(
      out.map((r) => r.prediction),
      expected,
      1e-4,
    );
    expect(comparison.differences).toEqual([]);

    const dlq = await readJsonl<DeadLetter>(dir.file('dlq.jsonl'));
    const byId = new Map(dlq.map((d) => [(JSON.parse(d.value) as { id: string }).id, d.headers]));
    expect(byId.get('infinite')).toMatchObject({
      'hugot.error.stage': 'validate',
      'hugot.error.code': 'WRONG_TYPE',
      'hugot.error.message': "'features'[0] must be a finite number, got Infinity",
    });
    expect(byId.get('text')).toMatchObject({
      'hugot.error.stage': 'validate',
      'hugot.error.code': 'WRONG_TYPE',
    });
    expect(byId.get('text')?.['hugot.error.message']).toMatch(
      /^'features' must be a row: .* for tabular, got string$/,
    );
    expect(byId.get('short')).toMatchObject({
      'hugot.error.stage': 'inference',
      'hugot.error.code': 'INPUT_INVALID',
    });
    expect(byId.get('short')?.['hugot.error.message']).toMatch(
      /^tabular: inputs\[0\] has 3 values; the model takes 13 features \('alcohol', 'malic_acid'/,
    );
    expect(byId.get('typo')?.['hugot.error.message']).toBe(
      "tabular: inputs[0] has a key the model does not know: 'alcohool'; did you mean 'alcohol'?",
    );
    expect(byId.get('none')?.['hugot.error.code']).toBe('FIELD_MISSING');
    expect(worker.counters()['route-0']).toEqual({
      received: good.length + bad.length,
      written: good.length,
      deadLettered: bad.length,
      retried: 0,
      truncated: 0,
      total: good.length + bad.length,
    });
  });

  it('runs the worked example, config/tabular-demo.yaml, as its comments say', async () => {
    const output = dir.file('demo.jsonl');
    const dead = dir.file('demo-dlq.jsonl');
    const config = await loadConfigFile(join(ROOT, 'config', 'tabular-demo.yaml'), {
      HUGOT_TABULAR_INPUT: join(ROOT, 'test', 'fixtures', 'tabular', 'iris-rows.jsonl'),
      HUGOT_TABULAR_OUTPUT: output,
      HUGOT_TABULAR_DLQ: dead,
    });
    await runToEnd(config);
    const out = await readJsonl<{ id: string; prediction: { label: string; scores: unknown[] } }>(
      output,
    );
    expect(out.map((r) => [r.id, r.prediction.label])).toEqual([
      ['a', 'virginica'],
      ['b', 'versicolor'],
      ['c', 'setosa'],
      // A tie (0.5 / 0.5): predict takes the first class, as numpy's argmax does.
      ['d', 'versicolor'],
      ['e', 'virginica'],
    ]);
    for (const r of out) expect(r.prediction.scores).toHaveLength(2);
    const dlq = await readJsonl<DeadLetter>(dead);
    expect(
      dlq.map((d) => [d.headers['hugot.error.origin.line'], d.headers['hugot.error.stage']]),
    ).toEqual([
      ['4', 'inference'],
      ['6', 'validate'],
      ['8', 'inference'],
    ]);
    expect(dlq[1]?.headers['hugot.error.message']).toBe(
      '\'features\'["sepal width (cm)"] must be a number, got string',
    );
  });
});
