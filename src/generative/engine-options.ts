// The generative engine's own options (threads and admission), apart from the scheduler's. The
// worker's config schema reuses this schema, so a defaults change here is the only one needed.
import { z } from 'zod';
import { prefixCacheSchema } from '../pipelines/generation/prefix-cache.ts';
import { DEVICE_FORM, isDeviceName } from '../shards/device-name.ts';

export const generativeEngineSchema = z
  .object({
    /**
     * 'cpu' or 'cuda:<id>': where every generation thread's session runs. On CUDA each step's
     * logits and KV cache come back to host memory (docs/gpu.md says why and what it costs).
     */
    device: z.string().refine(isDeviceName, `device is ${DEVICE_FORM}`).default('cpu'),
    /** Generation threads, each with its own session, cache and step loop. Default 1. */
    threads: z.number().int().min(1).default(1),
    /** ONNX Runtime threads inside each generation thread. Default: cores / threads. */
    intraOpThreads: z.number().int().min(1).optional(),
    /** Requests queued or running beyond which submit rejects (OverloadedError). Default 256. */
    maxPending: z.number().int().min(1).default(256),
    /**
     * Each thread's cache of prompt-prefix keys/values, shared by prompts that start alike
     * (docs/generative.md#shared-prefix-kv-cache). On by default; `{maxBytes: 0}` turns it off.
     */
    prefixCache: prefixCacheSchema.prefault({}),
  })
  .strict();
