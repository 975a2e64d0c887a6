// The benchmark's texts: an even stride through the spam-assassin corpus, so that ham and spam,
// short notes and long mails are all in the sample, in the corpus' own order.
import { existsSync, readFileSync } from 'node:fs';

export const CORPUS_FILE = '.cache/corpus/spam-assassin.jsonl';

export function loadTexts(count: number, offset = 0): string[] {
  if (!existsSync(CORPUS_FILE))
    throw new Error(`${CORPUS_FILE} is missing; run \`npm run corpus:build\` first`);
  const records = readFileSync(CORPUS_FILE, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => (JSON.parse(line) as { text: string }).text);
  if (count > records.length)
    throw new Error(`asked for ${count} texts; the corpus has ${records.length}`);
  const stride = records.length / count;
  return Array.from(
    { length: count },
    (_, i) => records[(Math.floor(i * stride) + offset) % records.length] as string,
  );
}
