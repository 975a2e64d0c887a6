// One record's way through a route: size check, decode, pick the input field, check its shape,
// inference, and the output record. Every refusal becomes a dead-letter record naming the stage;
// a retriable failure (a crashed inference thread) is handed back for the caller to retry. A sink
// failure during processing (a streamed partial record) rejects instead: the record is fine, it
// must only not be acknowledged.
import { HugotError, InputError, SinkError } from '../errors.ts';
import type { RouteConfig, WorkerConfig } from '../config/schema.ts';
import { deadLetter, type Stage } from './dead-letter.ts';
import { getPath, setPath } from './field-path.ts';
import { checkInputShape } from './input-shape.ts';
import type { OutputRecord, SourceRecord } from './record.ts';

export type Outcome =
  | { kind: 'output'; record: OutputRecord; result: unknown }
  | { kind: 'dead'; record: OutputRecord; code: string; message: string }
  | { kind: 'retry'; error: unknown };

/** What a submit may need besides the input: generation derives a request id and options from it. */
export interface SubmitContext {
  record: SourceRecord;
  /** The record as JSON (input.format json), else undefined. */
  parsed: unknown;
}

export type Submit = (pipeline: string, input: unknown, context: SubmitContext) => Promise<unknown>;

const utf8 = new TextDecoder('utf-8', { fatal: true });

export class RecordProcessor {
  private readonly route: RouteConfig;
  private readonly task: string;
  private readonly limits: WorkerConfig['limits'];
  private readonly submit: Submit;

  constructor(route: RouteConfig, task: string, limits: WorkerConfig['limits'], submit: Submit) {
    this.route = route;
    this.task = task;
    this.limits = limits;
    this.submit = submit;
  }

  async process(record: SourceRecord): Promise<Outcome> {
    const dead = (stage: Stage, code: string, message: string): Outcome => ({
      kind: 'dead',
      record: deadLetter(record, stage, code, message),
      code,
      message,
    });
    if (record.value.length > this.limits.maxRecordBytes) {
      return dead(
        'validate',
        'RECORD_TOO_LARGE',
        `the record is ${record.value.length} bytes, over limits.maxRecordBytes (${this.limits.maxRecordBytes})`,
      );
    }
    let text: string;
    try {
      text = utf8.decode(record.value);
    } catch {
      return dead('decode', 'INVALID_UTF8', 'the record is not valid UTF-8');
    }
    const { format, field } = this.route.input;
    let parsed: unknown;
    let input: unknown;
    if (format === 'text') {
      input = text;
    } else {
      try {
        parsed = JSON.parse(text) as unknown;
      } catch (err) {
        return dead(
          'decode',
          'INVALID_JSON',
          `the record is not JSON: ${err instanceof Error ? err.message : String(err)}`,
        );
      }
      input = getPath(parsed, field);
      if (input === undefined)
        return dead(
          'validate',
          'FIELD_MISSING',
          `the record has no '${field}' field (route input.field)`,
        );
    }
    try {
      checkInputShape(
        this.task,
        input,
        format === 'text' ? 'the record' : `'${field}'`,
        this.limits.maxTextLength,
      );
    } catch (err) {
      return dead('validate', 'WRONG_TYPE', err instanceof Error ? err.message : String(err));
    }
    let result: unknown;
    try {
      result = await this.submit(this.route.pipeline, input, { record, parsed });
    } catch (err) {
      if (err instanceof SinkError) throw err;
      if (err instanceof HugotError && err.retriable) return { kind: 'retry', error: err };
      const code = err instanceof HugotError ? err.code : 'INTERNAL';
      return dead('inference', code, err instanceof Error ? err.message : String(err));
    }
    const plain = toPlain(result);
    let value: unknown = plain;
    if (this.route.output.mode === 'merge') {
      value = format === 'json' ? parsed : { input: text };
      try {
        setPath(value, this.route.output.field, plain);
      } catch (err) {
        return dead(
          'validate',
          err instanceof InputError ? 'NOT_AN_OBJECT' : 'INTERNAL',
          err instanceof Error ? err.message : String(err),
        );
      }
    }
    return {
      kind: 'output',
      result: plain,
      record: {
        key: record.key,
        value: Buffer.from(JSON.stringify(value)),
        headers: { ...record.headers },
        origin: record.origin,
      },
    };
  }
}

/** Typed arrays (embeddings) become JSON arrays. */
function toPlain(value: unknown): unknown {
  if (ArrayBuffer.isView(value) && !(value instanceof DataView))
    return Array.from(value as unknown as ArrayLike<number>);
  if (Array.isArray(value)) return value.map(toPlain);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toPlain(v)]));
  }
  return value;
}
