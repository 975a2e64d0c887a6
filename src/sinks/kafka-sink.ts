// Outputs (or dead letters) to a Kafka topic: the input key kept, headers propagated, acks=all
// on an idempotent producer. Writes that arrive while a send is in flight go out together in the
// next send, so a busy route produces in batches without waiting for a timer. Under exactly-once
// delivery the Kafka source takes the writes into its partition transactions instead.
import type { KafkaProducerDriver, ProducedMessage } from '../consumers/kafka/driver.ts';
import type { OutputRecord } from '../stream/record.ts';
import type { Sink } from './sink.ts';

/** Takes a record into the open transaction of the input partition it came from. */
export interface TransactionStager {
  stage(topic: string, record: OutputRecord): void;
}

const MAX_BATCH = 1000;

interface Waiting {
  message: ProducedMessage;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class KafkaSink implements Sink {
  readonly topic: string;
  private readonly producer: KafkaProducerDriver;
  private connected: Promise<void> | undefined;
  private readonly waiting: Waiting[] = [];
  private sending: Promise<void> | undefined;
  private stager: TransactionStager | undefined;

  constructor(topic: string, producer: KafkaProducerDriver) {
    this.topic = topic;
    this.producer = producer;
  }

  /** Exactly-once: from now on writes join the source's transactions (this producer stays idle). */
  useTransactions(stager: TransactionStager): void {
    this.stager = stager;
  }

  write(record: OutputRecord): Promise<void> {
    if (this.stager !== undefined) {
      try {
        this.stager.stage(this.topic, record);
        return Promise.resolve();
      } catch (err) {
        return Promise.reject(err instanceof Error ? err : new Error(String(err)));
      }
    }
    return new Promise((resolve, reject) => {
      this.waiting.push({
        message: { key: record.key, value: record.value, headers: record.headers },
        resolve,
        reject,
      });
      this.sending ??= this.sendAll().finally(() => (this.sending = undefined));
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
      for (const w of this.waiting.splice(0)) w.reject(err);
      return;
    }
    // Let the writes of this tick join the first send.
    await new Promise((resolve) => setImmediate(resolve));
    while (this.waiting.length > 0) {
      const batch = this.waiting.splice(0, MAX_BATCH);
      try {
        await this.producer.send(
          this.topic,
          batch.map((w) => w.message),
        );
        for (const w of batch) w.resolve();
      } catch (err) {
        for (const w of batch) w.reject(err);
      }
    }
  }
}
