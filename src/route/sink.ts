// Where a route's outputs (or dead letters) go.
import { headerPairs } from './headers.ts';
import type { OutputRecord } from './record.ts';

/**
 * The open transaction of one input record: its outputs and dead letters are staged into it and
 * go out with its offset. Each write carries its own, so no stager state is shared between
 * writes of different records.
 */
export interface TransactionStager {
  stage(topic: string, record: OutputRecord): void;
}

export interface Sink {
  /**
   * The largest record the destination takes (a Kafka topic's max message size). A larger output
   * goes to the DLQ before it is written: a broker refusing it would stall the route.
   */
  readonly maxRecordBytes?: number | undefined;
  /**
   * Present on a sink whose writes can join the source's transactions (a Kafka sink): exactly-once
   * delivery needs it on the sink and the DLQ. From the call on, each write must carry the
   * transaction of its input record, and is staged into it instead of being sent.
   */
  useTransactions?(): void;
  /**
   * Resolves once the record is durably handed over (a broker ack, a flushed write), or, with a
   * `transaction` (exactly-once, on a sink that uses transactions), once it is staged into it.
   * Sinks without transactions ignore the argument.
   */
  write(record: OutputRecord, transaction?: TransactionStager): Promise<void>;
  close(): Promise<void>;
}

/** Bytes a record takes on the wire, with room for the framing a Kafka record batch adds. */
export function recordBytes(record: OutputRecord): number {
  let bytes = 128 + record.value.length + (record.key?.length ?? 0);
  for (const [name, value] of headerPairs(record.headers))
    bytes += 10 + Buffer.byteLength(name) + Buffer.byteLength(value);
  return bytes;
}
