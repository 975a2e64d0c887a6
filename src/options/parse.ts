// The one place where user-supplied options meet their schema. zod finds every problem; this turns
// each into a field path and a message that says how to fix it, and throws them as a ConfigError.
import type { z } from 'zod';
import { ConfigError } from '../errors.ts';
import { isCompiled } from './compiled.ts';
import { loadZod, type LazySchema } from './lazy-schema.ts';
import { suggestion } from './suggest.ts';

/** One thing wrong with a value: where (path segments under the value) and what to do. */
export interface Problem {
  path: readonly PropertyKey[];
  message: string;
}

export type Checked<T> = { ok: true; data: T } | { ok: false; problems: Problem[] };

/**
 * Every problem of `value` under `schema`, or its parsed value; never throws for bad input.
 * `unknownKey` is what a key no schema knows is called (`not an option of fillMask`).
 */
export function checkWithSchema<S extends z.ZodType>(
  schema: S,
  value: unknown,
  unknownKey = 'unknown key',
): Checked<z.output<S>> {
  // zod's finished issue drops the schema that raised it, so the keys a strict object knows are
  // noted while its message is made; the issue keeps the same `keys` array to look them up by.
  const knownKeys = new Map<unknown, string[]>();
  const result = schema.safeParse(value, {
    // The hints below quote the wrong name back; no message quotes any other input.
    reportInput: true,
    error: (issue) => {
      if (issue.code === 'unrecognized_keys') {
        const shape = (issue.inst as { _zod?: { def?: { shape?: object } } } | undefined)?._zod?.def
          ?.shape;
        if (shape !== undefined) knownKeys.set(issue.keys, Object.keys(shape));
      }
      return undefined;
    },
  });
  if (result.success) return { ok: true, data: result.data };
  const problems = result.error.issues.flatMap((issue): Problem[] => {
    if (issue.code === 'unrecognized_keys') {
      const known = knownKeys.get(issue.keys) ?? [];
      return issue.keys.map((key) => ({
        path: [...issue.path, key],
        message: `${unknownKey}${suggestion(key, known)}`,
      }));
    }
    if (issue.code === 'invalid_value' && issue.values.every((v) => typeof v === 'string'))
      return [hinted(issue, issue.values)];
    // A discriminated union names the values its discriminator may take.
    const options = (issue as { options?: unknown }).options;
    if (issue.code === 'invalid_union' && Array.isArray(options))
      return [hinted(issue, options.map(String))];
    return [{ path: issue.path, message: issue.message }];
  });
  return { ok: false, problems };
}

/** A wrong name among a fixed set: say which one was meant when it is close. */
function hinted(issue: z.core.$ZodIssue, candidates: string[]): Problem {
  const input = (issue as { input?: unknown }).input;
  if (typeof input !== 'string' || input.length > 64)
    return { path: issue.path, message: issue.message };
  return { path: issue.path, message: `'${input}' is not allowed${suggestion(input, candidates)}` };
}

/** `a.b.0.c`: the path as a user would find it in the YAML. */
export function formatPath(prefix: string, path: readonly PropertyKey[]): string {
  return [prefix, ...path.map(String)].filter((p) => p !== '').join('.');
}

export function parseWithSchema<S extends z.ZodType>(
  schema: S,
  value: unknown,
  path: string,
): z.output<S> {
  const checked = checkWithSchema(schema, value);
  if (checked.ok) return checked.data;
  const problems = checked.problems.map((p) => `${formatPath(path, p.path)}: ${p.message}`);
  const field = formatPath(path, checked.problems[0]?.path ?? []);
  return failConfig(`invalid options: ${problems.join('; ')}`, field);
}

/**
 * `value` parsed by a lazily built schema; options marked compiled (src/options/compiled.ts) come
 * back as they are, without building the schema or loading zod.
 */
export function parseOptions<S extends z.ZodType>(
  schema: LazySchema<S>,
  value: unknown,
  path: string,
): z.output<S> {
  if (isCompiled(value)) return value as z.output<S>;
  return parseWithSchema(schema.schema, value, path);
}

function failConfig(message: string, field: string): never {
  throw new ConfigError(message, { field });
}

/**
 * A field checked by `schema` but kept as written: its owner parses it again after merging it
 * with other levels (a pipeline's batching over the worker's), and parsed defaults would override
 * the level below.
 */
export function checkedAsWritten<S extends z.ZodType>(schema: S): z.ZodType<z.input<S>> {
  return loadZod()
    .custom<z.input<S>>()
    .superRefine((value, ctx) => {
      const checked = checkWithSchema(schema, value);
      if (!checked.ok)
        for (const problem of checked.problems)
          ctx.addIssue({ code: 'custom', path: [...problem.path], message: problem.message });
    });
}
