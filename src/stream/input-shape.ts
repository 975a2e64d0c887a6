// What each task accepts, checked per record before it joins a batch: one malformed record must
// not fail the batch it would have shared with good ones.
import { InputError } from '../errors.ts';

const isString = (v: unknown): v is string => typeof v === 'string';
const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

export function checkInputShape(
  task: string,
  input: unknown,
  field: string,
  maxTextLength: number,
): void {
  const fail = (expected: string): never => {
    throw new InputError(`${field} must be ${expected} for ${task}, got ${describe(input)}`, {
      field,
    });
  };
  const checkLength = (text: string, at = field): void => {
    if (text.length > maxTextLength) {
      throw new InputError(
        `${at} is ${text.length} characters, over limits.maxTextLength (${maxTextLength})`,
        { field: at },
      );
    }
  };
  switch (task) {
    case 'featureExtraction':
    case 'tokenClassification':
    case 'zeroShotClassification':
    case 'fillMask':
      if (!isString(input)) fail('a string');
      checkLength(input as string);
      return;
    case 'textClassification':
      if (isString(input)) return checkLength(input);
      if (
        isObject(input) &&
        isString(input['text']) &&
        (input['textPair'] === undefined || isString(input['textPair']))
      ) {
        checkLength(input['text']);
        if (isString(input['textPair'])) checkLength(input['textPair'], `${field}.textPair`);
        return;
      }
      return fail('a string or {text, textPair?}');
    case 'questionAnswering':
      if (isObject(input) && isString(input['question']) && isString(input['context']))
        return checkLength(input['context'], `${field}.context`);
      return fail('{question, context} strings');
    case 'crossEncoder':
      if (
        isObject(input) &&
        isString(input['query']) &&
        Array.isArray(input['documents']) &&
        input['documents'].every(isString)
      )
        return;
      return fail('{query, documents: string[]}');
    case 'textGeneration':
      if (isString(input)) return checkLength(input);
      if (Array.isArray(input) || (isObject(input) && Array.isArray(input['messages']))) return;
      return fail('a prompt string or chat messages');
    default:
      return;
  }
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing (the field is missing)';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value;
}
