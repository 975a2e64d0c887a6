// ONNX Runtime's C API, reached through koffi: the very libonnxruntime that onnxruntime-node
// ships (so the version, and the providers `npm run gpu:install` adds beside it, are the same),
// its OrtApi table read slot by slot as ort-api-table.ts (generated from the C header) lays it
// out. Each thread that imports this module binds the functions it calls once; the library itself
// is loaded once per process by the dynamic loader, so a pointer made on one thread is valid on
// every other.
import koffi from 'koffi';
import { OrtStatusError, ProviderUnavailableError } from '../../errors.ts';
import { onnxRuntimeLibraryPath } from '../library-path.ts';
import { ORT_API_TABLE, ORT_API_VERSION } from './ort-api-table.ts';

/** A native pointer, as koffi gives it. */
export type Pointer = bigint;

type NativeFunction = ((...args: unknown[]) => unknown) & {
  /** koffi's asynchronous form: the same call on libuv's pool, the callback last. */
  async: (...argsThenCallback: unknown[]) => void;
};

const SLOT_BYTES = 8;
const SLOTS = new Map(ORT_API_TABLE.map(([name, proto], index) => [name, { index, proto }]));

/** ONNX Runtime's error codes (OrtErrorCode), by value. */
const ORT_ERROR_CODES = [
  'ORT_OK',
  'ORT_FAIL',
  'ORT_INVALID_ARGUMENT',
  'ORT_NO_SUCHFILE',
  'ORT_NO_MODEL',
  'ORT_ENGINE_ERROR',
  'ORT_RUNTIME_EXCEPTION',
  'ORT_INVALID_PROTOBUF',
  'ORT_MODEL_LOADED',
  'ORT_NOT_IMPLEMENTED',
  'ORT_INVALID_GRAPH',
  'ORT_EP_FAIL',
  'ORT_MODEL_LOAD_CANCELED',
  'ORT_MODEL_REQUIRES_COMPILATION',
  'ORT_NOT_FOUND',
];

export class OrtLibrary {
  readonly path: string;
  /** The library's own version string, e.g. "1.30.0". */
  readonly version: string;
  private readonly api: Pointer;
  private readonly bound = new Map<string, NativeFunction>();
  private readonly handle: unknown;
  /** Held for the same reason as `handle`. */
  private readonly cLibrary: ReturnType<typeof koffi.load>;
  private readonly mallocTrim: ((pad: number) => number) | undefined;
  private readonly memcpy: (
    target: ArrayBufferView | Pointer,
    source: Pointer | ArrayBufferView,
    bytes: number,
  ) => unknown;

  private constructor(path: string) {
    this.path = path;
    let lib: ReturnType<typeof koffi.load>;
    try {
      lib = koffi.load(path);
      // Held for the thread's life: koffi unloads a library whose handle is collected, and every
      // pointer into it would then crash the process (bench:soak found this).
      this.handle = lib;
    } catch (cause) {
      throw new ProviderUnavailableError(
        `the native ONNX Runtime binding could not load ${path}: ${String(cause)}; ` +
          "set a model's runtime.binding to 'onnxruntime-node' to use onnxruntime-node's own binding",
        { cause, field: 'runtime.binding' },
      );
    }
    this.cLibrary = cLibrary();
    pinForProcess(this.cLibrary, path);
    this.memcpy = this.cLibrary.func(
      'void * memcpy(void * target, void * source, size_t bytes)',
    ) as typeof this.memcpy;
    this.mallocTrim = optionalFunction(this.cLibrary, 'int malloc_trim(size_t pad)') as
      ((pad: number) => number) | undefined;
    const getApiBase = lib.func('void * OrtGetApiBase()') as () => Pointer;
    const base = getApiBase();
    // struct OrtApiBase { const OrtApi* (*GetApi)(uint32_t); const char* (*GetVersionString)(void); }
    const getApi = koffi.decode(
      this.readPointer(base, 0),
      koffi.proto('void * OrtApiBaseGetApi(uint32_t version)'),
    ) as (version: number) => Pointer | null;
    const versionString = koffi.decode(
      this.readPointer(base, 1),
      koffi.proto('const char * OrtApiBaseGetVersionString()'),
    ) as () => string;
    this.version = versionString();
    const api = getApi(ORT_API_VERSION);
    if (api === null || api === 0n)
      throw new ProviderUnavailableError(
        `${path} (ONNX Runtime ${this.version}) does not serve C API version ${ORT_API_VERSION}`,
        { field: 'runtime.binding' },
      );
    this.api = api;
  }

  private static instance: OrtLibrary | undefined;

  /** This thread's binding of the library onnxruntime-node ships. */
  static get(): OrtLibrary {
    OrtLibrary.instance ??= new OrtLibrary(onnxRuntimeLibraryPath());
    return OrtLibrary.instance;
  }

  /** The OrtApi function `name`, bound on first use. */
  fn(name: string): NativeFunction {
    let bound = this.bound.get(name);
    if (bound === undefined) {
      const slot = SLOTS.get(name);
      if (slot === undefined) throw new Error(`OrtApi has no function '${name}' in its table`);
      const proto = koffi.proto(slot.proto.replace(/ (\w+)\(/, ' Ort_$1('));
      bound = koffi.decode(this.readPointer(this.api, slot.index), proto) as NativeFunction;
      this.bound.set(name, bound);
    }
    return bound;
  }

  /**
   * Copies `bytes` of native memory at `source` into `target`. Not koffi.decode, whose typed-array
   * copies leaked ~21 bytes a call (bench:soak), nor koffi.view, whose external ArrayBuffers over
   * memory ONNX Runtime frees and reuses crashed the process.
   */
  copy(source: Pointer, target: ArrayBufferView): void {
    if (target.byteLength > 0) this.memcpy(target, source, target.byteLength);
  }

  /** Copies `source`'s bytes into native memory at `target` (a buffer ONNX Runtime allocated). */
  write(target: Pointer, source: ArrayBufferView): void {
    if (source.byteLength > 0) this.memcpy(target, source, source.byteLength);
  }

  /**
   * Hands the C heap's free pages back to the system (glibc's malloc_trim; nothing elsewhere).
   * Loading a session parses the whole model file and copies its weights, and the parse's
   * buffers, freed once the session exists, otherwise stay in the process's resident memory.
   */
  trimHeap(): void {
    this.mallocTrim?.(0);
  }

  /** The pointer stored in slot `index` of a table of pointers at `table`. */
  readPointer(table: Pointer, index: number): Pointer {
    const slot = new BigUint64Array(1);
    this.copy(table + BigInt(index * SLOT_BYTES), slot);
    return slot[0] as Pointer;
  }

  /** Calls an OrtApi function that returns an OrtStatus*, throwing its error when there is one. */
  call(name: string, ...args: unknown[]): void {
    const status = this.fn(name)(...args) as Pointer | null;
    if (status !== null && status !== 0n) throw this.statusError(name, status);
  }

  /**
   * call() on one of libuv's pool threads (koffi's async call), so that the calling thread goes on
   * while ONNX Runtime works. The arguments' memory must stay untouched until it settles.
   */
  callOffThread(name: string, ...args: unknown[]): Promise<void> {
    return new Promise((resolve, reject) => {
      this.fn(name).async(...args, (err: unknown, status: Pointer | null) => {
        if (err !== null && err !== undefined)
          reject(err instanceof Error ? err : new Error(`${name}: koffi could not make the call`));
        else if (status !== null && status !== 0n) reject(this.statusError(name, status));
        else resolve();
      });
    });
  }

  /** Calls a function that fills one pointer-sized output and returns it. */
  out(name: string, ...args: unknown[]): Pointer {
    const slot = new BigUint64Array(1);
    this.call(name, ...args, slot);
    return slot[0] as Pointer;
  }

  /** Calls a function that fills one size_t output. */
  outSize(name: string, ...args: unknown[]): number {
    return Number(this.out(name, ...args));
  }

  /** Calls a function that fills one int (or enum) output. */
  outInt(name: string, ...args: unknown[]): number {
    const slot = new Int32Array(1);
    this.call(name, ...args, slot);
    return slot[0] as number;
  }

  /** Reads and frees an OrtStatus into the error it describes. */
  private statusError(name: string, status: Pointer): OrtStatusError {
    const message = this.fn('GetErrorMessage')(status) as string;
    const code = this.fn('GetErrorCode')(status) as number;
    this.fn('ReleaseStatus')(status);
    return new OrtStatusError(`${name}: ${message}`, {
      ortCode: ORT_ERROR_CODES[code] ?? `ORT_ERROR_${code}`,
    });
  }
}

const C_LIBRARIES: Partial<Record<NodeJS.Platform, string>> = {
  linux: 'libc.so.6',
  darwin: 'libSystem.B.dylib',
  win32: 'msvcrt.dll',
};

function cLibrary(): ReturnType<typeof koffi.load> {
  const name = C_LIBRARIES[process.platform];
  if (name === undefined) throw new Error(`no C library is known for ${process.platform}`);
  return koffi.load(name);
}

/** dlopen's flags (the same values in glibc and musl). */
const RTLD_NOW = 2;
const RTLD_NODELETE = 0x1000;

/**
 * Keeps the library loaded until the process ends. koffi unloads a library when the last isolate
 * that loaded it ends, and a shard's threads end before its main thread releases the sessions
 * they shared: without a pin the library (every session in it) could be gone by then, which
 * crashed the process once no thread held onnxruntime-node's addon, whose own link to the library
 * had been keeping it loaded. A second dlopen with RTLD_NODELETE takes a reference nothing drops.
 */
function pinForProcess(c: ReturnType<typeof koffi.load>, path: string): void {
  const dlopen = optionalFunction(c, 'void * dlopen(const char * path, int flags)') as
    ((path: string, flags: number) => unknown) | undefined;
  dlopen?.(path, RTLD_NOW | RTLD_NODELETE);
}

/** A C function the library may lack (malloc_trim is glibc's), or undefined. */
function optionalFunction(lib: ReturnType<typeof koffi.load>, prototype: string): unknown {
  try {
    return lib.func(prototype);
  } catch {
    return undefined;
  }
}

/** A NUL-terminated C string at `ptr`. */
export function readCString(ptr: Pointer): string {
  return koffi.decode(ptr, 'char', -1) as string;
}
