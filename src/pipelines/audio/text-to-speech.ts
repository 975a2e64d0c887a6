// Text to speech as Python's `text-to-speech` / `text-to-audio` pipeline runs SpeechT5: the text
// tokenized without truncation, SpeechT5's generate (speecht5-model.ts) with the speaker's
// x-vector, then the vocoder; the waveform comes back as a WAV file with its sampling rate.
// Python's pipeline runs one text per forward pass by default; with a batch it takes max and min
// lengths from the padded length and pads every waveform to the longest, so here every text runs
// alone and gets the waveform Python gives it alone (docs/pipelines.md#texttospeech). On the
// generative engine a text advances one decoder step per engine step (segmentwise.ts) and its
// waveform streams as its frames become final (vocoder-stream.ts).
import { readdir } from 'node:fs/promises';
import type { z } from 'zod';
import { lazySchema } from '../../options/lazy-schema.ts';
import { InputError, ModelFolderError } from '../../errors.ts';
import { BasePipeline } from '../base-pipeline.ts';
import type { GenerationResult } from '../generation/generation-progress.ts';
import type { AudioChunk, SegmentJob, SegmentwiseGenerator } from '../generation/segmentwise.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import { isObject, UNIT_COST, type TaskDefinition } from '../task-definition.ts';
import { concatSamples } from './samples.ts';
import { folderSpeaker, readSpeakerFile, SPEAKER_FILES } from './speaker-embeddings.ts';
import {
  generateSpectrogram,
  SpeechT5Decoding,
  speechT5LayoutOf,
  type RunSession,
  type SpeechT5Layout,
} from './speecht5-model.ts';
import { measureReach, VocoderStream, vocodeFrames, type VocoderReach } from './vocoder-stream.ts';
import { encodeWav } from './wav-encode.ts';

const finiteList = lazySchema((z) => z.array(z.number().finite()).min(1));

export const textToSpeechOptionsSchema = lazySchema((z) =>
  z
    .object({
      /** Stop once the frame's summed stop probability reaches this (SpeechT5's default 0.5). */
      threshold: z.number().finite().min(0).default(0.5),
      /** Minimum length in decoder steps, as a ratio of the text's tokens over reduction_factor. */
      minlenratio: z.number().finite().min(0).default(0),
      /** Maximum length in decoder steps, as minlenratio counts them (SpeechT5's default 20). */
      maxlenratio: z.number().finite().positive().default(20),
      /**
       * The speaker's x-vector, or the path of a .npy / .bin file holding it; a record's own
       * `speakerEmbeddings` wins. Default: speaker_embeddings.npy or .bin in the model folder.
       */
      speakerEmbeddings: z.union([finiteList.schema, z.string().min(1)]).optional(),
      /** The waveform's rate; default preprocessor_config.json's sampling_rate, else 16000 (HiFi-GAN's). */
      samplingRate: z.number().int().positive().optional(),
      /** float32 (the model's samples exactly, the default) or pcm16 (half the size, rounded). */
      wavFormat: z.enum(['float32', 'pcm16']).default('float32'),
      /**
       * On the generative engine: the fewest mel frames a streamed piece of audio holds. Each piece
       * vocodes its frames again with the vocoder's reach either side, so small pieces cost more.
       */
      streamFrames: z.number().int().min(1).default(32),
    })
    .strict(),
);

export type TextToSpeechOptions = z.input<typeof textToSpeechOptionsSchema.schema>;

/** A text, or a text with its own speaker. */
export type TextToSpeechInput = string | { text: string; speakerEmbeddings?: readonly number[] };

export interface TextToSpeechOutput {
  /** A mono WAV file (base64 in JSON outputs). */
  audio: Uint8Array;
  samplingRate: number;
}

const HIFIGAN_RATE = 16_000;

/** One text on the generative engine; its "tokens" are its decoder steps. */
class SpeechJob implements SegmentJob {
  readonly decoding: SpeechT5Decoding;
  readonly stream: VocoderStream | undefined;
  readonly promptTokens: number;
  readonly tokens: number[] = [];
  /** Samples handed out since the engine last took them. */
  pending: Float32Array[] = [];
  waveform: Float32Array | undefined;
  error: unknown;

  constructor(decoding: SpeechT5Decoding, stream: VocoderStream | undefined, promptTokens: number) {
    this.decoding = decoding;
    this.stream = stream;
    this.promptTokens = promptTokens;
  }

  get done(): boolean {
    return this.waveform !== undefined;
  }
}

export class TextToSpeechPipeline
  extends BasePipeline<
    TextToSpeechInput,
    TextToSpeechOutput,
    typeof textToSpeechOptionsSchema.schema
  >
  implements SegmentwiseGenerator<SpeechJob>
{
  readonly layout: SpeechT5Layout;
  readonly samplingRate: number;
  private defaultSpeaker: Promise<Float32Array | undefined> | undefined;
  private reach: Promise<VocoderReach | undefined> | undefined;

  constructor(task: string, model: LoadedModel, options: TextToSpeechOptions = {}) {
    super(task, model, textToSpeechOptionsSchema, options);
    this.layout = speechT5LayoutOf(model);
    const declared = model.preprocessor?.['sampling_rate'];
    this.samplingRate =
      this.options.samplingRate ?? (typeof declared === 'number' ? declared : HIFIGAN_RATE);
  }

  /** The mel frames (before the postnet) and the waveform of one text, as generate_speech makes them. */
  async synthesize(
    input: TextToSpeechInput,
    field = 'input',
  ): Promise<{ frames: number; waveform: Float32Array }> {
    const { text, speaker } = await this.parse(input, field);
    const [encoded] = await this.encode([text], { truncation: false });
    const run = this.runner();
    const spectrogram = await generateSpectrogram(
      this.layout,
      run,
      encoded?.ids ?? [],
      speaker,
      this.options,
      field,
    );
    const waveform = await vocodeFrames(this.layout, run, spectrogram.data, spectrogram.frames);
    return { frames: spectrogram.frames, waveform };
  }

  /** The vocoder's reach, measured once; undefined when its audio can only come whole. */
  vocoderReach(): Promise<VocoderReach | undefined> {
    this.reach ??= measureReach(this.layout, this.runner());
    return this.reach;
  }

  async assertSegmentwise(): Promise<void> {
    await this.vocoderReach();
  }

  async startJob(input: unknown): Promise<SpeechJob> {
    const { text, speaker } = await this.parse(input as TextToSpeechInput, 'input');
    const [encoded] = await this.encode([text], { truncation: false });
    const ids = encoded?.ids ?? [];
    const run = this.runner();
    const decoding = await SpeechT5Decoding.start(
      this.layout,
      run,
      ids,
      speaker,
      this.options,
      'input',
    );
    const reach = await this.vocoderReach();
    const stream = reach === undefined ? undefined : new VocoderStream(this.layout, run, reach);
    return new SpeechJob(decoding, stream, ids.length);
  }

  /**
   * One decoder step per text (the export decodes one text at a time). A text that fails (its
   * speech outgrew max_speech_positions) fails alone: the others of the step go on.
   */
  async advance(jobs: readonly SpeechJob[]): Promise<void> {
    for (const job of jobs) {
      try {
        await this.advanceOne(job);
      } catch (err) {
        job.error = err;
      }
    }
  }

  private async advanceOne(job: SpeechJob): Promise<void> {
    const { decoding, stream } = job;
    await decoding.step();
    job.tokens.push(decoding.steps - 1);
    if (decoding.done) {
      const { data, frames } = decoding.spectrogram();
      const whole = await vocodeFrames(this.layout, this.runner(), data, frames);
      job.waveform = whole;
      job.pending.push(stream === undefined ? whole : stream.rest(whole));
      return;
    }
    const samples = await stream?.take(decoding.frames, this.options.streamFrames, () =>
      decoding.spectrogram(),
    );
    if (samples !== undefined) job.pending.push(samples);
  }

  textOf(): Promise<string> {
    return Promise.resolve('');
  }

  takeAudio(job: SpeechJob): AudioChunk | undefined {
    if (job.pending.length === 0) return undefined;
    const samples = concatSamples(job.pending);
    job.pending = [];
    return { samples, samplingRate: this.samplingRate, format: this.options.wavFormat };
  }

  result(job: SpeechJob): Promise<SpeechResult> {
    const waveform = job.waveform ?? new Float32Array(0);
    return Promise.resolve({
      text: '',
      tokenIds: [...job.tokens],
      finishReason: job.decoding.ended ?? 'eos',
      promptTokens: job.promptTokens,
      generatedTokens: job.tokens.length,
      audio: encodeWav(waveform, this.samplingRate, this.options.wavFormat),
      samplingRate: this.samplingRate,
    });
  }

  private runner(): RunSession {
    return (session, feeds, outputNames) => this.infer(feeds, outputNames, session);
  }

  protected async runBatch(inputs: readonly TextToSpeechInput[]): Promise<TextToSpeechOutput[]> {
    const outputs: TextToSpeechOutput[] = [];
    for (const [i, input] of inputs.entries()) {
      const { waveform } = await this.synthesize(input, `inputs[${i}]`);
      outputs.push({
        audio: encodeWav(waveform, this.samplingRate, this.options.wavFormat),
        samplingRate: this.samplingRate,
      });
    }
    return outputs;
  }

  private async parse(
    input: TextToSpeechInput,
    field: string,
  ): Promise<{ text: string; speaker: Float32Array }> {
    const text = typeof input === 'string' ? input : isObject(input) ? input.text : undefined;
    if (typeof text !== 'string')
      throw new InputError(`${this.task}: ${field} must be a text or {text, speakerEmbeddings?}`, {
        field,
      });
    const own = typeof input === 'string' ? undefined : input.speakerEmbeddings;
    const speaker =
      own !== undefined
        ? Float32Array.from(own)
        : await this.pipelineSpeaker(`${field}.speakerEmbeddings`);
    if (speaker.length !== this.layout.speakerDim)
      throw new InputError(
        `${this.task}: the speaker embeddings have ${speaker.length} values and the model takes ` +
          `${this.layout.speakerDim} (speaker_embedding_dim)`,
        { field: own !== undefined ? `${field}.speakerEmbeddings` : 'speakerEmbeddings' },
      );
    return { text, speaker };
  }

  private async pipelineSpeaker(field: string): Promise<Float32Array> {
    this.defaultSpeaker ??= this.loadDefaultSpeaker();
    const speaker = await this.defaultSpeaker;
    if (speaker === undefined)
      throw new InputError(
        `${this.task}: no speaker embeddings for ${field}; give the record a speakerEmbeddings ` +
          `list, set the pipeline option speakerEmbeddings, or put ${SPEAKER_FILES.join(' or ')} ` +
          'in the model folder (Python requires speaker_embeddings too)',
        { field },
      );
    return speaker;
  }

  private async loadDefaultSpeaker(): Promise<Float32Array | undefined> {
    const option = this.options.speakerEmbeddings;
    if (Array.isArray(option)) return Float32Array.from(option);
    if (typeof option === 'string') return readSpeakerFile(option, 'speakerEmbeddings');
    const files = await readdir(this.model.folder).catch((cause: unknown) => {
      throw new ModelFolderError(`cannot read ${this.model.folder}`, { cause, field: 'path' });
    });
    return folderSpeaker(this.model.folder, files);
  }
}

/** The generative engine's result for a text: no text, the waveform instead. */
export interface SpeechResult extends GenerationResult {
  /** The whole waveform as a WAV file. */
  audio: Uint8Array;
  samplingRate: number;
}

function speechTask(task: string, aliasOf?: string): TaskDefinition {
  return {
    task,
    ...(aliasOf === undefined ? {} : { aliasOf }),
    needs: { tokenizer: true, graphs: 'encoderDecoder' },
    execution: 'segment',
    get optionsSchema() {
      return textToSpeechOptionsSchema.schema;
    },
    create: (model, options) =>
      new TextToSpeechPipeline(task, model, options as TextToSpeechOptions),
    // Python's {audio, sampling_rate}; the audio stays a WAV file (base64), JSON holds no array
    // of samples as compactly.
    pythonOutput: (result) => {
      const { audio, samplingRate } = result as TextToSpeechOutput;
      return { audio, sampling_rate: samplingRate };
    },
    inputSchema(input, check): void {
      if (typeof input === 'string') {
        check.text(input);
        return;
      }
      const record = isObject(input) ? input : {};
      const text = record['text'];
      if (typeof text !== 'string')
        return check.fail('a string, or {text: a string, speakerEmbeddings?: a list of numbers}');
      check.text(text, `${check.field}.text`);
      const speaker = record['speakerEmbeddings'];
      if (speaker === undefined) return;
      if (
        !Array.isArray(speaker) ||
        !speaker.every((v) => typeof v === 'number' && Number.isFinite(v))
      )
        return check.fail('{text, speakerEmbeddings: a list of finite numbers}');
      check.list(speaker, `${check.field}.speakerEmbeddings`);
    },
    inputKind: 'text',
    // Each text runs alone through its own decoder loop: one row, whatever its length.
    cost: () => Promise.resolve(UNIT_COST),
  };
}

export const textToSpeechTask = speechTask('textToSpeech');
/** Python's `text-to-audio`: the same pipeline under its other name. */
export const textToAudioTask = speechTask('textToAudio', 'textToSpeech');
