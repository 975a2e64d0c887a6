// The route's output in Python's shape by default: for every task, the JSON a Hugging Face user
// gets from the transformers pipeline (or sentence-transformers) for the same input, key for key
// (each task's pythonOutput, src/pipelines/registry.ts). `output.keys: hugot` keeps the shapes
// this project wrote before (camelCase keys, generation's token ids and counts).
import type { RouteConfig } from '../config/schema.ts';
import { findTask } from '../pipelines/registry.ts';

/** The result as the route writes it, from the pipeline's (or engine's) and the record's input. */
export type OutputShaper = (result: unknown, input: unknown) => unknown;

const asIs: OutputShaper = (result) => result;

export function outputShaper(
  task: string,
  output: Pick<RouteConfig['output'], 'keys' | 'returnFullText' | 'stream'>,
  options: Record<string, unknown>,
): OutputShaper {
  const python = findTask(task)?.pythonOutput;
  // Streamed records are a protocol Python has no counterpart for: a request's partials and
  // final carry its id, sequence and delta (src/route/generation-records.ts), whichever keys.
  if (output.keys !== 'python' || output.stream !== undefined || python === undefined) return asIs;
  const returnFullText = output.returnFullText;
  return (result, input) => python(result, { input, options, returnFullText });
}
