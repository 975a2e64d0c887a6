// `models pull` and a config's `hub:` model: one revision of a Hub repository, the chosen
// variant's files only, into the Hub's cache layout. The revision is resolved to its commit once,
// every file is fetched at that commit (a branch moving mid-pull cannot mix two commits), a few
// files at a time, and the ref is written last, so a cache never names a half-pulled snapshot.
import { readdir } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { HubError } from '../errors.ts';
import { downloadBlob } from './blob-download.ts';
import { HubCache } from './hub-cache.ts';
import { HubClient, type RepoFile } from './hub-client.ts';
import type { HubSettings } from './hub-settings.ts';
import { pullCommand, type RepoSpec } from './repo-spec.ts';
import { DEFAULT_VARIANT, variantFiles, variantsIn } from './variants.ts';

export interface PullRequest extends RepoSpec {
  /** Default fp32 (src/hub/variants.ts). */
  variant?: string;
}

export interface PulledModel {
  repo: string;
  revision: string;
  variant: string;
  /** The commit the revision resolved to: write it as the revision to pin this exact model. */
  commit: string;
  /** The snapshot folder: a model folder like any other. */
  path: string;
  /** Repository paths in the snapshot that the variant uses, sorted. */
  files: string[];
  /** The variant's ONNX graphs, repository paths. */
  graphs: string[];
  /** True when nothing was fetched: the cache held it all. */
  cached: boolean;
}

export type PullEvent =
  | {
      kind: 'start';
      repo: string;
      commit: string;
      files: { path: string; size: number | undefined }[];
    }
  | { kind: 'progress'; path: string; done: number; size: number | undefined }
  | { kind: 'file-done'; path: string; size: number | undefined }
  | { kind: 'done'; repo: string; commit: string; path: string };

export interface PullOptions {
  settings: HubSettings;
  /** Passed in by tests; otherwise one over `fetch` with the settings. */
  client?: HubClient;
  onEvent?: (event: PullEvent) => void;
  /** Files downloaded at once. */
  concurrency?: number;
  retries?: number;
  retryDelayMs?: number;
  signal?: AbortSignal;
}

export const DEFAULT_CONCURRENCY = 4;

/** The cached snapshot for the request when it holds the variant's graphs; never touches the network. */
export async function findCached(
  request: PullRequest,
  settings: HubSettings,
): Promise<PulledModel | undefined> {
  const cache = new HubCache(settings.cacheDir);
  const variant = request.variant ?? DEFAULT_VARIANT;
  const commit = await cache.commitOf(request.repo, request.revision);
  if (commit === undefined) return undefined;
  const path = cache.snapshotDir(request.repo, commit);
  const present = await listFiles(path);
  const chosen = variantFiles(present, variant);
  // A snapshot holding a graph alone (a Python user's single hf_hub_download) is no model folder.
  if (chosen === undefined || !chosen.files.includes('config.json')) return undefined;
  if ((await cache.missing(request.repo, commit, chosen.files)).length > 0) return undefined;
  return {
    repo: request.repo,
    revision: request.revision,
    variant,
    commit,
    path,
    files: chosen.files,
    graphs: chosen.graphs,
    cached: true,
  };
}

export async function pullModel(request: PullRequest, options: PullOptions): Promise<PulledModel> {
  const { settings } = options;
  const variant = request.variant ?? DEFAULT_VARIANT;
  if (settings.offline) {
    const cached = await findCached(request, settings);
    if (cached !== undefined) return cached;
    throw new HubError(
      `${request.repo}@${request.revision} (${variant}) is not in the cache ${settings.cacheDir} and HF_HUB_OFFLINE is set; pull it where the Hub is reachable: ${pullCommand(request, variant)}`,
      { field: 'HF_HUB_OFFLINE' },
    );
  }
  const client = options.client ?? new HubClient(settings);
  const cache = new HubCache(settings.cacheDir);
  const info = await client.revisionInfo(request.repo, request.revision);
  const names = info.files.map((f) => f.path);
  const chosen = variantFiles(names, variant);
  if (chosen === undefined) {
    const offered = variantsIn(names);
    throw new HubError(
      `${request.repo}@${request.revision} has no ${variant} ONNX files; ${offered.length > 0 ? `it has ${offered.join(', ')}: choose one with --variant (variant: in a config)` : 'it has no ONNX export at all; pick an ONNX repository (onnx-community/..., Xenova/...) or export it with optimum-cli'}`,
      { field: 'variant' },
    );
  }
  const byPath = new Map(info.files.map((f) => [f.path, f]));
  const files = chosen.files
    .map((p) => byPath.get(p))
    .filter((f): f is RepoFile => f !== undefined);
  const missing = new Set(await cache.missing(request.repo, info.commit, chosen.files));
  options.onEvent?.({
    kind: 'start',
    repo: request.repo,
    commit: info.commit,
    files: files.filter((f) => missing.has(f.path)).map((f) => ({ path: f.path, size: f.size })),
  });
  await eachAtOnce(
    files.filter((f) => missing.has(f.path)),
    options.concurrency ?? DEFAULT_CONCURRENCY,
    async (file) => {
      const blob = file.sha256 ?? file.blobId;
      if (blob === undefined)
        throw new HubError(
          `${client.endpoint} lists ${file.path} without a blob id or LFS sha256; the cache cannot name it (is HF_ENDPOINT a Hub that answers ?blobs=true?)`,
        );
      await downloadBlob(
        { repo: request.repo, commit: info.commit, file, blob },
        {
          client,
          cache,
          onBytes: (done) =>
            options.onEvent?.({ kind: 'progress', path: file.path, done, size: file.size }),
          ...(options.retries !== undefined ? { retries: options.retries } : {}),
          ...(options.retryDelayMs !== undefined ? { retryDelayMs: options.retryDelayMs } : {}),
          ...(options.signal !== undefined ? { signal: options.signal } : {}),
        },
      );
      await cache.link(request.repo, info.commit, file.path, blob);
      options.onEvent?.({ kind: 'file-done', path: file.path, size: file.size });
    },
  );
  await cache.writeRef(request.repo, request.revision, info.commit);
  const path = cache.snapshotDir(request.repo, info.commit);
  options.onEvent?.({ kind: 'done', repo: request.repo, commit: info.commit, path });
  return {
    repo: request.repo,
    revision: request.revision,
    variant,
    commit: info.commit,
    path,
    files: chosen.files,
    graphs: chosen.graphs,
    cached: missing.size === 0,
  };
}

/** Runs `work` over the items with at most `limit` running; the first failure is thrown once all settle. */
async function eachAtOnce<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const failures: unknown[] = [];
  const lane = async (): Promise<void> => {
    while (next < items.length && failures.length === 0) {
      const item = items[next++] as T;
      await work(item).catch((err: unknown) => {
        failures.push(err);
      });
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, lane));
  if (failures.length > 0) throw failures[0];
}

/** Repository paths under a snapshot (links followed: a snapshot is links to blobs). */
async function listFiles(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries
    .filter((e) => e.isFile() || e.isSymbolicLink())
    .map((e) => relative(root, join(e.parentPath, e.name)).split('\\').join('/'));
}
