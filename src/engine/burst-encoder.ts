// The main thread's encodes for pricing by tokens, gathered: every text asked for in the same turn
// of the event loop is encoded in one tokenizer call (a record batch from Kafka, a burst of
// submissions), and each call's encodings go with their batches to the inference threads
// (carried-encoding.ts). One call of 64 e-mails costs a third of 64 calls, each made cold
// (docs/batching.md, "Encodings carried to the threads").
import type { CarriedEncoding } from '../pipelines/runtime/carried-encoding.ts';

/** What the encoder needs of a tokenizer (TextTokenizer has it; tests pass fakes). */
export interface CarryEncoder {
  encodeToCarry(texts: readonly string[], maxLength: number): Promise<CarriedEncoding[]>;
}

/** Most texts in one tokenizer call: a longer burst is cut into calls of this many. */
export const BURST_TEXTS = 64;

interface Asked {
  text: string;
  resolve: (encoding: CarriedEncoding) => void;
  reject: (error: unknown) => void;
}

export class BurstEncoder {
  private readonly tokenizer: CarryEncoder;
  private readonly schedule: (flush: () => void) => void;
  /** Texts waiting for the next flush, by the length they are truncated at. */
  private waiting = new Map<number, Asked[]>();
  private scheduled = false;

  constructor(tokenizer: CarryEncoder, schedule: (flush: () => void) => void = setImmediate) {
    this.tokenizer = tokenizer;
    this.schedule = schedule;
  }

  encode(text: string, maxLength: number): Promise<CarriedEncoding> {
    const { promise, resolve, reject } = Promise.withResolvers<CarriedEncoding>();
    const list = this.waiting.get(maxLength);
    if (list === undefined) this.waiting.set(maxLength, [{ text, resolve, reject }]);
    else list.push({ text, resolve, reject });
    if (!this.scheduled) {
      this.scheduled = true;
      this.schedule(() => void this.flush());
    }
    return promise;
  }

  private async flush(): Promise<void> {
    const waiting = this.waiting;
    this.waiting = new Map();
    this.scheduled = false;
    // One call at a time: the calls share the cores with the inference threads, and a burst's
    // first encodings let their batches start while the rest are made.
    for (const [maxLength, asked] of waiting)
      for (let start = 0; start < asked.length; start += BURST_TEXTS)
        await this.encodeCall(asked.slice(start, start + BURST_TEXTS), maxLength);
  }

  private async encodeCall(asked: readonly Asked[], maxLength: number): Promise<void> {
    try {
      const encoded = await this.tokenizer.encodeToCarry(
        asked.map((a) => a.text),
        maxLength,
      );
      asked.forEach((a, i) => a.resolve(encoded[i] as CarriedEncoding));
    } catch (err) {
      // One text the tokenizer refuses must not fail the others of its call: each goes alone.
      if (asked.length === 1) {
        (asked[0] as Asked).reject(err);
        return;
      }
      for (const a of asked) await this.encodeCall([a], maxLength);
    }
  }
}
