// What a failed session load means to a user, on either binding: a provider that would not start
// (CUDA libraries missing) or a model file ONNX Runtime cannot read.
import { ModelFolderError, ProviderUnavailableError, type HugotError } from '../errors.ts';
import type { CompiledRuntimeOptions } from './runtime-options.ts';

export function sessionLoadError(
  cause: unknown,
  onnxPath: string,
  options: CompiledRuntimeOptions,
): HugotError {
  if (cause instanceof ProviderUnavailableError) return cause;
  const message = cause instanceof Error ? cause.message : String(cause);
  if (
    /provider|cuda|tensorrt/i.test(message) &&
    options.executionProviders.some((p) => p !== 'cpu')
  )
    return new ProviderUnavailableError(
      `ONNX Runtime could not start the requested execution provider: ${message} ` +
        '(`npm run gpu:install -- --check` lists the CUDA and cuDNN libraries it cannot find)',
      { cause, field: 'executionProviders' },
    );
  return new ModelFolderError(`ONNX Runtime could not load ${onnxPath}: ${message}`, {
    cause,
    field: 'onnxFile',
  });
}
