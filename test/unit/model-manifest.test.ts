import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it, expect } from 'vitest';

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

const root = fileURLToPath(new URL('../..', import.meta.url));
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

function checkModel(model: ManifestModel): void {
  const dir = join(root, model.path);
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
      expect(
        model.files.some((f) => f.path === 'model.onnx'),
        `${model.name} has model.onnx`,
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

// The cache is filled by `npm run models:fetch`; a fresh clone (and CI) does not have it.
const cachePresent = existsSync(cacheManifest);
describe('fetched model cache (.cache/models, checked only when present)', () => {
  it.skipIf(!cachePresent)('matches the manifest that models:fetch wrote', () => {
    const manifest = readManifest(cacheManifest);
    for (const model of manifest.models) checkModel(model);
  });

  it.skipIf(cachePresent)('is absent, which is fine: nothing to check', () => {
    expect(cachePresent).toBe(false);
  });
});
