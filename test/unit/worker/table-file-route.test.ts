// Table + question records end to end through the file source: JSONL records carrying a table (as
// columns or as rows) and a query, the tiny TAPAS fixture, answers equal to transformers' pipeline
// merged into each record in order, and malformed tables dead-lettered untouched with the reason.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readGoldens, type GoldenCase } from '../../parity/goldens.ts';
import {
  readDeadLetters,
  readJsonl,
  runToEnd,
  scratchDir,
  writeJsonl,
} from '../../helpers/file-route.ts';

const MODEL = 'tapas-table-question-answering';
const MODEL_PATH = join(import.meta.dirname, '..', '..', 'fixtures', 'models', MODEL);
const dir = scratchDir('table-route');

describe('table + question route through the file source', () => {
  it("answers each good record as Python's pipeline does and dead-letters malformed tables with the reason", async () => {
    const goldens = readGoldens(MODEL).pipeline;
    const golden = (name: string): GoldenCase => goldens.find((g) => g.name === name) as GoldenCase;
    const stars = golden('stars');
    const actors = golden('actors_age');
    const list = golden('query_list');
    const actorsTable = (actors.call.inputs as { table: Record<string, string[]> }).table;
    const header = Object.keys(actorsTable);
    const asRows = [
      header,
      ...(actorsTable[header[0] as string] ?? []).map((_, r) =>
        header.map((h) => actorsTable[h]?.[r]),
      ),
    ];
    const good = [
      { id: 'columns', ...(stars.call.inputs as object) },
      { id: 'rows', table: asRows, query: (actors.call.inputs as { query: string }).query },
      { id: 'query-list', ...(list.call.inputs as object) },
    ];
    const bad = [
      {
        id: 'ragged-columns',
        table: { city: ['Berlin', 'Paris'], size: ['891'] },
        query: 'Which?',
      },
      {
        id: 'ragged-rows',
        table: [['city', 'size'], ['Berlin', '891'], ['Paris']],
        query: 'Which?',
      },
      {
        id: 'number-header',
        table: [
          ['city', 2024],
          ['Berlin', '891'],
        ],
        query: 'Which?',
      },
      { id: 'no-query', table: { city: ['Berlin'] } },
      { id: 'number-cell', table: { city: ['Berlin'], size: [891] }, query: 'How big?' },
      { id: 'no-rows', table: { city: [] }, query: 'Which?' },
      { id: 'not-a-table', table: 'city,size', query: 'Which?' },
    ];
    const input = dir.file('tables.jsonl');
    // Bad records between good ones, so each would share a batch with good ones.
    await writeJsonl(input, [
      good[0],
      bad[0],
      bad[1],
      good[1],
      bad[2],
      bad[3],
      bad[4],
      good[2],
      bad[5],
      bad[6],
    ]);
    const worker = await runToEnd(`
models: { tapas: { path: ${JSON.stringify(MODEL_PATH)} } }
pipelines: { tables: { task: tableQuestionAnswering, model: tapas } }
routes:
  - source: { type: file, path: ${JSON.stringify(input)} }
    pipeline: tables
    input: { field: $ }
    output: { field: answer }
    sink: { type: file, path: ${dir.quoted('out.jsonl')} }
    dlq: { type: file, path: ${dir.quoted('dlq.jsonl')} }
`);

    const out = await readJsonl<{ id: string; answer: unknown }>(dir.file('out.jsonl'));
    expect(out.map((r) => r.id)).toEqual(['columns', 'rows', 'query-list']);
    expect(out.map((r) => r.answer)).toEqual([stars.output, actors.output, list.output]);

    const dead = await readDeadLetters(dir.file('dlq.jsonl'));
    const byId = new Map(dead.map((d) => [(JSON.parse(d.value) as { id: string }).id, d.headers]));
    expect([...byId.keys()]).toEqual(bad.map((b) => b.id));
    for (const headers of byId.values()) expect(headers['hugot.error.stage']).toBe('validate');
    const message = (id: string): string | undefined => byId.get(id)?.['hugot.error.message'];
    expect(message('ragged-columns')).toBe(
      `'$'.table["size"] has 1 cells where the columns before it have 2`,
    );
    expect(message('ragged-rows')).toBe(`'$'.table[2] has 1 cells; the header has 2 columns`);
    expect(message('number-header')).toBe(
      `'$'.table[0][1] must be a column name (a string), got number`,
    );
    expect(message('no-query')).toBe(`'$'.query is missing: the question to answer from the table`);
    expect(message('number-cell')).toBe(`'$'.table["size"][0] must be a string, got number`);
    expect(message('no-rows')).toBe(`'$'.table has no rows`);
    expect(message('not-a-table')).toMatch(/^'\$'\.table must be \{column: \[cells\]\} or/);
    expect(worker.counters()['route-0']).toEqual({
      received: good.length + bad.length,
      written: good.length,
      deadLettered: bad.length,
      retried: 0,
      truncated: 0,
      total: good.length + bad.length,
    });
  });
});
