// Host buffers that a run's feeds are copied into before ONNX Runtime reads them (runtime.feedsFrom).
// On a GPU they come from the CUDA provider's pinned ('CudaPinned') allocator: a copy to the device
// from page-locked memory is one DMA, where one from JS memory goes through a bounce buffer that
// the driver pins and fills on every call. Each input keeps its buffer from run to run and grows
// it (doubling) only when a batch outgrows it, so a steady stream of batches allocates nothing.
// On CPU the same code takes the session's CPU allocator: the twin that CI runs.
import { FeedMismatchError, OrtStatusError, ProviderUnavailableError } from '../../errors.ts';
import type { Tensor } from '../tensor.ts';
import { readCString, type OrtLibrary, type Pointer } from './ort-library.ts';
import { createInputValue, ELEMENT_TYPES, type ElementType } from './ort-value.ts';

/** The smallest buffer made, so that short batches of one shape do not grow it step by step. */
const MIN_BYTES = 256;

interface Buffer {
  address: Pointer;
  bytes: number;
}

/** This thread's staging counts, for tests and the device checks. */
const counts = { allocations: 0, liveBuffers: 0, liveBytes: 0 };

export function stagingStats(): { allocations: number; liveBuffers: number; liveBytes: number } {
  return { ...counts };
}

/**
 * The session's allocator for `memory` (CreateAllocator's, which the buffers then own), or the
 * reason there is none: a provider that keeps no allocator for that memory refuses the call. Staging
 * chosen by default ('auto') then falls back to JS memory; staging the user asked for
 * (`required`) fails as a ProviderUnavailableError naming runtime.feedsFrom.
 */
export function stagingAllocator(
  lib: OrtLibrary,
  session: Pointer,
  memory: Pointer,
  required: boolean,
): { allocator: Pointer } | { problem: string } {
  try {
    return { allocator: lib.out('CreateAllocator', session, memory) };
  } catch (err) {
    if (!(err instanceof OrtStatusError)) throw err;
    const name = readCString(lib.out('MemoryInfoGetName', memory));
    const problem = `the session has no '${name}' allocator to stage feeds in (${err.message})`;
    if (!required) return { problem };
    throw new ProviderUnavailableError(
      `${problem}; set runtime.feedsFrom to 'js' (or 'auto') to feed from JS memory`,
      { cause: err, field: 'runtime.feedsFrom' },
    );
  }
}

/**
 * An OrtValue for a host feed: over a copy in `staging`'s buffer when given and the tensor is
 * numeric, else over the tensor's own memory (createInputValue). The caller releases it.
 */
export function feedValue(
  lib: OrtLibrary,
  thread: { cpuMemory: Pointer; allocator: Pointer },
  tensor: Tensor,
  name: string,
  staging: StagingBuffers | undefined,
): Pointer {
  if (staging !== undefined && StagingBuffers.takes(tensor)) return staging.valueFor(name, tensor);
  return createInputValue(lib, thread.cpuMemory, thread.allocator, tensor, name);
}

export class StagingBuffers {
  private readonly lib: OrtLibrary;
  private readonly allocator: Pointer;
  /** The allocator's OrtMemoryInfo (owned by the allocator), which the staged values carry. */
  private readonly memory: Pointer;
  private readonly buffers = new Map<string, Buffer>();

  /** `allocator` is one CreateAllocator made; the buffers own it and release it with themselves. */
  constructor(lib: OrtLibrary, allocator: Pointer) {
    this.lib = lib;
    this.allocator = allocator;
    this.memory = lib.out('AllocatorGetInfo', allocator);
  }

  /** The name ONNX Runtime gives the buffers' memory ('CudaPinned' on a GPU, 'Cpu' on the host). */
  memoryName(): string {
    return readCString(this.lib.out('MemoryInfoGetName', this.memory));
  }

  /**
   * An OrtValue over a copy of `tensor` in input `name`'s buffer, valid until the next call for
   * the same name; the caller releases the value (not the buffer) after its run.
   */
  valueFor(name: string, tensor: Tensor): Pointer {
    const type = tensor.type as ElementType;
    const code = ELEMENT_TYPES[type] as number | undefined;
    const data = tensor.data as unknown;
    if (code === undefined || type === 'string' || !ArrayBuffer.isView(data))
      throw new FeedMismatchError(`input '${name}' (${tensor.type}) cannot be staged`, {
        field: name,
      });
    const buffer = this.bufferFor(name, data.byteLength);
    this.lib.write(buffer.address, data);
    const shape = BigInt64Array.from(tensor.dims, (d) => BigInt(d));
    return this.lib.out(
      'CreateTensorWithDataAsOrtValue',
      this.memory,
      buffer.address,
      data.byteLength,
      shape,
      shape.length,
      code,
    );
  }

  /** Whether a tensor can go through a buffer: numeric data (strings are bound as they are). */
  static takes(tensor: Tensor): boolean {
    return tensor.type !== 'string' && ArrayBuffer.isView(tensor.data);
  }

  release(): void {
    const free = this.lib.fn('AllocatorFree');
    for (const { address, bytes } of this.buffers.values()) {
      free(this.allocator, address);
      counts.liveBuffers -= 1;
      counts.liveBytes -= bytes;
    }
    this.buffers.clear();
    this.lib.fn('ReleaseAllocator')(this.allocator);
  }

  private bufferFor(name: string, bytes: number): Buffer {
    const held = this.buffers.get(name);
    if (held !== undefined && held.bytes >= bytes) return held;
    let size = Math.max(MIN_BYTES, held?.bytes ?? 0);
    while (size < bytes) size *= 2;
    const address = this.lib.out('AllocatorAlloc', this.allocator, size);
    if (held !== undefined) {
      this.lib.fn('AllocatorFree')(this.allocator, held.address);
      counts.liveBuffers -= 1;
      counts.liveBytes -= held.bytes;
    }
    const buffer = { address, bytes: size };
    this.buffers.set(name, buffer);
    counts.allocations += 1;
    counts.liveBuffers += 1;
    counts.liveBytes += size;
    return buffer;
  }
}

/**
 * A session's sets of staging buffers: one per run under way at once, since a run's values point
 * into its set until it ends. The first set opens the session's allocator for `memory`; a session
 * without one (under 'auto') stages nothing from then on and keeps the reason.
 */
export class StagingPool {
  private readonly lib: OrtLibrary;
  /** The OrtSession* and memory the allocators are made for; not the session object, which the
   * pool must not keep reachable (its finalizer releases the pool). */
  private readonly session: Pointer;
  private readonly memory: Pointer;
  private readonly required: boolean;
  private readonly free: StagingBuffers[] = [];
  private readonly made: StagingBuffers[] = [];
  private fallback: string | undefined;

  constructor(lib: OrtLibrary, session: Pointer, memory: Pointer, required: boolean) {
    this.lib = lib;
    this.session = session;
    this.memory = memory;
    this.required = required;
  }

  /** A free set (a new one when every set is in a run), or none once staging fell back. */
  take(): StagingBuffers | undefined {
    if (this.fallback !== undefined) return undefined;
    const free = this.free.pop();
    if (free !== undefined) return free;
    const opened = stagingAllocator(this.lib, this.session, this.memory, this.required);
    if ('problem' in opened) {
      this.fallback = opened.problem;
      return undefined;
    }
    const made = new StagingBuffers(this.lib, opened.allocator);
    this.made.push(made);
    return made;
  }

  give(set: StagingBuffers | undefined): void {
    if (set !== undefined) this.free.push(set);
  }

  /** Why the session reads its feeds from JS memory although 'auto' chose staging, if it does. */
  get problem(): string | undefined {
    return this.fallback;
  }

  /** The name of the memory the sets are in, or undefined once staging fell back. */
  memoryName(): string | undefined {
    const set = this.take();
    this.give(set);
    return set?.memoryName();
  }

  /** Frees every set and its allocator; before the session, whose allocators they are. */
  release(): void {
    for (const set of this.made) set.release();
    this.made.length = 0;
    this.free.length = 0;
  }
}
