// The generative engine's own options (threads and admission), apart from the scheduler's. The
// worker's config schema reuses this schema, so a defaults change here is the only one needed.
import { z } from 'zod';

export const generativeEngineSchema = z
  .object({
    /** Generation threads, each with its own session, cache and step loop. Default 1. */
    threads: z.number().int().min(1).default(1),
    /** ONNX Runtime threads inside each generation thread. Default: cores / threads. */
    intraOpThreads: z.number().int().min(1).optional(),
    /** Requests queued or running beyond which submit rejects (OverloadedError). Default 256. */
    maxPending: z.number().int().min(1).default(256),
  })
  .strict();
