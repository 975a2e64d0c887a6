// Runs one record through its route and writes the outcome: the output to the sink, or a dead
// letter to the DLQ. A retriable failure is retried with backoff a few times, then dead-lettered.
// An output the sink cannot take (larger than its limit, or refused by it for what it is) is
// dead-lettered too, at the sink stage: writing it again would fail again and stall the route.
// When handle() resolves, the record is safe to acknowledge; when it rejects (a sink failed), it
// is not.
import { setTimeout as sleep } from 'node:timers/promises';
import { ClosedError, OutputRejectedError, SinkError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { recordBytes, type Sink, type TransactionStager } from './sink.ts';
import { deadLetter, fitDeadLetter } from './dead-letter.ts';
import { deadLetterCodeOf, type DeadLetterCode } from './dead-letter-codes.ts';
import { DeadLetterLog } from './dead-letter-log.ts';
import type { Outcome, RecordProcessor } from './processor.ts';
import type { TextCut } from './long-text.ts';
import { describeOrigin, type OutputRecord, type SourceRecord } from './record.ts';

export type Handled =
  | { kind: 'written'; output: OutputRecord; result: unknown }
  | { kind: 'dead-lettered'; dead: OutputRecord; code: DeadLetterCode };

export interface RouteCounters {
  received: number;
  written: number;
  deadLettered: number;
  retried: number;
  /** Texts cut before tokenization (over limits.maxTextLength, for a pipeline that truncates). */
  truncated: number;
}

export interface RouteRunnerOptions {
  name: string;
  processor: RecordProcessor;
  sink: Sink | undefined;
  dlq: Sink | undefined;
  retries: number;
  logger: Logger;
  /** Without a DLQ, log a refused record's bytes (base64); otherwise only its size and origin. */
  logRecordBytes?: boolean;
}

export class RouteRunner {
  readonly name: string;
  readonly counters: RouteCounters = {
    received: 0,
    written: 0,
    deadLettered: 0,
    retried: 0,
    truncated: 0,
  };
  private readonly options: RouteRunnerOptions;
  private readonly deadLetters: DeadLetterLog;

  constructor(options: RouteRunnerOptions) {
    this.name = options.name;
    this.options = options;
    this.deadLetters = new DeadLetterLog({ logger: options.logger, route: options.name });
  }

  /** Processes without writing: for sources that must order writes themselves (Kafka). */
  async decide(record: SourceRecord): Promise<Exclude<Outcome, { kind: 'retry' }>> {
    this.counters.received += 1;
    let outcome = await this.process(record);
    for (
      let attempt = 1;
      outcome.kind === 'retry' && attempt <= this.options.retries;
      attempt += 1
    ) {
      this.counters.retried += 1;
      this.options.logger.warn(
        { err: outcome.error, record: describeOrigin(record.origin), attempt },
        'retrying a record after a retriable failure',
      );
      await sleep(100 * 2 ** (attempt - 1));
      outcome = await this.process(record);
    }
    if (outcome.kind === 'retry') {
      const message =
        outcome.error instanceof Error ? outcome.error.message : String(outcome.error);
      const code = deadLetterCodeOf(outcome.error, 'RETRIES_EXHAUSTED');
      return {
        kind: 'dead',
        record: deadLetter(
          record,
          'inference',
          code,
          `failed after ${this.options.retries} retries: ${message}`,
        ),
        code,
        message,
      };
    }
    return outcome;
  }

  /** The processor catches what a record does; this is the last guard, for its own bugs. */
  private async process(record: SourceRecord): Promise<Outcome> {
    try {
      return await this.options.processor.process(record);
    } catch (err) {
      if (err instanceof SinkError || err instanceof ClosedError) throw err;
      const message = `processing failed: ${err instanceof Error ? err.message : String(err)}`;
      return {
        kind: 'dead',
        record: deadLetter(record, 'inference', 'INTERNAL', message),
        code: 'INTERNAL',
        message,
      };
    }
  }

  /**
   * Writes a decided outcome to the sink or the DLQ; under exactly-once into `transaction`, the
   * one of the input record the outcome belongs to.
   */
  async write(
    decided: Exclude<Outcome, { kind: 'retry' }>,
    transaction?: TransactionStager,
  ): Promise<Handled> {
    let outcome = decided;
    if (outcome.kind === 'output') {
      if (outcome.cut !== undefined) this.noteCut(outcome.cut, outcome.source);
      const sink = this.options.sink;
      let refusal: { code: DeadLetterCode; message: string } | undefined;
      const bytes = recordBytes(outcome.record);
      if (sink?.maxRecordBytes !== undefined && bytes > sink.maxRecordBytes) {
        refusal = {
          code: 'OUTPUT_TOO_LARGE',
          message: `the output is about ${bytes} bytes, over the sink's limit of ${sink.maxRecordBytes} (sink maxMessageBytes); shrink the output or raise the limit (with the topic's max.message.bytes)`,
        };
      } else {
        try {
          if (sink !== undefined) await sink.write(outcome.record, transaction);
          this.counters.written += 1;
          return { kind: 'written', output: outcome.record, result: outcome.result };
        } catch (err) {
          if (!(err instanceof OutputRejectedError)) throw err;
          refusal = { code: deadLetterCodeOf(err), message: err.message };
        }
      }
      outcome = {
        kind: 'dead',
        record: deadLetter(outcome.source, 'sink', refusal.code, refusal.message),
        ...refusal,
      };
    }
    if (this.options.dlq !== undefined) {
      const dlq = this.options.dlq;
      await dlq.write(fitDeadLetter(outcome.record, dlq.maxRecordBytes), transaction);
      this.deadLetters.note({
        code: outcome.code,
        message: outcome.message,
        origin: describeOrigin(outcome.record.origin),
      });
    } else {
      // Without a DLQ the log is all that is left of the refused record; its bytes (which may
      // hold personal data) go there only when the operator opted in.
      this.options.logger.error(
        {
          route: this.name,
          code: outcome.code,
          origin: describeOrigin(outcome.record.origin),
          bytes: outcome.record.value.length,
          ...(this.options.logRecordBytes === true
            ? {
                headers: outcome.record.headers,
                valueBase64: outcome.record.value.toString('base64'),
              }
            : {}),
        },
        `record refused: ${outcome.message}`,
      );
    }
    this.counters.deadLettered += 1;
    return { kind: 'dead-lettered', dead: outcome.record, code: outcome.code };
  }

  /** The first cut and every thousandth after it: enough to see it happens and how often. */
  private noteCut(cut: TextCut, source: SourceRecord): void {
    this.counters.truncated += 1;
    if ((this.counters.truncated - 1) % 1000 !== 0) return;
    this.options.logger.info(
      {
        route: this.name,
        origin: describeOrigin(source.origin),
        characters: cut.from,
        kept: cut.to,
        truncated: this.counters.truncated,
      },
      'a text over limits.maxTextLength was cut at a word before tokenization (the pipeline truncates at its token limit, so the model sees the same tokens); counted in truncated, logged for the first and every 1000th',
    );
  }

  async handle(record: SourceRecord): Promise<Handled> {
    return this.write(await this.decide(record));
  }
}
