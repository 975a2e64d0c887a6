// An encoder–decoder model in Optimum's layout: the encoder runs once per batch, then the decoder
// runs one token per row per step. The first step (decoder_model.onnx) computes the self-attention
// cache and the cross-attention cache from the encoder's output; every later step
// (decoder_with_past_model.onnx) reads both, and only the self-attention cache grows. A merged
// decoder (decoder_model_merged.onnx) does both, switched by its use_cache_branch input.
// The encoder's input is the caller's (token ids for text, log-mel features for Whisper): the
// decoder only sees its output, so the loops here serve every encoder–decoder pipeline.
import { Tensor } from '../../runtime/tensor.ts';
import type { OrtSession } from '../../runtime/session.ts';
import { InferenceError, ModelFolderError } from '../../errors.ts';
import {
  asKvDataType,
  zerosTensor,
  type KvDataType,
  type KvTensor,
} from '../generation/kv-dtype.ts';
import { floatData } from '../../runtime/half-float.ts';
import { hostFeeds } from '../generation/kv-cache.ts';
import { kvOnDevice } from '../../runtime/runtime-options.ts';
import { windowFeeds, windowGraph, windowOutput } from '../../runtime/graphs/kv-rows-graph.ts';
import {
  isResident,
  type ResidentFeeds,
  type ResidentOutputs,
  type ResidentRun,
} from '../../runtime/session.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import type { Feeds } from '../runtime/tensors.ts';
import type { DecoderStepper } from './decoder-stepper.ts';

/** What a pipeline's `infer` does: one counted session.run. */
export type RunSession = (
  session: OrtSession,
  feeds: Feeds,
  outputNames: readonly string[],
) => Promise<Record<string, Tensor>>;

/**
 * How a decoder keeps its caches resident on the session's device (runtime.kvOn: device): its
 * pipeline's counted resident run, and the model's helper graphs for moving rows.
 */
export interface ResidentDecoding {
  run(session: OrtSession, run: ResidentRun): Promise<ResidentOutputs>;
  helper(name: string, bytes: () => Uint8Array): Promise<OrtSession>;
}

/**
 * A pipeline's ResidentDecoding when its model keeps caches on its device (runtime.kvOn) and the
 * binding can; `run` is the pipeline's counted resident run.
 */
export function residentDecodingOf(
  model: LoadedModel,
  layout: Seq2SeqLayout,
  run: ResidentDecoding['run'],
): ResidentDecoding | undefined {
  if (!kvOnDevice(model.runtime) || layout.next.runResident === undefined) return undefined;
  return { run, helper: (name, bytes) => model.helper(name, bytes) };
}

/** The encoder's output for a batch: what every decoder step attends to. */
export interface EncoderOutput {
  hiddenStates: Tensor;
  /** [batch, encoder length] int64, 1 for real positions; absent for encoders without padding (Whisper). */
  attentionMask: Tensor | undefined;
}

const PAST = /^past_key_values\.(\d+)\.(decoder|encoder)\.(key|value)$/;

export interface Seq2SeqLayout {
  encoder: OrtSession;
  /** The first step's session (decoder_model, or the merged one). */
  first: OrtSession;
  /** Every later step's session (decoder_with_past_model, or the merged one). */
  next: OrtSession;
  merged: boolean;
  /** Past inputs of `next` in layer order: decoder key, decoder value, encoder key, encoder value. */
  pastNames: readonly string[];
  layers: number;
  heads: number;
  headDim: number;
  dtype: KvDataType;
}

export function seq2seqLayoutOf(model: LoadedModel): Seq2SeqLayout {
  const { sessions } = model;
  const encoder = sessions.get('encoder_model');
  const merged = sessions.get('decoder_model_merged');
  const first = merged ?? sessions.get('decoder_model');
  const next = merged ?? sessions.get('decoder_with_past_model');
  if (encoder === undefined || first === undefined || next === undefined) {
    throw new ModelFolderError(
      `${model.folder} is not an encoder–decoder export: it needs encoder_model.onnx with ` +
        'decoder_model_merged.onnx, or decoder_model.onnx and decoder_with_past_model.onnx ' +
        '(optimum-cli export onnx --task text2text-generation-with-past, or image-to-text-with-past)',
      { field: 'path' },
    );
  }
  const pastNames = next.inputNames.filter((n) => PAST.test(n)).sort(byLayerPartKind);
  const layers = pastNames.length / 4;
  if (pastNames.length === 0 || !Number.isInteger(layers)) {
    throw new ModelFolderError(
      `${model.folder}: the decoder with past has no past_key_values.{i}.decoder/encoder.key/value ` +
        'inputs; export it with its cache (--task text2text-generation-with-past or image-to-text-with-past)',
      { field: 'path' },
    );
  }
  const meta = next.inputMetadata.find((m) => m.name === pastNames[0]);
  const shape = meta !== undefined && meta.isTensor ? meta.shape : [];
  const raw = model.config.raw;
  // A VisionEncoderDecoder config nests the decoder's own (GPT-2: n_head, n_embd; BERT: ...).
  const nested = raw['decoder'];
  const decoder: Record<string, unknown> =
    nested !== null && typeof nested === 'object' ? (nested as Record<string, unknown>) : {};
  const heads =
    dim(shape[1]) ??
    num(raw['num_heads']) ??
    num(raw['decoder_attention_heads']) ??
    num(decoder['n_head']) ??
    num(decoder['num_attention_heads']) ??
    num(decoder['decoder_attention_heads']);
  const dModel =
    num(raw['d_model']) ??
    num(decoder['n_embd']) ??
    num(decoder['hidden_size']) ??
    num(decoder['d_model']);
  const headDim =
    dim(shape[3]) ??
    num(raw['d_kv']) ??
    (dModel !== undefined && heads !== undefined ? dModel / heads : undefined);
  if (heads === undefined || headDim === undefined) {
    throw new ModelFolderError(
      `cannot tell the cache shape of ${model.folder}: its cache inputs have symbolic head sizes ` +
        'and config.json has no num_heads/decoder_attention_heads and d_kv/d_model',
      { field: 'config.json' },
    );
  }
  return {
    encoder,
    first,
    next,
    merged: merged !== undefined,
    pastNames,
    layers,
    heads,
    headDim,
    dtype: asKvDataType(meta !== undefined && meta.isTensor ? meta.type : 'float32', pastNames[0]!),
  };
}

/** Runs the encoder over feeds the caller built for it (the inputs it declares). */
export async function runEncoder(
  layout: Seq2SeqLayout,
  feeds: Feeds,
  run: RunSession,
): Promise<EncoderOutput> {
  const outputs = await run(layout.encoder, feeds, [layout.encoder.outputNames[0] ?? '']);
  const hiddenStates = outputs[layout.encoder.outputNames[0] ?? ''];
  if (hiddenStates === undefined) throw new InferenceError('the encoder returned no output');
  return { hiddenStates, attentionMask: feeds['attention_mask'] };
}

/**
 * The decoder of one batch after the encoder: each `step` feeds one token per row and returns each
 * row's next-token logits; `select` keeps, reorders or repeats rows (finished rows dropped, beams
 * reordered) along with their caches.
 */
export class Seq2SeqDecoder implements DecoderStepper {
  private readonly layout: Seq2SeqLayout;
  private readonly run: RunSession;
  private encoder: EncoderOutput;
  /** Per layer: decoder key, decoder value (grows by one position a step). */
  private selfCache: KvTensor[] = [];
  /** Per layer: encoder key, encoder value (computed on the first step, then read). */
  private crossCache: KvTensor[] = [];
  private started = false;
  private readonly resident: ResidentDecoding | undefined;
  /** Rows `select` kept since the last step, applied to resident caches at the next one. */
  private pendingRows: number[] | undefined;

  constructor(
    layout: Seq2SeqLayout,
    encoder: EncoderOutput,
    run: RunSession,
    resident?: ResidentDecoding,
  ) {
    this.layout = layout;
    this.encoder = encoder;
    this.run = run;
    this.resident = resident;
  }

  get rows(): number {
    return this.encoder.hiddenStates.dims[0] ?? 0;
  }

  async step(tokens: readonly number[]): Promise<Float32Array[]> {
    if (tokens.length !== this.rows)
      throw new InferenceError(`decoder step has ${tokens.length} tokens for ${this.rows} rows`);
    await this.applySelection();
    const session = this.started ? this.layout.next : this.layout.first;
    const feeds = this.feeds(session, tokens);
    const wanted = session.outputNames.filter(
      (n) =>
        n === 'logits' || (n.startsWith('present.') && (!this.started || n.includes('.decoder.'))),
    );
    let outputs: Record<string, KvTensor>;
    if (this.resident === undefined) {
      outputs = await this.run(session, hostFeeds(feeds), wanted);
    } else {
      const out = await this.resident.run(session, {
        feeds,
        hostOutputs: ['logits'],
        residentOutputs: wanted.filter((n) => n !== 'logits'),
      });
      outputs = { ...out.host, ...out.resident };
    }
    const logits = outputs['logits'];
    if (logits === undefined || isResident(logits))
      throw new InferenceError("the decoder returned no 'logits'");
    const presents = (part: 'decoder' | 'encoder'): KvTensor[] =>
      this.layout.pastNames
        .filter((n) => n.includes(`.${part}.`))
        .map((n) => {
          const present = outputs[n.replace(/^past_key_values\./, 'present.')];
          if (present === undefined)
            throw new InferenceError(`the decoder returned no present for ${n}`);
          return present;
        });
    const previous = this.selfCache;
    this.selfCache = presents('decoder');
    releaseAll(previous);
    if (!this.started) this.crossCache = presents('encoder');
    this.started = true;
    const data = floatData(logits, 'logits');
    const [rows = 0, length = 0, vocab = 0] = logits.dims;
    return Array.from({ length: rows }, (_, r) =>
      data.slice((r * length + length - 1) * vocab, (r * length + length) * vocab),
    );
  }

  select(rows: readonly number[]): void {
    const take = (t: Tensor): Tensor => gatherRows(t, rows);
    this.encoder = {
      hiddenStates: take(this.encoder.hiddenStates),
      attentionMask:
        this.encoder.attentionMask === undefined ? undefined : take(this.encoder.attentionMask),
    };
    if (this.resident !== undefined && this.started) {
      // Resident caches are gathered on the device at the next step, once for every select since.
      const pending = this.pendingRows;
      this.pendingRows = pending === undefined ? [...rows] : rows.map((r) => pending[r] as number);
      return;
    }
    this.selfCache = this.selfCache.map((t) => take(hostTensor(t)));
    this.crossCache = this.crossCache.map((t) => take(hostTensor(t)));
  }

  release(): void {
    releaseAll(this.selfCache);
    releaseAll(this.crossCache);
    this.selfCache = [];
    this.crossCache = [];
  }

  /** The rows `select` kept, taken from the resident caches by a gather on their device. */
  private async applySelection(): Promise<void> {
    const rows = this.pendingRows;
    const resident = this.resident;
    if (rows === undefined || resident === undefined) return;
    this.pendingRows = undefined;
    const caches = [...this.selfCache, ...this.crossCache];
    const session = await resident.helper(`kv-window-${caches.length}-${this.layout.dtype}`, () =>
      windowGraph(caches.length, this.layout.dtype),
    );
    // Slice clamps an end past the last column: every column, whatever each cache's length.
    const feeds = windowFeeds(caches, rows, 0, 2 ** 62, 0);
    const names = caches.map((_, i) => windowOutput(i));
    const out = await resident.run(session, { feeds, hostOutputs: [], residentOutputs: names });
    const moved = names.map((name) => out.resident[name] as KvTensor);
    releaseAll(caches);
    this.selfCache = moved.slice(0, this.selfCache.length);
    this.crossCache = moved.slice(this.selfCache.length);
  }

  private feeds(session: OrtSession, tokens: readonly number[]): ResidentFeeds {
    const rows = tokens.length;
    const feeds: ResidentFeeds = {
      input_ids: new Tensor('int64', BigInt64Array.from(tokens, BigInt), [rows, 1]),
    };
    const { attentionMask, hiddenStates } = this.encoder;
    if (session.inputNames.includes('encoder_attention_mask') && attentionMask !== undefined)
      feeds['encoder_attention_mask'] = attentionMask;
    if (session.inputNames.includes('encoder_hidden_states'))
      feeds['encoder_hidden_states'] = hiddenStates;
    if (this.layout.merged) {
      feeds['use_cache_branch'] = new Tensor('bool', [this.started], [1]);
      if (!this.started) {
        // The merged graph takes a cache on both branches; the first step's is empty and unread.
        const { heads, headDim, dtype } = this.layout;
        for (const name of this.layout.pastNames)
          feeds[name] = zerosTensor(dtype, [rows, heads, 0, headDim]);
      }
    }
    if (this.started) {
      let self = 0;
      let cross = 0;
      for (const name of this.layout.pastNames) {
        feeds[name] = (
          name.includes('.decoder.') ? this.selfCache[self++] : this.crossCache[cross++]
        ) as KvTensor;
      }
    }
    return feeds;
  }
}

function releaseAll(tensors: readonly KvTensor[]): void {
  for (const t of tensors) if (isResident(t)) t.release();
}

function hostTensor(t: KvTensor): Tensor {
  return isResident(t) ? t.toHost() : t;
}

/** Rows of a tensor's leading dimension, in the given order (repeats allowed). */
export function gatherRows(tensor: Tensor, rows: readonly number[]): Tensor {
  const [, ...rest] = tensor.dims;
  const size = rest.reduce((a, b) => a * b, 1);
  const data = tensor.data as Float32Array | BigInt64Array | Uint16Array;
  const out = new (data.constructor as new (length: number) => typeof data)(rows.length * size);
  rows.forEach((r, i) => {
    out.set(data.subarray(r * size, (r + 1) * size) as never, i * size);
  });
  return new Tensor(tensor.type as 'float32', out as Float32Array, [rows.length, ...rest]);
}

function byLayerPartKind(a: string, b: string): number {
  const [, la = '0', pa = '', ka = ''] = PAST.exec(a) ?? [];
  const [, lb = '0', pb = '', kb = ''] = PAST.exec(b) ?? [];
  return Number(la) - Number(lb) || pa.localeCompare(pb) || ka.localeCompare(kb);
}

function num(value: unknown): number | undefined {
  return typeof value === 'number' ? value : undefined;
}

function dim(value: unknown): number | undefined {
  return typeof value === 'number' && value > 0 ? value : undefined;
}
