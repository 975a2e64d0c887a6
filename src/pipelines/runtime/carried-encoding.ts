// An encoding made on the main thread, where a batch's inputs are priced by tokens, and carried to
// the inference thread with the batch, so that the thread runs those ids instead of tokenizing
// again. Why: a lone e-mail encoded on an inference thread right after a model run costs about
// twice an encode among encodes (the run evicted the tokenizer's tables), while the main thread
// encodes what was admitted together in one call (docs/batching.md, "Encodings carried to the
// threads"). Only the plain encode of one text is carried: truncated at `maxLength` from the right,
// special tokens added, no stride. That is what the tasks that carry make (featureExtraction,
// single-text classification); any other encode misses and is made on the thread as before.
import { InferenceError } from '../../errors.ts';
import type { TokenizedText } from './lazy-encoding.ts';

/** Plain data: it crosses to the inference thread by structured clone. */
export interface CarriedEncoding {
  /** The text as the pipeline encodes it (after any lower-casing it does). */
  text: string;
  maxLength: number;
  ids: number[];
  /** Absent where a single text's type ids are all 0 (the tokenizer's post-processor says so). */
  typeIds?: number[];
}

/** What plainEncodeLength reads of text-tokenizer.ts's EncodeOptions (which imports this file). */
interface PlainOptions {
  truncation?: string | false;
  maxLength?: number;
  stride?: number;
  addSpecialTokens?: boolean;
}

/** A batch's carried encodings, in input order; null for an input that carries none. */
export type CarriedEncodings = readonly (CarriedEncoding | null)[];

/**
 * The length a plain encode with `options` truncates at, or undefined when `options` ask for
 * anything else (no truncation, a stride, no special tokens, another strategy) and nothing carried
 * may answer it.
 */
export function plainEncodeLength(
  options: PlainOptions,
  tokenizerMax: number | undefined,
): number | undefined {
  if (options.truncation !== undefined && options.truncation !== 'longest_first') return undefined;
  if (options.stride !== undefined && options.stride !== 0) return undefined;
  if (options.addSpecialTokens === false) return undefined;
  return options.maxLength ?? tokenizerMax;
}

interface Held {
  encoding: TokenizedText;
  holds: number;
}

/**
 * A thread's carried encodings, each held by the batches under way that carried it. Two batches
 * on a thread may carry the same text: it stays until the last of them releases it. Keyed by
 * length, then by the text itself (a key joining the two would copy every text twice a record).
 */
export class CarriedStore {
  private readonly held = new Map<number, Map<string, Held>>();
  /** Encodes answered from here. */
  answered = 0;

  get size(): number {
    let size = 0;
    for (const texts of this.held.values()) size += texts.size;
    return size;
  }

  /** Holds `encodings` until the returned release is called (once; later calls do nothing). */
  hold(encodings: CarriedEncodings): () => void {
    const kept: CarriedEncoding[] = [];
    for (const carried of encodings) {
      if (carried === null) continue;
      let texts = this.held.get(carried.maxLength);
      if (texts === undefined) this.held.set(carried.maxLength, (texts = new Map<string, Held>()));
      const held = texts.get(carried.text);
      if (held === undefined)
        texts.set(carried.text, { encoding: carriedTokenized(carried), holds: 1 });
      else held.holds += 1;
      kept.push(carried);
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const { text, maxLength } of kept) {
        const texts = this.held.get(maxLength);
        const held = texts?.get(text);
        if (texts === undefined || held === undefined) continue;
        held.holds -= 1;
        if (held.holds > 0) continue;
        texts.delete(text);
        if (texts.size === 0) this.held.delete(maxLength);
      }
    };
  }

  find(text: string, maxLength: number): TokenizedText | undefined {
    const held = this.held.get(maxLength)?.get(text);
    if (held === undefined) return undefined;
    this.answered += 1;
    return held.encoding;
  }
}

/**
 * The thread's view of a carried encoding. Ids, type ids and the mask are all it holds: offsets,
 * word ids and the rest need the Rust encoding, and a task that reads them does not carry.
 */
export function carriedTokenized(carried: CarriedEncoding): TokenizedText {
  const { ids } = carried;
  const absent = (field: string): never => {
    throw new InferenceError(
      `an encoding carried from the main thread has no ${field}; only tasks that read ids alone may carry one`,
    );
  };
  let typeIds = carried.typeIds;
  let attentionMask: number[] | undefined;
  let overflowing: TokenizedText[] = [];
  return {
    ids,
    get typeIds() {
      return (typeIds ??= new Array<number>(ids.length).fill(0));
    },
    set typeIds(value) {
      typeIds = value;
    },
    get attentionMask() {
      return (attentionMask ??= new Array<number>(ids.length).fill(1));
    },
    set attentionMask(value) {
      attentionMask = value;
    },
    get specialTokensMask() {
      return absent('special tokens mask');
    },
    get offsets() {
      return absent('offsets');
    },
    get wordIds() {
      return absent('word ids');
    },
    get sequenceIds() {
      return absent('sequence ids');
    },
    get overflowing() {
      return overflowing;
    },
    set overflowing(value) {
      overflowing = value;
    },
  };
}
