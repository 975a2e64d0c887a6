// What each task accepts, checked per record before it joins a batch: one malformed record must
// not fail the batch it would have shared with good ones. The shapes are the tasks' own (their
// definitions' inputSchema, src/pipelines/registry.ts); this file holds every text a record
// carries (a text, a question, a context, a query, each document, each chat message) to
// limits.maxTextLength, and every list (documents, chat messages) to limits.maxListItems.
import { InputError } from '../errors.ts';
import { findTask } from '../pipelines/registry.ts';
import type { InputCheck } from '../pipelines/task-definition.ts';

/** A text or list over its limit: the record's shape is right, it is only too large. */
export class OverLimitError extends InputError {
  override name = 'OverLimitError';
}

export interface ShapeLimits {
  maxTextLength: number;
  maxListItems: number;
}

export function checkInputShape(
  task: string,
  input: unknown,
  field: string,
  limits: ShapeLimits,
): void {
  // An unknown task has no pipeline to run either; the config check refused it long before.
  const definition = findTask(task);
  if (definition === undefined) return;
  const check: InputCheck = {
    field,
    fail(expected) {
      throw new InputError(`${field} must be ${expected} for ${task}, got ${describe(input)}`, {
        field,
      });
    },
    text(text, at = field) {
      if (text.length > limits.maxTextLength) {
        throw new OverLimitError(
          `${at} is ${text.length} characters, over limits.maxTextLength (${limits.maxTextLength})`,
          { field: at },
        );
      }
    },
    list(list, at) {
      if (list.length > limits.maxListItems) {
        throw new OverLimitError(
          `${at} has ${list.length} items, over limits.maxListItems (${limits.maxListItems})`,
          { field: at },
        );
      }
    },
  };
  definition.inputSchema(input, check);
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing (the field is missing)';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value;
}
