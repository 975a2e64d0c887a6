// The dead-letter record: the original bytes and key untouched, the original headers kept, and
// headers in the manner of Kafka Connect's error reporting that say where the record came from,
// which stage refused it, and why.
import { hostname } from 'node:os';
import { recordBytes } from './sink.ts';
import type { DeadLetterCode, StageOf } from './dead-letter-codes.ts';
import type { Headers, OutputRecord, SourceRecord } from './record.ts';

export const DLQ_HEADER_PREFIX = 'hugot.error.';

export const workerId = `${hostname()}-${process.pid}`;

/**
 * The headers without any `hugot.error.*`: a record that arrives with them (read back from a
 * dead-letter topic, or spoofed by its producer) must not pass them on to an output, where they
 * would claim a failure that did not happen, nor mix them into a new dead letter's own.
 */
export function withoutErrorHeaders(headers: Headers): Headers {
  const kept: Headers = {};
  for (const [name, value] of Object.entries(headers))
    if (!name.startsWith(DLQ_HEADER_PREFIX)) kept[name] = value;
  return kept;
}

/** A code minted as a literal must go with its own stage (dead-letter-codes.ts). */
export function deadLetter<C extends DeadLetterCode>(
  record: SourceRecord,
  stage: StageOf<C>,
  code: C,
  message: string,
  now = new Date(),
): OutputRecord {
  const origin = record.origin;
  const where: Record<string, string> = { 'origin.kind': origin.kind };
  switch (origin.kind) {
    case 'kafka':
      Object.assign(where, {
        'origin.topic': origin.topic,
        'origin.partition': String(origin.partition),
        'origin.offset': origin.offset,
      });
      break;
    case 'bullmq':
      Object.assign(where, { 'origin.queue': origin.queue, 'origin.job.id': origin.jobId });
      break;
    case 'redis-stream':
      Object.assign(where, { 'origin.stream': origin.stream, 'origin.id': origin.id });
      break;
    case 'file':
      Object.assign(where, { 'origin.path': origin.path, 'origin.line': String(origin.line) });
      break;
  }
  const errorHeaders: Record<string, string> = {
    stage,
    code,
    message: message.slice(0, 2000),
    time: now.toISOString(),
    'worker.id': workerId,
  };
  for (const [k, v] of Object.entries(where)) errorHeaders[k] = v;
  const headers = withoutErrorHeaders(record.headers);
  for (const [k, v] of Object.entries(errorHeaders)) headers[`${DLQ_HEADER_PREFIX}${k}`] = v;
  return {
    key: record.key,
    value: record.value,
    headers,
    origin,
    ...(record.tombstone === true ? { tombstone: true } : {}),
  };
}

/**
 * A dead letter that fits the DLQ's record limit. The original value was accepted by the source,
 * but the error headers add to it, and a DLQ that refused it would stall the route. What gives way,
 * in order: the error message's length, the original headers, then the value itself. The origin
 * headers always stay, so a dropped value can be read again from where it came.
 */
export function fitDeadLetter(dead: OutputRecord, maxBytes: number | undefined): OutputRecord {
  if (maxBytes === undefined || recordBytes(dead) <= maxBytes) return dead;
  const errorOnly: Headers = {};
  for (const [name, value] of Object.entries(dead.headers))
    if (name.startsWith(DLQ_HEADER_PREFIX)) errorOnly[name] = value;
  const message = errorOnly[`${DLQ_HEADER_PREFIX}message`];
  if (typeof message === 'string') errorOnly[`${DLQ_HEADER_PREFIX}message`] = message.slice(0, 200);
  const shortened: OutputRecord = {
    ...dead,
    headers: { ...dead.headers, ...errorOnly },
  };
  if (recordBytes(shortened) <= maxBytes) return shortened;
  const dropped = Object.keys(dead.headers).length - Object.keys(errorOnly).length;
  const withoutHeaders: OutputRecord = {
    ...dead,
    headers: { ...errorOnly, [`${DLQ_HEADER_PREFIX}headers.dropped`]: String(dropped) },
  };
  if (recordBytes(withoutHeaders) <= maxBytes) return withoutHeaders;
  return {
    ...withoutHeaders,
    value: Buffer.alloc(0),
    headers: {
      ...withoutHeaders.headers,
      [`${DLQ_HEADER_PREFIX}value.dropped.bytes`]: String(dead.value.length),
    },
  };
}
