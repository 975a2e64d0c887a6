// What goes wrong in a pull: a connection dropped mid-file (resumed with a range, within the
// pull and by the next pull), bytes that do not hash to the Hub's sha256 (refused, deleted), a
// gated repository with and without HF_TOKEN (the token never goes to the CDN), names the Hub
// does not know, and offline mode.
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HubError } from '../../../src/errors.ts';
import { HubCache } from '../../../src/hub/hub-cache.ts';
import { pullModel } from '../../../src/hub/pull.ts';
import { GATED, hubHarness, REPO, TOKEN, tinyRepoFiles } from './hub-fixture.ts';

const harness = hubHarness();
const GRAPH = 'onnx/model_quantized.onnx';
const GRAPH_BYTES = tinyRepoFiles().get(GRAPH) as Buffer;

const errorOf = async (promise: Promise<unknown>): Promise<HubError> => {
  const err: unknown = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof HubError)) throw new Error(`expected a HubError, got ${String(err)}`);
  return err;
};

describe('pull faults', () => {
  it('a body cut short is resumed within the pull from the byte it stopped at', async () => {
    const { hub, settings } = harness;
    const cutAt = 100_000;
    const before = hub.downloadsOf(GRAPH).length;
    hub.cutDownloads(GRAPH, 1, cutAt);
    const pulled = await pullModel(
      { repo: REPO, revision: 'main', variant: 'quantized' },
      { settings, retryDelayMs: 1 },
    );
    const tries = hub.downloadsOf(GRAPH).slice(before);
    expect(tries.map((t) => t.range)).toEqual([undefined, `bytes=${cutAt}-`]);
    expect((await readFile(join(pulled.path, GRAPH))).equals(GRAPH_BYTES)).toBe(true);
  });

  it('a dropped connection is retried, twice over, and the file still checks', async () => {
    const { hub, settings } = harness;
    const before = hub.downloadsOf(GRAPH).length;
    hub.cutDownloads(GRAPH, 2, 120_000, 'drop');
    const pulled = await pullModel(
      { repo: REPO, revision: 'main', variant: 'quantized' },
      { settings, retryDelayMs: 1 },
    );
    // What arrived before a drop is kept (the client may not have read it all): a range from there.
    const tries = hub.downloadsOf(GRAPH).slice(before);
    expect(tries).toHaveLength(3);
    for (const t of tries.slice(1)) expect(t.range ?? 'bytes=0-').toMatch(/^bytes=\d+-$/);
    expect((await readFile(join(pulled.path, GRAPH))).equals(GRAPH_BYTES)).toBe(true);
  });

  it('an interrupted pull leaves its bytes for the next one, which asks only for the rest', async () => {
    const { hub, settings } = harness;
    const cutAt = 70_000;
    hub.cutDownloads(GRAPH, 1, cutAt);
    const first = await errorOf(
      pullModel({ repo: REPO, revision: 'main', variant: 'quantized' }, { settings, retries: 0 }),
    );
    expect(first.retriable).toBe(true);
    expect(first.message).toMatch(/broke off|ended at byte/);
    const cache = new HubCache(settings.cacheDir);
    const blobs = await readdir(join(cache.repoDir(REPO), 'blobs'));
    const partial = blobs.find((b) => b.endsWith('.incomplete'));
    expect(partial).toBeDefined();
    expect((await stat(join(cache.repoDir(REPO), 'blobs', partial as string))).size).toBe(cutAt);
    // Not linked, and no ref: the cache does not claim a snapshot it does not hold.
    expect(await readdir(join(cache.repoDir(REPO), 'refs')).catch(() => [])).toEqual([]);
    const before = hub.downloadsOf(GRAPH).length;
    const second = await pullModel(
      { repo: REPO, revision: 'main', variant: 'quantized' },
      { settings },
    );
    expect(
      hub
        .downloadsOf(GRAPH)
        .slice(before)
        .map((t) => t.range),
    ).toEqual([`bytes=${cutAt}-`]);
    expect((await readFile(join(second.path, GRAPH))).equals(GRAPH_BYTES)).toBe(true);
  });

  it('bytes that do not match the Hub`s sha256 are refused and deleted', async () => {
    const { hub, settings } = harness;
    hub.corrupt(GRAPH);
    try {
      const err = await errorOf(
        pullModel({ repo: REPO, revision: 'main', variant: 'quantized' }, { settings }),
      );
      expect(err.message).toMatch(
        /onnx\/model_quantized\.onnx is corrupt: its sha256 is [0-9a-f]{64}, the Hub's is [0-9a-f]{64}/,
      );
      expect(err.retriable).toBe(false);
      const cache = new HubCache(settings.cacheDir);
      const blobs = await readdir(join(cache.repoDir(REPO), 'blobs'));
      expect(blobs.filter((b) => b.length === 64 || b.endsWith('.incomplete'))).toEqual([]);
      const snapshot = cache.snapshotDir(REPO, hub.commitOf(REPO));
      expect(await cache.missing(REPO, hub.commitOf(REPO), [GRAPH])).toEqual([GRAPH]);
      await expect(stat(join(snapshot, GRAPH))).rejects.toThrow();
    } finally {
      hub.corrupt(GRAPH, false);
    }
  });

  it('a gated repository: 401 without HF_TOKEN, 403 with the wrong one, pulled with the right one', async () => {
    const { hub, settings } = harness;
    const without = await errorOf(
      pullModel({ repo: GATED, revision: 'main', variant: 'q4' }, { settings }),
    );
    expect(without.message).toMatch(/needs a token \(401\).*set HF_TOKEN/);
    const wrong = await errorOf(
      pullModel(
        { repo: GATED, revision: 'main', variant: 'q4' },
        { settings: { ...settings, token: 'hf_wrongwrongwrongwrong0000' } },
      ),
    );
    expect(wrong.message).toMatch(/refused the token in HF_TOKEN \(403\)/);
    expect(wrong.message).not.toContain('hf_wrong');
    const start = hub.requests.length;
    const pulled = await pullModel(
      { repo: GATED, revision: 'main', variant: 'q4' },
      { settings: { ...settings, token: TOKEN } },
    );
    expect(pulled.commit).toBe(hub.commitOf(GATED));
    const seen = hub.requests.slice(start);
    // The Hub gets the token; the CDN it redirects to does not.
    const cdn = seen.filter((r) => r.url.startsWith('/cdn/'));
    expect(cdn.length).toBeGreaterThan(0);
    expect(cdn.every((r) => !r.authorized)).toBe(true);
    expect(seen.filter((r) => !r.url.startsWith('/cdn/')).every((r) => r.authorized)).toBe(true);
  });

  it('an unknown repository, revision or variant name is a clear error', async () => {
    const { settings } = harness;
    const repo = await errorOf(
      pullModel({ repo: 'hugot-test/no-such-model', revision: 'main' }, { settings }),
    );
    expect(repo.message).toMatch(
      /no repository hugot-test\/no-such-model on http:\/\/127\.0\.0\.1:\d+; check the name/,
    );
    const revision = await errorOf(pullModel({ repo: REPO, revision: 'v9' }, { settings }));
    expect(revision.message).toMatch(/has no revision 'v9'/);
  });

  it('offline: served from the cache without a request, refused with the pull command when absent', async () => {
    const { hub, settings } = harness;
    const absent = await errorOf(
      pullModel(
        { repo: REPO, revision: 'main', variant: 'q4' },
        { settings: { ...settings, offline: true } },
      ),
    );
    expect(absent.message).toContain(`hugot-stream models pull ${REPO}@main --variant q4`);
    expect(absent.message).toContain('HF_HUB_OFFLINE');
    const online = await pullModel({ repo: REPO, revision: 'main', variant: 'q4' }, { settings });
    const start = hub.requests.length;
    const offline = await pullModel(
      { repo: REPO, revision: 'main', variant: 'q4' },
      { settings: { ...settings, offline: true } },
    );
    expect(hub.requests.length).toBe(start);
    expect(offline).toMatchObject({ path: online.path, commit: online.commit, cached: true });
    // Another variant was never pulled, so offline it is absent.
    await expect(
      pullModel(
        { repo: REPO, revision: 'main', variant: 'fp16' },
        { settings: { ...settings, offline: true } },
      ),
    ).rejects.toThrow(/--variant fp16/);
  });
});
