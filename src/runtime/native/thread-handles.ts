// The handles every native session of a thread shares: the process' OrtEnv, the default
// allocator, and the memory infos outputs are bound to (CPU, and one per GPU made on first use).
import type { SessionDevice } from '../runtime-options.ts';
import type { OrtLibrary, Pointer } from './ort-library.ts';

const ORT_LOGGING_LEVEL_WARNING = 2;
const ALLOCATOR_DEVICE = 0;
const ALLOCATOR_ARENA = 1;
const MEM_TYPE_DEFAULT = 0;
/** onnxruntime's name for CUDA memory (onnxruntime::CUDA in allocator.h). */
const CUDA_MEMORY = 'Cuda';

/** Per-thread handles every session of the thread uses. */
export interface ThreadHandles {
  env: Pointer;
  allocator: Pointer;
  cpuMemory: Pointer;
  /** An OrtMemoryInfo per GPU, made when a session first runs there. */
  gpuMemory: Map<number, Pointer>;
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
  };
  return threadHandles;
}

/** The OrtMemoryInfo a session's outputs are bound to when they should stay where they are made. */
export function memoryOf(lib: OrtLibrary, thread: ThreadHandles, device: SessionDevice): Pointer {
  if (device.kind === 'cpu') return thread.cpuMemory;
  let memory = thread.gpuMemory.get(device.id);
  if (memory === undefined) {
    memory = lib.out(
      'CreateMemoryInfo',
      CUDA_MEMORY,
      ALLOCATOR_DEVICE,
      device.id,
      MEM_TYPE_DEFAULT,
    );
    thread.gpuMemory.set(device.id, memory);
  }
  return memory;
}
