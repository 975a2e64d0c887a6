// The committed cache that Python's huggingface_hub wrote (test/fixtures/hub-cache/, built by
// test/helpers/hub-cache-fixture.ts against the test kit's Hub server) is read as it is, and a
// pull of ours writes the very same tree: one cache serves both.
import { cp, mkdtemp, readdir, readFile, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { scanCachedRepo } from '@huggingface/hub';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findCached, pullModel } from '../../../src/hub/pull.ts';
import type { HubSettings } from '../../../src/hub/hub-settings.ts';
import {
  PY_CACHE_REPO,
  PY_CACHE_VARIANT,
  pyCacheRepoFiles,
} from '../../helpers/hub-fixture-repo.ts';
import { HubServer } from '../../helpers/hub-server.ts';

const FIXTURE = join(import.meta.dirname, '..', '..', 'fixtures', 'hub-cache');
const REQUEST = { repo: PY_CACHE_REPO, revision: 'main', variant: PY_CACHE_VARIANT };

/** Every snapshot file with its link target, the blob names and the refs: the layout itself. */
async function layout(cacheDir: string): Promise<Record<string, string>> {
  const repoDir = join(cacheDir, 'models--hugot-test--py-cache');
  const out: Record<string, string> = {};
  for (const entry of await readdir(repoDir, { recursive: true, withFileTypes: true })) {
    const path = relative(repoDir, join(entry.parentPath, entry.name));
    if (entry.isSymbolicLink()) out[path] = `-> ${await readlink(join(repoDir, path))}`;
    else if (entry.isFile() && !path.startsWith('trees'))
      out[path] = path.startsWith('refs') ? await readFile(join(repoDir, path), 'utf8') : 'blob';
  }
  return out;
}

describe('a cache made by Python`s huggingface_hub', () => {
  let hub: HubServer;
  let scratch: string;
  beforeAll(async () => {
    hub = await HubServer.start();
    hub.addRepo(PY_CACHE_REPO, { files: pyCacheRepoFiles() });
    scratch = await mkdtemp(join(tmpdir(), 'hugot-py-cache-'));
  });
  afterAll(async () => {
    await hub.close();
    await rm(scratch, { recursive: true, force: true });
  });
  const offline = (cacheDir: string): HubSettings => ({
    cacheDir,
    endpoint: 'http://127.0.0.1:9',
    token: undefined,
    offline: true,
  });

  it('is read as it is, offline: its ref, its snapshot, every file`s bytes', async () => {
    const cached = await findCached(REQUEST, offline(FIXTURE));
    expect(cached?.commit).toBe(hub.commitOf(PY_CACHE_REPO));
    const files = pyCacheRepoFiles();
    expect(cached?.files).toEqual([
      'README.md',
      'config.json',
      'onnx/model_quantized.onnx',
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
    for (const path of cached?.files ?? [])
      expect(
        (await readFile(join(cached?.path ?? '', path))).equals(files.get(path) as Buffer),
      ).toBe(true);
    // The variant Python did not download is not there, and offline nothing can fetch it.
    expect(await findCached({ ...REQUEST, variant: 'fp32' }, offline(FIXTURE))).toBeUndefined();
  });

  it('serves a pull with no bytes fetched, and takes another variant`s files beside it', async () => {
    const cacheDir = join(scratch, 'copy');
    await cp(FIXTURE, cacheDir, { recursive: true, verbatimSymlinks: true });
    const settings: HubSettings = {
      cacheDir,
      endpoint: hub.endpoint,
      token: undefined,
      offline: false,
    };
    const same = await pullModel(REQUEST, { settings });
    expect(same.cached).toBe(true);
    expect(hub.requests.filter((r) => r.servedBytes)).toEqual([]);
    const fp32 = await pullModel({ ...REQUEST, variant: 'fp32' }, { settings });
    expect(fp32.path).toBe(same.path);
    expect(
      hub.requests.filter((r) => r.servedBytes).map((r) => r.url.split('/').slice(-2).join('/')),
    ).toEqual(['onnx/model.onnx']);
  });

  it('a pull of ours into an empty cache writes the same tree Python wrote', async () => {
    const cacheDir = join(scratch, 'ours');
    await pullModel(REQUEST, {
      settings: { cacheDir, endpoint: hub.endpoint, token: undefined, offline: false },
    });
    expect(await layout(cacheDir)).toEqual(await layout(FIXTURE));
    // huggingface.js's own cache scanner reads it too: the revision, its ref, the files (its
    // scanner, 2.17, lists a snapshot's top level only, so onnx/ is not among them).
    const scanned = await scanCachedRepo(join(cacheDir, 'models--hugot-test--py-cache'));
    expect(scanned.revisions.map((r) => [r.commitOid, r.refs])).toEqual([
      [hub.commitOf(PY_CACHE_REPO), ['main']],
    ]);
    const names = scanned.revisions[0]?.files.map((f) => f.path.split('/').at(-1)).sort();
    expect(names).toEqual(['README.md', 'config.json', 'tokenizer.json', 'tokenizer_config.json']);
  });
});
