// A BullMQ queue as a route's source. Open-source BullMQ has no batch worker, so this is a Worker
// with high concurrency whose processor awaits the route: many jobs wait in the batcher together,
// which is how they batch, and the main thread only decodes and writes (inference runs on worker
// threads), so BullMQ's lock renewal keeps running.
//
// The record is `job.data` serialized as JSON (BullMQ stores data as JSON, so these are the bytes
// a dead letter carries). Outcomes:
//   output          written to the sink (if any); the job completes with the output JSON as its
//                   return value (what the 'bullmq-result' sink means)
//   refusal         (bad field, wrong type, too long, input refused by the model) written to the
//                   DLQ; the job completes at once, with {deadLettered, code, message} as its value
//   retriable       (an inference thread crashed, ONNX Runtime failed, overload) after the route's
//                   own retries the processor throws, so BullMQ's `attempts`/`backoff` (job options
//                   set by the producer) apply; when the last attempt fails, the job goes to the DLQ
//                   and stays in BullMQ's failed set
import { Queue, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { closeRedis, connectRedis, redisReady, type RedisTarget } from './redis-connection.ts';
import { deadLetter } from '../../route/dead-letter.ts';
import { DEAD_LETTER_CODES, type DeadLetterCode } from '../../route/dead-letter-codes.ts';
import type { Outcome } from '../../route/processor.ts';
import type { SourceRecord } from '../../route/record.ts';
import { reportRedisOutages } from './redis-outage-reporter.ts';
import type { LagSample, Source, SourceDeps } from '../source.ts';

type Decided = Exclude<Outcome, { kind: 'retry' }>;

/** Thrown to hand a retriable failure to BullMQ's attempts. */
export class RetriableJobError extends Error {
  override name = 'RetriableJobError';
  readonly code: DeadLetterCode;
  constructor(code: DeadLetterCode, message: string) {
    super(`${code}: ${message}`);
    this.code = code;
  }
}

export interface BullmqSourceOptions {
  queue: string;
  concurrency: number;
}

export class BullmqSource implements Source {
  readonly finished = undefined;
  private readonly options: BullmqSourceOptions;
  private readonly deps: SourceDeps;
  private worker: Worker | undefined;
  private connection: Redis | undefined;
  private unsubscribe: (() => void) | undefined;
  private stopReporting: (() => void) | undefined;
  private stopping = false;
  /** Dead letters of the last retriable failure per job, for the 'failed' handler. */
  private readonly lastFailure = new Map<string, Decided & { kind: 'dead' }>();
  private readonly deadLetterWrites = new Set<Promise<void>>();
  /** Opened at the first lag() (metrics), on the worker's connection. */
  private queue: Queue | undefined;

  private readonly redis: RedisTarget;

  constructor(options: BullmqSourceOptions, deps: SourceDeps, redis: RedisTarget) {
    this.options = options;
    this.deps = deps;
    this.redis = redis;
  }

  async start(): Promise<void> {
    const target = this.redis;
    this.connection = connectRedis(target, `hugot-bullmq-${this.options.queue}`);
    // Wrong credentials or certificates fail the start with a clear error instead of a
    // reconnect loop that logs the refusal forever.
    await redisReady(this.connection, target.url);
    const worker = new Worker(this.options.queue, (job) => this.process(job), {
      connection: this.connection,
      concurrency: this.options.concurrency,
    });
    this.worker = worker;
    worker.on('failed', (job, err) => {
      if (job !== undefined) this.onFailed(job, err);
    });
    worker.on('error', (err) =>
      this.deps.logger.error({ err, queue: this.options.queue }, 'BullMQ worker error'),
    );
    this.stopReporting = reportRedisOutages(this.connection, {
      reason: `Redis unreachable (BullMQ queue ${this.options.queue})`,
      onHealth: this.deps.onHealth,
      stopping: () => this.stopping,
    });
    // A worker that closes by itself takes no more jobs: failed for good, not a quiet stop.
    worker.on('closed', () => {
      if (!this.stopping)
        this.deps.onHealth?.({
          state: 'failed',
          reason: `the BullMQ worker for queue ${this.options.queue} closed`,
        });
    });
    this.unsubscribe = this.deps.onPressure((pressure) => {
      if (this.stopping) return;
      // Not waiting for active jobs: they are the ones the full queue is working through.
      if (pressure === 'pause') void worker.pause(true);
      else worker.resume();
    });
    await worker.waitUntilReady();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.unsubscribe?.();
    this.stopReporting?.();
    // close() waits for active jobs, whose processors wait for their outputs to be written.
    await this.worker?.close();
    await Promise.allSettled([...this.deadLetterWrites]);
    await this.queue?.close().catch(() => undefined);
    if (this.connection !== undefined) await closeRedis(this.connection);
  }

  /** Jobs waiting to be taken (BullMQ's waiting count: wait, paused and prioritized). */
  async lag(): Promise<LagSample[]> {
    if (this.connection === undefined || this.stopping) return [];
    this.queue ??= new Queue(this.options.queue, { connection: this.connection });
    return [{ of: { queue: this.options.queue }, lag: await this.queue.getWaitingCount() }];
  }

  private async process(job: Job): Promise<unknown> {
    const record = recordOf(job, this.options.queue);
    const outcome = await this.deps.runner.decide(record);
    // A failure that another attempt may cure goes to the job's own attempts before the DLQ.
    if (outcome.kind === 'dead' && DEAD_LETTER_CODES[outcome.code].retriable) {
      this.lastFailure.set(job.id ?? '', outcome);
      throw new RetriableJobError(outcome.code, outcome.message);
    }
    this.lastFailure.delete(job.id ?? '');
    await this.deps.runner.write(outcome);
    if (outcome.kind === 'dead') {
      return { deadLettered: true, code: outcome.code, message: outcome.message };
    }
    return JSON.parse(outcome.record.value.toString('utf8')) as unknown;
  }

  /** BullMQ gave up on the job (its last attempt failed): the job goes to the DLQ. */
  private onFailed(job: Job, err: Error): void {
    const id = job.id ?? '';
    const remembered = this.lastFailure.get(id);
    this.lastFailure.delete(id);
    const attempts = job.opts.attempts ?? 1;
    if (job.attemptsMade < attempts) return;
    const message = `BullMQ attempts exhausted (${job.attemptsMade} of ${attempts}): ${err.message}`;
    const code = remembered?.code ?? 'ATTEMPTS_EXHAUSTED';
    const dead: Decided = {
      kind: 'dead',
      record: deadLetter(
        recordOf(job, this.options.queue),
        remembered === undefined ? 'sink' : 'inference',
        code,
        message,
      ),
      code,
      message,
    };
    const write = this.deps.runner
      .write(dead)
      .then(() => undefined)
      .catch((writeErr: unknown) =>
        this.deps.logger.error(
          { err: writeErr, queue: this.options.queue, jobId: id },
          'a failed job could not be dead-lettered; it stays in the failed set',
        ),
      )
      .finally(() => this.deadLetterWrites.delete(write));
    this.deadLetterWrites.add(write);
  }
}

function recordOf(job: Job, queue: string): SourceRecord {
  // JSON.stringify(undefined) is undefined: a job without data reads as JSON null.
  const json = JSON.stringify(job.data as unknown) ?? 'null';
  // A producer's trace context rides in the job data (BullMQ jobs have no headers).
  const traceparent = (job.data as { traceparent?: unknown } | null)?.traceparent;
  return {
    value: Buffer.from(json, 'utf8'),
    key: null,
    headers: {
      'bullmq.job.name': job.name,
      ...(typeof traceparent === 'string' ? { traceparent } : {}),
    },
    origin: { kind: 'bullmq', queue, jobId: job.id ?? '' },
  };
}
