// ONNX Runtime's IO binding over one session: inputs bound once and reused across runs, outputs
// bound to a memory location (ONNX Runtime allocates them there) or to a caller's tensor, which
// a run then writes in place. A session on a GPU binds its outputs to the device's OrtMemoryInfo
// and hands the values to another binding as inputs (a linked run), so they never cross PCIe.
import { FeedMismatchError } from '../../errors.ts';
import type { Outputs } from '../session.ts';
import type { Tensor } from '../tensor.ts';
import type { OrtLibrary, Pointer } from './ort-library.ts';
import { readOutputValue } from './ort-value.ts';
import { feedValue, type StagingBuffers } from './staging-buffers.ts';

interface BindingThread {
  allocator: Pointer;
  cpuMemory: Pointer;
}

export class IoBinding {
  private handle: Pointer | undefined;
  /** Values bound to the binding, with the tensors whose memory they point at (kept alive). */
  private readonly held = new Map<string, { value: Pointer; tensor: Tensor }>();

  private readonly lib: OrtLibrary;
  private readonly session: Pointer;
  private readonly thread: BindingThread;
  private readonly isInput: (name: string) => boolean;
  private readonly onnxPath: string;

  constructor(
    lib: OrtLibrary,
    session: Pointer,
    thread: BindingThread,
    isInput: (name: string) => boolean,
    onnxPath: string,
  ) {
    this.lib = lib;
    this.session = session;
    this.thread = thread;
    this.isInput = isInput;
    this.onnxPath = onnxPath;
    this.handle = lib.out('CreateIoBinding', session);
  }

  /** Binds `tensor` over its own memory, or over a copy in `staging`'s buffer when it takes it. */
  bindInput(name: string, tensor: Tensor, staging?: StagingBuffers): void {
    if (!this.isInput(name))
      throw new FeedMismatchError(`${this.onnxPath}: '${name}' is not an input of the model`, {
        field: name,
      });
    this.bindTensor('BindInput', name, tensor, staging);
  }

  /** An OrtValue the caller owns (another run's output), bound as input `name` as it is. */
  bindInputValue(name: string, value: Pointer): void {
    if (!this.isInput(name))
      throw new FeedMismatchError(`${this.onnxPath}: '${name}' is not an input of the model`, {
        field: name,
      });
    this.lib.call('BindInput', this.open(), name, value);
  }

  /** The run writes output `name` into `tensor`'s memory (its shape must be the output's). */
  bindOutput(name: string, tensor: Tensor): void {
    this.bindTensor('BindOutput', name, tensor);
  }

  /**
   * An OrtValue over `tensor`'s memory (or its staged copy), held with the tensor until it is
   * bound anew or dropped.
   */
  private bindTensor(
    call: 'BindInput' | 'BindOutput',
    name: string,
    tensor: Tensor,
    staging?: StagingBuffers,
  ): void {
    const value = feedValue(this.lib, this.thread, tensor, name, staging);
    this.keep(`${call}:${name}`, value, tensor);
    this.lib.call(call, this.open(), name, value);
  }

  /** ONNX Runtime allocates output `name` in CPU memory at each run. */
  bindOutputToCpu(name: string): void {
    this.bindOutputToDevice(name, this.thread.cpuMemory);
  }

  /** ONNX Runtime allocates output `name` at each run in `memory` (an OrtMemoryInfo). */
  bindOutputToDevice(name: string, memory: Pointer): void {
    this.lib.call('BindOutputToDevice', this.open(), name, memory);
  }

  run(): void {
    this.lib.call('RunWithBinding', this.session, null, this.open());
  }

  /** Copies of the bound outputs after a run, by name. */
  outputs(): Outputs {
    const values = this.takeOutputValues();
    const out: Outputs = {};
    try {
      for (const [name, value] of values) out[name] = readOutputValue(this.lib, value, name);
    } finally {
      releaseValues(this.lib, values);
    }
    return out;
  }

  /**
   * The bound outputs after a run as OrtValues, by name, in the memory they were bound to; the
   * caller releases them (releaseValues) once done.
   */
  takeOutputValues(): Map<string, Pointer> {
    const binding = this.open();
    const names = this.boundOutputNames(binding);
    const table = new BigUint64Array(2);
    this.lib.call(
      'GetBoundOutputValues',
      binding,
      this.thread.allocator,
      table.subarray(0, 1),
      table.subarray(1, 2),
    );
    const [valuesPtr, countBig] = [table[0] as Pointer, table[1] as bigint];
    const values = new Map<string, Pointer>();
    for (let i = 0; i < Number(countBig); i += 1)
      values.set(names[i] ?? `output${i}`, this.lib.readPointer(valuesPtr, i));
    if (valuesPtr !== 0n) this.lib.fn('AllocatorFree')(this.thread.allocator, valuesPtr);
    return values;
  }

  clear(): void {
    const binding = this.open();
    this.lib.fn('ClearBoundInputs')(binding);
    this.lib.fn('ClearBoundOutputs')(binding);
    this.dropHeld();
  }

  release(): void {
    const binding = this.handle;
    if (binding === undefined) return;
    this.handle = undefined;
    this.lib.fn('ReleaseIoBinding')(binding);
    this.dropHeld();
  }

  private boundOutputNames(binding: Pointer): string[] {
    const slots = new BigUint64Array(3);
    this.lib.call(
      'GetBoundOutputNames',
      binding,
      this.thread.allocator,
      slots.subarray(0, 1),
      slots.subarray(1, 2),
      slots.subarray(2, 3),
    );
    const [buffer, lengths, count] = [slots[0] as Pointer, slots[1] as Pointer, Number(slots[2])];
    const names: string[] = [];
    if (count === 0) return names;
    const lengthsCopy = new BigUint64Array(count);
    this.lib.copy(lengths, lengthsCopy);
    const sizes = Array.from(lengthsCopy, Number);
    const bytes = Buffer.alloc(sizes.reduce((x, y) => x + y, 0));
    this.lib.copy(buffer, bytes);
    let offset = 0;
    for (const size of sizes) {
      names.push(bytes.toString('utf8', offset, offset + size));
      offset += size;
    }
    const free = this.lib.fn('AllocatorFree');
    free(this.thread.allocator, buffer);
    free(this.thread.allocator, lengths);
    return names;
  }

  private keep(key: string, value: Pointer, tensor: Tensor): void {
    const previous = this.held.get(key);
    if (previous !== undefined) this.lib.fn('ReleaseValue')(previous.value);
    this.held.set(key, { value, tensor });
  }

  private dropHeld(): void {
    const release = this.lib.fn('ReleaseValue');
    for (const { value } of this.held.values()) release(value);
    this.held.clear();
  }

  private open(): Pointer {
    if (this.handle === undefined)
      throw new FeedMismatchError(`${this.onnxPath}: the IO binding was released`);
    return this.handle;
  }
}

export function releaseValues(lib: OrtLibrary, values: ReadonlyMap<string, Pointer>): void {
  const release = lib.fn('ReleaseValue');
  for (const value of values.values()) release(value);
}
