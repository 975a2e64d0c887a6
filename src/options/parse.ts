// The one place where user-supplied options meet their schema. zod finds every problem; this turns
// them into a ConfigError whose message names each field path and what was expected.
import type { z } from 'zod';
import { ConfigError } from '../errors.ts';

export function parseWithSchema<S extends z.ZodType>(
  schema: S,
  value: unknown,
  path: string,
): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const where = [path, ...issue.path.map(String)].filter((p) => p !== '').join('.');
    return `${where}: ${issue.message}`;
  });
  const first = result.error.issues[0];
  const field = [path, ...(first?.path.map(String) ?? [])].filter((p) => p !== '').join('.');
  return failConfig(`invalid options: ${problems.join('; ')}`, field);
}

function failConfig(message: string, field: string): never {
  throw new ConfigError(message, { field });
}
