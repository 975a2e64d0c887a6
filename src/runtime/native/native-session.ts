// An OrtSession through our own binding: the graph's metadata read once, feeds checked against it
// before any native call (a wrong name, dtype or shape is a typed error naming the model and the
// tensor, never a crash), and Run over OrtValues that point at the feeds' own memory.
import { FeedMismatchError, OrtStatusError } from '../../errors.ts';
import { sessionDevice, stagesFeeds, type CompiledRuntimeOptions } from '../runtime-options.ts';
import {
  isResident,
  runLinkedThroughHost,
  type Feeds,
  type LinkedRun,
  type OrtSession,
  type Outputs,
  type ResidentFeeds,
  type ResidentOutputs,
  type ResidentRun,
  type ResidentTensor,
  type RunOptions,
  type ValueMetadata,
} from '../session.ts';
import { outputScratch } from '../output-scratch.ts';
import { HostCopiers, type CopierSession } from './host-copiers.ts';
import { ResidentValue } from './resident-value.ts';
import type { Tensor } from '../tensor.ts';
import { IoBinding, releaseValues } from './io-binding.ts';
import type { OrtLibrary, Pointer } from './ort-library.ts';
import { readOutputValue, valueShape } from './ort-value.ts';
import { describe, freeNames } from './session-metadata.ts';
import { SessionSignature } from './session-signature.ts';
import { feedValue, StagingPool, type StagingBuffers } from './staging-buffers.ts';
import { stagingMemoryOf, type ThreadHandles } from './thread-handles.ts';
import type { SharedSessions } from './shared-sessions.ts';

interface Share {
  table: SharedSessions;
  key: string;
}

/** Where a session runs, and how it opens the helper graphs' sessions it needs there. */
export interface SessionPlace {
  memory: Pointer;
  options: CompiledRuntimeOptions;
  runsOffThread?: boolean;
  /** Opens a helper graph (a copy graph) on the same device, one intra-op thread. */
  openHelper: (name: string, bytes: Uint8Array) => CopierSession;
}

/** One Run's arguments and the values it owns, from prepareRun to releaseRun. */
interface PreparedRun {
  outputNames: readonly string[];
  inputValues: BigUint64Array;
  outputValues: BigUint64Array;
  args: unknown[];
  /** The feeds, whose memory the input OrtValues point at: referenced until the run ends. */
  feeds?: Feeds;
  /** The staging buffers the input values point at, given back when the run ends. */
  staging?: StagingBuffers | undefined;
}

/** Frees what a session's holder owns if its owner never calls release(). */
const finalizer = new FinalizationRegistry<() => void>((free) => free());

export class NativeSession implements OrtSession {
  private readonly signature: SessionSignature;
  /** The model file, for errors. */
  readonly onnxPath: string;
  private handle: Pointer | undefined;
  private readonly token = {};
  private readonly lib: OrtLibrary;
  private readonly thread: ThreadHandles;
  private readonly share: Share | undefined;
  private readonly names: Pointer[];
  /** Where linked and resident outputs are bound: the session's device. */
  private readonly memory: Pointer;
  /** The options it was opened with, for the helper sessions it opens on the same device. */
  private readonly options: CompiledRuntimeOptions;
  /** Copy graphs' sessions (copyToHost on a GPU). */
  private readonly copiers: HostCopiers;
  private readonly runsOffThread: boolean;
  /** Runs under way on libuv's pool, which release() waits out. */
  private readonly running = new Set<Promise<unknown>>();
  /** Where runs stage their host feeds (runtime.feedsFrom); undefined: from JS memory. */
  private readonly staging: StagingPool | undefined;

  constructor(
    lib: OrtLibrary,
    thread: ThreadHandles,
    onnxPath: string,
    handle: Pointer,
    share: Share | undefined,
    place: SessionPlace,
  ) {
    this.lib = lib;
    this.runsOffThread = place.runsOffThread ?? false;
    this.memory = place.memory;
    this.options = place.options;
    this.thread = thread;
    this.onnxPath = onnxPath;
    this.share = share;
    this.handle = handle;
    this.copiers = new HostCopiers(lib, onnxPath, place.openHelper);
    const names: Pointer[] = [];
    try {
      this.signature = new SessionSignature(
        onnxPath,
        describe(lib, handle, thread.allocator, 'Input', names),
        describe(lib, handle, thread.allocator, 'Output', names),
      );
    } catch (err) {
      freeNames(lib, thread.allocator, names);
      releaseHandle(lib, handle, share);
      throw err;
    }
    const staging = stagesFeeds(place.options)
      ? new StagingPool(
          lib,
          handle,
          stagingMemoryOf(lib, thread, sessionDevice(place.options)),
          place.options.feedsFrom === 'staging',
        )
      : undefined;
    this.staging = staging;
    finalizer.register(
      this,
      () => {
        staging?.release();
        freeNames(lib, thread.allocator, names);
        releaseHandle(lib, handle, share);
      },
      this.token,
    );
    this.names = names;
  }

  get inputNames(): readonly string[] {
    return this.signature.inputNames;
  }

  get outputNames(): readonly string[] {
    return this.signature.outputNames;
  }

  get inputMetadata(): readonly ValueMetadata[] {
    return this.signature.inputMetadata;
  }

  get outputMetadata(): readonly ValueMetadata[] {
    return this.signature.outputMetadata;
  }

  /** The OrtSession* (for IO binding and for tests). */
  get address(): Pointer {
    return this.open();
  }

  async run(feeds: Feeds, fetches?: readonly string[], options?: RunOptions): Promise<Outputs> {
    if (!this.runsOffThread) return Promise.resolve(this.runSync(feeds, fetches, options));
    const run = this.prepareRun(feeds, fetches);
    const settled = this.lib.callOffThread('Run', ...run.args);
    this.running.add(settled);
    try {
      await settled;
      return this.readRun(run, options);
    } catch (err) {
      throw this.runError(err);
    } finally {
      this.running.delete(settled);
      this.releaseRun(run);
      this.afterRun();
    }
  }

  /** Run, on the calling thread. */
  runSync(
    feeds: Feeds,
    fetches: readonly string[] = this.outputNames,
    options?: RunOptions,
  ): Outputs {
    const run = this.prepareRun(feeds, fetches);
    try {
      this.lib.call('Run', ...run.args);
      return this.readRun(run, options);
    } catch (err) {
      throw this.runError(err);
    } finally {
      this.releaseRun(run);
      this.afterRun();
    }
  }

  private afterRun(): void {
    if (this.options.trimHeap === 'runs') this.lib.trimHeap();
  }

  /** Checks the feeds and wraps them in OrtValues: Run's arguments, kept alive until it ends. */
  private prepareRun(feeds: Feeds, fetches: readonly string[] = this.outputNames): PreparedRun {
    const session = this.open();
    const entries = this.signature.feeds(feeds);
    const outputNames = this.signature.fetches(fetches);
    const inputNames = new BigUint64Array(entries.length);
    const inputValues = new BigUint64Array(entries.length);
    const outputValues = new BigUint64Array(outputNames.length);
    const staging = this.staging?.take();
    const run: PreparedRun = { outputNames, inputValues, outputValues, args: [], staging };
    try {
      entries.forEach(([name, pointer, tensor], i) => {
        inputNames[i] = pointer;
        inputValues[i] = feedValue(this.lib, this.thread, tensor, name, staging);
      });
    } catch (err) {
      this.releaseRun(run);
      throw this.runError(err);
    }
    run.args = [
      session,
      null,
      inputNames,
      inputValues,
      entries.length,
      BigUint64Array.from(outputNames, (n) => this.signature.outputPointer(n)),
      outputNames.length,
      outputValues,
    ];
    run.feeds = feeds;
    return run;
  }

  private readRun({ outputNames, outputValues }: PreparedRun, options?: RunOptions): Outputs {
    const out: Outputs = {};
    const scratch = options?.scratch === true ? outputScratch : undefined;
    outputNames.forEach((name, i) => {
      out[name] = readOutputValue(this.lib, outputValues[i] as Pointer, name, scratch);
    });
    return out;
  }

  private releaseRun({ inputValues, outputValues, staging }: PreparedRun): void {
    const release = this.lib.fn('ReleaseValue');
    for (const value of inputValues) if (value !== 0n) release(value);
    for (const value of outputValues) if (value !== 0n) release(value);
    this.staging?.give(staging);
  }

  /** Why this session reads its feeds from JS memory although 'auto' chose staging, if it does. */
  get stagingProblem(): string | undefined {
    return this.staging?.problem;
  }

  /**
   * The name of the memory this session's feeds are staged in ('CudaPinned' on a GPU, 'Cpu' on
   * the host), or undefined when it reads them from JS memory.
   */
  stagingMemory(): string | undefined {
    return this.staging?.memoryName();
  }

  /** Binds host feeds to `binding` (staged when `staging` is given) and resident ones as they are. */
  private bindFeeds(
    binding: IoBinding,
    feeds: ResidentFeeds,
    staging: StagingBuffers | undefined,
  ): void {
    for (const [name, , tensor] of this.signature.feeds(feeds)) {
      if (isResident(tensor)) binding.bindInputValue(name, residentPointer(tensor, name));
      else binding.bindInput(name, tensor, staging);
    }
  }

  private runError(err: unknown): unknown {
    return err instanceof OrtStatusError ? err.within(this.onnxPath) : err;
  }

  async runLinked(run: LinkedRun): Promise<Outputs> {
    // Another binding's session cannot take our OrtValues.
    if (!(run.next instanceof NativeSession)) return runLinkedThroughHost(this, run);
    return Promise.resolve(this.runLinkedSync({ ...run, next: run.next }));
  }

  /**
   * Both runs on the calling thread through IO binding: this session's linked outputs are bound to
   * its device's memory and handed to `next`'s binding as they are; `next`'s outputs are copied
   * to the host. On CPU the values are the same either way; on a GPU only `next`'s cross PCIe.
   */
  runLinkedSync({ feeds, next, link, nextFeeds }: LinkedRun & { next: NativeSession }): Outputs {
    const produced = this.signature.fetches([...new Set(Object.values(link))]);
    next.signature.feeds({ ...nextFeeds }, new Set(Object.keys(link)));
    const first = this.ioBinding();
    const second = next.ioBinding();
    const staging = this.staging?.take();
    let values = new Map<string, Pointer>();
    try {
      this.bindFeeds(first, feeds, staging);
      for (const name of produced) first.bindOutputToDevice(name, this.memory);
      first.run();
      values = first.takeOutputValues();
      for (const [input, output] of Object.entries(link))
        second.bindInputValue(input, values.get(output) as Pointer);
      for (const [name, tensor] of Object.entries(nextFeeds)) second.bindInput(name, tensor);
      for (const name of next.outputNames) second.bindOutputToCpu(name);
      second.run();
      return second.outputs();
    } catch (err) {
      if (err instanceof OrtStatusError) throw err.within(`${this.onnxPath} -> ${next.onnxPath}`);
      throw err;
    } finally {
      releaseValues(this.lib, values);
      first.release();
      second.release();
      this.staging?.give(staging);
    }
  }

  async runResident(run: ResidentRun): Promise<ResidentOutputs> {
    return Promise.resolve(this.runResidentSync(run));
  }

  /**
   * One run through IO binding: resident feeds are bound as they are, host ones over their JS
   * memory; `residentOutputs` stay in the session's device memory as ResidentValues the caller
   * releases, `hostOutputs` are copied to JS.
   */
  runResidentSync({ feeds, hostOutputs, residentOutputs }: ResidentRun): ResidentOutputs {
    const fetched = this.signature.fetches([...hostOutputs, ...residentOutputs]);
    const host = new Set(hostOutputs);
    const binding = this.ioBinding();
    const staging = this.staging?.take();
    let values = new Map<string, Pointer>();
    try {
      this.bindFeeds(binding, feeds, staging);
      for (const name of fetched) {
        if (host.has(name)) binding.bindOutputToCpu(name);
        else binding.bindOutputToDevice(name, this.memory);
      }
      binding.run();
      values = binding.takeOutputValues();
      const out: ResidentOutputs = { host: {}, resident: {} };
      for (const [name, value] of values) {
        if (host.has(name)) {
          out.host[name] = readOutputValue(this.lib, value, name);
          continue;
        }
        const shape = valueShape(this.lib, value, name);
        out.resident[name] = new ResidentValue(this.lib, value, shape, (v) => this.copyToHost(v));
        values.delete(name);
      }
      return out;
    } catch (err) {
      if (err instanceof OrtStatusError) throw err.within(this.onnxPath);
      throw err;
    } finally {
      releaseValues(this.lib, values);
      binding.release();
      this.staging?.give(staging);
    }
  }

  /**
   * A host copy of one of this session's resident outputs: read where it lies on CPU, or through a
   * copy graph's run on the session's device (`throughCopyGraph` forces that path on CPU too).
   */
  copyToHost(
    value: Pointer,
    throughCopyGraph = sessionDevice(this.options).kind !== 'cpu',
  ): Tensor {
    if (!throughCopyGraph) return readOutputValue(this.lib, value, 'resident value');
    return this.copiers.copy(value);
  }

  /** An IO binding over this session. */
  ioBinding(): IoBinding {
    return new IoBinding(
      this.lib,
      this.open(),
      this.thread,
      (name) => this.signature.hasInput(name),
      this.onnxPath,
    );
  }

  async release(): Promise<void> {
    const handle = this.handle;
    if (handle === undefined) return;
    this.handle = undefined;
    // A run on libuv's pool still uses the session: freed under it, ONNX Runtime would crash.
    await Promise.allSettled([...this.running]);
    finalizer.unregister(this.token);
    await this.copiers.release();
    // An allocator from CreateAllocator is the session's: it goes before the session does.
    this.staging?.release();
    freeNames(this.lib, this.thread.allocator, this.names);
    releaseHandle(this.lib, handle, this.share);
    return Promise.resolve();
  }

  private open(): Pointer {
    if (this.handle === undefined)
      throw new FeedMismatchError(`${this.onnxPath}: the session was released`);
    return this.handle;
  }
}

function residentPointer(tensor: ResidentTensor, name: string): Pointer {
  if (!(tensor instanceof ResidentValue))
    throw new FeedMismatchError(`input '${name}' is a resident tensor of another binding`, {
      field: name,
    });
  return tensor.pointer;
}

function releaseHandle(lib: OrtLibrary, handle: Pointer, share: Share | undefined): void {
  const release = (address: Pointer): void => void lib.fn('ReleaseSession')(address);
  if (share === undefined) release(handle);
  else share.table.release(share.key, release);
}
