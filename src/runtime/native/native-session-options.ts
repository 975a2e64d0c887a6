// Our compiled runtime options as an OrtSessionOptions, set the way onnxruntime-node sets the same
// options, so that a model gives the same numbers on either binding.
import type { CompiledRuntimeOptions, ExecutionProvider } from '../runtime-options.ts';
import { cStrings } from './ort-value.ts';
import type { OrtLibrary, Pointer } from './ort-library.ts';

const OPTIMIZATION_LEVELS: Record<CompiledRuntimeOptions['graphOptimizationLevel'], number> = {
  disabled: 0,
  basic: 1,
  extended: 2,
  all: 99,
};

/**
 * A new OrtSessionOptions (the caller releases it with ReleaseSessionOptions once the session
 * exists). `intraOpThreads` is the session's own pool, which the caller sizes for sharing;
 * `memPattern` is options.memPattern resolved for the graph (memPatternFor).
 */
export function createSessionOptions(
  lib: OrtLibrary,
  options: CompiledRuntimeOptions,
  intraOpThreads: number,
  memPattern: boolean,
): Pointer {
  const handle = lib.out('CreateSessionOptions');
  try {
    lib.call('SetIntraOpNumThreads', handle, intraOpThreads);
    lib.call('SetInterOpNumThreads', handle, options.interOpThreads);
    lib.call(
      'SetSessionGraphOptimizationLevel',
      handle,
      OPTIMIZATION_LEVELS[options.graphOptimizationLevel],
    );
    lib.call(options.cpuMemArena ? 'EnableCpuMemArena' : 'DisableCpuMemArena', handle);
    lib.call(memPattern ? 'EnableMemPattern' : 'DisableMemPattern', handle);
    if (!options.prepacking)
      lib.call('AddSessionConfigEntry', handle, 'session.disable_prepacking', '1');
    for (const provider of options.executionProviders) appendProvider(lib, handle, provider);
    return handle;
  } catch (err) {
    lib.fn('ReleaseSessionOptions')(handle);
    throw err;
  }
}

function appendProvider(lib: OrtLibrary, handle: Pointer, provider: ExecutionProvider): void {
  const name = typeof provider === 'string' ? provider : provider.name;
  if (name === 'cpu') return;
  const deviceId =
    typeof provider === 'string' || provider.name === 'cpu' ? 0 : (provider.deviceId ?? 0);
  const [create, update, append, release] =
    name === 'cuda'
      ? [
          'CreateCUDAProviderOptions',
          'UpdateCUDAProviderOptions',
          'SessionOptionsAppendExecutionProvider_CUDA_V2',
          'ReleaseCUDAProviderOptions',
        ]
      : [
          'CreateTensorRTProviderOptions',
          'UpdateTensorRTProviderOptions',
          'SessionOptionsAppendExecutionProvider_TensorRT_V2',
          'ReleaseTensorRTProviderOptions',
        ];
  const providerOptions = lib.out(create);
  try {
    const keys = cStrings(['device_id']);
    const values = cStrings([String(deviceId)]);
    lib.call(update, providerOptions, keys.pointers, values.pointers, 1);
    lib.call(append, handle, providerOptions);
  } finally {
    lib.fn(release)(providerOptions);
  }
}
