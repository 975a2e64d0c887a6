// What makes a line of a JSONL input a record, shared by the reader and the counter that gives a
// file run its total: every line but a blank one.
import { createReadStream } from 'node:fs';

/** Space, tab, line feed, vertical tab, form feed, carriage return. */
const isAsciiSpace = (byte: number): boolean => byte === 0x20 || (byte >= 0x09 && byte <= 0x0d);

/** Blank as String.prototype.trim sees it, without decoding the common all-ASCII line. */
export function isBlankLine(bytes: Uint8Array): boolean {
  let ascii = true;
  for (const byte of bytes) {
    if (byte >= 0x80) ascii = false;
    else if (!isAsciiSpace(byte)) return false;
  }
  return ascii || Buffer.from(bytes).toString('utf8').trim() === '';
}

/** The records a JSONL file holds: a streamed pass, so a file of any size counts in little memory. */
export async function countRecordLines(path: string): Promise<number> {
  let records = 0;
  let carry = Buffer.alloc(0);
  for await (const chunk of createReadStream(path)) {
    let data = carry.length > 0 ? Buffer.concat([carry, chunk as Buffer]) : (chunk as Buffer);
    let start = 0;
    for (let newline = data.indexOf(0x0a); newline !== -1; newline = data.indexOf(0x0a, start)) {
      if (!isBlankLine(data.subarray(start, newline))) records += 1;
      start = newline + 1;
    }
    data = data.subarray(start);
    carry = Buffer.from(data);
  }
  if (carry.length > 0 && !isBlankLine(carry)) records += 1;
  return records;
}
