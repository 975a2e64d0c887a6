// Reading a feature extractor's numbers from preprocessor_config.json, each checked once with a
// message naming the file and the field, so a bad export fails at load, not inside a feature.
import { ModelFolderError } from '../../errors.ts';

export interface PreprocessorFields {
  /** A positive integer field, or its default when absent. */
  int: (field: string, fallback: number) => number;
  /** A finite number field, or its default when absent. */
  real: (field: string, fallback: number) => number;
}

export function preprocessorFields(
  raw: Record<string, unknown>,
  folder: string,
): PreprocessorFields {
  const fail = (field: string, what: string, value: unknown): never => {
    throw new ModelFolderError(
      `${folder}/preprocessor_config.json: ${field} must be ${what}, got ${JSON.stringify(value)}`,
      { field },
    );
  };
  return {
    int: (field, fallback) => {
      const value = raw[field] ?? fallback;
      if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0)
        return fail(field, 'a positive integer', value);
      return value;
    },
    real: (field, fallback) => {
      const value = raw[field] ?? fallback;
      if (typeof value !== 'number' || !Number.isFinite(value))
        return fail(field, 'a number', value);
      return value;
    },
  };
}
