// One route's way of running a record on the generative engine: submit the prompt with the
// route's deadline and the record's own options, write a partial record to the sink every
// `output.stream.everyTokens` tokens, and resolve with the final record's value once every
// partial is written. The caller writes the final through the source's ordered path, so the
// source acknowledges the record only after its final record is out.
//
// Partials go straight to the sink, not through the source's in-order writer: a request's
// partials precede its final (they are awaited first), but may interleave with other requests'
// records. A cancelled record (its Kafka partition was revoked) stops writing partials at once.
import type { RouteConfig } from '../config/schema.ts';
import type { RouteGenerationConfig } from '../config/generative-schema.ts';
import { InputError, SinkError } from '../errors.ts';
import type { GenerateOptions } from '../generative/generative-engine.ts';
import {
  generationOptionsSchema,
  type GenerationOptions,
} from '../pipelines/generation/generation-options.ts';
import type { EngineEvent, EngineResult } from '../generative/engine-event.ts';
import type { AudioChunk } from '../pipelines/generation/segmentwise.ts';
import { concatSamples } from '../pipelines/audio/samples.ts';
import { encodeWav } from '../pipelines/audio/wav-encode.ts';
import { getPath } from './field-path.ts';
import {
  partialRecord,
  partialSource,
  requestIdOf,
  type FinalValue,
  type PartialValue,
} from './generation-records.ts';
import type { SubmitContext } from './processor.ts';
import type { OutputRecord, SourceRecord } from './record.ts';

/** The part of GenerativeEngine a route needs (unit tests pass a fake). */
export interface GenerationSubmitter {
  submit(input: unknown, options: GenerateOptions): AsyncIterable<EngineEvent>;
}

export interface StreamedGenerationOptions {
  engine: GenerationSubmitter;
  output: Omit<RouteConfig['output'], 'overwrite'>;
  generation: RouteGenerationConfig | undefined;
  /** The route's sink; resolves once the partial record is durably handed over. */
  writePartial: (record: OutputRecord) => Promise<void>;
}

export class StreamedGeneration {
  private readonly options: StreamedGenerationOptions;
  private readonly everyTokens: number;

  constructor(options: StreamedGenerationOptions) {
    this.options = options;
    this.everyTokens = options.output.stream?.everyTokens ?? 0;
  }

  async run(input: unknown, { record, parsed }: SubmitContext): Promise<FinalValue> {
    const requestId = this.requestId(record, parsed);
    const source = partialSource(record, parsed);
    const generation = this.requestOptions(parsed);
    // Our own abort stops the generation when a partial cannot be written; the record's signal
    // when its source gave it up.
    const own = new AbortController();
    const signal =
      record.signal === undefined ? own.signal : AbortSignal.any([own.signal, record.signal]);
    const timeoutMs = this.options.generation?.timeoutMs;
    const stream = this.options.engine.submit(input, {
      ...(generation !== undefined ? { generation } : {}),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      signal,
    });
    const partials = new PartialWrites(this.options.writePartial, signal, () => own.abort());
    let sequence = 0;
    let delta = '';
    let tokens = 0;
    const audio = new AudioDelta();
    try {
      for await (const event of stream) {
        if (event.type === 'token') {
          tokens += 1;
          delta += event.text;
          if (event.audio !== undefined) audio.add(event.audio);
          if (this.everyTokens > 0 && tokens % this.everyTokens === 0 && !signal.aborted) {
            const audioDelta = audio.take();
            const partial: PartialValue = {
              requestId,
              sequence,
              final: false,
              source,
              delta,
              generatedTokens: tokens,
              ...(audioDelta !== undefined ? { audioDelta } : {}),
            };
            partials.push(partialRecord(record, this.options.output, partial));
            sequence += 1;
            delta = '';
          }
          continue;
        }
        await partials.settled();
        const { result } = event;
        return {
          requestId,
          sequence,
          final: true,
          delta,
          text: result.text,
          tokenIds: result.tokenIds,
          finishReason: result.finishReason,
          promptTokens: result.promptTokens,
          generatedTokens: result.generatedTokens,
          ...(result.json !== undefined ? { json: result.json } : {}),
          ...(result.formatError !== undefined ? { formatError: result.formatError } : {}),
          ...(result.toolCalls !== undefined ? { toolCalls: result.toolCalls } : {}),
          ...(result.chunks !== undefined ? { chunks: result.chunks } : {}),
          ...audio.final(result),
        };
      }
    } catch (err) {
      // A failed partial write cancelled the generation: the write's failure is the story.
      await partials.settled();
      throw err;
    }
    /* c8 ignore next */
    throw new Error('generation stream ended without a result');
  }

  private requestId(record: SourceRecord, parsed: unknown): string {
    const field = this.options.generation?.requestIdField;
    if (field === undefined) return requestIdOf(record.origin);
    const id = getPath(parsed, field);
    if (typeof id === 'string' && id !== '') return id;
    if (typeof id === 'number' && Number.isFinite(id)) return String(id);
    throw new InputError(
      `'${field}' (route generation.requestIdField) must be a non-empty string or a number`,
      { field },
    );
  }

  private requestOptions(parsed: unknown): GenerationOptions | undefined {
    const field = this.options.generation?.optionsField;
    if (field === undefined) return undefined;
    const value = getPath(parsed, field);
    if (value === undefined) return undefined;
    const checked = generationOptionsSchema.safeParse(value);
    if (checked.success) return value as GenerationOptions;
    const problems = checked.error.issues.map(
      (issue) => `${[field, ...issue.path.map(String)].join('.')}: ${issue.message}`,
    );
    throw new InputError(`invalid generation options: ${problems.join('; ')}`, { field });
  }
}

/** Speech synthesis: the samples since the last record, written as one WAV file. */
class AudioDelta {
  private chunks: AudioChunk[] = [];

  add(chunk: AudioChunk): void {
    this.chunks.push(chunk);
  }

  /** Base64 WAV of what came since the last take; undefined when nothing did. */
  take(): string | undefined {
    const last = this.chunks.at(-1);
    if (last === undefined) return undefined;
    const samples = concatSamples(this.chunks.map((c) => c.samples));
    this.chunks = [];
    return Buffer.from(encodeWav(samples, last.samplingRate, last.format)).toString('base64');
  }

  /** The final record's audio fields: the rest as a delta, and the whole waveform. */
  final(result: EngineResult): Pick<FinalValue, 'audioDelta' | 'audio' | 'samplingRate'> {
    const audioDelta = this.take();
    return {
      ...(audioDelta !== undefined ? { audioDelta } : {}),
      ...(result.audio !== undefined ? { audio: result.audio } : {}),
      ...(result.samplingRate !== undefined ? { samplingRate: result.samplingRate } : {}),
    };
  }
}

/**
 * A request's partial writes, one after another in order; the first failure stops the rest, and
 * so does the request's cancellation (writes still queued then are dropped).
 */
class PartialWrites {
  private chain: Promise<void> = Promise.resolve();
  private failure: { error: unknown } | undefined;
  private readonly write: (record: OutputRecord) => Promise<void>;
  private readonly signal: AbortSignal;
  private readonly onFailure: () => void;

  constructor(
    write: (record: OutputRecord) => Promise<void>,
    signal: AbortSignal,
    onFailure: () => void,
  ) {
    this.write = write;
    this.signal = signal;
    this.onFailure = onFailure;
  }

  push(record: OutputRecord): void {
    this.chain = this.chain.then(async () => {
      if (this.failure !== undefined || this.signal.aborted) return;
      try {
        await this.write(record);
      } catch (error) {
        this.failure = { error };
        this.onFailure();
      }
    });
  }

  /** Resolves when every pushed write is done; throws a SinkError if one failed. */
  async settled(): Promise<void> {
    await this.chain;
    if (this.failure !== undefined) {
      const { error } = this.failure;
      throw new SinkError(
        `a partial record could not be written: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    }
  }
}
