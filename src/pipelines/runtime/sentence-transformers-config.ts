// What a sentence-transformers model folder says about how its embeddings are made: the
// Transformer module's sentence_bert_config.json (truncation length, lower-casing), the Pooling
// module's config.json (pooling mode) and modules.json (whether a Normalize module follows).
// featureExtraction takes these as its defaults so that, with no options, it gives what
// `SentenceTransformer(folder).encode(...)` gives in Python.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ModelFolderError } from '../../errors.ts';

export type SentencePooling = 'mean' | 'cls' | 'max';

export interface SentenceTransformersConfig {
  /** sentence_bert_config.json's max_seq_length. */
  maxSeqLength: number | undefined;
  /** sentence_bert_config.json's do_lower_case: texts are lower-cased before tokenizing. */
  lowerCase: boolean | undefined;
  pooling: SentencePooling | undefined;
  /** Set when the Pooling config asks for a mode featureExtraction cannot follow. */
  poolingProblem: string | undefined;
  /** From modules.json: true with a Normalize module, false without; undefined with no modules.json. */
  normalize: boolean | undefined;
  /** modules.json modules that featureExtraction does not run (Dense, LayerNorm, ...). */
  unsupportedModules: string[];
  /** The modules.json path, for messages about unsupported modules. */
  modulesFile: string | undefined;
}

// Both spellings sentence-transformers has saved: the legacy boolean keys and the newer
// `pooling_mode` string (or list, which concatenates the modes).
const LEGACY_MODES: Record<string, string> = {
  pooling_mode_cls_token: 'cls',
  pooling_mode_mean_tokens: 'mean',
  pooling_mode_max_tokens: 'max',
  pooling_mode_mean_sqrt_len_tokens: 'mean_sqrt_len_tokens',
  pooling_mode_weightedmean_tokens: 'weightedmean',
  pooling_mode_lasttoken: 'lasttoken',
};
const SUPPORTED: readonly string[] = ['mean', 'cls', 'max'];
const SUPPORTED_TEXT =
  'pooling_mode_mean_tokens (mean), pooling_mode_cls_token (cls), pooling_mode_max_tokens (max)';

interface ModuleEntry {
  type: string;
  path: string;
}

/** undefined when the folder has none of the sentence-transformers files. */
export async function readSentenceTransformersConfig(
  folder: string,
): Promise<SentenceTransformersConfig | undefined> {
  const modulesFile = join(folder, 'modules.json');
  const modules = await readJson(modulesFile);
  let transformerDir = folder;
  let poolingFile = join(folder, '1_Pooling', 'config.json');
  let normalize: boolean | undefined;
  const unsupportedModules: string[] = [];
  if (modules !== undefined) {
    const entries = moduleEntries(modules, modulesFile);
    // Module types are class paths that moved between releases
    // (sentence_transformers.models.Normalize, ...sentence_transformer.modules.Normalize): the
    // class name is what stays.
    const kind = (entry: ModuleEntry): string => entry.type.split('.').pop() ?? entry.type;
    const transformer = entries.find((e) => kind(e) === 'Transformer');
    const pooling = entries.find((e) => kind(e) === 'Pooling');
    if (transformer !== undefined) transformerDir = join(folder, transformer.path);
    if (pooling !== undefined) poolingFile = join(folder, pooling.path, 'config.json');
    normalize = entries.some((e) => kind(e) === 'Normalize');
    for (const entry of entries) {
      if (!['Transformer', 'Pooling', 'Normalize'].includes(kind(entry)))
        unsupportedModules.push(entry.type);
    }
  }
  const bertFile = join(transformerDir, 'sentence_bert_config.json');
  const bert = await readJson(bertFile);
  const poolingConfig = await readJson(poolingFile);
  if (modules === undefined && bert === undefined && poolingConfig === undefined) return undefined;
  const pooling = poolingConfig === undefined ? undefined : poolingMode(poolingConfig, poolingFile);
  return {
    maxSeqLength: bert === undefined ? undefined : maxSeqLength(bert, bertFile),
    lowerCase: bert === undefined ? undefined : lowerCase(bert, bertFile),
    pooling: pooling?.mode,
    poolingProblem: pooling?.problem,
    normalize,
    unsupportedModules,
    modulesFile: modules === undefined ? undefined : modulesFile,
  };
}

async function readJson(path: string): Promise<Record<string, unknown> | unknown[] | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ModelFolderError(`${path} cannot be read`, { cause, field: path });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (cause) {
    throw new ModelFolderError(`${path} is not valid JSON`, { cause, field: path });
  }
  if (parsed === null || typeof parsed !== 'object')
    throw new ModelFolderError(`${path} must hold a JSON object or array`, { field: path });
  return parsed as Record<string, unknown> | unknown[];
}

function moduleEntries(modules: Record<string, unknown> | unknown[], path: string): ModuleEntry[] {
  if (!Array.isArray(modules))
    throw new ModelFolderError(`${path} must be a list of modules ({ type, path })`, {
      field: path,
    });
  return modules.map((entry, i) => {
    const record = (entry ?? {}) as Record<string, unknown>;
    if (typeof record['type'] !== 'string')
      throw new ModelFolderError(`${path}: module ${i} has no type`, { field: path });
    return { type: record['type'], path: typeof record['path'] === 'string' ? record['path'] : '' };
  });
}

function maxSeqLength(
  config: Record<string, unknown> | unknown[],
  path: string,
): number | undefined {
  const value = (config as Record<string, unknown>)['max_seq_length'];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1)
    throw new ModelFolderError(`${path}: max_seq_length must be a positive integer`, {
      field: 'max_seq_length',
    });
  return value;
}

function lowerCase(config: Record<string, unknown> | unknown[], path: string): boolean | undefined {
  const value = (config as Record<string, unknown>)['do_lower_case'];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean')
    throw new ModelFolderError(`${path}: do_lower_case must be true or false`, {
      field: 'do_lower_case',
    });
  return value;
}

function poolingMode(
  config: Record<string, unknown> | unknown[],
  path: string,
): { mode: SentencePooling | undefined; problem: string | undefined } {
  const record = config as Record<string, unknown>;
  const declared = record['pooling_mode'];
  const modes =
    typeof declared === 'string'
      ? [declared]
      : Array.isArray(declared)
        ? declared.map(String)
        : Object.entries(LEGACY_MODES)
            .filter(([key]) => record[key] === true)
            .map(([, mode]) => mode);
  const [only] = modes;
  if (modes.length === 1 && only !== undefined && SUPPORTED.includes(only))
    return { mode: only as SentencePooling, problem: undefined };
  const asked = modes.length === 0 ? 'no pooling mode' : `pooling mode ${modes.join(' + ')}`;
  return {
    mode: undefined,
    problem: `${path} asks for ${asked}; featureExtraction follows exactly one of ${SUPPORTED_TEXT}. Set the pipeline's options.pooling (mean, cls, max, pooled or none) to choose one yourself`,
  };
}
