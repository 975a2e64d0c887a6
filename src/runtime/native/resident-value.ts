// An output OrtValue kept where its session made it, between runs: the decode loop's KV cache
// stays on the GPU from one step to the next this way (the next step binds it as its past). It is
// copied to the host only when JS must read it (a re-assembly of the decode batch), once, and
// freed when the loop drops it; a finalizer frees one the loop forgot, so a leak is bounded by GC.
import type { ResidentTensor } from '../session.ts';
import type { Tensor } from '../tensor.ts';
import type { OrtLibrary, Pointer } from './ort-library.ts';

const finalizer = new FinalizationRegistry<() => void>((free) => free());

/** This thread's resident values made, not yet freed, and copied to the host. */
const counts = { made: 0, live: 0, hostCopies: 0 };

/** A copy of this thread's counts: what the loops made and hold on the device, and what came back. */
export function residentStats(): { made: number; live: number; hostCopies: number } {
  return { ...counts };
}

export class ResidentValue implements ResidentTensor {
  readonly resident = true as const;
  readonly type: Tensor.Type;
  readonly dims: readonly number[];
  private value: Pointer | undefined;
  private host: Tensor | undefined;
  private readonly lib: OrtLibrary;
  private readonly copy: (value: Pointer) => Tensor;
  private readonly token = {};

  constructor(
    lib: OrtLibrary,
    value: Pointer,
    shape: { type: Tensor.Type; dims: readonly number[] },
    copy: (value: Pointer) => Tensor,
  ) {
    this.lib = lib;
    this.value = value;
    this.type = shape.type;
    this.dims = shape.dims;
    this.copy = copy;
    counts.made += 1;
    counts.live += 1;
    finalizer.register(
      this,
      () => {
        counts.live -= 1;
        lib.fn('ReleaseValue')(value);
      },
      this.token,
    );
  }

  /** The OrtValue, for binding as a later run's input. */
  get pointer(): Pointer {
    if (this.value === undefined)
      throw new Error('a resident tensor was used after it was released');
    return this.value;
  }

  toHost(): Tensor {
    if (this.host === undefined) {
      this.host = this.copy(this.pointer);
      counts.hostCopies += 1;
    }
    return this.host;
  }

  release(): void {
    const value = this.value;
    if (value === undefined) return;
    this.value = undefined;
    finalizer.unregister(this.token);
    counts.live -= 1;
    this.lib.fn('ReleaseValue')(value);
  }
}
