// onnxruntime-node's binding behind our runtime interface: the reference the native binding is
// tested against, and the fallback where it cannot load. Each thread holds its own sessions.
import { InferenceSession } from 'onnxruntime-node';
import {
  nodeTakesFloat16Inputs,
  toSessionOptions,
  type CompiledRuntimeOptions,
} from './runtime-options.ts';
import { ConfigError } from '../errors.ts';
import { sessionLoadError } from './load-error.ts';
import { runLinkedThroughHost, type OrtSession } from './session.ts';

/** `source` is a file, or a helper graph's bytes (src/runtime/graphs/) under a name for errors. */
export async function createNodeSession(
  source: string | { name: string; bytes: Uint8Array },
  options: CompiledRuntimeOptions,
): Promise<OrtSession> {
  let session: InferenceSession;
  const label = typeof source === 'string' ? source : source.name;
  try {
    session =
      typeof source === 'string'
        ? await InferenceSession.create(source, toSessionOptions(options, source))
        : await InferenceSession.create(source.bytes, toSessionOptions(options, source));
  } catch (cause) {
    throw sessionLoadError(cause, label, options);
  }
  const half = session.inputMetadata.find((m) => m.isTensor && m.type === 'float16');
  if (half !== undefined && !nodeTakesFloat16Inputs()) {
    await session.release();
    throw new ConfigError(
      `${label} takes the float16 input '${half.name}', which onnxruntime-node cannot be fed on Node ${process.versions.node}: ` +
        'its binding reads a Float16Array as 0 bytes (microsoft/onnxruntime#26791). Set runtime.binding: native (the default), or use the float32 files',
      { field: 'runtime.binding' },
    );
  }
  // onnxruntime-node copies every output to JS memory, so a linked run goes through the host.
  const wrapped: OrtSession = {
    inputNames: session.inputNames,
    outputNames: session.outputNames,
    inputMetadata: session.inputMetadata,
    outputMetadata: session.outputMetadata,
    run: (feeds, fetches) =>
      fetches === undefined ? session.run(feeds) : session.run(feeds, [...fetches]),
    runLinked: (run) => runLinkedThroughHost(wrapped, run),
    release: () => session.release(),
  };
  return wrapped;
}
