// One place for what every file-route test does: a scratch folder per test file, JSONL in,
// the worker run to the end of its input, JSONL out and dead letters read back.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { parseConfigText } from '../../src/config/load-config.ts';
import { silentLogger } from '../../src/logger.ts';
import { StreamWorker } from '../../src/worker/stream-worker.ts';

export interface DeadLetter {
  value: string;
  headers: Record<string, string>;
}

export interface ScratchDir {
  /** The folder, valid from the first test on. */
  readonly path: string;
  /** `join(folder, name)`, JSON-quoted for pasting into a YAML config. */
  quoted(name: string): string;
  file(name: string): string;
}

/** Makes a temporary folder before the file's tests and removes it after them. */
export function scratchDir(prefix: string): ScratchDir {
  let path = '';
  beforeAll(async () => {
    path = await mkdtemp(join(tmpdir(), `hugot-${prefix}-`));
  });
  afterAll(async () => {
    if (path !== '') await rm(path, { recursive: true, force: true });
  });
  return {
    get path() {
      return path;
    },
    file: (name) => join(path, name),
    quoted: (name) => JSON.stringify(join(path, name)),
  };
}

export async function writeJsonl(path: string, records: readonly unknown[]): Promise<void> {
  await writeFile(path, records.map((r) => JSON.stringify(r)).join('\n'));
}

/** The records of a JSONL file; a missing or empty file reads as none. */
export async function readJsonl<T = Record<string, unknown>>(path: string): Promise<T[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as T);
}

/** What every streamed generation record has at its output field. */
export interface StreamedValue {
  requestId: string;
  sequence: number;
  final: boolean;
}

/**
 * A streamed route's output, by input id: each request's records (partials, then the final) in
 * the order written. Only a final carries the input record (`id`); partials carry its request id.
 */
export async function readStreams<V extends StreamedValue>(
  path: string,
  field: string,
): Promise<Map<string, V[]>> {
  const written = await readJsonl<Record<string, unknown>>(path);
  const values = written.map((r) => r[field] as V);
  const streams = new Map<string, V[]>();
  for (const record of written) {
    if (typeof record['id'] !== 'string') continue;
    const { requestId } = record[field] as V;
    streams.set(
      record['id'],
      values.filter((v) => v.requestId === requestId),
    );
  }
  return streams;
}

export const readDeadLetters = (path: string): Promise<DeadLetter[]> => readJsonl<DeadLetter>(path);

type WorkerConfig = Parameters<typeof StreamWorker.start>[0];

/**
 * Starts a worker on file sources, waits until they are read to the end, and stops it. A config
 * given as YAML text is read with an empty environment, so the machine's variables cannot leak in.
 */
export async function runToEnd(config: WorkerConfig | string): Promise<StreamWorker> {
  const parsed = typeof config === 'string' ? parseConfigText(config, {}) : config;
  const worker = await StreamWorker.start(parsed, { logger: silentLogger });
  await worker.finished;
  await worker.stop(10_000);
  return worker;
}
