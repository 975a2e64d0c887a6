// The parts of a Hugging Face config.json that pipelines read.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ModelFolderError } from '../../errors.ts';

export interface ModelConfig {
  modelType: string;
  /** Labels by class index; empty when the config declares none. */
  labels: string[];
  problemType: string | undefined;
  maxPositionEmbeddings: number | undefined;
  eosTokenIds: number[];
  bosTokenId: number | undefined;
  padTokenId: number | undefined;
  raw: Record<string, unknown>;
}

export async function readModelConfig(folder: string): Promise<ModelConfig> {
  const path = join(folder, 'config.json');
  const text = await readFile(path, 'utf8').catch((cause: unknown) => {
    throw new ModelFolderError(
      `${folder} has no readable config.json; an Optimum export writes one beside model.onnx`,
      {
        cause,
        field: 'config.json',
      },
    );
  });
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(text) as Record<string, unknown>;
  } catch (cause) {
    throw new ModelFolderError(`${path} is not valid JSON`, { cause, field: 'config.json' });
  }
  return {
    modelType: typeof raw['model_type'] === 'string' ? raw['model_type'] : 'unknown',
    labels: labelsOf(raw['id2label'], path),
    problemType: typeof raw['problem_type'] === 'string' ? raw['problem_type'] : undefined,
    maxPositionEmbeddings: numberOr(raw['max_position_embeddings'] ?? raw['n_positions']),
    eosTokenIds: idList(raw['eos_token_id']),
    bosTokenId: numberOr(raw['bos_token_id']),
    padTokenId: numberOr(raw['pad_token_id']),
    raw,
  };
}

function labelsOf(id2label: unknown, path: string): string[] {
  if (id2label === undefined || id2label === null) return [];
  if (typeof id2label !== 'object')
    throw new ModelFolderError(`${path}: id2label must be an object of index -> label`, {
      field: 'id2label',
    });
  const entries = Object.entries(id2label as Record<string, unknown>).map(
    ([k, v]) => [Number(k), String(v)] as const,
  );
  const labels: string[] = [];
  for (const [index, label] of entries) {
    if (!Number.isInteger(index) || index < 0) {
      throw new ModelFolderError(`${path}: id2label key '${index}' is not a class index`, {
        field: 'id2label',
      });
    }
    labels[index] = label;
  }
  for (let i = 0; i < labels.length; i += 1) {
    if (labels[i] === undefined)
      throw new ModelFolderError(`${path}: id2label has no label for class ${i}`, {
        field: 'id2label',
      });
  }
  return labels;
}

function numberOr(value: unknown): number | undefined {
  return typeof value === 'number' ? value : undefined;
}

function idList(value: unknown): number[] {
  if (typeof value === 'number') return [value];
  if (Array.isArray(value)) return value.filter((v): v is number => typeof v === 'number');
  return [];
}
