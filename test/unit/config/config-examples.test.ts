import { existsSync, readdirSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfigFile } from '../../../src/config/load-config.ts';
import { checkConnections } from '../../../src/connectors/connection-checks.ts';
import type { WorkerConfig } from '../../../src/config/schema.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const CONFIG = join(ROOT, 'config');
const FETCHED = join('.cache', 'models') + sep;

/** Models under .cache/models come from `npm run models:fetch`, which a fresh clone has not run. */
const isFetched = (path: string): boolean => relative(ROOT, path).startsWith(FETCHED);

// Loaded before the tests are declared, so that each fetched model folder can get its own test,
// skipped (and reported as skipped) where the cache is absent, as the other fetched-model tests are.
// A file that fails to load fails its own test below, not the whole file.
const examples = await Promise.all(
  readdirSync(CONFIG)
    .filter((f) => f.endsWith('.yaml'))
    .map(async (file) => {
      try {
        // What `validate-config` checks, in an empty environment (a fresh clone's): the
        // connections' certificate and secret files too.
        const config = await loadConfigFile(join(CONFIG, file), {});
        checkConnections(config, {});
        return { file, config };
      } catch (error) {
        return { file, error };
      }
    }),
);

describe('config examples', () => {
  for (const example of examples) {
    const { file } = example;
    const config: WorkerConfig | undefined = 'config' in example ? example.config : undefined;
    it(`${file} is valid and its committed model folders exist`, () => {
      if (config === undefined) throw example.error;
      expect(config.routes.length).toBeGreaterThan(0);
      for (const model of Object.values(config.models)) {
        // A Hub model has no folder until it is pulled; its repository id was checked with the file.
        if (model.path === undefined) expect(model.hub).toMatch(/^[^/]+\/[^/]+$/);
        else if (!isFetched(model.path)) expect(readdirSync(model.path)).toContain('config.json');
      }
    });
    if (config === undefined) continue;
    for (const [name, model] of Object.entries(config.models)) {
      const path = model.path;
      if (path === undefined || !isFetched(path)) continue;
      it.skipIf(!existsSync(path))(
        `${file}: model ${name} is a model folder (needs npm run models:fetch)`,
        () => {
          expect(readdirSync(path)).toContain('config.json');
        },
      );
    }
  }
});
