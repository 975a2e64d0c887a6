// Reads the reference outputs that scripts/models made by running Python's transformers
// pipelines (schema: docs/models.md).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'models');

export interface GoldenCase {
  name: string;
  task: string;
  call: { inputs: unknown; options: Record<string, unknown> };
  output: unknown;
}

export interface TokenizationCase {
  name: string;
  call: { text: string; text_pair: string | null; options: Record<string, unknown> };
  output: {
    input_ids: number[];
    token_type_ids?: number[];
    attention_mask: number[];
    offset_mapping: [number, number][];
    tokens: string[];
  };
}

export interface Goldens {
  model: string;
  task: string;
  pipeline: GoldenCase[];
  tokenization: TokenizationCase[];
}

export function modelPath(model: string): string {
  return join(FIXTURES, model);
}

export function readGoldens(model: string): Goldens {
  return JSON.parse(readFileSync(join(modelPath(model), 'goldens.json'), 'utf8')) as Goldens;
}
