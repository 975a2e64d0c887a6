// One file of a pull into its cache blob: resumed from the bytes a previous try left in
// `<blob>.incomplete` (an HTTP range from there on), retried when the connection drops mid-body,
// and checked against the Hub's hash before it is renamed into place. A file whose bytes do not
// hash to what the Hub says is deleted and refused, never linked into a snapshot.
import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, rm, stat, truncate } from 'node:fs/promises';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { HubError } from '../errors.ts';
import { withBlobLock } from './blob-lock.ts';
import type { HubCache } from './hub-cache.ts';
import type { HubClient, RepoFile } from './hub-client.ts';

export interface BlobRequest {
  repo: string;
  commit: string;
  file: RepoFile;
  /** The blob's name in the cache: the LFS sha256, else the git blob id. */
  blob: string;
}

export interface BlobDownloadOptions {
  client: HubClient;
  cache: HubCache;
  /** Bytes of this file now on disk (resumed bytes included), each time more arrive. */
  onBytes?: (done: number) => void;
  /** Tries after the first when a connection drops mid-body. */
  retries?: number;
  /** Pause before the first retry; doubled each time. */
  retryDelayMs?: number;
  signal?: AbortSignal;
}

/** How a file's bytes are checked: sha256 for LFS files, git's blob hash for the rest. */
function hasher(
  file: RepoFile,
  size: number,
): { hash: Hash; expected: string | undefined; kind: string } {
  if (file.sha256 !== undefined)
    return { hash: createHash('sha256'), expected: file.sha256, kind: 'sha256' };
  const hash = createHash('sha1');
  // Git hashes a header with the size first; without a known size there is nothing to check.
  if (file.blobId !== undefined && file.size !== undefined) hash.update(`blob ${size}\0`);
  return { hash, expected: file.size === undefined ? undefined : file.blobId, kind: 'git blob id' };
}

export async function downloadBlob(
  request: BlobRequest,
  options: BlobDownloadOptions,
): Promise<void> {
  const { cache } = options;
  const { repo, blob, file } = request;
  if (await cache.hasBlob(repo, blob)) {
    options.onBytes?.(file.size ?? 0);
    return;
  }
  const partial = cache.incompletePath(repo, blob);
  await mkdir(dirname(partial), { recursive: true });
  await withBlobLock(
    `${cache.blobPath(repo, blob)}.lock`,
    () => cache.hasBlob(repo, blob),
    async () => {
      const retries = options.retries ?? 4;
      let delay = options.retryDelayMs ?? 250;
      for (let attempt = 0; ; attempt++) {
        try {
          await fetchRest(request, partial, options);
          break;
        } catch (err) {
          const dropped = err instanceof HubError && err.retriable;
          if (!dropped || attempt >= retries || options.signal?.aborted === true)
            throw wrap(err, request);
          await sleep(delay);
          delay *= 2;
        }
      }
      await verify(request, partial);
      await cache.completeBlob(repo, blob);
    },
    options.signal !== undefined ? { signal: options.signal } : {},
  );
  // Another process may have written it while this one waited: the file is whole either way.
  options.onBytes?.(file.size ?? 0);
}

/** Appends what the partial file lacks; on a 200 (range ignored) starts the file again. */
async function fetchRest(
  request: BlobRequest,
  partial: string,
  options: BlobDownloadOptions,
): Promise<void> {
  const { repo, commit, file } = request;
  let offset = await stat(partial).then(
    (s) => s.size,
    () => 0,
  );
  if (file.size !== undefined && offset > file.size) {
    await truncate(partial, 0);
    offset = 0;
  }
  if (file.size !== undefined && offset === file.size) return;
  const response = await options.client.open(repo, commit, file.path, offset, options.signal);
  if (offset > 0 && response.status !== 206) offset = 0;
  const handle = await open(partial, offset === 0 ? 'w' : 'a');
  let done = offset;
  try {
    if (response.body === null)
      throw new HubError(`empty answer for ${repo}/${file.path}`, {}, true);
    for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
      await handle.write(chunk);
      done += chunk.byteLength;
      options.onBytes?.(done);
    }
  } catch (cause) {
    if (cause instanceof HubError) throw cause;
    throw new HubError(
      `the download of ${repo}/${file.path} broke off at byte ${done}: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
      true,
    );
  } finally {
    await handle.close();
  }
  if (file.size !== undefined && done < file.size)
    throw new HubError(
      `the download of ${repo}/${file.path} ended at byte ${done} of ${file.size}`,
      {},
      true,
    );
}

async function verify(request: BlobRequest, partial: string): Promise<void> {
  const { repo, file } = request;
  const size = (await stat(partial)).size;
  const check = hasher(file, size);
  const problem = async (what: string): Promise<never> => {
    await rm(partial, { force: true });
    throw new HubError(
      `${repo}/${file.path} is corrupt: ${what}; the download was deleted, pull again (if it repeats, the mirror in HF_ENDPOINT serves bad bytes)`,
    );
  };
  if (file.size !== undefined && size !== file.size)
    await problem(`${size} bytes where the Hub lists ${file.size}`);
  if (check.expected === undefined) return;
  for await (const chunk of createReadStream(partial)) check.hash.update(chunk as Buffer);
  const actual = check.hash.digest('hex');
  if (actual !== check.expected)
    await problem(`its ${check.kind} is ${actual}, the Hub's is ${check.expected}`);
}

function wrap(err: unknown, request: BlobRequest): Error {
  if (err instanceof HubError) return err;
  return new HubError(
    `cannot download ${request.repo}/${request.file.path}: ${err instanceof Error ? err.message : String(err)}`,
    { cause: err },
  );
}
