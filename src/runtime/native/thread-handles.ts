// The handles every native session of a thread shares: the process' OrtEnv, the default
// allocator, and the memory infos outputs are bound to (CPU, and one per GPU made on first use).
import type { SessionDevice } from '../runtime-options.ts';
import type { OrtLibrary, Pointer } from './ort-library.ts';

const ORT_LOGGING_LEVEL_WARNING = 2;
const ALLOCATOR_DEVICE = 0;
const ALLOCATOR_ARENA = 1;
const MEM_TYPE_DEFAULT = 0;
/** OrtMemTypeCPUOutput: host memory a device reads and writes (its pinned memory). */
const MEM_TYPE_CPU_OUTPUT = -1;
/** onnxruntime's names for CUDA memory and CUDA's pinned host memory (allocator.h). */
const CUDA_MEMORY = 'Cuda';
const CUDA_PINNED_MEMORY = 'CudaPinned';

/** Per-thread handles every session of the thread uses. */
export interface ThreadHandles {
  env: Pointer;
  allocator: Pointer;
  cpuMemory: Pointer;
  /** An OrtMemoryInfo per GPU, made when a session first runs there. */
  gpuMemory: Map<number, Pointer>;
  /** An OrtMemoryInfo of each GPU's pinned host memory, made when a session first stages feeds. */
  pinnedMemory: Map<number, Pointer>;
}

let threadHandles: ThreadHandles | undefined;

export function threadHandlesOf(lib: OrtLibrary): ThreadHandles {
  // ONNX Runtime keeps one OrtEnv per process: a second CreateEnv (another thread's, or
  // onnxruntime-node's) returns the same one with its count raised.
  threadHandles ??= {
    env: lib.out('CreateEnv', ORT_LOGGING_LEVEL_WARNING, 'hugot-stream'),
    allocator: lib.out('GetAllocatorWithDefaultOptions'),
    cpuMemory: lib.out('CreateCpuMemoryInfo', ALLOCATOR_ARENA, MEM_TYPE_DEFAULT),
    gpuMemory: new Map(),
    pinnedMemory: new Map(),
  };
  return threadHandles;
}

/** The OrtMemoryInfo a session's outputs are bound to when they should stay where they are made. */
export function memoryOf(lib: OrtLibrary, thread: ThreadHandles, device: SessionDevice): Pointer {
  if (device.kind === 'cpu') return thread.cpuMemory;
  return cachedMemory(lib, thread.gpuMemory, device.id, CUDA_MEMORY, MEM_TYPE_DEFAULT);
}

/** The OrtMemoryInfo of the host memory a session's staged feeds live in (staging-buffers.ts). */
export function stagingMemoryOf(
  lib: OrtLibrary,
  thread: ThreadHandles,
  device: SessionDevice,
): Pointer {
  if (device.kind === 'cpu') return thread.cpuMemory;
  return cachedMemory(lib, thread.pinnedMemory, device.id, CUDA_PINNED_MEMORY, MEM_TYPE_CPU_OUTPUT);
}

function cachedMemory(
  lib: OrtLibrary,
  cache: Map<number, Pointer>,
  id: number,
  name: string,
  memType: number,
): Pointer {
  let memory = cache.get(id);
  if (memory === undefined) {
    memory = lib.out('CreateMemoryInfo', name, ALLOCATOR_DEVICE, id, memType);
    cache.set(id, memory);
  }
  return memory;
}
