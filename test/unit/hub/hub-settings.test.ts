// The environment Python's huggingface_hub reads, read the same way: where the cache is, which
// endpoint, the token (never in a log line), offline mode; and the command line's variant list.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { VARIANT_NAMES } from '../../../src/cli/main.ts';
import { hubSettings } from '../../../src/hub/hub-settings.ts';
import { parseRepoSpec, pullCommand } from '../../../src/hub/repo-spec.ts';
import { VARIANTS } from '../../../src/hub/variants.ts';
import { redactFields, redactText } from '../../../src/redaction.ts';

describe('hub settings', () => {
  it('HF_HUB_CACHE over HF_HOME/hub over ~/.cache/huggingface/hub', () => {
    expect(hubSettings({}).cacheDir).toBe(join(homedir(), '.cache', 'huggingface', 'hub'));
    expect(hubSettings({ XDG_CACHE_HOME: '/xdg' }).cacheDir).toBe('/xdg/huggingface/hub');
    expect(hubSettings({ HF_HOME: '/hf' }).cacheDir).toBe('/hf/hub');
    expect(hubSettings({ HF_HOME: '/hf', HF_HUB_CACHE: '/cache' }).cacheDir).toBe('/cache');
  });

  it('HF_ENDPOINT for a mirror, HF_HUB_OFFLINE as Python reads it', () => {
    expect(hubSettings({}).endpoint).toBe('https://huggingface.co');
    expect(hubSettings({ HF_ENDPOINT: 'https://hf-mirror.example/' }).endpoint).toBe(
      'https://hf-mirror.example',
    );
    for (const on of ['1', 'true', 'YES', 'on'])
      expect(hubSettings({ HF_HUB_OFFLINE: on }).offline).toBe(true);
    for (const off of ['', '0', 'false'])
      expect(hubSettings({ HF_HUB_OFFLINE: off }).offline).toBe(false);
  });

  it('HF_TOKEN, else the token file a login wrote; the token never survives redaction', async () => {
    const home = await mkdtemp(join(tmpdir(), 'hugot-hf-home-'));
    try {
      expect(hubSettings({ HF_HOME: home }).token).toBeUndefined();
      const stored = 'hf_storedtokenstoredtoken012345';
      await writeFile(join(home, 'token'), `${stored}\n`);
      expect(hubSettings({ HF_HOME: home }).token).toBe(stored);
      const given = 'hf_giventokengiventoken99999999';
      const settings = hubSettings({ HF_HOME: home, HF_TOKEN: given });
      expect(settings.token).toBe(given);
      expect(JSON.stringify(redactFields({ settings }))).not.toContain(given);
      expect(redactText(`GET with ${given} failed`)).not.toContain(given);
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });
});

describe('repository specs', () => {
  it('org/name[@revision], refused with the form to write', () => {
    expect(parseRepoSpec('onnx-community/all-MiniLM-L6-v2-ONNX')).toEqual({
      repo: 'onnx-community/all-MiniLM-L6-v2-ONNX',
      revision: 'main',
    });
    expect(parseRepoSpec('Xenova/bert-base-NER@v1.0')).toEqual({
      repo: 'Xenova/bert-base-NER',
      revision: 'v1.0',
    });
    for (const bad of ['bert', 'a/b/c', 'a--b/c', '/x', 'org/'])
      expect(() => parseRepoSpec(bad)).toThrow(/is not a Hub repository id; write <org>\/<name>/);
    expect(() => parseRepoSpec('org/name@')).toThrow(/empty revision/);
    expect(pullCommand({ repo: 'org/name', revision: 'main' }, 'quantized')).toBe(
      'hugot-stream models pull org/name@main --variant quantized',
    );
  });

  it('the help`s variant list is the variants table', () => {
    expect(VARIANT_NAMES.split(', ')).toEqual(VARIANTS);
  });
});
