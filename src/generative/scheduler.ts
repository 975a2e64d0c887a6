// Which sequences take part in the next engine step, after vLLM's and TGI's rule: every decoding
// sequence advances one token, then the rest of the step's token budget goes to prompt chunks
// (chunked prefill) in admission order. Waiting requests are admitted strictly first-come,
// first-served while the active-sequence and KV-token limits allow, so a large request at the
// head is never overtaken forever by small ones behind it (no starvation). A sequence reserves
// its whole KV need (prompt + max new tokens) at admission, so nothing is ever evicted midway.
// Pure bookkeeping: no tensors, no clock, so tests drive it step by step.
import { z } from 'zod';
import { parseWithSchema } from '../options/parse.ts';

export const schedulerOptionsSchema = z
  .object({
    /** Sequences prefilling or decoding at once (the decode batch's rows). Default 32. */
    maxActive: z.number().int().min(1).default(32),
    /** KV tokens reserved by active sequences (prompt + max new tokens each). Default 16384. */
    maxKvTokens: z.number().int().min(1).default(16_384),
    /** Tokens one step processes: one per decoding sequence plus prompt chunks. Default 256. */
    stepTokens: z.number().int().min(2).default(256),
    /**
     * What one more decode run costs, in cached token-rows: decoding rows are split into
     * length groups when that saves more padding than this. 0 splits at every length; a huge
     * value keeps one batch. Default by export (decode-groups.ts defaultDecodeRunCost): 1024,
     * or 4096 for an appending one, whose padding costs attention only (docs/generative.md).
     */
    decodeRunCostTokens: z.number().int().min(0).optional(),
  })
  .strict()
  .refine((o) => o.stepTokens > o.maxActive, {
    message:
      'stepTokens must exceed maxActive, so that prompts still advance when every row decodes',
    path: ['stepTokens'],
  });

export type SchedulerOptions = z.input<typeof schedulerOptionsSchema>;
export type SchedulerLimits = z.output<typeof schedulerOptionsSchema>;

export function compileSchedulerOptions(value: unknown, path = 'scheduler'): SchedulerLimits {
  return parseWithSchema(schedulerOptionsSchema, value ?? {}, path);
}

export interface Schedulable {
  readonly promptLength: number;
  /** KV tokens this sequence may need in all: prompt plus its max new tokens. */
  readonly kvReserve: number;
  /** Prompt tokens already in its cache. */
  readonly prefilled: number;
}

export interface PrefillChunk<S> {
  seq: S;
  /** Prompt tokens [from, from + length) go through the model this step. */
  from: number;
  length: number;
}

export interface StepPlan<S> {
  decode: readonly S[];
  prefill: readonly PrefillChunk<S>[];
}

export class Scheduler<S extends Schedulable> {
  readonly limits: SchedulerLimits;
  private readonly waiting: S[] = [];
  private readonly prefilling: S[] = [];
  private readonly decoding: S[] = [];
  private reserved = 0;
  private readonly started = new WeakSet<S>();

  constructor(limits: SchedulerLimits) {
    this.limits = limits;
  }

  get waitingCount(): number {
    return this.waiting.length;
  }

  get activeCount(): number {
    return this.prefilling.length + this.decoding.length;
  }

  get reservedKvTokens(): number {
    return this.reserved;
  }

  get idle(): boolean {
    return this.waiting.length === 0 && this.activeCount === 0;
  }

  /** False for a request that could never be admitted, whatever else finishes. */
  fits(seq: S): boolean {
    return seq.kvReserve <= this.limits.maxKvTokens && seq.promptLength > 0;
  }

  enqueue(seq: S): void {
    this.waiting.push(seq);
  }

  /**
   * Admits what the limits allow, then plans the step: all decodes, then prompt chunks. `start`
   * runs once per sequence, just before its first chunk is sized: the engine resumes it from the
   * prefix cache there, so the budget is spent on what it still has to prefill, not on the
   * cached part of its prompt. Each `start` is awaited before the next sequence is looked at (a
   * resident prefix cache assembles its hit on the device).
   */
  async plan(start?: (seq: S) => Promise<void> | void): Promise<StepPlan<S>> {
    this.admit();
    let budget = this.limits.stepTokens - this.decoding.length;
    const prefill: PrefillChunk<S>[] = [];
    for (const seq of this.prefilling) {
      if (budget <= 0) break;
      if (!this.started.has(seq)) {
        this.started.add(seq);
        await start?.(seq);
      }
      const length = Math.min(seq.promptLength - seq.prefilled, budget);
      prefill.push({ seq, from: seq.prefilled, length });
      budget -= length;
    }
    return { decode: [...this.decoding], prefill };
  }

  /** Its prompt is all in the cache: from the next step it decodes. */
  promote(seq: S): void {
    if (remove(this.prefilling, seq)) this.decoding.push(seq);
  }

  /** Finished, cancelled or failed: it leaves whichever phase it is in and frees its reserve. */
  remove(seq: S): void {
    if (remove(this.waiting, seq)) return;
    if (remove(this.prefilling, seq) || remove(this.decoding, seq)) this.reserved -= seq.kvReserve;
  }

  /** Every sequence, waiting or active (to find the cancelled and the expired). */
  all(): S[] {
    return [...this.waiting, ...this.prefilling, ...this.decoding];
  }

  private admit(): void {
    while (this.waiting.length > 0 && this.activeCount < this.limits.maxActive) {
      const head = this.waiting[0] as S;
      if (this.reserved + head.kvReserve > this.limits.maxKvTokens) break;
      this.waiting.shift();
      this.reserved += head.kvReserve;
      this.prefilling.push(head);
    }
  }
}

function remove<S>(list: S[], item: S): boolean {
  const index = list.indexOf(item);
  if (index < 0) return false;
  list.splice(index, 1);
  return true;
}
