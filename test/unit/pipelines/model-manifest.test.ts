import { createHash } from 'node:crypto';
import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, it, expect } from 'vitest';
import { SPLIT_EXPORTS } from '../../../src/models/onnx-layout.ts';

interface ManifestFile {
  path: string;
  sha256: string;
  size: number;
}

interface ManifestModel {
  name: string;
  kind: string;
  path: string;
  licence: string;
  made: string;
  files: ManifestFile[];
}

interface Manifest {
  schema: string;
  models: ManifestModel[];
}

const root = fileURLToPath(new URL('../../..', import.meta.url));
const committedManifest = join(root, 'test', 'fixtures', 'models', 'manifest.json');
const cacheManifest = join(root, '.cache', 'models', 'manifest.json');

function readManifest(path: string): Manifest {
  return JSON.parse(readFileSync(path, 'utf8')) as Manifest;
}

function sha256(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

function filesUnder(base: string, dir: string = base): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(base, full));
    else out.push(relative(base, full).split('\\').join('/'));
  }
  return out.sort();
}

/** `base` is the folder the manifest's paths are relative to (the repository root). */
function checkModel(model: ManifestModel, base: string = root): void {
  const dir = join(base, model.path);
  expect(existsSync(dir), `${model.path} is missing`).toBe(true);
  // Every file on disk is listed, so an untracked or stale file cannot slip in unnoticed.
  expect(filesUnder(dir)).toEqual(model.files.map((f) => f.path).sort());
  for (const file of model.files) {
    const full = join(dir, file.path);
    expect(statSync(full).size, `${model.path}/${file.path} size`).toBe(file.size);
    expect(sha256(full), `${model.path}/${file.path} sha256`).toBe(file.sha256);
  }
}

describe('committed model manifest (test/fixtures/models and models/)', () => {
  const manifest = readManifest(committedManifest);

  it('uses the documented schema and records provenance for every model', () => {
    expect(manifest.schema).toBe('hugot-stream/model-manifest@1');
    expect(manifest.models.length).toBeGreaterThan(0);
    for (const model of manifest.models) {
      expect(model.licence, model.name).not.toBe('');
      expect(model.made, model.name).not.toBe('');
      // model.onnx, an encoder–decoder export, or the graphs of a split export
      // (src/models/onnx-layout.ts).
      expect(
        model.files.some((f) => f.path === 'model.onnx' || f.path === 'encoder_model.onnx') ||
          SPLIT_EXPORTS.some((graphs) =>
            graphs.every((g) => model.files.some((f) => f.path === `${g}.onnx`)),
          ),
        `${model.name} has model.onnx or a split export`,
      ).toBe(true);
    }
  });

  it('lists every model folder that is committed', () => {
    const fixtureDirs = readdirSync(join(root, 'test', 'fixtures', 'models'), {
      withFileTypes: true,
    })
      .filter((e) => e.isDirectory())
      .map((e) => `test/fixtures/models/${e.name}`);
    const defaultDirs = readdirSync(join(root, 'models'), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => `models/${e.name}`);
    expect(manifest.models.map((m) => m.path).sort()).toEqual(
      [...fixtureDirs, ...defaultDirs].sort(),
    );
  });

  for (const model of manifest.models) {
    it(`${model.path}: files match sha256 and size`, () => {
      checkModel(model);
    });
  }
});

// The cache is filled by `npm run models:fetch`; a fresh clone (and CI) does not have it, and then
// the real check is reported as skipped. The check itself is exercised below on a staged copy of
// a committed model, so it is known to catch a changed, missing or stray file either way.
const cachePresent = existsSync(cacheManifest);
describe('fetched model cache (.cache/models)', () => {
  it.skipIf(!cachePresent)('matches the manifest that models:fetch wrote', () => {
    const manifest = readManifest(cacheManifest);
    expect(manifest.models.length).toBeGreaterThan(0);
    for (const model of manifest.models) checkModel(model);
  });

  describe('the check, on a staged cache', () => {
    const staged: string[] = [];
    afterEach(() => {
      for (const dir of staged.splice(0)) rmSync(dir, { recursive: true, force: true });
    });

    /** A copy of one committed model at .cache/models/<name> under a fresh root. */
    function stage(): { base: string; model: ManifestModel; dir: string } {
      const committed = readManifest(committedManifest).models.find(
        (m) => m.path === 'test/fixtures/models/bert-text-classification',
      );
      if (committed === undefined) throw new Error('bert-text-classification is not committed');
      const base = mkdtempSync(join(tmpdir(), 'model-cache-'));
      staged.push(base);
      const model = { ...committed, kind: 'cache', path: '.cache/models/bert-text-classification' };
      const dir = join(base, model.path);
      cpSync(join(root, committed.path), dir, { recursive: true });
      writeFileSync(
        join(base, '.cache', 'models', 'manifest.json'),
        JSON.stringify({ schema: 'hugot-stream/model-manifest@1', models: [model] }),
      );
      return { base, model, dir };
    }

    it('passes an intact copy', () => {
      const { base, model } = stage();
      expect(() => checkModel(model, base)).not.toThrow();
    });

    it('fails a changed file, a missing file and a stray file', () => {
      const { base, model, dir } = stage();
      appendFileSync(join(dir, 'config.json'), ' ');
      expect(() => checkModel(model, base)).toThrow(/config\.json size/);
      const intact = stage();
      rmSync(join(intact.dir, 'tokenizer.json'));
      expect(() => checkModel(intact.model, intact.base)).toThrow();
      const extra = stage();
      writeFileSync(join(extra.dir, 'stray.bin'), 'x');
      expect(() => checkModel(extra.model, extra.base)).toThrow();
    });
  });
});
