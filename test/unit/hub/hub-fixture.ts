// A small onnx-community-style repository for the pull tests: configs, a tokenizer, and several
// variants of one graph in onnx/ (fp32 with external data), filled with seeded bytes that are
// large enough to arrive in many chunks.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import type { HubSettings } from '../../../src/hub/hub-settings.ts';
import { HubServer } from '../../helpers/hub-server.ts';

export const REPO = 'hugot-test/tiny-onnx';
export const GATED = 'hugot-test/gated-onnx';
export const TOKEN = 'hf_testtokenthatopensthegate0123';

/** Bytes that differ from file to file (a hash chain), so a mixed-up blob cannot pass. */
export function seeded(seed: string, size: number): Buffer {
  const out = Buffer.alloc(size);
  let x = [...seed].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 7);
  for (let i = 0; i < size; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

export function tinyRepoFiles(): Map<string, Buffer> {
  const json = (v: unknown): Buffer => Buffer.from(JSON.stringify(v));
  return new Map<string, Buffer>([
    ['.gitattributes', Buffer.from('*.onnx filter=lfs diff=lfs merge=lfs -text\n')],
    ['README.md', Buffer.from('# tiny-onnx\n')],
    ['config.json', json({ model_type: 'bert', hidden_size: 4 })],
    ['tokenizer.json', json({ version: '1.0', model: { type: 'WordPiece' } })],
    ['tokenizer_config.json', json({ do_lower_case: true })],
    ['onnx/model.onnx', seeded('fp32', 40_000)],
    ['onnx/model.onnx_data', seeded('fp32-data', 300_000)],
    ['onnx/model_fp16.onnx', seeded('fp16', 150_000)],
    ['onnx/model_quantized.onnx', seeded('q8', 250_000)],
    ['onnx/model_q4.onnx', seeded('q4', 60_000)],
    ['onnx/model_q4f16.onnx', seeded('q4f16', 50_000)],
  ]);
}

export interface HubHarness {
  readonly hub: HubServer;
  /** A fresh cache per test. */
  readonly settings: HubSettings;
}

/** A Hub server for the file's tests and an empty cache for each test. */
export function hubHarness(): HubHarness {
  let hub: HubServer | undefined;
  let cacheDir = '';
  beforeAll(async () => {
    hub = await HubServer.start();
    hub.addRepo(REPO, { files: tinyRepoFiles(), refs: ['v1'] });
    hub.addRepo(GATED, { files: tinyRepoFiles(), gatedToken: TOKEN });
  });
  afterAll(async () => {
    await hub?.close();
  });
  beforeEach(async () => {
    cacheDir = await mkdtemp(join(tmpdir(), 'hugot-hub-cache-'));
  });
  afterEach(async () => {
    await rm(cacheDir, { recursive: true, force: true });
  });
  return {
    get hub() {
      if (hub === undefined) throw new Error('the Hub server starts before the tests');
      return hub;
    },
    get settings(): HubSettings {
      if (hub === undefined) throw new Error('the Hub server starts before the tests');
      return { cacheDir, endpoint: hub.endpoint, token: undefined, offline: false };
    },
  };
}
