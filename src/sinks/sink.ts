// Where a route's outputs (or dead letters) go.
import type { OutputRecord } from '../stream/record.ts';

export interface Sink {
  /** Resolves once the record is durably handed over (a broker ack, a flushed write). */
  write(record: OutputRecord): Promise<void>;
  close(): Promise<void>;
}
