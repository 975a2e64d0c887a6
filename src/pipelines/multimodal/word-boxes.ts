// A document as LayoutLM reads it: words and their boxes on the 0-1000 page grid, given by the
// caller (Python's `word_boxes`: [word, [x0, y0, x1, y1]] pairs, as OCR such as Tesseract gives
// them after normalising to the page). The boxes index LayoutLM's position tables, so they must be
// whole numbers inside those tables, and x0 <= x1, y0 <= y1 (the width and height are indices too;
// ONNX Runtime would wrap a negative one around silently where torch fails).
import { InputError } from '../../errors.ts';
import { isObject } from '../task-definition.ts';

export type Box = readonly [number, number, number, number];

export interface WordDocument {
  /** The question split as Python's str.split() splits it. */
  questionWords: string[];
  words: string[];
  boxes: Box[];
}

// Python's str.split() separators: Unicode whitespace, which differs from JS \s at the edges
// (Python counts U+001C..U+001F and U+0085, JS counts U+FEFF).
const SPACES = new Set([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680, 0x2028, 0x2029,
  0x202f, 0x205f, 0x3000,
]);
const isSpace = (code: number): boolean => SPACES.has(code) || (code >= 0x2000 && code <= 0x200a);

export function pythonSplit(text: string): string[] {
  const words: string[] = [];
  let current = '';
  for (const char of text) {
    if (!isSpace(char.codePointAt(0) as number)) current += char;
    else if (current !== '') {
      words.push(current);
      current = '';
    }
  }
  if (current !== '') words.push(current);
  return words;
}

/**
 * `{question, wordBoxes}` checked and split; `maxCoordinate` is the model's
 * max_2d_position_embeddings (boxes index 0 .. maxCoordinate - 1).
 */
export function toWordDocument(
  input: unknown,
  field: string,
  task: string,
  maxCoordinate: number,
): WordDocument {
  const fail = (at: string, message: string): never => {
    throw new InputError(`${task}: ${at} ${message}`, { field: at });
  };
  if (!isObject(input)) return fail(field, 'must be {question, wordBoxes}');
  const { question, wordBoxes } = input;
  if (typeof question !== 'string') return fail(`${field}.question`, 'must be a string');
  const questionWords = pythonSplit(question);
  if (questionWords.length === 0) fail(`${field}.question`, 'has no words');
  if (wordBoxes === undefined)
    fail(
      `${field}.wordBoxes`,
      'is missing: the pipeline runs no OCR, so the words and their boxes come with the input',
    );
  if (!Array.isArray(wordBoxes) || wordBoxes.length === 0)
    return fail(`${field}.wordBoxes`, 'must be a non-empty array of [word, [x0, y0, x1, y1]]');
  const words: string[] = [];
  const boxes: Box[] = [];
  wordBoxes.forEach((item: unknown, i) => {
    const at = `${field}.wordBoxes[${i}]`;
    if (!Array.isArray(item) || item.length !== 2 || typeof item[0] !== 'string')
      fail(at, 'must be [word, [x0, y0, x1, y1]]');
    const [word, box] = item as [string, unknown];
    if (
      !Array.isArray(box) ||
      box.length !== 4 ||
      !box.every((v) => Number.isInteger(v) && (v as number) >= 0 && (v as number) < maxCoordinate)
    )
      fail(`${at}[1]`, `must be 4 whole numbers from 0 to ${maxCoordinate - 1} (the page grid)`);
    const [x0, y0, x1, y1] = box as [number, number, number, number];
    if (x1 < x0 || y1 < y0) fail(`${at}[1]`, 'must have x0 <= x1 and y0 <= y1');
    words.push(word);
    boxes.push([x0, y0, x1, y1]);
  });
  return { questionWords, words, boxes };
}
