// SpeechT5 text-to-speech in Optimum's export layout, and the loop of transformers'
// `_generate_speech` over it: the text encoded once, then one decoder step at a time, each
// feeding the whole mel sequence so far (the speech prenet reads all of it) and returning
// reduction_factor new frames and a stop probability per frame. The loop stops when the summed
// probability reaches the threshold (checked from minlen on) or at maxlen, both counted in steps
// from the encoder's length; the postnet and the vocoder then turn the frames into a waveform.
// Optimum exports these graphs for one text at a time (batch 1), so each text runs alone.
import { Tensor } from '../../runtime/tensor.ts';
import type { OrtSession } from '../../runtime/session.ts';
import { InferenceError, InputError, ModelFolderError } from '../../errors.ts';
import { floatData } from '../../runtime/half-float.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import type { Feeds } from '../runtime/tensors.ts';

/** What a pipeline's `infer` does: one counted session.run. */
export type RunSession = (
  session: OrtSession,
  feeds: Feeds,
  outputNames: readonly string[],
) => Promise<Record<string, Tensor>>;

export interface SpeechT5Layout {
  encoder: OrtSession;
  /** The first step's decoder (decoder_model, or the merged one). */
  first: OrtSession;
  /** Every later step's (decoder_with_past_model, or the merged one). */
  next: OrtSession;
  merged: boolean;
  postnetAndVocoder: OrtSession;
  /** past_key_values.* inputs of `next`, in the order the decoder returns their presents. */
  pastNames: readonly string[];
  heads: number;
  headDim: number;
  melBins: number;
  reductionFactor: number;
  speakerDim: number;
  maxTextPositions: number | undefined;
  maxSpeechPositions: number | undefined;
}

/** `_generate_speech`'s settings (SpeechT5ForTextToSpeech.generate's defaults: 0.5, 0, 20). */
export interface SpeechSettings {
  threshold: number;
  minlenratio: number;
  maxlenratio: number;
}

const PAST = /^past_key_values\.(\d+)\.(decoder|encoder)\.(key|value)$/;
const FILES =
  'encoder_model.onnx, decoder_model.onnx + decoder_with_past_model.onnx (or decoder_model_merged.onnx) ' +
  'and decoder_postnet_and_vocoder.onnx (optimum-cli export onnx --model microsoft/speecht5_tts ' +
  `--model-kwargs '{"vocoder": "microsoft/speecht5_hifigan"}')`;

export function speechT5LayoutOf(model: LoadedModel): SpeechT5Layout {
  const { sessions, folder } = model;
  const encoder = sessions.get('encoder_model');
  const merged = sessions.get('decoder_model_merged');
  const first = merged ?? sessions.get('decoder_model');
  const next = merged ?? sessions.get('decoder_with_past_model');
  const postnetAndVocoder = sessions.get('decoder_postnet_and_vocoder');
  if (
    encoder === undefined ||
    first === undefined ||
    next === undefined ||
    postnetAndVocoder === undefined
  )
    throw new ModelFolderError(
      `${folder} is not a SpeechT5 text-to-speech export: it needs ${FILES}`,
      {
        field: 'path',
      },
    );
  const raw = model.config.raw;
  const number = (key: string): number | undefined =>
    typeof raw[key] === 'number' ? raw[key] : undefined;
  const melBins = number('num_mel_bins');
  const reductionFactor = number('reduction_factor');
  const speakerDim = number('speaker_embedding_dim');
  const hidden = number('hidden_size');
  const heads = number('decoder_attention_heads');
  if (
    melBins === undefined ||
    reductionFactor === undefined ||
    speakerDim === undefined ||
    hidden === undefined ||
    heads === undefined
  )
    throw new ModelFolderError(
      `${folder}/config.json lacks num_mel_bins, reduction_factor, speaker_embedding_dim, hidden_size or decoder_attention_heads; it is not a SpeechT5 config`,
      { field: 'config.json' },
    );
  const pastNames = next.inputNames.filter((n) => PAST.test(n)).sort(byLayerPartKind);
  if (pastNames.length === 0)
    throw new ModelFolderError(
      `${folder}: the decoder with past has no past_key_values.* inputs; export it with-past (${FILES})`,
      { field: 'path' },
    );
  return {
    encoder,
    first,
    next,
    merged: merged !== undefined,
    postnetAndVocoder,
    pastNames,
    heads,
    headDim: hidden / heads,
    melBins,
    reductionFactor,
    speakerDim,
    maxTextPositions: number('max_text_positions'),
    maxSpeechPositions: number('max_speech_positions'),
  };
}

/** The mel frames `_generate_speech` returns for one text (before the postnet): [frames, melBins]. */
export interface Spectrogram {
  frames: number;
  data: Float32Array;
}

/**
 * The decoder loop for one text's token ids. `field` names the input in errors. The speaker
 * embedding is the x-vector as given; the prenet L2-normalises it inside the graph.
 */
export async function generateSpectrogram(
  layout: SpeechT5Layout,
  run: RunSession,
  inputIds: readonly number[],
  speaker: Float32Array,
  settings: SpeechSettings,
  field: string,
): Promise<Spectrogram> {
  const decoding = await SpeechT5Decoding.start(layout, run, inputIds, speaker, settings, field);
  while (!decoding.done) await decoding.step();
  return decoding.spectrogram();
}

/** What the decoder loop reads of one encoded text. */
interface EncodedText {
  settings: SpeechSettings;
  field: string;
  encoderOutputs: Tensor;
  encoderMask: Tensor;
  speaker: Float32Array;
  minlen: number;
  maxlen: number;
}

/**
 * `_generate_speech` one decoder step at a time, so the generative engine can interleave texts
 * and vocode the frames that are already final.
 */
export class SpeechT5Decoding {
  /** Decoder steps run (each adds reduction_factor frames). */
  steps = 0;
  /** The loop ended: on the stop probability, or at maxlen. */
  done = false;
  /** How it ended: `eos` on the stop probability, `length` at maxlen. */
  ended: 'eos' | 'length' | undefined;
  private sequence: Tensor;
  private past: Tensor[] = [];
  private cross: Tensor[] = [];
  private readonly spectra: Float32Array[] = [];
  private readonly speakerTensor: Tensor;

  private readonly layout: SpeechT5Layout;
  private readonly run: RunSession;
  private readonly encoded: EncodedText;

  private constructor(layout: SpeechT5Layout, run: RunSession, encoded: EncodedText) {
    this.layout = layout;
    this.run = run;
    this.encoded = encoded;
    this.speakerTensor = new Tensor('float32', encoded.speaker, [1, encoded.speaker.length]);
    this.sequence = new Tensor('float32', new Float32Array(layout.melBins), [1, 1, layout.melBins]);
  }

  /** Encodes the text; the decoder has not run yet. */
  static async start(
    layout: SpeechT5Layout,
    run: RunSession,
    inputIds: readonly number[],
    speaker: Float32Array,
    settings: SpeechSettings,
    field: string,
  ): Promise<SpeechT5Decoding> {
    const length = inputIds.length;
    if (layout.maxTextPositions !== undefined && length > layout.maxTextPositions)
      // Python's encoder fails here: its positional table holds max_text_positions rows.
      throw new InputError(
        `${field} is ${length} tokens and SpeechT5 reads at most ${layout.maxTextPositions} ` +
          '(max_text_positions); split the text',
        { field },
      );
    const encoded = await run(
      layout.encoder,
      { input_ids: new Tensor('int64', BigInt64Array.from(inputIds, BigInt), [1, length]) },
      layout.encoder.outputNames,
    );
    const encoderOutputs =
      encoded['encoder_outputs'] ?? encoded[layout.encoder.outputNames[0] ?? ''];
    if (encoderOutputs === undefined)
      throw new InferenceError('the SpeechT5 encoder returned no output');
    const encoderMask =
      encoded['encoder_attention_mask'] ??
      new Tensor('int64', new BigInt64Array(length).fill(1n), [1, length]);
    const r = layout.reductionFactor;
    return new SpeechT5Decoding(layout, run, {
      settings,
      field,
      encoderOutputs,
      encoderMask,
      speaker,
      minlen: Math.trunc((length * settings.minlenratio) / r),
      maxlen: Math.trunc((length * settings.maxlenratio) / r),
    });
  }

  /** Mel frames so far (before the postnet). */
  get frames(): number {
    return this.spectra.length * this.layout.reductionFactor;
  }

  async step(): Promise<void> {
    const { layout } = this;
    const { field, settings, encoderOutputs, encoderMask, minlen, maxlen } = this.encoded;
    const step = this.steps + 1;
    if (layout.maxSpeechPositions !== undefined && step > layout.maxSpeechPositions)
      // Python fails at this step too: the prenet's positional table is max_speech_positions long.
      throw new InputError(
        `${field}: the speech did not stop within ${layout.maxSpeechPositions} frames ` +
          `(max_speech_positions) before its max length of ${maxlen} steps; lower ` +
          'maxlenratio or the threshold, or split the text',
        { field },
      );
    const session = step === 1 ? layout.first : layout.next;
    const feeds: Feeds = {
      output_sequence: this.sequence,
      speaker_embeddings: this.speakerTensor,
      encoder_outputs: encoderOutputs,
      encoder_attention_mask: encoderMask,
    };
    if (layout.merged) feeds['use_cache_branch'] = new Tensor('bool', [step > 1], [1]);
    let self = 0;
    let crossed = 0;
    for (const name of layout.pastNames) {
      if (step > 1)
        feeds[name] = (
          name.includes('.decoder.') ? this.past[self++] : this.cross[crossed++]
        ) as Tensor;
      else if (layout.merged)
        // The merged graph takes a cache on both branches; the first step's is empty and unread.
        feeds[name] = new Tensor('float32', new Float32Array(0), [
          1,
          layout.heads,
          0,
          layout.headDim,
        ]);
    }
    const declared = Object.fromEntries(
      Object.entries(feeds).filter(([name]) => session.inputNames.includes(name)),
    );
    const outputs = await this.run(session, declared, session.outputNames);
    const next = outputs['output_sequence_out'];
    const spectrum = outputs['spectrum'];
    const prob = outputs['prob'];
    if (next === undefined || spectrum === undefined || prob === undefined)
      throw new InferenceError(
        'the SpeechT5 decoder must return output_sequence_out, spectrum and prob',
      );
    this.steps = step;
    this.sequence = next;
    this.spectra.push(
      floatData(spectrum, 'spectrum').slice(0, layout.reductionFactor * layout.melBins),
    );
    const presents = (part: 'decoder' | 'encoder'): Tensor[] =>
      layout.pastNames
        .filter((n) => n.includes(`.${part}.`))
        .map((n) => {
          const present = outputs[n.replace(/^past_key_values\./, 'present.')];
          if (present === undefined)
            throw new InferenceError(`the SpeechT5 decoder returned no present for ${n}`);
          return present;
        });
    this.past = presents('decoder');
    if (step === 1) this.cross = presents('encoder');
    if (step < minlen) return;
    if (step >= maxlen) {
      this.done = true;
      this.ended = 'length';
      return;
    }
    const stop = floatData(prob, 'prob').reduce((a, b) => a + b, 0);
    if (stop >= settings.threshold) {
      this.done = true;
      this.ended = 'eos';
    }
  }

  spectrogram(): Spectrogram {
    const size = this.layout.reductionFactor * this.layout.melBins;
    const data = new Float32Array(this.spectra.length * size);
    this.spectra.forEach((s, i) => data.set(s, i * size));
    return { frames: this.frames, data };
  }
}

function byLayerPartKind(a: string, b: string): number {
  const [, la = '0', pa = '', ka = ''] = PAST.exec(a) ?? [];
  const [, lb = '0', pb = '', kb = ''] = PAST.exec(b) ?? [];
  return Number(la) - Number(lb) || pa.localeCompare(pb) || ka.localeCompare(kb);
}
