// The engine's step loop for pipelines that decode in cohorts (encoder–decoders, vision-language
// models: stepwise.ts). Requests that arrive while others decode are prepared at once and started
// together at the next step (one encoder or prefill run): a cohort, one decoder batch whose rows
// leave as they finish. Every step runs one decoder step per cohort, so requests that arrived at
// different times interleave token by token and each gets its tokens as they come. Cohorts are
// not merged: an encoder–decoder's cross-attention caches have different encoder lengths, and
// merging would copy every cached tensor once per join. Each row keeps its own
// GenerationProgress, as in the batch paths, so a request's tokens do not depend on its cohort.
import { serializeError } from '../errors.ts';
import type { GenerationProgress } from '../pipelines/generation/generation-progress.ts';
import type { GenerationCohort, StepwiseGenerator } from '../pipelines/generation/stepwise.ts';
import { cancelError, refuseRequestOptions, requestLoopStats } from './loop-requests.ts';
import type { LoopStats, SequenceEvent } from './protocol.ts';
import type { CancelReason } from './sequence.ts';
import type { StepLoop, SubmitRequest } from './step-loop.ts';

interface Request {
  id: number;
  prepared: unknown;
  deadlineAt: number | undefined;
  cancelled?: CancelReason;
}

interface Row {
  request: Request;
  progress: GenerationProgress;
  promptTokens: number;
  emitted: number;
}

interface Cohort {
  decoder: GenerationCohort['decoder'];
  rows: Row[];
  /** The token each row feeds at the next step. */
  tokens: number[];
}

export interface CohortLoopLimits {
  /** Rows decoding at once, over every cohort. */
  maxActive: number;
}

export class CohortLoop implements StepLoop {
  private readonly pipeline: StepwiseGenerator;
  private readonly limits: CohortLoopLimits;
  private readonly now: () => number;
  private waiting: Request[] = [];
  private cohorts: Cohort[] = [];

  private constructor(pipeline: StepwiseGenerator, limits: CohortLoopLimits, now: () => number) {
    this.pipeline = pipeline;
    this.limits = limits;
    this.now = now;
  }

  static async create(
    pipeline: StepwiseGenerator,
    limits: CohortLoopLimits,
    now: () => number = Date.now,
  ): Promise<CohortLoop> {
    await pipeline.assertStepwise();
    return new CohortLoop(pipeline, limits, now);
  }

  get idle(): boolean {
    return this.waiting.length === 0 && this.cohorts.length === 0;
  }

  stats(): LoopStats {
    return requestLoopStats(this.waiting.length, this.activeRows());
  }

  /** Prepares the input now, so one the model cannot read fails at once, not at its first step. */
  async submit(request: SubmitRequest): Promise<SequenceEvent | undefined> {
    try {
      refuseRequestOptions(this.pipeline.task, request.options);
      const prepared = await this.pipeline.prepareInput(request.input);
      this.waiting.push({ id: request.id, prepared, deadlineAt: request.deadlineAt });
      return undefined;
    } catch (err) {
      return { kind: 'failed', id: request.id, error: serializeError(err) };
    }
  }

  cancel(id: number, reason: CancelReason): void {
    for (const request of this.requests()) if (request.id === id) request.cancelled ??= reason;
  }

  async step(): Promise<SequenceEvent[]> {
    const events: SequenceEvent[] = [];
    this.reap(events);
    await this.admit(events);
    for (const cohort of this.cohorts) await this.decode(cohort, events);
    this.dropEmptyCohorts();
    return events;
  }

  private async admit(events: SequenceEvent[]): Promise<void> {
    const room = this.limits.maxActive - this.activeRows();
    if (room <= 0 || this.waiting.length === 0) return;
    const joining = this.waiting.splice(0, room);
    try {
      const cohort = await this.pipeline.startCohort(joining.map((r) => r.prepared));
      this.cohorts.push({
        decoder: cohort.decoder,
        rows: joining.map((request, i) => ({
          request,
          progress: cohort.progress[i] as GenerationProgress,
          promptTokens: cohort.promptTokens[i] ?? 0,
          emitted: 0,
        })),
        tokens: [...cohort.firstTokens],
      });
    } catch (err) {
      for (const request of joining) this.fail(request, err, events);
    }
  }

  private async decode(cohort: Cohort, events: SequenceEvent[]): Promise<void> {
    try {
      const logits = await cohort.decoder.step(cohort.tokens);
      const keep: number[] = [];
      const next: number[] = [];
      for (const [i, row] of cohort.rows.entries()) {
        const scores = logits[i] as Float32Array;
        const step = await row.progress.accept(row.progress.choose(scores), (ids) =>
          this.pipeline.decodeText(ids),
        );
        const { id } = row.request;
        events.push({
          kind: 'token',
          id,
          tokenId: step.tokenId,
          text: step.text,
          index: row.emitted++,
        });
        if (step.done) {
          const result = {
            ...row.progress.result(),
            promptTokens: row.promptTokens,
          };
          events.push({ kind: 'done', id, result });
          continue;
        }
        keep.push(i);
        next.push(step.tokenId);
      }
      this.keepRows(cohort, keep, next);
    } catch (err) {
      for (const row of cohort.rows) this.fail(row.request, err, events);
      cohort.rows = [];
    }
  }

  /** Cancelled and overdue requests fail and leave, wherever they are. */
  private reap(events: SequenceEvent[]): void {
    const now = this.now();
    for (const request of this.requests()) {
      if (request.cancelled === undefined && request.deadlineAt !== undefined)
        if (now >= request.deadlineAt) request.cancelled = 'deadline';
    }
    this.waiting = this.waiting.filter((request) => {
      if (request.cancelled === undefined) return true;
      this.fail(request, cancelError(this.pipeline.task, request.cancelled, 0), events);
      return false;
    });
    for (const cohort of this.cohorts) {
      const keep: number[] = [];
      cohort.rows.forEach((row, i) => {
        if (row.request.cancelled === undefined) keep.push(i);
        else
          this.fail(
            row.request,
            cancelError(this.pipeline.task, row.request.cancelled, row.emitted),
            events,
          );
      });
      this.keepRows(
        cohort,
        keep,
        keep.map((i) => cohort.tokens[i] as number),
      );
    }
    this.dropEmptyCohorts();
  }

  /** Cohorts whose rows all ended go, with what their decoders hold on the device. */
  private dropEmptyCohorts(): void {
    for (const cohort of this.cohorts) if (cohort.rows.length === 0) cohort.decoder.release?.();
    this.cohorts = this.cohorts.filter((c) => c.rows.length > 0);
  }

  private keepRows(cohort: Cohort, keep: readonly number[], tokens: number[]): void {
    if (keep.length === cohort.rows.length) {
      cohort.tokens = tokens;
      return;
    }
    if (keep.length > 0) cohort.decoder.select(keep);
    cohort.rows = keep.map((i) => cohort.rows[i] as Row);
    cohort.tokens = tokens;
  }

  private fail(request: Request, err: unknown, events: SequenceEvent[]): void {
    events.push({ kind: 'failed', id: request.id, error: serializeError(err) });
  }

  private activeRows(): number {
    return this.cohorts.reduce((n, c) => n + c.rows.length, 0);
  }

  private *requests(): Iterable<Request> {
    yield* this.waiting;
    for (const cohort of this.cohorts) for (const row of cohort.rows) yield row.request;
  }
}
