// Our outputs through the product's own Python shapes (each task's pythonOutput, what a route
// writes by default), so that the goldens check the keys and nesting a route writes too.
import { taskDefinition } from '../../src/pipelines/registry.ts';

export interface PythonShapeCall {
  input?: unknown;
  options?: Record<string, unknown>;
  returnFullText?: boolean;
}

/** What the route writes (output.keys python) for one input whose result is `result`. */
export function asPython(task: string, result: unknown, call: PythonShapeCall = {}): unknown {
  const shape = taskDefinition(task).pythonOutput;
  if (shape === undefined) throw new Error(`${task} has no Python shape of its own`);
  return shape(result, {
    input: call.input,
    options: call.options ?? {},
    returnFullText: call.returnFullText ?? true,
  });
}

/**
 * One element of a list call: Python answers a bare input of these tasks with a list of one,
 * and a list of inputs with those elements side by side.
 */
export function asPythonRow(task: string, result: unknown, call: PythonShapeCall = {}): unknown {
  const shaped = asPython(task, result, call);
  if (!Array.isArray(shaped) || shaped.length !== 1)
    throw new Error(`${task}: expected a list of one, got ${JSON.stringify(shaped)}`);
  return shaped[0];
}
