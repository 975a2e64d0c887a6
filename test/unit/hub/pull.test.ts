// Pulls against the local Hub server (test/helpers/hub-server.ts): only the chosen variant's
// files, laid out as the Hub's cache (blobs named by sha256 or git blob id, relative snapshot
// links, refs), pinned revisions and tags, and files fetched a few at a time.
import { createHash } from 'node:crypto';
import {
  lstat,
  mkdir,
  readdir,
  readFile,
  readlink,
  stat,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HubError } from '../../../src/errors.ts';
import { HubCache } from '../../../src/hub/hub-cache.ts';
import { pullModel, type PullEvent } from '../../../src/hub/pull.ts';
import { hubHarness, REPO, tinyRepoFiles } from './hub-fixture.ts';

const harness = hubHarness();
const FILES = tinyRepoFiles();
const DESCRIPTION = ['README.md', 'config.json', 'tokenizer.json', 'tokenizer_config.json'];
const sorted = (paths: string[]): string[] => [...paths].sort();

describe('models pull', () => {
  it('takes the variant`s graph with the configs and tokenizer, in the Hub`s cache layout', async () => {
    const { hub, settings } = harness;
    const pulled = await pullModel(
      { repo: REPO, revision: 'main', variant: 'quantized' },
      { settings },
    );
    expect(pulled.commit).toBe(hub.commitOf(REPO));
    expect(pulled.files).toEqual(sorted([...DESCRIPTION, 'onnx/model_quantized.onnx']));
    expect(pulled.graphs).toEqual(['onnx/model_quantized.onnx']);
    const repoDir = join(settings.cacheDir, 'models--hugot-test--tiny-onnx');
    expect(pulled.path).toBe(join(repoDir, 'snapshots', pulled.commit));
    expect((await readFile(join(repoDir, 'refs', 'main'), 'utf8')).trim()).toBe(pulled.commit);
    for (const path of pulled.files) {
      const bytes = FILES.get(path) as Buffer;
      const link = join(pulled.path, path);
      expect((await lstat(link)).isSymbolicLink()).toBe(true);
      // LFS files are named by their sha256, the rest by their git blob id, as Python names them.
      const blob = path.endsWith('.onnx')
        ? createHash('sha256').update(bytes).digest('hex')
        : createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex');
      const depth = path.split('/').length - 1;
      expect(await readlink(link)).toBe(
        join(...Array<string>(depth + 2).fill('..'), 'blobs', blob),
      );
      expect((await readFile(link)).equals(bytes)).toBe(true);
    }
    // Nothing of the other variants was fetched.
    expect(hub.downloadsOf('onnx/model_fp16.onnx')).toEqual([]);
    expect(hub.downloadsOf('onnx/model.onnx_data')).toEqual([]);
    const blobs = await readdir(join(repoDir, 'blobs'));
    expect(blobs.filter((b) => b.endsWith('.incomplete'))).toEqual([]);
    expect(blobs).toHaveLength(pulled.files.length);
  });

  it('fp32 takes the graph with its external data; another variant adds its graph to the same snapshot', async () => {
    const { settings } = harness;
    const fp32 = await pullModel({ repo: REPO, revision: 'main' }, { settings });
    expect(fp32.variant).toBe('fp32');
    expect(fp32.files).toEqual(sorted([...DESCRIPTION, 'onnx/model.onnx', 'onnx/model.onnx_data']));
    const quantized = await pullModel(
      { repo: REPO, revision: 'main', variant: 'quantized' },
      { settings },
    );
    expect(quantized.graphs).toEqual(['onnx/model_quantized.onnx']);
    // Both variants share one snapshot; each pull added only its own files.
    expect(quantized.path).toBe(fp32.path);
    expect(await readdir(join(fp32.path, 'onnx'))).toEqual([
      'model.onnx',
      'model.onnx_data',
      'model_quantized.onnx',
    ]);
  });

  it('a variant the repository lacks is refused with the variants it has', async () => {
    const { settings } = harness;
    const pull = pullModel({ repo: REPO, revision: 'main', variant: 'bnb4' }, { settings });
    await expect(pull).rejects.toThrow(HubError);
    await expect(pull).rejects.toThrow(
      /has no bnb4 ONNX files; it has fp32, fp16, quantized, q4, q4f16/,
    );
  });

  it('a second pull of a cached variant fetches no bytes', async () => {
    const { hub, settings } = harness;
    await pullModel({ repo: REPO, revision: 'main', variant: 'q4' }, { settings });
    const before = hub.downloadsOf('onnx/model_q4.onnx').length;
    const again = await pullModel({ repo: REPO, revision: 'main', variant: 'q4' }, { settings });
    expect(again.cached).toBe(true);
    expect(hub.downloadsOf('onnx/model_q4.onnx')).toHaveLength(before);
  });

  it('a pinned commit and a tag resolve to the same snapshot; only branch and tag names become refs', async () => {
    const { hub, settings } = harness;
    const commit = hub.commitOf(REPO);
    const pinned = await pullModel({ repo: REPO, revision: commit, variant: 'q4' }, { settings });
    expect(pinned.commit).toBe(commit);
    const cache = new HubCache(settings.cacheDir);
    const refs = join(cache.repoDir(REPO), 'refs');
    expect(await readdir(refs).catch(() => [])).toEqual([]);
    const tagged = await pullModel({ repo: REPO, revision: 'v1', variant: 'q4' }, { settings });
    expect(tagged.path).toBe(pinned.path);
    expect(await readdir(refs)).toEqual(['v1']);
    expect(await cache.commitOf(REPO, 'v1')).toBe(commit);
  });

  it('fetches a few files at once, never more than asked', async () => {
    const { hub, settings } = harness;
    hub.holdUntilParallel(3, 10_000);
    const events: PullEvent[] = [];
    await pullModel(
      { repo: REPO, revision: 'main', variant: 'quantized' },
      { settings, concurrency: 3, onEvent: (e) => events.push(e) },
    );
    expect(hub.maxInFlight).toBe(3);
    const start = events.find((e) => e.kind === 'start');
    expect(start?.kind === 'start' ? start.files.map((f) => f.path).sort() : []).toEqual(
      sorted([...DESCRIPTION, 'onnx/model_quantized.onnx']),
    );
    expect(events.filter((e) => e.kind === 'file-done')).toHaveLength(5);
    expect(events.at(-1)?.kind).toBe('done');
  });

  it('two pulls into one cache at once: each blob is fetched once, both get the snapshot', async () => {
    const { hub, settings } = harness;
    const before = hub.downloadsOf('onnx/model_fp16.onnx').length;
    const [a, b] = await Promise.all([
      pullModel({ repo: REPO, revision: 'main', variant: 'fp16' }, { settings }),
      pullModel({ repo: REPO, revision: 'main', variant: 'fp16' }, { settings }),
    ]);
    expect(a.path).toBe(b.path);
    expect(hub.downloadsOf('onnx/model_fp16.onnx').slice(before)).toHaveLength(1);
    expect(
      (await readFile(join(a.path, 'onnx/model_fp16.onnx'))).equals(
        FILES.get('onnx/model_fp16.onnx') as Buffer,
      ),
    ).toBe(true);
    const blobs = await readdir(join(new HubCache(settings.cacheDir).repoDir(REPO), 'blobs'));
    expect(blobs.filter((n) => n.endsWith('.lock') || n.endsWith('.incomplete'))).toEqual([]);
  });

  it('a lock whose holder died (untouched past the stale bound) is taken over', async () => {
    const { settings } = harness;
    const cache = new HubCache(settings.cacheDir);
    const bytes = FILES.get('onnx/model_q4f16.onnx') as Buffer;
    const lock = `${cache.blobPath(REPO, createHash('sha256').update(bytes).digest('hex'))}.lock`;
    await mkdir(dirname(lock), { recursive: true });
    await writeFile(lock, '999999\n');
    const long = new Date(Date.now() - 10 * 60_000);
    await utimes(lock, long, long);
    const pulled = await pullModel(
      { repo: REPO, revision: 'main', variant: 'q4f16' },
      { settings },
    );
    expect((await readFile(join(pulled.path, 'onnx/model_q4f16.onnx'))).equals(bytes)).toBe(true);
    await expect(stat(lock)).rejects.toThrow();
  });
});
