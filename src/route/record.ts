// What flows through a route: a record as a source received it, and a record for a sink.

/** Where a record came from; DLQ headers and logs name it. */
export type RecordOrigin =
  | { kind: 'kafka'; topic: string; partition: number; offset: string }
  | { kind: 'bullmq'; queue: string; jobId: string }
  | { kind: 'redis-stream'; stream: string; id: string }
  | { kind: 'file'; path: string; line: number };

/** A header value as it came: bytes from Kafka (which need not be UTF-8), text elsewhere. */
export type HeaderValue = string | Buffer;

/** Headers by name; a name the record repeats holds its values in their order. */
export type Headers = Record<string, HeaderValue | HeaderValue[]>;

export interface SourceRecord {
  /** The bytes as received; a dead-lettered record carries them untouched. */
  value: Buffer;
  key: Buffer | null;
  headers: Headers;
  origin: RecordOrigin;
  /**
   * A Kafka tombstone: the value is null (an empty buffer here, `value` stays bytes for every
   * other stage); its dead letter is a tombstone again (src/route/dead-letter.ts).
   */
  tombstone?: true;
  /** Aborted when the source gave the record up (its Kafka partition was revoked): stop work on it. */
  signal?: AbortSignal;
}

export interface OutputRecord {
  key: Buffer | null;
  value: Buffer;
  /** Written with a null value (Kafka), `"value": null` (a file DLQ's envelope). */
  tombstone?: true;
  headers: Headers;
  origin: RecordOrigin;
}

export function describeOrigin(origin: RecordOrigin): string {
  switch (origin.kind) {
    case 'kafka':
      return `${origin.topic}[${origin.partition}]@${origin.offset}`;
    case 'bullmq':
      return `bullmq ${origin.queue} job ${origin.jobId}`;
    case 'redis-stream':
      return `stream ${origin.stream} entry ${origin.id}`;
    case 'file':
      return `${origin.path}:${origin.line}`;
  }
}
