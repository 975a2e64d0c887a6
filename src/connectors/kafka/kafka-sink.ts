// Outputs (or dead letters) to a Kafka topic: the input key kept, headers propagated, acks=all
// on an idempotent producer. Writes that arrive while a send is in flight go out together in the
// next send, so a busy route produces in batches without waiting for a timer. A send holds at
// most maxRecordBytes (the broker's message.max.bytes bounds a record batch, not a message), and a
// send the broker refuses for its size or content is retried one message at a time, so only the
// offending output is rejected (OutputRejectedError: its record goes to the DLQ) and no other is
// written twice. Under exactly-once delivery the Kafka source takes the writes into its partition
// transactions instead.
import { producedMessage, type KafkaProducerDriver, type ProducedMessage } from './driver.ts';
import { OutputRejectedError } from '../../errors.ts';
import type { ConnectionHealth } from '../connection-health.ts';
import { errorChain } from './kafka-security.ts';
import { isTransient } from './write-attempts.ts';
import { describeOrigin, type OutputRecord } from '../../route/record.ts';
import { recordBytes, type Sink, type TransactionStager } from '../../route/sink.ts';

const MAX_BATCH = 1000;

/** Broker answers that refuse a message for what it is: sending it again cannot succeed. */
const REJECTIONS = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE', 'INVALID_RECORD']);

export interface KafkaSinkOptions {
  /** The topic's max message size (default 1 MiB, the broker's default). */
  maxRecordBytes?: number | undefined;
  /**
   * Hears broker outages as sends see them: a send failing for the connection is 'degraded'
   * (the records are delivered again by the source), the next send that succeeds 'healthy'.
   */
  onHealth?: ((health: ConnectionHealth) => void) | undefined;
}

interface Waiting {
  message: ProducedMessage;
  bytes: number;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class KafkaSink implements Sink {
  readonly topic: string;
  readonly maxRecordBytes: number;
  private readonly producer: KafkaProducerDriver;
  private connected: Promise<void> | undefined;
  private readonly waiting: Waiting[] = [];
  private sending: Promise<void> | undefined;
  private transactional = false;
  private readonly onHealth: KafkaSinkOptions['onHealth'];
  private outage: { since: number; attempt: number } | undefined;

  constructor(topic: string, producer: KafkaProducerDriver, options: KafkaSinkOptions = {}) {
    this.topic = topic;
    this.producer = producer;
    this.maxRecordBytes = options.maxRecordBytes ?? 1_048_576;
    this.onHealth = options.onHealth;
  }

  /** Exactly-once: from now on writes join the source's transactions (this producer stays idle). */
  useTransactions(): void {
    this.transactional = true;
  }

  write(record: OutputRecord, transaction?: TransactionStager): Promise<void> {
    if (this.transactional) {
      try {
        // Sent on its own, an output would be outside its input's transaction: a duplicate
        // once that transaction aborts and the input is read again.
        if (transaction === undefined)
          throw new Error(`no transaction for ${describeOrigin(record.origin)}`);
        transaction.stage(this.topic, record);
        return Promise.resolve();
      } catch (err) {
        return Promise.reject(err instanceof Error ? err : new Error(String(err)));
      }
    }
    return new Promise((resolve, reject) => {
      this.waiting.push({
        message: producedMessage(record),
        bytes: recordBytes(record),
        resolve,
        reject,
      });
      this.startSending();
    });
  }

  private startSending(): void {
    this.sending ??= this.sendAll().finally(() => {
      this.sending = undefined;
      // A write that came after the last send's loop ended, but before this callback, would
      // otherwise wait for a later write to carry it.
      if (this.waiting.length > 0) this.startSending();
    });
  }

  async close(): Promise<void> {
    while (this.sending !== undefined) await this.sending;
    if (this.connected !== undefined) await this.producer.disconnect();
  }

  private async sendAll(): Promise<void> {
    this.connected ??= this.producer.connect();
    try {
      await this.connected;
    } catch (err) {
      this.connected = undefined;
      this.failed(err);
      for (const w of this.waiting.splice(0)) w.reject(err);
      return;
    }
    // Let the writes of this tick join the first send.
    await new Promise((resolve) => setImmediate(resolve));
    while (this.waiting.length > 0) {
      const batch = this.waiting.splice(0, this.batchLength());
      try {
        await this.producer.send(
          this.topic,
          batch.map((w) => w.message),
        );
        this.sent();
        for (const w of batch) w.resolve();
      } catch (err) {
        this.failed(err);
        if (!isRejection(err)) for (const w of batch) w.reject(err);
        else if (batch.length === 1) for (const w of batch) w.reject(rejected(err));
        else await this.sendOneByOne(batch);
      }
    }
  }

  private failed(err: unknown): void {
    if (this.onHealth === undefined || !isTransient(err)) return;
    this.outage ??= { since: performance.now(), attempt: 0 };
    this.outage.attempt += 1;
    const message = err instanceof Error ? err.message : String(err);
    this.onHealth({
      state: 'degraded',
      reason: `Kafka unreachable (topic ${this.topic}): ${message}`,
      attempt: this.outage.attempt,
      sinceMs: Math.round(performance.now() - this.outage.since),
    });
  }

  private sent(): void {
    if (this.outage === undefined) return;
    this.outage = undefined;
    this.onHealth?.({ state: 'healthy' });
  }

  /** How many waiting writes the next send takes: up to MAX_BATCH and maxRecordBytes together. */
  private batchLength(): number {
    let bytes = 0;
    let length = 0;
    for (const w of this.waiting) {
      if (length === MAX_BATCH || (length > 0 && bytes + w.bytes > this.maxRecordBytes)) break;
      bytes += w.bytes;
      length += 1;
    }
    return length;
  }

  private async sendOneByOne(batch: Waiting[]): Promise<void> {
    for (const w of batch) {
      try {
        await this.producer.send(this.topic, [w.message]);
        this.sent();
        w.resolve();
      } catch (err) {
        this.failed(err);
        w.reject(isRejection(err) ? rejected(err) : err);
      }
    }
  }
}

/**
 * kafkajs wraps a protocol error (which carries the `type`) in a non-retriable error (which keeps
 * its message); @platformatic/kafka aggregates protocol errors (which carry the `apiId`).
 */
function isRejection(err: unknown): boolean {
  for (const e of errorChain(err)) {
    const type = (e as { type?: unknown }).type ?? (e as { apiId?: unknown }).apiId;
    if (typeof type === 'string' && REJECTIONS.has(type)) return true;
    if (/larger than the max message size|record list.*too large/i.test(e.message)) return true;
  }
  return false;
}

function rejected(err: unknown): OutputRejectedError {
  return new OutputRejectedError(`the Kafka broker refused the output: ${brokerAnswer(err)}`, {
    cause: err,
  });
}

/**
 * The broker's own error in the chain, as "NAME (error code N): message", so that a dead letter
 * says what the broker said, not the client's wrapper ("Producing messages failed"); the outer
 * message where no protocol error is found.
 */
export function brokerAnswer(err: unknown): string {
  for (const e of errorChain(err)) {
    const fields = e as { type?: unknown; apiId?: unknown; code?: unknown; apiCode?: unknown };
    const name = fields.type ?? fields.apiId;
    if (typeof name !== 'string' || !REJECTIONS.has(name)) continue;
    const code = typeof fields.apiCode === 'number' ? fields.apiCode : fields.code;
    const server = (e as { serverErrorMessage?: unknown }).serverErrorMessage;
    const detail = typeof server === 'string' && server !== '' ? ` (${server})` : '';
    return `${name}${typeof code === 'number' ? ` (error code ${code})` : ''}: ${e.message}${detail}`;
  }
  return err instanceof Error ? err.message : String(err);
}
