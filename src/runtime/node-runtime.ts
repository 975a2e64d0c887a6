// onnxruntime-node's binding behind our runtime interface: the reference the native binding is
// tested against, and the fallback where it cannot load. Each thread holds its own sessions.
import { InferenceSession } from 'onnxruntime-node';
import { toSessionOptions, type CompiledRuntimeOptions } from './runtime-options.ts';
import { sessionLoadError } from './load-error.ts';
import type { OrtSession } from './session.ts';

export async function createNodeSession(
  onnxPath: string,
  options: CompiledRuntimeOptions,
): Promise<OrtSession> {
  let session: InferenceSession;
  try {
    session = await InferenceSession.create(onnxPath, toSessionOptions(options));
  } catch (cause) {
    throw sessionLoadError(cause, onnxPath, options);
  }
  return {
    inputNames: session.inputNames,
    outputNames: session.outputNames,
    inputMetadata: session.inputMetadata,
    outputMetadata: session.outputMetadata,
    run: (feeds, fetches) =>
      fetches === undefined ? session.run(feeds) : session.run(feeds, [...fetches]),
    release: () => session.release(),
  };
}
