// `generation.responseFormat`: what shape the generated text must have. Validated once with the
// options (a schema feature that cannot be enforced is an error naming its path inside the
// schema), then compiled per tokenizer into a DFA over characters and its token masks.
import { z } from 'zod';
import { CharDfa, parsePattern, PatternError } from './char-dfa.ts';
import { jsonSchemaRegex, UnsupportedSchemaError } from './json-schema-regex.ts';

export const responseFormatSchema = z
  .discriminatedUnion('type', [
    z
      .object({
        type: z.literal('json_schema'),
        /** A JSON Schema (the subset in docs/generative.md); the output is JSON it accepts. */
        schema: z.record(z.string(), z.unknown()),
      })
      .strict(),
    z
      .object({
        type: z.literal('regex'),
        /** An ECMAScript pattern (`u` flag) the whole output must match. */
        pattern: z.string().min(1),
      })
      .strict(),
  ])
  .superRefine((format, ctx) => {
    try {
      formatRegex(format);
    } catch (err) {
      if (err instanceof UnsupportedSchemaError)
        ctx.addIssue({ code: 'custom', path: ['schema', ...err.path], message: err.message });
      else if (err instanceof PatternError)
        ctx.addIssue({
          code: 'custom',
          path: [format.type === 'regex' ? 'pattern' : 'schema'],
          message: err.message,
        });
      else throw err;
    }
  });

export type ResponseFormat = z.output<typeof responseFormatSchema>;

/** The regex the output must match in full; throws what the options' check reports. */
export function formatRegex(format: ResponseFormat): string {
  const source = format.type === 'regex' ? format.pattern : jsonSchemaRegex(format.schema);
  parsePattern(source);
  return source;
}

/** The DFA of a format (the costly part is its token masks, built per tokenizer). */
export function formatDfa(format: ResponseFormat): CharDfa {
  return CharDfa.compile(format.type === 'regex' ? format.pattern : jsonSchemaRegex(format.schema));
}
