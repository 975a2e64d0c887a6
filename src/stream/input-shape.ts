// What each task accepts, checked per record before it joins a batch: one malformed record must
// not fail the batch it would have shared with good ones. Every text a record carries (a text, a
// question, a context, a query, each document, each chat message) is held to
// limits.maxTextLength, and every list (documents, chat messages) to limits.maxListItems.
import { InputError } from '../errors.ts';

export interface ShapeLimits {
  maxTextLength: number;
  maxListItems: number;
}

const isString = (v: unknown): v is string => typeof v === 'string';
const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

export function checkInputShape(
  task: string,
  input: unknown,
  field: string,
  limits: ShapeLimits,
): void {
  const fail = (expected: string): never => {
    throw new InputError(`${field} must be ${expected} for ${task}, got ${describe(input)}`, {
      field,
    });
  };
  const checkLength = (text: string, at = field): void => {
    if (text.length > limits.maxTextLength) {
      throw new InputError(
        `${at} is ${text.length} characters, over limits.maxTextLength (${limits.maxTextLength})`,
        { field: at },
      );
    }
  };
  const checkCount = (list: readonly unknown[], at: string): void => {
    if (list.length > limits.maxListItems) {
      throw new InputError(
        `${at} has ${list.length} items, over limits.maxListItems (${limits.maxListItems})`,
        { field: at },
      );
    }
  };
  /** Chat messages: their number, and the length of every text content. */
  const checkMessages = (messages: readonly unknown[], at: string): void => {
    checkCount(messages, at);
    messages.forEach((m, i) => {
      if (isObject(m) && isString(m['content'])) checkLength(m['content'], `${at}[${i}].content`);
    });
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
        checkLength(input['text'], `${field}.text`);
        if (isString(input['textPair'])) checkLength(input['textPair'], `${field}.textPair`);
        return;
      }
      return fail('a string or {text, textPair?}');
    case 'questionAnswering':
      if (isObject(input) && isString(input['question']) && isString(input['context'])) {
        checkLength(input['question'], `${field}.question`);
        return checkLength(input['context'], `${field}.context`);
      }
      return fail('{question, context} strings');
    case 'crossEncoder':
      if (
        isObject(input) &&
        isString(input['query']) &&
        Array.isArray(input['documents']) &&
        input['documents'].every(isString)
      ) {
        checkLength(input['query'], `${field}.query`);
        const documents = input['documents'];
        checkCount(documents, `${field}.documents`);
        documents.forEach((d, i) => checkLength(d, `${field}.documents[${i}]`));
        return;
      }
      return fail('{query, documents: string[]}');
    case 'textGeneration':
      if (isString(input)) return checkLength(input);
      if (Array.isArray(input)) return checkMessages(input, field);
      if (isObject(input) && Array.isArray(input['messages']))
        return checkMessages(input['messages'], `${field}.messages`);
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
