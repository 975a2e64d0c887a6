// What the decoding loops need from a decoder, and nothing more: so greedy, sampling and beam
// search run the same over an ONNX encoder–decoder (seq2seq-model.ts) and over a fake in tests.

export interface DecoderStepper {
  /** Rows the decoder holds now. */
  readonly rows: number;
  /** Feeds one token per row (the decoder start token first) and returns each row's next-token logits. */
  step(tokens: readonly number[]): Promise<Float32Array[]>;
  /** Keeps the given rows, in this order (repeats allowed), with everything cached for them. */
  select(rows: readonly number[]): void;
  /** Frees what it holds outside JS (a cache resident on a device); it is not stepped again. */
  release?(): void;
}
