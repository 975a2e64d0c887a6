// Float32 memory for outputs a caller reads once and lets go: an encoder's hidden states, which
// featureExtraction pools into one vector and drops. A fresh array per run (393 KB for a 256-token
// MiniLM record) kept V8's garbage-collector helpers busy for ~0.2 ms a record, twice what
// onnxruntime-node's runs cost them (docs/performance.md, "A record's work around Run"). A caller
// asks for scratch outputs (RunOptions.scratch), reads them, and gives each back; only then is its
// memory handed out again, so two batches interleaving on one thread never share a buffer. An
// array never given back is garbage like any other.

/** Free buffers kept for the next runs; more are dropped (the smallest first). */
const KEPT_BUFFERS = 4;
/** A buffer larger than this is not kept: a wide batch's hidden states would pin megabytes. */
const KEPT_BYTES = 4 << 20;
/** Capacities are rounded up to this many floats, so that slightly longer records fit. */
const CAPACITY_STEP = 16_384;

export class OutputScratch {
  private free: ArrayBuffer[] = [];
  private readonly taken = new Set<ArrayBuffer>();

  /** `count` floats, not zeroed: the caller overwrites all of them. */
  take(count: number): Float32Array {
    let best = -1;
    this.free.forEach((buffer, i) => {
      if (buffer.byteLength < count * 4) return;
      if (best < 0 || buffer.byteLength < (this.free[best] as ArrayBuffer).byteLength) best = i;
    });
    const buffer =
      best >= 0
        ? (this.free.splice(best, 1)[0] as ArrayBuffer)
        : new ArrayBuffer(Math.ceil(count / CAPACITY_STEP) * CAPACITY_STEP * 4);
    this.taken.add(buffer);
    return new Float32Array(buffer, 0, count);
  }

  /** Hands an array from take() back; anything else is ignored. */
  giveBack(array: unknown): void {
    if (!(array instanceof Float32Array)) return;
    const buffer = array.buffer;
    if (!(buffer instanceof ArrayBuffer) || !this.taken.delete(buffer)) return;
    if (buffer.byteLength > KEPT_BYTES) return;
    this.free.push(buffer);
    if (this.free.length > KEPT_BUFFERS) {
      this.free.sort((a, b) => b.byteLength - a.byteLength);
      this.free = this.free.slice(0, KEPT_BUFFERS);
    }
  }

  /** Buffers kept for reuse (tests). */
  get kept(): number {
    return this.free.length;
  }
}

/** This thread's scratch (every worker thread has its own module instance). */
export const outputScratch = new OutputScratch();
