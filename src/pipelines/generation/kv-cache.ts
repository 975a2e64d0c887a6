// The key/value cache of a decoder exported with past inputs (Optimum's decoder-with-past layout:
// past_key_values.{i}.key/.value in, present.{i}.key/.value out, [batch, kv heads, length, head dim]).
// A KvState is the cache of a batch of rows after some steps; `stepFeeds` builds the feeds of one
// step from it and `advance` turns that step's outputs into the next state. Nothing here decides
// which token comes next, so the same functions serve one request or a continuously batched set.
// An export may also take a shared prefix (prefix_key_values.{i}.key/.value, [1, kv heads, prefix,
// head dim], scripts/models/kit/causal_lm.py): prompt positions that every row of the batch starts
// with, attended by every row but held once. A state that has one keeps only each row's own
// columns in `past`; positions still count from the start of the prefix.
// An appending export (scripts/models/kit/graph_llama.py build(appending=True)) returns only the
// step's keys and values (step_key_values.{i}.key/.value) instead of the whole cache: the state's
// tensors are then buffers with spare columns, which `advance` writes the step into where they
// lie. No step copies the cache; a buffer that is full is copied once into one APPEND_COLUMNS
// wider.
import { Tensor } from '../../runtime/tensor.ts';
import { isResident, type OrtSession, type ResidentFeeds } from '../../runtime/session.ts';
import { InferenceError, ModelFolderError } from '../../errors.ts';
import {
  allocateCache,
  asKvDataType,
  cacheBits,
  zerosTensor,
  type KvDataType,
  type KvTensor,
} from './kv-dtype.ts';
import { floatData } from '../../runtime/half-float.ts';
import { kvOnDevice, prefillsOnDevice } from '../../runtime/runtime-options.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import type { Feeds } from '../runtime/tensors.ts';

export interface KvLayout {
  /** Cache input names in feed order: layer 0 key, layer 0 value, layer 1 key, ... */
  pastNames: readonly string[];
  /** The output that becomes each past input on the next step, in the same order. */
  presentNames: readonly string[];
  /** Shared-prefix inputs in the same order as `pastNames`; empty when the export has none. */
  prefixNames: readonly string[];
  kvHeads: number;
  headDim: number;
  dtype: KvDataType;
  logitsName: string;
  hasPositionIds: boolean;
  /** Optimum's merged decoders switch between prefill and decode with this boolean input. */
  hasUseCacheBranch: boolean;
  /**
   * The export returns the step's columns only (`presentNames` are step_key_values.*), which
   * `advance` appends to the state's buffers in place.
   */
  appending: boolean;
}

/** Columns an appending state's buffers grow by when a step does not fit. */
export const APPEND_COLUMNS = 64;

export interface KvState {
  batch: number;
  /**
   * Cache tensors in `KvLayout.pastNames` order: each row's own columns, after any shared prefix.
   * Their third dimension is the capacity (`capacityOf`): pastLength, or more for an appending
   * export, whose columns from pastLength on are zeros that the attention mask hides. Resident
   * tensors (runStep's `resident`) stay in the session's device memory between steps.
   */
  past: readonly KvTensor[];
  /** Columns filled (the same for every row: rows are left-padded). */
  pastLength: number;
  /** Per row, 1 for a real token and 0 for padding, over the row's own cached positions. */
  attentionMask: readonly (readonly number[])[];
  /**
   * Per row, how many real tokens the cache holds, the shared prefix's included: the position of
   * the next real token.
   */
  realTokens: readonly number[];
  /** The prefix every row starts with, held once (only on exports with `prefixNames`). */
  shared?: SharedPrefix;
}

/**
 * A batch-of-one cache of prompt positions 0..length-1, fed as the export's shared prefix. Rows
 * can share a decode run only when they share this object.
 */
export interface SharedPrefix {
  /** Tensors [1, kv heads, length, head dim] in `KvLayout.prefixNames` order. */
  past: readonly KvTensor[];
  length: number;
}

/** One step's new tokens: rows of equal length, padded on the left where `mask` is 0. */
export interface StepTokens {
  ids: readonly (readonly number[])[];
  mask?: readonly (readonly number[])[];
}

export interface StepResult {
  /** Per row, the logits of the last position (the next-token distribution), as float32. */
  logits: Float32Array[];
  state: KvState;
}

const PAST = /^past_key_values\.(\d+)\.(key|value)$/;
const STEP_PREFIX = 'step_key_values.';
const PREFIX = /^prefix_key_values\.(\d+)\.(key|value)$/;

export function kvLayoutOf(model: LoadedModel): KvLayout {
  const pastNames = model.inputNames.filter((n) => PAST.test(n)).sort(byLayerThenKind);
  if (pastNames.length === 0 || pastNames.length % 2 !== 0) {
    throw new ModelFolderError(
      `${model.onnxPath} has no past_key_values.{i}.key/.value inputs; export it with its cache ` +
        `(optimum-cli export onnx --task text-generation-with-past)`,
      { field: 'onnxFile' },
    );
  }
  const appending = model.outputNames.some((n) => n.startsWith(STEP_PREFIX));
  const presentNames = pastNames.map((name) => {
    const present = name.replace(/^past_key_values\./, appending ? STEP_PREFIX : 'present.');
    if (!model.outputNames.includes(present))
      throw new ModelFolderError(`${model.onnxPath} has ${name} but no output ${present}`, {
        field: 'onnxFile',
      });
    return present;
  });
  const prefixNames = pastNames.map((name) =>
    name.replace(/^past_key_values\./, 'prefix_key_values.'),
  );
  const prefixInputs = model.inputNames.filter((n) => PREFIX.test(n));
  if (prefixInputs.length > 0 && !prefixNames.every((n) => prefixInputs.includes(n)))
    throw new ModelFolderError(
      `${model.onnxPath} has prefix_key_values inputs but not one per past input ` +
        `(${prefixNames.join(', ')}); re-export it with scripts/models/kit/causal_lm.py`,
      { field: 'onnxFile' },
    );
  const meta = model.session.inputMetadata.find((m) => m.name === pastNames[0]);
  const shape = meta !== undefined && meta.isTensor ? meta.shape : [];
  const raw = model.config.raw;
  const heads = numberOr(raw['num_attention_heads']);
  const hidden = numberOr(raw['hidden_size']);
  const kvHeads = dimOr(shape[1], numberOr(raw['num_key_value_heads']) ?? heads);
  const headDim = dimOr(
    shape[3],
    numberOr(raw['head_dim']) ??
      (hidden !== undefined && heads !== undefined ? hidden / heads : undefined),
  );
  if (kvHeads === undefined || headDim === undefined)
    throw new ModelFolderError(
      `cannot tell the cache shape of ${model.onnxPath}: its inputs have symbolic head sizes and ` +
        `config.json has no num_key_value_heads/head_dim`,
      { field: 'config.json' },
    );
  return {
    pastNames,
    presentNames,
    prefixNames: prefixInputs.length > 0 ? prefixNames : [],
    kvHeads,
    headDim,
    dtype: asKvDataType(meta !== undefined && meta.isTensor ? meta.type : 'float32', pastNames[0]!),
    logitsName: model.outputNames.includes('logits')
      ? 'logits'
      : (model.outputNames[0] ?? 'logits'),
    hasPositionIds: model.inputNames.includes('position_ids'),
    hasUseCacheBranch: model.inputNames.includes('use_cache_branch'),
    appending,
  };
}

/** Columns the state's cache tensors hold per row (pastLength or, appending, more). */
export function capacityOf(state: KvState): number {
  return state.past[0]?.dims[2] ?? state.pastLength;
}

/** The state before the prompt: an empty cache (past length 0), as Python's first step. */
export function emptyKvState(layout: KvLayout, batch: number): KvState {
  const dims = [batch, layout.kvHeads, 0, layout.headDim];
  return {
    batch,
    past: layout.pastNames.map(() => zerosTensor(layout.dtype, dims)),
    pastLength: 0,
    attentionMask: Array.from({ length: batch }, () => []),
    realTokens: Array.from({ length: batch }, () => 0),
  };
}

/** The row's cached columns from its first real token on: what must survive a re-assembly. */
export function realSpan(state: KvState, row: number): number {
  const mask = state.attentionMask[row] ?? [];
  const first = mask.indexOf(1);
  return first < 0 ? 0 : state.pastLength - first;
}

/** The shared-prefix feed of a state without one: zero positions. */
function emptyPrefix(layout: KvLayout): Tensor {
  return zerosTensor(layout.dtype, [1, layout.kvHeads, 0, layout.headDim]);
}

/**
 * Left-pads prompts to one length, as Python pads decoder batches, so that every row's next
 * token sits in the last column.
 */
export function leftPad(rows: readonly (readonly number[])[], padId: number): StepTokens {
  const width = rows.reduce((max, r) => Math.max(max, r.length), 0);
  return {
    ids: rows.map((r) => [...Array.from({ length: width - r.length }, () => padId), ...r]),
    mask: rows.map((r) => [
      ...Array.from({ length: width - r.length }, () => 0),
      ...r.map(() => 1),
    ]),
  };
}

/** A step's feeds: JS tensors, and the cache as the state holds it (resident or not). */
export type StepFeeds = ResidentFeeds;

/** The feeds with every resident cache tensor copied to the host, for a plain session.run. */
export function hostFeeds(feeds: StepFeeds): Feeds {
  const out: Feeds = {};
  for (const [name, value] of Object.entries(feeds))
    out[name] = isResident(value) ? value.toHost() : value;
  return out;
}

export function stepFeeds(layout: KvLayout, state: KvState, tokens: StepTokens): StepFeeds {
  const { ids } = tokens;
  const mask = tokens.mask ?? ids.map((r) => r.map(() => 1));
  if (ids.length !== state.batch)
    throw new InferenceError(`step has ${ids.length} rows but the cache holds ${state.batch}`);
  const width = ids[0]?.length ?? 0;
  // Mask columns: the filled past, then a buffer's spare (never attended), then the step's.
  const capacity = capacityOf(state);
  const total = capacity + width;
  const idData = new BigInt64Array(state.batch * width);
  const positionData = new BigInt64Array(state.batch * width);
  const maskData = new BigInt64Array(state.batch * total);
  for (let r = 0; r < state.batch; r += 1) {
    const rowIds = ids[r] ?? [];
    const rowMask = mask[r] ?? [];
    if (rowIds.length !== width || rowMask.length !== width)
      throw new InferenceError(`step row ${r} has ${rowIds.length} tokens, expected ${width}`);
    const pastMask = state.attentionMask[r] ?? [];
    for (let c = 0; c < state.pastLength; c += 1)
      maskData[r * total + c] = BigInt(pastMask[c] ?? 0);
    let seen = state.realTokens[r] ?? 0;
    for (let c = 0; c < width; c += 1) {
      const real = rowMask[c] ?? 0;
      idData[r * width + c] = BigInt(rowIds[c] ?? 0);
      maskData[r * total + capacity + c] = BigInt(real);
      // Python: cumsum(attention_mask) - 1 over real tokens; padding positions get a harmless 1.
      positionData[r * width + c] = BigInt(real === 1 ? seen : 1);
      if (real === 1) seen += 1;
    }
  }
  const feeds: StepFeeds = {
    input_ids: new Tensor('int64', idData, [state.batch, width]),
    attention_mask: new Tensor('int64', maskData, [state.batch, total]),
  };
  if (layout.hasPositionIds)
    feeds['position_ids'] = new Tensor('int64', positionData, [state.batch, width]);
  if (layout.hasUseCacheBranch)
    feeds['use_cache_branch'] = new Tensor('bool', [state.pastLength > 0], [1]);
  layout.pastNames.forEach((name, i) => {
    feeds[name] = state.past[i] as KvTensor;
  });
  if (layout.prefixNames.length > 0) {
    const none = state.shared === undefined ? emptyPrefix(layout) : undefined;
    layout.prefixNames.forEach((name, i) => {
      feeds[name] = (state.shared?.past[i] ?? none) as Tensor;
    });
  }
  return feeds;
}

/** The state after a step: the presents become the past, the step's mask joins the cache's. */
export function advance(
  layout: KvLayout,
  state: KvState,
  tokens: StepTokens,
  outputs: Readonly<Record<string, KvTensor>>,
): KvState {
  const width = tokens.ids[0]?.length ?? 0;
  const mask = tokens.mask ?? tokens.ids.map((r) => r.map(() => 1));
  const returned = layout.presentNames.map((name) => {
    const tensor = outputs[name];
    if (tensor === undefined) throw new InferenceError(`the model returned no '${name}'`);
    return tensor;
  });
  return {
    batch: state.batch,
    ...(state.shared === undefined ? {} : { shared: state.shared }),
    past: layout.appending ? appendColumns(layout, state, returned, width) : returned,
    pastLength: state.pastLength + width,
    attentionMask: state.attentionMask.map((row, r) => [...row, ...(mask[r] ?? [])]),
    realTokens: state.realTokens.map(
      (n, r) => n + (mask[r] ?? []).reduce((a: number, b) => a + b, 0),
    ),
  };
}

/**
 * The state's buffers with the step's columns written after its filled ones. They are written in
 * place when they fit; otherwise into new buffers APPEND_COLUMNS wider than needed (which is also
 * how a state that does not own spare columns, such as an empty one or a prefix-cache hit, is
 * never written: its capacity is its length).
 */
function appendColumns(
  layout: KvLayout,
  state: KvState,
  steps: readonly KvTensor[],
  width: number,
): KvTensor[] {
  const { kvHeads: heads, headDim: dim, dtype } = layout;
  const capacity = capacityOf(state);
  const filled = state.pastLength;
  const fits = filled + width <= capacity;
  const size = fits ? capacity : filled + width + APPEND_COLUMNS;
  return layout.pastNames.map((name, t) => {
    const source = cacheBits(state.past[t], name);
    const step = cacheBits(steps[t], layout.presentNames[t] as string);
    const target = fits ? source : allocateCache(dtype, state.batch * heads * size * dim);
    for (let rh = 0; rh < state.batch * heads; rh += 1) {
      if (!fits && filled > 0)
        target.set(
          source.subarray(rh * capacity * dim, (rh * capacity + filled) * dim),
          rh * size * dim,
        );
      target.set(
        step.subarray(rh * width * dim, (rh + 1) * width * dim),
        (rh * size + filled) * dim,
      );
    }
    // A resident buffer's host copy is what was written into: the state holds that from now on.
    const own = state.past[t];
    return fits
      ? isResident(own)
        ? own.toHost()
        : (own as Tensor)
      : new Tensor(dtype, target, [state.batch, heads, size, dim]);
  });
}

export interface StepOptions {
  /**
   * Keep the step's presents where the session made them (its device's memory) as the next
   * state's cache, so that a step feeds the last one's without a copy to the host and back. Only
   * on a binding with runResident (ours) and an export whose presents are the whole cache.
   */
  resident?: boolean;
}

/**
 * Where the engine's step loop keeps this model's caches between runs (runtime.kvOn): the decode
 * batch's, and each prefill's, resident on the session's device or on the host. Only a binding
 * with resident runs (ours) and an export whose presents are the whole cache keep them resident.
 */
export function residentCache(
  model: LoadedModel,
  layout: KvLayout,
): { decodes: boolean; prefills: boolean } {
  const decodes =
    kvOnDevice(model.runtime) && !layout.appending && model.session.runResident !== undefined;
  return { decodes, prefills: decodes && prefillsOnDevice(model.runtime) };
}

/** Runs one step: feeds from the state and the new tokens, last-position logits and next state. */
export async function runStep(
  session: OrtSession,
  layout: KvLayout,
  state: KvState,
  tokens: StepTokens,
  { resident = false }: StepOptions = {},
): Promise<StepResult> {
  let outputs: Record<string, KvTensor>;
  const feeds = stepFeeds(layout, state, tokens);
  try {
    if (resident && session.runResident !== undefined && !layout.appending) {
      const out = await session.runResident({
        feeds,
        hostOutputs: [layout.logitsName],
        residentOutputs: layout.presentNames,
      });
      outputs = { ...out.host, ...out.resident };
    } else {
      outputs = await session.run(hostFeeds(feeds), [layout.logitsName, ...layout.presentNames]);
    }
  } catch (cause) {
    throw new InferenceError(`decoder step failed: ${String(cause)}`, { cause });
  }
  const logits = outputs[layout.logitsName];
  if (logits === undefined || isResident(logits))
    throw new InferenceError(`the model returned no '${layout.logitsName}'`);
  const data = floatData(logits, layout.logitsName);
  const [batch = 0, seq = 0, vocab = 0] = logits.dims;
  const last = Array.from({ length: batch }, (_, r) =>
    data.slice((r * seq + seq - 1) * vocab, (r * seq + seq) * vocab),
  );
  return { logits: last, state: advance(layout, state, tokens, outputs) };
}

/** Frees the resident tensors of `old` that `kept` does not hold (states the loop dropped). */
export function releaseResident(old: Iterable<KvState>, kept: Iterable<KvState> = []): void {
  const live = new Set<KvTensor>();
  for (const state of kept) for (const t of state.past) live.add(t);
  for (const state of old)
    for (const t of state.past) if (isResident(t) && !live.has(t)) t.release();
}

function byLayerThenKind(a: string, b: string): number {
  const [, la = '0', ka = ''] = PAST.exec(a) ?? [];
  const [, lb = '0', kb = ''] = PAST.exec(b) ?? [];
  return Number(la) - Number(lb) || ka.localeCompare(kb);
}

function numberOr(value: unknown): number | undefined {
  return typeof value === 'number' ? value : undefined;
}

function dimOr(dim: unknown, fallback: number | undefined): number | undefined {
  return typeof dim === 'number' && dim > 0 ? dim : fallback;
}
