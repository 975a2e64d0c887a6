// npm run bench:vectors — the bytes per record of each compact vector encoding (issue 32, item 5).
// The worker itself runs a file route per encoding and size over the same corpus texts, on the
// committed all-MiniLM-L6-v2-int8, merging the embedding into each record at `embedding`; the line
// gives, per dimensions and encoding, the mean bytes of the embedding field and of the whole
// record as written, and the field's size against plain JSON. Options: --texts N (default: all of
// test/fixtures/corpus/sample.jsonl), --dimensions 384,128, --model <folder>. Ends with one JSON
// line on stdout.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { parseConfigText } from '../src/config/load-config.ts';
import { silentLogger } from '../src/logger.ts';
import { StreamWorker } from '../src/worker/stream-worker.ts';
import { writeResultLine } from './lib/run-record.ts';

const ENCODINGS = ['json', 'base64-f32', 'base64-f16', 'int8', 'binary'] as const;
const CORPUS = 'test/fixtures/corpus/sample.jsonl';

const { values } = parseArgs({
  options: {
    texts: { type: 'string' },
    dimensions: { type: 'string', default: '384,128' },
    model: { type: 'string', default: 'models/all-MiniLM-L6-v2-int8' },
  },
});
const sizes = values.dimensions.split(',').map(Number);
const lines = (await readFile(CORPUS, 'utf8')).trim().split('\n');
const texts = values.texts === undefined ? lines.length : Number(values.texts);
const input = lines.slice(0, texts);
if (input.length < texts) throw new Error(`${CORPUS} has ${lines.length} records, not ${texts}`);

const dir = await mkdtemp(join(tmpdir(), 'hugot-vector-bytes-'));
const mean = (xs: readonly number[]): number =>
  Math.round((xs.reduce((a, b) => a + b, 0) / xs.length) * 10) / 10;
try {
  const inputFile = join(dir, 'in.jsonl');
  await writeFile(inputFile, input.join('\n'));
  const name = (dimensions: number, encoding: string): string => `${encoding}-${dimensions}`;
  // One worker, one route per (dimensions, encoding): the model loads once and every route
  // embeds the same texts.
  const routes = sizes.flatMap((dimensions) =>
    ENCODINGS.map(
      (encoding) => `
  - name: ${name(dimensions, encoding)}
    source: { type: file, path: ${JSON.stringify(inputFile)} }
    pipeline: embed
    output: { field: embedding, vectors: { encoding: ${encoding}, dimensions: ${dimensions} } }
    sink: { type: file, path: ${JSON.stringify(join(dir, `${name(dimensions, encoding)}.jsonl`))} }`,
    ),
  );
  const config = parseConfigText(
    `
models: { m: { path: ${JSON.stringify(values.model)} } }
pipelines: { embed: { task: featureExtraction, model: m } }
routes:${routes.join('')}
`,
    {},
  );
  const worker = await StreamWorker.start(config, { logger: silentLogger });
  await worker.finished;
  await worker.stop(10_000);

  const inputBytes = mean(input.map((l) => Buffer.byteLength(l)));
  const bytes: Record<
    string,
    Record<string, { field: number; record: number; vs_json: number }>
  > = {};
  for (const dimensions of sizes) {
    const row: (typeof bytes)[string] = {};
    for (const encoding of ENCODINGS) {
      const written = (await readFile(join(dir, `${name(dimensions, encoding)}.jsonl`), 'utf8'))
        .split('\n')
        .filter((l) => l !== '');
      if (written.length !== texts)
        throw new Error(`${name(dimensions, encoding)} wrote ${written.length} of ${texts}`);
      const field = mean(
        written.map((l) =>
          Buffer.byteLength(JSON.stringify((JSON.parse(l) as { embedding: unknown }).embedding)),
        ),
      );
      row[encoding] = { field, record: mean(written.map((l) => Buffer.byteLength(l))), vs_json: 0 };
    }
    const json = row['json']?.field ?? 1;
    for (const cell of Object.values(row))
      cell.vs_json = Math.round((cell.field / json) * 1000) / 1000;
    bytes[String(dimensions)] = row;
  }
  writeResultLine({
    bench: 'vector-bytes',
    model: values.model,
    texts,
    input_record_bytes: inputBytes,
    // Mean bytes per record: `field` is the embedding value as written, `record` the whole
    // merged line (the input record plus `"embedding":...`), `vs_json` field against json's.
    bytes_per_record: bytes,
  });
} finally {
  await rm(dir, { recursive: true, force: true });
}
