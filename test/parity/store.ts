import { afterAll } from 'vitest';
import { ModelStore } from '../../src/pipelines/runtime/model-store.ts';
import type { LoadedModel } from '../../src/pipelines/runtime/model-store.ts';
import { modelPath } from './goldens.ts';

/** One model store per test file, closed when the file is done. */
export function useModelStore(): (model: string) => Promise<LoadedModel> {
  const store = new ModelStore();
  afterAll(() => store.close());
  return (model) => store.load({ path: modelPath(model) });
}
