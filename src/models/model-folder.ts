// Reads what an Optimum-style model folder declares about itself, without loading any weights.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface ModelFolderSummary {
  path: string;
  modelType: string;
  onnxFiles: string[];
  hasTokenizer: boolean;
  labels: string[];
}

interface HfConfig {
  model_type?: unknown;
  id2label?: Record<string, unknown>;
}

export async function summarizeModelFolder(path: string): Promise<ModelFolderSummary | undefined> {
  const files = await readdir(path).catch(() => undefined);
  if (files === undefined || !files.includes('config.json')) return undefined;
  const config = JSON.parse(await readFile(join(path, 'config.json'), 'utf8')) as HfConfig;
  const labels = Object.entries(config.id2label ?? {})
    .sort(([a], [b]) => Number(a) - Number(b))
    .map(([, label]) => String(label));
  return {
    path,
    modelType: typeof config.model_type === 'string' ? config.model_type : 'unknown',
    onnxFiles: files.filter((f) => f.endsWith('.onnx')).sort(),
    hasTokenizer: files.includes('tokenizer.json'),
    labels,
  };
}

/** Model folders directly inside each root (a root that is itself a model folder counts too). */
export async function findModelFolders(roots: readonly string[]): Promise<ModelFolderSummary[]> {
  const found: ModelFolderSummary[] = [];
  for (const root of roots) {
    const self = await summarizeModelFolder(root);
    if (self !== undefined) {
      found.push(self);
      continue;
    }
    const entries = await readdir(root, { withFileTypes: true }).catch(() => []);
    for (const entry of entries.filter((e) => e.isDirectory()).sort((a, b) => a.name.localeCompare(b.name))) {
      const summary = await summarizeModelFolder(join(root, entry.name));
      if (summary !== undefined) found.push(summary);
    }
  }
  return found;
}
