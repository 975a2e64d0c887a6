// The one runtime interface every pipeline runs on: a loaded ONNX graph with its inputs' and
// outputs' metadata and a `run` over tensors. Two bindings implement it (runtimes.ts): our own over
// ONNX Runtime's C API (native/) and onnxruntime-node (node-runtime.ts). Tensors are
// onnxruntime-common's plain data objects (type, data, dims) on both.
import type { InferenceSession } from 'onnxruntime-common';
import { InferenceError } from '../errors.ts';
import type { Tensor } from './tensor.ts';

export type ValueMetadata = InferenceSession.ValueMetadata;
export type TensorMetadata = InferenceSession.TensorValueMetadata;

export type Feeds = Record<string, Tensor>;
export type Outputs = Record<string, Tensor>;

export interface RunOptions {
  /**
   * float32 outputs in memory from this thread's outputScratch (output-scratch.ts), where the
   * binding copies outputs (ours); the caller gives each back once read. Ignored elsewhere.
   */
  scratch?: boolean;
}

/**
 * One session's run feeding another's: `link` maps each of `next`'s inputs to the output of this
 * session that feeds it. Where the binding can (ours, through IO binding), linked values stay in
 * the memory the first run made them in (the GPU's, on a CUDA session) and only `next`'s outputs
 * come to the host.
 */
export interface LinkedRun {
  feeds: Feeds;
  next: OrtSession;
  link: Readonly<Record<string, string>>;
  /** `next`'s other inputs, from the host. */
  nextFeeds: Feeds;
}

/**
 * A run's output kept where the session made it (an OrtValue the binding owns: device memory on a
 * GPU session, ONNX Runtime's CPU memory otherwise), to be fed to a later run as it is. Only the
 * native binding makes them (runResident).
 */
export interface ResidentTensor {
  readonly resident: true;
  readonly type: Tensor.Type;
  readonly dims: readonly number[];
  /** A host copy, made once on first use and kept (the value stays resident as well). */
  toHost(): Tensor;
  /** Frees the value; the host copy, if one was made, stays valid. */
  release(): void;
}

export type ResidentFeeds = Record<string, Tensor | ResidentTensor>;

export interface ResidentRun {
  feeds: ResidentFeeds;
  /** Outputs copied to the host. */
  hostOutputs: readonly string[];
  /** Outputs left where they are made, as ResidentTensors. */
  residentOutputs: readonly string[];
}

export interface ResidentOutputs {
  host: Outputs;
  resident: Record<string, ResidentTensor>;
}

export function isResident(value: Tensor | ResidentTensor | undefined): value is ResidentTensor {
  return value !== undefined && 'resident' in value && value.resident;
}

/**
 * A run whose outputs all stay resident, in `outputs` order: how the helper graphs
 * (src/runtime/graphs/) move resident values on their device. `needs` names what asked, for the
 * error on a binding without resident runs.
 */
export async function runAllResident(
  session: OrtSession,
  feeds: ResidentFeeds,
  outputs: readonly string[],
  needs: string,
): Promise<ResidentTensor[]> {
  if (session.runResident === undefined)
    throw new InferenceError(`${needs} need a binding with resident runs (native)`);
  const out = await session.runResident({ feeds, hostOutputs: [], residentOutputs: outputs });
  return outputs.map((name) => out.resident[name] as ResidentTensor);
}

export interface OrtSession {
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  readonly inputMetadata: readonly ValueMetadata[];
  readonly outputMetadata: readonly ValueMetadata[];
  /** Runs the graph; with `fetches`, only those outputs are computed and returned. */
  run(feeds: Feeds, fetches?: readonly string[], options?: RunOptions): Promise<Outputs>;
  /** Runs this session, then `run.next` on its linked outputs; returns `next`'s outputs. */
  runLinked(run: LinkedRun): Promise<Outputs>;
  /** Present on bindings that can keep outputs where they are made (ours). */
  runResident?(run: ResidentRun): Promise<ResidentOutputs>;
  /** Frees the session (for a shared one: this holder's share of it). */
  release(): Promise<void>;
}

/** A linked run through the host: the first session's outputs copied out and fed back in. */
export async function runLinkedThroughHost(first: OrtSession, run: LinkedRun): Promise<Outputs> {
  const produced = await first.run(run.feeds, [...new Set(Object.values(run.link))]);
  const linked: Feeds = {};
  for (const [input, output] of Object.entries(run.link))
    linked[input] = produced[output] as Tensor;
  return run.next.run({ ...run.nextFeeds, ...linked });
}
