// Reads what a model folder declares about itself, without loading any weights: its graphs in
// each variant with their sizes, its labels, and which tasks it fits (`models list`).
import { readdir, readFile } from 'node:fs/promises';
import { join, resolve, sep } from 'node:path';
import { HugotError } from '../errors.ts';
import { readModelFacts } from './model-facts.ts';
import { listGraphFiles, type OnnxGraphFile } from './onnx-layout.ts';
import { misfits, type ModelNeeds } from './task-fit.ts';

export interface ModelVariant {
  /** fp32 for files without a suffix, else the suffix (fp16, quantized, q4, O3, ...). */
  variant: string;
  /** Its graph files, by path inside the folder. */
  files: string[];
  /** Bytes of its graphs and their external data. */
  bytes: number;
}

export interface ModelFolderSummary {
  path: string;
  modelType: string;
  /** Every graph file in the folder and its onnx/ folder, by path inside the folder. */
  onnxFiles: string[];
  variants: ModelVariant[];
  hasTokenizer: boolean;
  labels: string[];
  /** A tiny random-weight model of the test fixtures, not a real one. */
  fixture: boolean;
  /** Tasks the default graphs fit (only when the caller gave the tasks' needs). */
  fits: string[];
  /** Why the default graphs could not be judged (several variants and no fp32, ...). */
  unjudged: string | undefined;
}

interface HfConfig {
  model_type?: unknown;
  id2label?: Record<string, unknown>;
}

/** Where the repository keeps its tiny random-weight models (docs/models.md). */
const FIXTURES = join('test', 'fixtures', 'models');

export function isFixturePath(path: string): boolean {
  return `${resolve(path)}${sep}`.includes(`${sep}${FIXTURES}${sep}`);
}

function variantsOf(files: readonly OnnxGraphFile[]): ModelVariant[] {
  const byVariant = new Map<string, ModelVariant>();
  for (const file of files) {
    const entry = byVariant.get(file.variant) ?? { variant: file.variant, files: [], bytes: 0 };
    entry.files.push(file.file);
    entry.bytes += file.bytes;
    byVariant.set(file.variant, entry);
  }
  // fp32 first, as the loader's default; the rest by name.
  return [...byVariant.values()].sort((a, b) =>
    a.variant === 'fp32' ? -1 : b.variant === 'fp32' ? 1 : a.variant.localeCompare(b.variant),
  );
}

export async function summarizeModelFolder(
  path: string,
  tasks: ReadonlyMap<string, ModelNeeds> = new Map(),
): Promise<ModelFolderSummary | undefined> {
  const files = await readdir(path).catch(() => undefined);
  if (files === undefined || !files.includes('config.json')) return undefined;
  const config = JSON.parse(await readFile(join(path, 'config.json'), 'utf8')) as HfConfig;
  const labels = Object.entries(config.id2label ?? {})
    .sort(([a], [b]) => Number(a) - Number(b))
    .map(([, label]) => String(label));
  const graphs = await listGraphFiles(path);
  let fits: string[] = [];
  let unjudged: string | undefined;
  if (tasks.size > 0 && graphs.length > 0) {
    try {
      const facts = await readModelFacts(path);
      fits = [...tasks].filter(([, needs]) => misfits(needs, facts).length === 0).map(([t]) => t);
    } catch (err) {
      if (!(err instanceof HugotError)) throw err;
      unjudged = err.message;
    }
  }
  return {
    path,
    modelType: typeof config.model_type === 'string' ? config.model_type : 'unknown',
    onnxFiles: graphs.map((g) => g.file).sort(),
    variants: variantsOf(graphs),
    hasTokenizer: files.includes('tokenizer.json'),
    labels,
    fixture: isFixturePath(path),
    fits,
    unjudged,
  };
}

/** Model folders directly inside each root (a root that is itself a model folder counts too). */
export async function findModelFolders(
  roots: readonly string[],
  tasks: ReadonlyMap<string, ModelNeeds> = new Map(),
): Promise<ModelFolderSummary[]> {
  const found: ModelFolderSummary[] = [];
  for (const root of roots) {
    const self = await summarizeModelFolder(root, tasks);
    if (self !== undefined) {
      found.push(self);
      continue;
    }
    const entries = await readdir(root, { withFileTypes: true }).catch(() => []);
    for (const entry of entries
      .filter((e) => e.isDirectory())
      .sort((a, b) => a.name.localeCompare(b.name))) {
      const summary = await summarizeModelFolder(join(root, entry.name), tasks);
      if (summary !== undefined) found.push(summary);
    }
  }
  return found;
}

/** 1.5 MB, 312 KB, 2.1 GB: the sizes `models list` prints. */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${units[unit] ?? ''}`;
}

/** What `models list` prints for one folder: a heading line, one line per variant, its tasks. */
export function describeModelFolder(m: ModelFolderSummary): string[] {
  const labels = m.labels.length > 0 ? `  labels=${m.labels.length}` : '';
  const tokenizer = m.hasTokenizer ? '' : '  (no tokenizer.json)';
  const kind = m.fixture ? '  fixture (tiny random weights)' : '';
  const lines = [`${m.path}  ${m.modelType}${labels}${tokenizer}${kind}`];
  if (m.variants.length === 0) lines.push('  (no .onnx file in the folder or in onnx/)');
  for (const v of m.variants)
    lines.push(`  ${v.variant.padEnd(10)} ${formatBytes(v.bytes).padStart(9)}  ${v.files.join(' + ')}`);
  if (m.unjudged !== undefined) lines.push(`  fits: not judged: ${m.unjudged}`);
  else if (m.variants.length > 0) lines.push(`  fits: ${m.fits.join(', ') || '(no task)'}`);
  return lines;
}
