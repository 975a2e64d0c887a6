// The records a streamed generation writes: partial records while the request generates, then
// one final record. Every one carries the request id and a sequence number (0, 1, 2, ... per
// request, the final's the last), so consumers can put a request together and drop the
// duplicates a re-run sends. Each record's `delta` is the text since the previous record of the
// request: the deltas of all records, final included, add up to the final's full `text`. Speech
// synthesis streams audio the same way: each record's `audioDelta` is a WAV file of the samples
// since the previous record, and their samples add up to the final's `audio`.
import type { RouteConfig } from '../config/schema.ts';
import type { EngineResult } from '../generative/engine-event.ts';
import type { FinishReason } from '../pipelines/generation/generation-progress.ts';
import { withoutErrorHeaders } from './dead-letter.ts';
import { setPath } from './field-path.ts';
import type { OutputRecord, RecordOrigin, SourceRecord } from './record.ts';

/** Which record a partial belongs to, for consumers that see the partials without the record. */
export interface PartialSource {
  /** The record's key as UTF-8 text (base64 when it is not UTF-8), or null. */
  key: string | null;
  /** The record's `id` field (a JSON input's top level), when it is a string or a number. */
  id?: string | number;
}

export interface PartialValue {
  requestId: string;
  sequence: number;
  final: false;
  source: PartialSource;
  /** Text settled since the previous record of this request (may be empty: text held back). */
  delta: string;
  /** Tokens generated so far. */
  generatedTokens: number;
  /** Speech synthesis: a WAV file (base64) of the samples since the previous record, if any. */
  audioDelta?: string;
}

export interface FinalValue {
  requestId: string;
  sequence: number;
  final: true;
  delta: string;
  /** The whole generated text. */
  text: string;
  tokenIds: number[];
  finishReason: FinishReason;
  promptTokens: number;
  generatedTokens: number;
  /** A json_schema output, parsed. */
  json?: unknown;
  /** Set when the output misses its responseFormat: the route dead-letters the record. */
  formatError?: string;
  toolCalls?: EngineResult['toolCalls'];
  /** Speech recognition's timestamped or language chunks. */
  chunks?: EngineResult['chunks'];
  /** Speech synthesis: the samples since the previous record (WAV, base64). */
  audioDelta?: string;
  /** Speech synthesis: the whole waveform (a WAV file) and its rate. */
  audio?: Uint8Array;
  samplingRate?: number;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

export function partialSource(record: SourceRecord, parsed: unknown): PartialSource {
  let key: string | null = null;
  if (record.key !== null) {
    try {
      key = utf8.decode(record.key);
    } catch {
      key = record.key.toString('base64');
    }
  }
  const id =
    parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)['id']
      : undefined;
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id))
    ? { key, id }
    : { key };
}

/** A stable id from where the record came from: the same record read again gets the same id. */
export function requestIdOf(origin: RecordOrigin): string {
  switch (origin.kind) {
    case 'kafka':
      return `${origin.topic}-${origin.partition}-${origin.offset}`;
    case 'bullmq':
      return `${origin.queue}-${origin.jobId}`;
    case 'redis-stream':
      return `${origin.stream}-${origin.id}`;
    case 'file':
      return `${origin.path}:${origin.line}`;
  }
}

/**
 * A partial record: the partial value alone (`output.mode: result`), or under `output.field`
 * (`merge`) so that partials and the final are found at the same path; the input record is not
 * repeated in every partial. Key and headers are the input's, so a partial lands on the same
 * Kafka partition as its final.
 */
export function partialRecord(
  record: SourceRecord,
  output: Pick<RouteConfig['output'], 'mode' | 'field'>,
  partial: PartialValue,
): OutputRecord {
  let value: unknown = partial;
  if (output.mode === 'merge') {
    value = {};
    setPath(value, output.field, partial);
  }
  return {
    key: record.key,
    value: Buffer.from(JSON.stringify(value)),
    headers: withoutErrorHeaders(record.headers),
    origin: record.origin,
  };
}
