// A protobufjs message type made from a JSON description of its messages on first use, with
// protobufjs loaded then (src/options/lazy-module.ts): the ONNX readers and the helper-graph
// writer describe the subsets of onnx.proto they need, and a thread that never reads nor writes
// an ONNX file never loads protobufjs.
import type protobufjs from 'protobufjs';
import { lazyModule } from '../options/lazy-module.ts';

const protobuf = lazyModule<typeof protobufjs>('protobufjs');

/** `get()` returns the message `name` of `schema` (a protobufjs JSON root), made on the first call. */
export function lazyProtobufType(schema: protobufjs.INamespace, name: string): () => protobufjs.Type {
  let type: protobufjs.Type | undefined;
  return () => {
    type ??= protobuf().Root.fromJSON(schema).lookupType(name);
    return type;
  };
}
