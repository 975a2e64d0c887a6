// The engine's step loop for pipelines whose output becomes final a segment at a time (Whisper:
// segmentwise.ts). Every step runs the next segment of every active request as one batch, so a
// request that arrives while others are mid-clip starts at the next step beside them, and a long
// clip streams its text a segment at a time. Only what a segment kept is streamed, so the
// streamed texts add up to the final text: trailing U+FFFD of a byte-level decode is held back
// (the bytes of one character may straddle two segments), and a request's last token event is
// held until its next segment so the rest of the text always has an event to ride on. Audio that
// became final (speech synthesis) rides on the first event a step emits or holds.
import { serializeError } from '../errors.ts';
import { concatSamples } from '../pipelines/audio/samples.ts';
import type {
  AudioChunk,
  SegmentJob,
  SegmentwiseGenerator,
} from '../pipelines/generation/segmentwise.ts';
import { cancelError, refuseRequestOptions, requestLoopStats } from './loop-requests.ts';
import type { LoopStats, SequenceEvent } from './protocol.ts';
import type { CancelReason } from './sequence.ts';
import type { StepLoop, SubmitRequest } from './step-loop.ts';

type TokenEvent = Extract<SequenceEvent, { kind: 'token' }>;

interface Request {
  id: number;
  job: SegmentJob;
  deadlineAt: number | undefined;
  cancelled?: CancelReason;
  /** Tokens of `job.tokens` already turned into events. */
  seen: number;
  /** Text already on emitted or held events. */
  text: string;
  held: TokenEvent | undefined;
}

export interface SegmentLoopLimits {
  /** Requests whose segments run together in one step. */
  maxActive: number;
}

export class SegmentLoop implements StepLoop {
  private readonly pipeline: SegmentwiseGenerator;
  private readonly limits: SegmentLoopLimits;
  private readonly now: () => number;
  private waiting: Request[] = [];
  private active: Request[] = [];

  private constructor(
    pipeline: SegmentwiseGenerator,
    limits: SegmentLoopLimits,
    now: () => number,
  ) {
    this.pipeline = pipeline;
    this.limits = limits;
    this.now = now;
  }

  static async create(
    pipeline: SegmentwiseGenerator,
    limits: SegmentLoopLimits,
    now: () => number = Date.now,
  ): Promise<SegmentLoop> {
    await pipeline.assertSegmentwise();
    return new SegmentLoop(pipeline, limits, now);
  }

  get idle(): boolean {
    return this.waiting.length === 0 && this.active.length === 0;
  }

  stats(): LoopStats {
    return requestLoopStats(this.waiting.length, this.active.length);
  }

  /** Reads the input now, so one the model cannot read fails at once, not at its first step. */
  async submit(request: SubmitRequest): Promise<SequenceEvent | undefined> {
    try {
      refuseRequestOptions(this.pipeline.task, request.options);
      const job = await this.pipeline.startJob(request.input);
      this.waiting.push({
        id: request.id,
        job,
        deadlineAt: request.deadlineAt,
        seen: 0,
        text: '',
        held: undefined,
      });
      return undefined;
    } catch (err) {
      return { kind: 'failed', id: request.id, error: serializeError(err) };
    }
  }

  cancel(id: number, reason: CancelReason): void {
    for (const request of [...this.waiting, ...this.active])
      if (request.id === id) request.cancelled ??= reason;
  }

  async step(): Promise<SequenceEvent[]> {
    const events: SequenceEvent[] = [];
    this.reap(events);
    const room = this.limits.maxActive - this.active.length;
    if (room > 0) this.active.push(...this.waiting.splice(0, room));
    if (this.active.length === 0) return events;
    const running = this.active;
    this.active = [];
    try {
      await this.pipeline.advance(running.map((r) => r.job));
    } catch (err) {
      for (const request of running)
        events.push({ kind: 'failed', id: request.id, error: serializeError(err) });
      return events;
    }
    for (const request of running) {
      if (request.job.error !== undefined) {
        events.push({ kind: 'failed', id: request.id, error: serializeError(request.job.error) });
        continue;
      }
      try {
        if (await this.emit(request, events)) continue;
      } catch (err) {
        events.push({ kind: 'failed', id: request.id, error: serializeError(err) });
        continue;
      }
      this.active.push(request);
    }
    return events;
  }

  /** The request's new tokens as events; true when it is done (its done event pushed too). */
  private async emit(request: Request, events: SequenceEvent[]): Promise<boolean> {
    const { job, id } = request;
    const queue: TokenEvent[] = request.held === undefined ? [] : [request.held];
    for (; request.seen < job.tokens.length; request.seen += 1)
      queue.push({
        kind: 'token',
        id,
        tokenId: job.tokens[request.seen] as number,
        text: '',
        index: request.seen,
      });
    const result = job.done ? await this.pipeline.result(job) : undefined;
    const text = result?.text ?? stablePrefix(await this.pipeline.textOf(job));
    const first = queue[0];
    if (first !== undefined && text.startsWith(request.text)) {
      first.text += text.slice(request.text.length);
      request.text = text;
    }
    const audio = first === undefined ? undefined : this.pipeline.takeAudio?.(job);
    if (first !== undefined && audio !== undefined) first.audio = joined(first.audio, audio);
    if (result === undefined) {
      request.held = queue.pop();
      events.push(...queue);
      return false;
    }
    events.push(...queue, { kind: 'done', id, result });
    return true;
  }

  /** Cancelled and overdue requests fail and leave, wherever they are. */
  private reap(events: SequenceEvent[]): void {
    const now = this.now();
    const keep = (request: Request): boolean => {
      if (request.cancelled === undefined && request.deadlineAt !== undefined)
        if (now >= request.deadlineAt) request.cancelled = 'deadline';
      if (request.cancelled === undefined) return true;
      events.push({
        kind: 'failed',
        id: request.id,
        error: serializeError(
          cancelError(this.pipeline.task, request.cancelled, request.job.tokens.length),
        ),
      });
      return false;
    };
    this.waiting = this.waiting.filter(keep);
    this.active = this.active.filter(keep);
  }
}

/** A held event's audio and the step's, one after the other. */
function joined(held: AudioChunk | undefined, next: AudioChunk): AudioChunk {
  if (held === undefined) return next;
  return { ...next, samples: concatSamples([held.samples, next.samples]) };
}

/** The text without its trailing U+FFFD: bytes that may still become a character. */
function stablePrefix(text: string): string {
  let end = text.length;
  while (end > 0 && text[end - 1] === '\ufffd') end -= 1;
  return text.slice(0, end);
}
