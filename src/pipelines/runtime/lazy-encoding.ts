// A Rust encoding seen as a TokenizedText whose fields cross N-API only when read.
import type { Encoding } from 'tokenizers';

/** One encoded input. Offsets are in Unicode code points, as Python reports them. */
export interface TokenizedText {
  ids: number[];
  typeIds: number[];
  attentionMask: number[];
  specialTokensMask: number[];
  offsets: [number, number][];
  wordIds: (number | null)[];
  sequenceIds: (number | null)[];
  /** Further windows when the input was longer than the maximum length and a stride was asked. */
  overflowing: TokenizedText[];
}

/**
 * Only the ids are read at once. Every other field is read from the Rust encoding when asked for:
 * each is a trip through N-API building one JS value per token (~28 µs for 256 ids), and most
 * tasks (embeddings, classification) never look at offsets or word ids (issue 15's per-record
 * overhead). The attention mask is never read from Rust: no instance here pads, and an unpadded
 * encoding attends to every token. Type ids of a single text are zeros, without a trip, when the
 * post-processor says so (`zeroTypes`). The fields are own enumerable accessors, so spreading,
 * JSON and deep equality still see every one.
 */
export function toTokenized(encoding: Encoding, zeroTypes: boolean): TokenizedText {
  const ids = encoding.getIds();
  const length = ids.length;
  let typeIds: number[] | undefined;
  let attentionMask: number[] | undefined;
  let specialTokensMask: number[] | undefined;
  let offsets: [number, number][] | undefined;
  let wordIds: (number | null)[] | undefined;
  let sequenceIds: (number | null)[] | undefined;
  let overflowing: TokenizedText[] | undefined;
  return {
    ids,
    get typeIds() {
      return (typeIds ??= zeroTypes ? new Array<number>(length).fill(0) : encoding.getTypeIds());
    },
    set typeIds(value) {
      typeIds = value;
    },
    get attentionMask() {
      return (attentionMask ??= new Array<number>(length).fill(1));
    },
    set attentionMask(value) {
      attentionMask = value;
    },
    get specialTokensMask() {
      return (specialTokensMask ??= encoding.getSpecialTokensMask());
    },
    set specialTokensMask(value) {
      specialTokensMask = value;
    },
    get offsets() {
      return (offsets ??= encoding.getOffsets().map((o) => [o[0] ?? 0, o[1] ?? 0]));
    },
    set offsets(value) {
      offsets = value;
    },
    get wordIds() {
      return (wordIds ??= encoding.getWordIds().map((w) => w ?? null));
    },
    set wordIds(value) {
      wordIds = value;
    },
    get sequenceIds() {
      return (sequenceIds ??= encoding.getSequenceIds().map((s) => s ?? null));
    },
    set sequenceIds(value) {
      sequenceIds = value;
    },
    get overflowing() {
      return (overflowing ??= encoding.getOverflowing().map((e) => toTokenized(e, zeroTypes)));
    },
    set overflowing(value) {
      overflowing = value;
    },
  };
}
