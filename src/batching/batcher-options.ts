// How a pipeline's queue cuts batches. Every default is here; the token budget's depends on the
// kind of shard the queue feeds.
import { z } from 'zod';
import { parseWithSchema } from '../options/parse.ts';

export type BatchDevice = 'cpu' | 'gpu';

/**
 * Padded tokens per batch when none is configured. On CPU, ONNX Runtime gains nothing from rows
 * past a few hundred tokens and loses once the attention tensors outgrow the caches: raw ONNX
 * Runtime's best layout on the benchmark's 2-core machine is batch 1 (MiniLM 32.2 records/s,
 * 29.8 at batch 4, 21.4 at 32). 256 lets at most one 256-token record into a batch (a longer
 * one runs alone) while short texts still go several at a time, where batches of 2-4 gain a few
 * percent (docs/batching.md); a GPU needs wide batches to fill the device.
 */
export const DEFAULT_BATCH_TOKENS: Record<BatchDevice, number> = { cpu: 256, gpu: 8192 };

/**
 * The default budget for a pipeline whose model is not batch invariant, which its thread runs one
 * row per session call (src/pipelines/row-by-row.ts): its batch pads nothing and runs no wider,
 * so the budget only sets how many records one message to a thread carries. Four 256-token
 * records a message instead of one halved the main thread's CPU per int8 MiniLM record
 * (docs/batching.md, "Rows run alone"); more would hold a burst's last records on one thread
 * while the other idles.
 */
export const DEFAULT_ROWS_ALONE_BATCH_TOKENS: Record<BatchDevice, number> = {
  cpu: 1024,
  gpu: 8192,
};

/**
 * Padded tokens one message to an inference thread carries when none is configured, over the
 * batches in it (a batch larger than that travels alone). A burst's batches then cross to a
 * thread several at a time, and the main thread's work per message (piscina's task, the
 * structured clone, the reply's promise) is spread over their records; CPU batches of one
 * 200-token record each went four a message (docs/batching.md, "Several batches a message").
 * GPU: 0, one batch a message, until measured there.
 */
export const DEFAULT_MESSAGE_TOKENS: Record<BatchDevice, number> = { cpu: 1024, gpu: 0 };

/** Rows per batch when none is configured: a GPU is fed by the token budget, not the row cap. */
export const DEFAULT_BATCH_ROWS: Record<BatchDevice, number> = { cpu: 32, gpu: 256 };

/**
 * How an input is priced before it is queued. 'tokens' tokenizes it on the main process, exact,
 * in bursts of what was admitted together, and where its task makes one plain encode of one text
 * (featureExtraction, single-text classification) the encoding goes with the batch and the thread
 * does not tokenize it again (src/pipelines/runtime/carried-encoding.ts). 'characters' estimates
 * from its length, which costs nothing, and the inference thread's tokenizer stays the only one.
 * CPU: 'tokens', since encodings are carried: an encode in a burst costs a third of one made
 * alone on a thread right after a run, which lifted int8 MiniLM's throughput (docs/batching.md,
 * "Encodings carried to the threads"), and its batches are priced exactly. GPU: 'characters'
 * until measured there, where one main process would tokenize for a whole device (docs/gpu.md).
 */
export const DEFAULT_PRICING: Record<BatchDevice, 'tokens' | 'characters'> = {
  cpu: 'tokens',
  gpu: 'characters',
};

export const batcherOptionsSchema = z
  .object({
    /** Most inputs in one batch. */
    maxBatchSize: z.number().int().min(1).optional(),
    /** Most padded tokens in one batch: the longest member's length times the rows. */
    maxBatchTokens: z.number().int().min(1).optional(),
    /**
     * Most padded tokens of the batches one message to a thread carries; 0: a batch a message.
     * Only batches already due go together, so a quiet stream's batches still leave one by one.
     */
    maxMessageTokens: z.number().int().min(0).optional(),
    /** A batch is cut when its oldest item has waited this long, full or not. */
    maxWaitMs: z.number().min(0).default(10),
    /** How many of the oldest queued items are sorted by length to pick batch mates. */
    sortWindow: z.number().int().min(1).default(256),
    /**
     * 'length': mates are the anchor's nearest neighbours by length in the window. 'arrival':
     * mates are the next items in arrival order, the batch cut at the first that does not fit
     * (the benchmark's ablation of length sorting with the token budget kept).
     */
    order: z.enum(['length', 'arrival']).default('length'),
    /** 'tokens' or 'characters' (see DEFAULT_PRICING). Default: by the shards' device. */
    pricing: z.enum(['tokens', 'characters']).optional(),
    /** Number of priority levels; 0 is the most urgent. */
    priorities: z.number().int().min(1).max(16).default(3),
    /** Sources are told to pause at this many queued items... */
    maxQueued: z.number().int().min(1).default(4096),
    /** ...and to resume once the queue is down to this many. Default: half of maxQueued. */
    resumeAt: z.number().int().min(0).optional(),
  })
  .strict()
  .refine((o) => o.resumeAt === undefined || o.resumeAt < o.maxQueued, {
    message: 'resumeAt must be below maxQueued',
    path: ['resumeAt'],
  });

export type BatcherOptions = z.input<typeof batcherOptionsSchema>;
export interface CompiledBatcherOptions extends Omit<
  z.output<typeof batcherOptionsSchema>,
  'resumeAt' | 'maxBatchTokens' | 'maxBatchSize' | 'pricing' | 'maxMessageTokens'
> {
  maxBatchSize: number;
  maxBatchTokens: number;
  /** maxBatchTokens where the pipeline's rows run alone (the configured one, when configured). */
  rowsAloneBatchTokens: number;
  maxMessageTokens: number;
  pricing: 'tokens' | 'characters';
  resumeAt: number;
}

export function compileBatcherOptions(
  options: BatcherOptions = {},
  path = 'batching',
  device: BatchDevice = 'cpu',
): CompiledBatcherOptions {
  const parsed = parseWithSchema(batcherOptionsSchema, options, path);
  return {
    ...parsed,
    maxBatchSize: parsed.maxBatchSize ?? DEFAULT_BATCH_ROWS[device],
    maxBatchTokens: parsed.maxBatchTokens ?? DEFAULT_BATCH_TOKENS[device],
    rowsAloneBatchTokens: parsed.maxBatchTokens ?? DEFAULT_ROWS_ALONE_BATCH_TOKENS[device],
    maxMessageTokens: parsed.maxMessageTokens ?? DEFAULT_MESSAGE_TOKENS[device],
    pricing: parsed.pricing ?? DEFAULT_PRICING[device],
    resumeAt: parsed.resumeAt ?? Math.floor(parsed.maxQueued / 2),
  };
}
