// Copy graphs' sessions, one per element type and rank, opened on first use: they bring a
// session's resident outputs to the host from the device they lie on (copyToHost on a GPU).
import { FeedMismatchError } from '../../errors.ts';
import { COPY_INPUT, COPY_OUTPUT, copyGraph } from '../graphs/copy-graph.ts';
import type { Tensor } from '../tensor.ts';
import type { IoBinding } from './io-binding.ts';
import type { OrtLibrary, Pointer } from './ort-library.ts';
import { valueShape } from './ort-value.ts';

/** What the copiers need of a session they open: an IO binding, and its release. */
export interface CopierSession {
  ioBinding(): IoBinding;
  release(): Promise<void>;
}

export class HostCopiers {
  private readonly sessions = new Map<string, CopierSession>();

  private readonly lib: OrtLibrary;
  /** The owner's model, for errors. */
  private readonly owner: string;
  /** Opens a helper graph's bytes on the owner's device. */
  private readonly open: (name: string, bytes: Uint8Array) => CopierSession;

  constructor(
    lib: OrtLibrary,
    owner: string,
    open: (name: string, bytes: Uint8Array) => CopierSession,
  ) {
    this.lib = lib;
    this.owner = owner;
    this.open = open;
  }

  copy(value: Pointer): Tensor {
    const { type, dims } = valueShape(this.lib, value, 'resident value');
    const key = `${type}/${dims.length}`;
    let copier = this.sessions.get(key);
    if (copier === undefined) {
      const bytes = copyGraph(type, dims.length);
      if (bytes === undefined)
        throw new FeedMismatchError(`${this.owner}: a ${type} value cannot be copied to the host`);
      copier = this.open(`copy-${key}`, bytes);
      this.sessions.set(key, copier);
    }
    const binding = copier.ioBinding();
    try {
      binding.bindInputValue(COPY_INPUT, value);
      binding.bindOutputToCpu(COPY_OUTPUT);
      binding.run();
      return binding.outputs()[COPY_OUTPUT] as Tensor;
    } finally {
      binding.release();
    }
  }

  async release(): Promise<void> {
    for (const copier of this.sessions.values()) await copier.release();
    this.sessions.clear();
  }
}
