// How a config asks for the generative engine: a textGeneration pipeline opts in with a
// `generative` block, and a route to it may stream partial records and set per-request limits.
// The engine's and the scheduler's defaults stay with their owners; this file only composes their
// schemas, so the config is validated once with field paths the user wrote.
import { z } from 'zod';
import { generativeEngineSchema } from '../generative/engine-options.ts';
import { schedulerOptionsSchema } from '../generative/scheduler.ts';

const schedulerFields = Object.keys(schedulerOptionsSchema.shape);

/** `pipelines.<alias>.generative`: engine threads and admission plus the scheduler's limits, flat. */
export const generativePipelineSchema = z
  .object({ ...generativeEngineSchema.shape, ...schedulerOptionsSchema.shape })
  .strict()
  .superRefine((value, ctx) => {
    // The scheduler's cross-field rules (stepTokens > maxActive) run on its own schema.
    const scheduler = Object.fromEntries(
      Object.entries(value).filter(([key]) => schedulerFields.includes(key)),
    );
    const checked = schedulerOptionsSchema.safeParse(scheduler);
    if (!checked.success)
      for (const issue of checked.error.issues)
        ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path });
  });

export type GenerativePipelineConfig = z.output<typeof generativePipelineSchema>;

/** `routes[].output.stream`: partial records while a request generates. */
export const outputStreamSchema = z
  .object({
    /** A partial record every this many generated tokens; 0 writes the final record only. */
    everyTokens: z.number().int().min(0).default(0),
  })
  .strict();

/** `routes[].generation`: per-request settings of a route to a generative pipeline. */
export const routeGenerationSchema = z
  .object({
    /** Milliseconds a request may take from submission; past it, it goes to the DLQ. Default none. */
    timeoutMs: z.number().int().min(1).optional(),
    /** Dotted path of the request's own generation options in the JSON record (docs/pipelines.md). */
    optionsField: z.string().min(1).optional(),
    /**
     * Dotted path of the request id in the JSON record (a string or a number). Default: derived
     * from where the record came from (Kafka topic-partition-offset, job id, entry id, line).
     */
    requestIdField: z.string().min(1).optional(),
  })
  .strict();

export type RouteGenerationConfig = z.output<typeof routeGenerationSchema>;
