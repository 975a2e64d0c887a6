// Automatic speech recognition with Whisper, as Python's AutomaticSpeechRecognitionPipeline runs
// it: the clip decoded, mixed to mono and resampled to 16 kHz; cut into overlapping chunks when
// chunkLengthS is set (each chunk's stride remembered), else read whole (a clip over 30 s is
// transcribed segment after segment, long-form); the log-mel of each chunk through Whisper's
// generate (whisper-generate.ts); the chunks' tokens merged into text and timestamped chunks by
// the tokenizer's rules (whisper-transcript.ts). On the generative engine a clip advances one
// segment per step (segmentwise.ts), so its text streams a segment at a time.
import { Tensor } from '../../runtime/tensor.ts';
import type { z } from 'zod';
import { lazySchema } from '../../options/lazy-schema.ts';
import { ConfigError, ModelFolderError } from '../../errors.ts';
import type { GenerationResult } from '../generation/generation-progress.ts';
import type { SegmentJob, SegmentwiseGenerator } from '../generation/segmentwise.ts';
import { BasePipeline } from '../base-pipeline.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import {
  runEncoder,
  Seq2SeqDecoder,
  residentDecodingOf,
  type ResidentDecoding,
  seq2seqLayoutOf,
  type RunSession,
  type Seq2SeqLayout,
} from '../seq2seq/seq2seq-model.ts';
import type { TaskDefinition } from '../task-definition.ts';
import { audioInput } from './audio-task.ts';
import { decodeAudio, mixdown, type AudioInput } from './audio-decode.ts';
import { resample } from './resample.ts';
import { compileWhisperFeatures, whisperLogMel, type WhisperFeatures } from './whisper-features.ts';
import {
  advanceClips,
  clipDone,
  languageOf,
  startClip,
  whisperGenerate,
  type ClipState,
  type WhisperClip,
  type WhisperOutput,
} from './whisper-generate.ts';
import {
  promptFor,
  readWhisperConfig,
  resolveWhisperSettings,
  type WhisperSettings,
} from './whisper-settings.ts';
import {
  decodeTranscript,
  type TimestampedChunk,
  type Transcript,
  type TranscribedChunk,
  type WhisperVocabulary,
} from './whisper-transcript.ts';

export const speechRecognitionOptionsSchema = lazySchema((z) =>
  z
    .object({
      /** The spoken language: a code (`fr`), token (`<|fr|>`) or English name. Default: detected per clip. */
      language: z.string().min(1).optional(),
      /** `translate` writes English text. Default: the generation config's, else transcribe. */
      task: z.enum(['transcribe', 'translate']).optional(),
      /** Add `chunks`: text segments with [start, end] seconds, as Python's return_timestamps=True. */
      returnTimestamps: z.boolean().default(false),
      /** Add `chunks` naming each one's language (`english`), as Python's return_language=True. */
      returnLanguage: z.boolean().default(false),
      /** Cut the audio into chunks of this many seconds, transcribed apart and merged. Default: whole clip. */
      chunkLengthS: z.number().positive().optional(),
      /** Overlap each side of a chunk, seconds (one number or [left, right]). Default: chunkLengthS / 6. */
      strideLengthS: z
        .union([z.number().min(0), z.tuple([z.number().min(0), z.number().min(0)])])
        .optional(),
      /** Default: generation_config's max_new_tokens, else 256 (the Python pipeline's). */
      maxNewTokens: z.number().int().min(1).optional(),
      /** Beams of beam search; 1 decodes greedily. Default: generation_config's num_beams, else 5 (Python's). */
      numBeams: z.number().int().min(1).max(64).optional(),
      lengthPenalty: z.number().optional(),
      earlyStopping: z.union([z.boolean(), z.literal('never')]).optional(),
    })
    .strict(),
);

export type SpeechRecognitionOptions = z.input<typeof speechRecognitionOptionsSchema.schema>;

const TASK = 'automaticSpeechRecognition';

/** One piece of audio generate() reads: a whole clip or one chunk of it. */
interface Unit {
  input: number;
  clip: WhisperClip;
  /** [chunk, left, right] samples when the clip was chunked. */
  stride: [number, number, number] | undefined;
}

/** One clip on the generative engine: a whole clip, long-form past 30 s. */
class ClipJob implements SegmentJob {
  readonly state: ClipState;
  constructor(clip: WhisperClip) {
    this.state = startClip(clip);
  }
  get tokens(): readonly number[] {
    return this.state.tokens;
  }
  get done(): boolean {
    return clipDone(this.state);
  }
  get error(): unknown {
    return this.state.error;
  }
}

export class SpeechRecognitionPipeline
  extends BasePipeline<AudioInput, Transcript, typeof speechRecognitionOptionsSchema.schema>
  implements SegmentwiseGenerator<ClipJob>
{
  readonly layout: Seq2SeqLayout;
  private readonly features: WhisperFeatures;
  private readonly inputName: string;
  private settings: Promise<WhisperSettings> | undefined;
  private vocab: WhisperVocabulary | undefined;

  constructor(model: LoadedModel, options: SpeechRecognitionOptions = {}) {
    super(TASK, model, speechRecognitionOptionsSchema, options);
    this.layout = seq2seqLayoutOf(model);
    const raw = model.preprocessor;
    const type = raw?.['feature_extractor_type'];
    if (raw === undefined || (type !== undefined && type !== 'WhisperFeatureExtractor'))
      throw new ModelFolderError(
        `${model.folder}: ${TASK} needs a Whisper model (preprocessor_config.json with feature_extractor_type WhisperFeatureExtractor)`,
        { field: 'preprocessor_config.json' },
      );
    this.features = compileWhisperFeatures(raw, model.folder);
    this.inputName = this.layout.encoder.inputNames.includes('input_features')
      ? 'input_features'
      : (this.layout.encoder.inputNames[0] ?? 'input_features');
    const { chunkLengthS, strideLengthS } = this.options;
    if (chunkLengthS !== undefined) {
      const [left, right] = strides(chunkLengthS, strideLengthS);
      if (left + right > chunkLengthS)
        throw new ConfigError('chunkLengthS must be longer than the two strides together', {
          field: 'strideLengthS',
        });
    }
  }

  /** Settings from the model folder and the options, resolved once. */
  resolved(): Promise<WhisperSettings> {
    this.settings ??= readWhisperConfig(this.model).then((generation) =>
      resolveWhisperSettings(
        this.model,
        generation,
        {
          language: this.options.language,
          task: this.options.task,
          timestamps: this.options.returnTimestamps,
          maxNewTokens: this.options.maxNewTokens,
          numBeams: this.options.numBeams,
          lengthPenalty: this.options.lengthPenalty,
          earlyStopping: this.options.earlyStopping,
        },
        this.features.nSamples / this.features.samplingRate,
      ),
    );
    return this.settings;
  }

  /** What generate() returns for each input (no chunking): its tokens, the prompt stripped. */
  async generateTokens(inputs: readonly AudioInput[]): Promise<WhisperOutput[]> {
    const settings = await this.resolved();
    const audio = await this.decodeAll(inputs);
    const units = audio.map((samples, input) => this.wholeClip(samples, input, settings));
    return this.generate(units, settings);
  }

  protected async runBatch(inputs: readonly AudioInput[]): Promise<Transcript[]> {
    const settings = await this.resolved();
    const audio = await this.decodeAll(inputs);
    const units = audio.flatMap((samples, input) => this.unitsOf(samples, input, settings));
    const generated = await this.generate(units, settings);
    const rate = this.features.samplingRate;
    return Promise.all(
      audio.map((_, input) => {
        const chunks: TranscribedChunk[] = [];
        units.forEach((unit, u) => {
          if (unit.input !== input) return;
          const stride = unit.stride;
          const { tokens, language } = generated[u] as WhisperOutput;
          chunks.push({
            tokens: this.withLanguage(tokens, language),
            ...(stride !== undefined
              ? { stride: [stride[0] / rate, stride[1] / rate, stride[2] / rate] as const }
              : {}),
          });
        });
        return this.transcriptOf(chunks, settings);
      }),
    );
  }

  private transcriptOf(chunks: TranscribedChunk[], settings: WhisperSettings): Promise<Transcript> {
    return decodeTranscript(
      chunks,
      this.vocabularyOf(settings),
      this.options.returnTimestamps,
      settings.timePrecision,
      settings.segmentFrames / settings.inputStride,
      this.options.returnLanguage,
    );
  }

  /** Python puts the prompt's language token back before the tokens generate() returns. */
  private withLanguage(tokens: number[], language: number | undefined): number[] {
    return this.options.returnLanguage && language !== undefined ? [language, ...tokens] : tokens;
  }

  async assertSegmentwise(): Promise<void> {
    await this.resolved();
    if (this.options.chunkLengthS !== undefined)
      throw new ConfigError(
        `${TASK} on the generative engine reads a clip whole, segment after segment (long-form ` +
          'past 30 s), because chunks are merged only once all are transcribed: remove ' +
          "options.chunkLengthS or the pipeline's generative block",
        { field: 'options.chunkLengthS' },
      );
  }

  async startJob(input: unknown): Promise<ClipJob> {
    const settings = await this.resolved();
    const [samples] = await this.decodeAll([input as AudioInput]);
    return new ClipJob(this.wholeClip(samples as Float32Array, 0, settings).clip);
  }

  async advance(jobs: readonly ClipJob[]): Promise<void> {
    const settings = await this.resolved();
    await advanceClips(
      jobs.map((j) => j.state),
      settings,
      this.features.featureSize,
      (features, rows) => this.encodeSegments(features, rows, settings),
    );
  }

  async textOf(job: ClipJob): Promise<string> {
    return (await this.jobTranscript(job)).text;
  }

  async result(job: ClipJob): Promise<TranscriptResult> {
    const settings = await this.resolved();
    const { state } = job;
    const transcript = await this.jobTranscript(job);
    const prompt = promptFor(settings, state.clip.timestamps, state.language);
    return {
      text: transcript.text,
      tokenIds: [...state.tokens],
      finishReason: state.ended ?? 'eos',
      promptTokens: prompt.length,
      generatedTokens: state.tokens.length,
      ...(transcript.chunks !== undefined ? { chunks: transcript.chunks } : {}),
    };
  }

  private async jobTranscript(job: ClipJob): Promise<Transcript> {
    const settings = await this.resolved();
    const tokens = this.withLanguage([...job.state.tokens], languageOf(job.state, settings));
    return this.transcriptOf([{ tokens }], settings);
  }

  private decodeAll(inputs: readonly AudioInput[]): Promise<Float32Array[]> {
    return Promise.all(
      inputs.map(async (input, i) => {
        const decoded = await decodeAudio(input, `inputs[${i}]`);
        return resample(
          mixdown(decoded.channels),
          decoded.samplingRate,
          this.features.samplingRate,
        );
      }),
    );
  }

  private generate(units: readonly Unit[], settings: WhisperSettings): Promise<WhisperOutput[]> {
    return whisperGenerate(
      units.map((u) => u.clip),
      settings,
      this.features.featureSize,
      (features, rows) => this.encodeSegments(features, rows, settings),
    );
  }

  /** A clip read whole: padded to 30 s, or long-form past that. */
  private wholeClip(samples: Float32Array, input: number, settings: WhisperSettings): Unit {
    const long = samples.length > this.features.nSamples;
    const { data, frames } = whisperLogMel(
      samples,
      this.features,
      long ? samples.length : undefined,
    );
    return {
      input,
      clip: { features: data, frames, timestamps: settings.timestamps || long },
      stride: undefined,
    };
  }

  /** Python's preprocess: the chunks (chunk_iter) or the whole clip. */
  private unitsOf(samples: Float32Array, input: number, settings: WhisperSettings): Unit[] {
    const { chunkLengthS, strideLengthS } = this.options;
    const rate = this.features.samplingRate;
    if (chunkLengthS === undefined) return [this.wholeClip(samples, input, settings)];
    // Each chunk is padded or cut to 30 s, so it is never long-form.
    const clip = (audio: Float32Array): WhisperClip => {
      const { data, frames } = whisperLogMel(audio, this.features);
      return { features: data, frames, timestamps: settings.timestamps };
    };
    const [leftS, rightS] = strides(chunkLengthS, strideLengthS);
    const chunkLength = Math.round(chunkLengthS * rate);
    const left = Math.round(leftS * rate);
    const right = Math.round(rightS * rate);
    const step = chunkLength - left - right;
    const units: Unit[] = [];
    for (let start = 0; start < samples.length; start += step) {
      const end = start + chunkLength;
      const chunk = samples.subarray(start, end);
      const isLast = end >= samples.length;
      const strideLeft = start === 0 ? 0 : left;
      const strideRight = isLast ? 0 : right;
      if (chunk.length > strideLeft)
        units.push({ input, clip: clip(chunk), stride: [chunk.length, strideLeft, strideRight] });
      if (isLast) break;
    }
    return units;
  }

  private async encodeSegments(
    features: Float32Array,
    rows: number,
    settings: WhisperSettings,
  ): Promise<Seq2SeqDecoder> {
    const run: RunSession = (session, feeds, outputNames) =>
      this.infer(feeds, outputNames, session);
    const dims = [rows, this.features.featureSize, settings.segmentFrames];
    const feeds = { [this.inputName]: new Tensor('float32', features, dims) };
    return new Seq2SeqDecoder(
      this.layout,
      await runEncoder(this.layout, feeds, run),
      run,
      this.residentDecoding(),
    );
  }

  /** Resident caches when the model's runtime keeps them on its device (runtime.kvOn). */
  private residentDecoding(): ResidentDecoding | undefined {
    return residentDecodingOf(this.model, this.layout, (session, run) =>
      this.inferResident(session, run),
    );
  }

  /** Built once: the engine decodes a transcript after every segment. */
  private vocabularyOf(settings: WhisperSettings): WhisperVocabulary {
    this.vocab ??= this.vocabulary(settings);
    return this.vocab;
  }

  private vocabulary(settings: WhisperSettings): WhisperVocabulary {
    const { eosId, timestampBegin } = settings;
    // Python names a chunk's language from its own table; Intl's English names match it
    // (lower-cased) for the usual languages, else the code stands in.
    const names = new Intl.DisplayNames(['en'], { type: 'language', fallback: 'code' });
    const languages = new Map<number, string>();
    for (const [token, id] of settings.langToId) {
      const code = token.slice(2, -2);
      languages.set(id, (displayName(names, code) ?? code).toLowerCase());
    }
    return {
      timestampBegin,
      promptId: this.tokenizer.tokenId('<|startofprev|>'),
      startId: settings.startId,
      // Whisper's special tokens run from <|endoftext|> to <|notimestamps|>.
      isSpecial: (id) => id >= eosId && id < timestampBegin,
      languages,
      decode: (ids) => this.tokenizer.decode(ids, false),
    };
  }
}

function displayName(names: Intl.DisplayNames, code: string): string | undefined {
  try {
    return names.of(code);
  } catch {
    return undefined;
  }
}

/** Python's stride default: a sixth of the chunk each side. */
function strides(
  chunkLengthS: number,
  strideLengthS: number | [number, number] | undefined,
): [number, number] {
  const stride = strideLengthS ?? chunkLengthS / 6;
  return typeof stride === 'number' ? [stride, stride] : stride;
}

/** The generative engine's result for a clip. */
export interface TranscriptResult extends GenerationResult {
  /** With returnTimestamps / returnLanguage: the transcript's chunks. */
  chunks?: TimestampedChunk[];
}

export const automaticSpeechRecognitionTask: TaskDefinition = {
  needs: { tokenizer: true, preprocessor: true, graphs: 'encoderDecoder' },
  task: TASK,
  execution: 'segment',
  get optionsSchema() {
    return speechRecognitionOptionsSchema.schema;
  },
  create: (model, options) =>
    new SpeechRecognitionPipeline(model, options as SpeechRecognitionOptions),
  // The transcript's own keys already are Python's; the generative engine's extra ones go.
  pythonOutput: (result) => {
    const { text, chunks } = result as { text: string; chunks?: unknown };
    return chunks === undefined ? { text } : { text, chunks };
  },
  // A clip is one row whatever its length; the decoder's length is bounded by maxNewTokens.
  ...audioInput,
};
