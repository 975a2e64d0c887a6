// The one runtime interface every pipeline runs on: a loaded ONNX graph with its inputs' and
// outputs' metadata and a `run` over tensors. Two bindings implement it (runtimes.ts): our own over
// ONNX Runtime's C API (native/) and onnxruntime-node (node-runtime.ts). Tensors are
// onnxruntime-common's plain data objects (type, data, dims) on both.
import type { InferenceSession } from 'onnxruntime-common';
import type { Tensor } from './tensor.ts';

export type ValueMetadata = InferenceSession.ValueMetadata;
export type TensorMetadata = InferenceSession.TensorValueMetadata;

export type Feeds = Record<string, Tensor>;
export type Outputs = Record<string, Tensor>;

export interface OrtSession {
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  readonly inputMetadata: readonly ValueMetadata[];
  readonly outputMetadata: readonly ValueMetadata[];
  /** Runs the graph; with `fetches`, only those outputs are computed and returned. */
  run(feeds: Feeds, fetches?: readonly string[]): Promise<Outputs>;
  /** Frees the session (for a shared one: this holder's share of it). */
  release(): Promise<void>;
}
