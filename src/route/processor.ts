// One record's way through a route: size check, decode, pick the input field, check its shape and
// limits, inference, and the output record. Every refusal becomes a dead-letter record naming the
// stage, and so does any failure nobody foresaw (a stack overflow, a bug) while this record is
// handled: it is this record's problem, never the worker's or the partition's. A retriable
// failure (a crashed inference thread) is handed back for the caller to retry. A sink failure
// during processing (a streamed partial record) rejects instead: the record is fine, it must only
// not be acknowledged.
import { ClosedError, HugotError, SinkError } from '../errors.ts';
import type { RouteConfig, WorkerConfig } from '../config/schema.ts';
import { deadLetter, withoutErrorHeaders } from './dead-letter.ts';
import {
  deadLetterCodeOf,
  type DeadLetterCode,
  type Stage,
  type StageOf,
} from './dead-letter-codes.ts';
import { checkGenerationOutput } from './generation-output.ts';
import { getPath, setPath } from './field-path.ts';
import { AudioInputs, AudioRefusedError } from './audio-input.ts';
import { ImageInputs, ImageRefusedError } from './image-input.ts';
import { OverLimitError, checkInputShape } from './input-shape.ts';
import { cutLongText, type TextCut } from './long-text.ts';
import {
  executionOf,
  findTask,
  readsAudio,
  readsImageField,
  readsImages,
} from '../pipelines/registry.ts';
import { outputShaper, type OutputShaper } from './output-keys.ts';
import {
  vectorShaper,
  VectorTooShortError,
  type EncodedVectors,
  type VectorShaper,
} from './vector-output.ts';
import { nestsDeeperThan, SpliceRefused, spliceField } from './json-text.ts';
import type { OutputRecord, SourceRecord } from './record.ts';
import { isSchemaFormat } from '../config/record-format-schema.ts';
import type { Decoded, RouteSchemas } from '../schema/route-schemas.ts';
import { VectorBytes } from '../schema/vector-bytes.ts';

export type Outcome =
  | {
      kind: 'output';
      record: OutputRecord;
      result: unknown;
      source: SourceRecord;
      /** The input text's length when it was cut before tokenization, and the length kept. */
      cut?: TextCut;
    }
  | { kind: 'dead'; record: OutputRecord; code: DeadLetterCode; message: string }
  | { kind: 'retry'; error: unknown };

/** What a submit may need besides the input: generation derives a request id and options from it. */
export interface SubmitContext {
  record: SourceRecord;
  /** The record as JSON (input.format json) or as decoded by its schema, else undefined. */
  parsed: unknown;
}

export type Submit = (pipeline: string, input: unknown, context: SubmitContext) => Promise<unknown>;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** TOO_LARGE for a text or list over its limit, WRONG_TYPE for a shape the task does not take. */
function shapeRefusalCode(err: unknown): 'TOO_LARGE' | 'WRONG_TYPE' {
  return err instanceof OverLimitError ? 'TOO_LARGE' : 'WRONG_TYPE';
}

/**
 * A refusal found while handling a record: becomes its dead letter (never leaves process()).
 * Generic so that a code written out must come with its own stage.
 */
class Refusal<C extends DeadLetterCode = DeadLetterCode> extends Error {
  override name = 'Refusal';
  readonly stage: Stage;
  readonly code: C;
  constructor(stage: StageOf<C>, code: C, message: string) {
    super(message);
    this.stage = stage;
    this.code = code;
  }
}

const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

export interface ProcessorOptions {
  /** The route's pipeline's options as declared: what the task's long-text and Python shapes read. */
  pipelineOptions?: Record<string, unknown>;
  /** Schema Registry formats in (input.format, keyFormat) and out (output.schema). */
  schemas?: RouteSchemas | undefined;
}

export class RecordProcessor {
  private readonly route: RouteConfig;
  private readonly task: string;
  private readonly limits: WorkerConfig['limits'];
  private readonly submit: Submit;
  private readonly images: ImageInputs | undefined;
  /** The input is an object whose `image` is read as an image (visual question answering). */
  private readonly imageField: boolean;
  private readonly audio: AudioInputs | undefined;
  /** The pipeline truncates at a token cap: an over-limit text is cut at a word, not refused. */
  private readonly cutsLongText: boolean;
  /** Only a decoder-only task takes a responseFormat, so only its results can miss one. */
  private readonly decoderOnly: boolean;
  private readonly shapeOutput: OutputShaper;
  private readonly encodeVectors: VectorShaper;
  private readonly schemas: RouteSchemas | undefined;

  constructor(
    route: RouteConfig,
    task: string,
    limits: WorkerConfig['limits'],
    submit: Submit,
    options: ProcessorOptions = {},
  ) {
    const pipelineOptions = options.pipelineOptions ?? {};
    this.schemas = options.schemas;
    this.cutsLongText = findTask(task)?.cutsLongText?.(pipelineOptions) === true;
    this.decoderOnly = executionOf(task) === 'decoderOnly';
    this.shapeOutput = outputShaper(task, route.output, pipelineOptions);
    this.encodeVectors = vectorShaper(route.output.vectors, {
      bytes: options.schemas?.output !== undefined,
    });
    this.route = route;
    this.task = task;
    this.limits = limits;
    this.submit = submit;
    this.imageField = readsImageField(task);
    this.images =
      readsImages(task) || this.imageField
        ? new ImageInputs({
            from: route.input.images?.from ?? 'base64',
            root: route.input.images?.root,
            maxPixels: limits.maxImagePixels,
            maxBytes: limits.maxImageBytes,
          })
        : undefined;
    this.audio = readsAudio(task)
      ? new AudioInputs({ maxBytes: limits.maxAudioBytes, maxSeconds: limits.maxAudioSeconds })
      : undefined;
  }

  async process(record: SourceRecord): Promise<Outcome> {
    const at: { stage: Stage } = { stage: 'decode' };
    try {
      return await this.steps(record, at);
    } catch (err) {
      // The record is fine: a sink failed, or the worker is shutting down and gave it up.
      if (err instanceof SinkError || err instanceof ClosedError) throw err;
      // instanceof knows the class, not which code it was made with.
      const refusal =
        err instanceof Refusal
          ? (err as Refusal)
          : new Refusal(at.stage, deadLetterCodeOf(err), `${at.stage} failed: ${messageOf(err)}`);
      return {
        kind: 'dead',
        record: deadLetter(record, refusal.stage, refusal.code, refusal.message),
        code: refusal.code,
        message: refusal.message,
      };
    }
  }

  private async steps(record: SourceRecord, at: { stage: Stage }): Promise<Outcome> {
    const limits = this.limits;
    let cut: TextCut | undefined;
    if (record.tombstone === true)
      throw new Refusal(
        'decode',
        'TOMBSTONE',
        'the record is a tombstone (a null value, a deletion on a compacted topic): there is nothing to run the pipeline on',
      );
    at.stage = 'validate';
    if (record.value.length > limits.maxRecordBytes) {
      throw new Refusal(
        'validate',
        'RECORD_TOO_LARGE',
        `the record is ${record.value.length} bytes, over limits.maxRecordBytes (${limits.maxRecordBytes})`,
      );
    }
    const { format, field, keyFormat } = this.route.input;
    at.stage = 'decode';
    let text: string | undefined;
    let decoded: Decoded | undefined;
    const schemas = this.schemas;
    if (isSchemaFormat(format) || isSchemaFormat(keyFormat)) {
      if (schemas === undefined) throw new Error('a schema format without its registry');
      if (isSchemaFormat(keyFormat) && record.key !== null && record.key.length > 0)
        await schemas.decode(record.key, keyFormat, 'key', record.signal);
      if (isSchemaFormat(format))
        decoded = await schemas.decode(record.value, format, 'value', record.signal);
    }
    if (format !== 'bytes' && decoded === undefined) {
      try {
        text = utf8.decode(record.value);
      } catch {
        throw new Refusal('decode', 'INVALID_UTF8', 'the record is not valid UTF-8');
      }
    }
    let parsed: unknown;
    let input: unknown;
    if (format === 'bytes') input = record.value;
    else if (format === 'text') input = text;
    else if (decoded !== undefined) {
      parsed = decoded.value;
      input = getPath(parsed, field);
      if (input === undefined || input === null)
        throw new Refusal(
          'validate',
          'FIELD_MISSING',
          `the record has no '${field}' field (route input.field)`,
        );
    } else {
      // Checked before parsing: what a deep value breaks (JSON.stringify, the copy to an
      // inference thread) recurses, and a stack overflow there must not be the first sign.
      if (nestsDeeperThan(text as string, limits.maxJsonDepth))
        throw new Refusal(
          'decode',
          'JSON_TOO_DEEP',
          `the record nests deeper than limits.maxJsonDepth (${limits.maxJsonDepth}) levels`,
        );
      try {
        parsed = JSON.parse(text as string) as unknown;
      } catch (err) {
        throw new Refusal('decode', 'INVALID_JSON', `the record is not JSON: ${messageOf(err)}`);
      }
      input = getPath(parsed, field);
      if (input === undefined)
        throw new Refusal(
          'validate',
          'FIELD_MISSING',
          `the record has no '${field}' field (route input.field)`,
        );
    }
    at.stage = 'validate';
    const recordInput = input;
    const label = format === 'json' || decoded !== undefined ? `'${field}'` : 'the record';
    if (this.imageField) input = await this.imageFieldInput(input, label, field);
    else if (this.images !== undefined) {
      try {
        input = await this.images.bytesOf(input, label);
      } catch (err) {
        if (err instanceof ImageRefusedError)
          throw new Refusal('validate', err.reason, err.message);
        throw err;
      }
    } else if (this.audio !== undefined) {
      try {
        input = this.audio.bytesOf(input, label);
      } catch (err) {
        if (err instanceof AudioRefusedError)
          throw new Refusal('validate', err.reason, err.message);
        throw err;
      }
    } else {
      if (this.cutsLongText && typeof input === 'string') {
        const kept = cutLongText(input, limits.maxTextLength);
        if (kept !== undefined) {
          cut = { from: input.length, to: kept.length };
          input = kept;
        }
      }
      try {
        checkInputShape(this.task, input, label, limits);
      } catch (err) {
        throw new Refusal('validate', shapeRefusalCode(err), messageOf(err));
      }
    }
    this.checkGenerationOptions(parsed);
    at.stage = 'inference';
    let result: unknown;
    try {
      result = await this.submit(this.route.pipeline, input, { record, parsed });
    } catch (err) {
      if (err instanceof SinkError || err instanceof ClosedError) throw err;
      if (err instanceof HugotError && err.retriable) return { kind: 'retry', error: err };
      throw new Refusal('inference', deadLetterCodeOf(err), messageOf(err));
    }
    at.stage = 'output';
    if (this.decoderOnly) checkGenerationOutput(result);
    let vectors: EncodedVectors;
    try {
      vectors = this.encodeVectors(this.shapeOutput(result, recordInput));
    } catch (err) {
      if (!(err instanceof VectorTooShortError)) throw err;
      throw new Refusal('output', 'VECTOR_TOO_SHORT', err.message);
    }
    const plain = toPlain(vectors.result);
    const written = schemas?.output;
    let bytes: Buffer;
    if (written !== undefined) {
      // Compact vectors stay bytes until the output's format says how it holds them.
      const held = toPlain(vectors.result, true);
      const value = this.route.output.mode === 'merge' ? this.merged(parsed, text, held) : held;
      bytes = await written.encode(value, held, decoded, record.signal);
    } else bytes = Buffer.from(this.jsonValue(plain, parsed, text, decoded !== undefined));
    return {
      kind: 'output',
      result: plain,
      source: record,
      ...(cut !== undefined ? { cut } : {}),
      record: {
        key: record.key,
        value: bytes,
        headers: { ...withoutErrorHeaders(record.headers), ...vectors.headers },
        origin: record.origin,
      },
    };
  }

  /**
   * The output as JSON text: the result alone, or merged into the record (spliced into its text,
   * or copied into the record its schema decoded).
   */
  private jsonValue(
    plain: unknown,
    parsed: unknown,
    text: string | undefined,
    wasDecoded: boolean,
  ): string {
    const resultJson = JSON.stringify(plain);
    let value = resultJson;
    if (wasDecoded && this.route.output.mode === 'merge')
      // A record decoded by its schema, written as JSON (a sink without output.schema).
      value = JSON.stringify(toPlain(this.merged(parsed, text, plain)));
    else if (this.route.output.mode === 'merge') {
      // Spliced into the record's own text: nothing outside the output field changes.
      const base =
        this.route.input.format === 'json' ? (text as string) : JSON.stringify({ input: text });
      try {
        value = spliceField(base, this.route.output.field, resultJson, this.route.output.overwrite);
        // The decoder drops a leading byte-order mark and so does the output: JSON text must
        // not start with one (RFC 8259), and strict JSONL readers refuse the line. A dead letter
        // still carries the record's bytes, mark and all.
      } catch (err) {
        if (!(err instanceof SpliceRefused)) throw err;
        throw new Refusal(
          'output',
          err.reason === 'not-an-object' ? 'NOT_AN_OBJECT' : 'OUTPUT_FIELD_EXISTS',
          err.message,
        );
      }
    }
    return value;
  }

  /**
   * The record with the result at output.field, for an output written with a schema: the decoded
   * record (or the JSON record, parsed) copied, nothing else in it changed.
   */
  private merged(parsed: unknown, text: string | undefined, result: unknown): unknown {
    const base = parsed ?? (text === undefined ? undefined : (JSON.parse(text) as unknown));
    const { field, overwrite } = this.route.output;
    if (base === null || typeof base !== 'object' || Array.isArray(base))
      throw new Refusal(
        'output',
        'NOT_AN_OBJECT',
        `cannot add the result at '${field}': the record is not an object`,
      );
    if (!overwrite && getPath(base, field) !== undefined && getPath(base, field) !== null)
      throw new Refusal(
        'output',
        'OUTPUT_FIELD_EXISTS',
        `the record already has '${field}' (output.field); set output.overwrite: true to replace it`,
      );
    const copy = { ...(base as Record<string, unknown>) };
    setPath(copy, field, result);
    return copy;
  }

  /**
   * An object input with an image beside text: its shape and texts checked first, then its
   * `image` read as an image input (base64, or a path under input.images.root).
   */
  private async imageFieldInput(input: unknown, label: string, field: string): Promise<unknown> {
    try {
      checkInputShape(this.task, input, label, this.limits);
    } catch (err) {
      throw new Refusal('validate', shapeRefusalCode(err), messageOf(err));
    }
    const record = input as Record<string, unknown>;
    const at = field === '$' ? "'image'" : `'${field}.image'`;
    try {
      return { ...record, image: await (this.images as ImageInputs).bytesOf(record['image'], at) };
    } catch (err) {
      if (err instanceof ImageRefusedError) throw new Refusal('validate', err.reason, err.message);
      throw err;
    }
  }

  /** A record's own generation options: at most limits.maxStopSequences stop sequences. */
  private checkGenerationOptions(parsed: unknown): void {
    const optionsField = this.route.generation?.optionsField;
    if (optionsField === undefined) return;
    const stops = (getPath(parsed, optionsField) as { stopSequences?: unknown } | undefined)
      ?.stopSequences;
    if (!Array.isArray(stops)) return;
    const at = `'${optionsField}.stopSequences'`;
    if (stops.length > this.limits.maxStopSequences)
      throw new Refusal(
        'validate',
        'TOO_LARGE',
        `${at} has ${stops.length} stop sequences, over limits.maxStopSequences (${this.limits.maxStopSequences})`,
      );
    for (const stop of stops)
      if (typeof stop === 'string' && stop.length > this.limits.maxTextLength)
        throw new Refusal(
          'validate',
          'TOO_LARGE',
          `a stop sequence in ${at} is ${stop.length} characters, over limits.maxTextLength (${this.limits.maxTextLength})`,
        );
  }
}

/**
 * Typed arrays (embeddings) become JSON arrays; bytes (encoded images) become base64; a compact
 * vector's bytes become its JSON form, or stay bytes (`keepVectorBytes`) for a schema output.
 */
function toPlain(value: unknown, keepVectorBytes = false): unknown {
  if (value instanceof VectorBytes) return keepVectorBytes ? value : value.json();
  // Bytes a pipeline returns are encoded images (PNG masks, cut-outs): base64 in JSON, as a
  // record's image input is, rather than an array of numbers four times the size.
  if (value instanceof Uint8Array)
    return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64');
  if (ArrayBuffer.isView(value) && !(value instanceof DataView))
    return Array.from(value as unknown as ArrayLike<number>);
  if (Array.isArray(value)) return value.map((v) => toPlain(v, keepVectorBytes));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, toPlain(v, keepVectorBytes)]),
    );
  }
  return value;
}
