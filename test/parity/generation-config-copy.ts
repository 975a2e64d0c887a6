// Goldens whose call sets generation_config.json keys (`call.generation_config`: bad_words_ids,
// no_repeat_ngram_size...) run on a copy of the fixture folder whose generation_config.json has
// them, as a checkpoint that ships them would; the copies are removed after the test file.
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { ModelStore, type LoadedModel } from '../../src/pipelines/runtime/model-store.ts';
import { modelPath } from './goldens.ts';

export type LoadWithConfig = (
  model: string,
  keys: Record<string, unknown> | undefined,
) => Promise<LoadedModel>;

/** Loads the fixture itself when `keys` is absent, else a copy with `keys` in its generation config. */
export function useGenerationConfigCopies(
  load: (model: string) => Promise<LoadedModel>,
): LoadWithConfig {
  const store = new ModelStore();
  const dirs: string[] = [];
  afterAll(async () => {
    await store.close();
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  });
  return async (model, keys) => {
    if (keys === undefined) return load(model);
    const dir = await mkdtemp(join(tmpdir(), `${model}-`));
    dirs.push(dir);
    await cp(modelPath(model), dir, { recursive: true });
    const file = join(dir, 'generation_config.json');
    const config = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
    await writeFile(file, JSON.stringify({ ...config, ...keys }));
    return store.load({ path: dir });
  };
}
