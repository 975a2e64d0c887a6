// Where a route's outputs (or dead letters) go.
import { headerPairs } from './headers.ts';
import type { OutputRecord } from './record.ts';

/** Takes a record into the open transaction of the input partition it came from. */
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
   * delivery needs it on the sink and the DLQ. From the call on, writes go to the stager.
   */
  useTransactions?(stager: TransactionStager): void;
  /** Resolves once the record is durably handed over (a broker ack, a flushed write). */
  write(record: OutputRecord): Promise<void>;
  close(): Promise<void>;
}

/** Bytes a record takes on the wire, with room for the framing a Kafka record batch adds. */
export function recordBytes(record: OutputRecord): number {
  let bytes = 128 + record.value.length + (record.key?.length ?? 0);
  for (const [name, value] of headerPairs(record.headers))
    bytes += 10 + Buffer.byteLength(name) + Buffer.byteLength(value);
  return bytes;
}
