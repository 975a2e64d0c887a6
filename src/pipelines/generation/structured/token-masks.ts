// Which tokens may come next, for each place a constrained output can be in: a DFA state plus the
// bytes of a UTF-8 character a token left unfinished plus whether the decoder's leading space is
// still to be stripped. A mask is found by walking a byte trie of the whole vocabulary from that
// place, so a prefix the pattern refuses cuts off every token that starts with it; masks are
// built the first time a place is reached and kept, so a schema's steady state is a lookup.
import type { CharDfa } from './char-dfa.ts';
import type { TokenVocabulary } from './token-vocabulary.ts';

/** The tokens allowed at one place, as a bitset over token ids. */
export interface TokenMask {
  bits: Uint32Array;
  /** Tokens allowed (EOS not counted). */
  count: number;
  /** Whether the text so far is a complete match, so EOS may end it. */
  eos: boolean;
}

/** Masks kept per compiled format; past this they are rebuilt when needed instead. */
const MAX_CACHED_MASKS = 4096;

/** The vocabulary as a byte trie (first child / next sibling), built once per tokenizer. */
export class TokenTrie {
  readonly vocabSize: number;
  readonly leadingStrip: number;
  readonly bytes: readonly (Uint8Array | undefined)[];
  readonly byte: Uint8Array;
  readonly firstChild: Int32Array;
  readonly nextSibling: Int32Array;
  /** First token whose bytes end at a node; nextToken chains tokens with equal bytes. */
  readonly firstToken: Int32Array;
  readonly nextToken: Int32Array;

  constructor(vocabulary: TokenVocabulary) {
    const { bytes } = vocabulary;
    this.vocabSize = bytes.length;
    this.leadingStrip = Math.min(3, vocabulary.leadingStrip);
    this.bytes = bytes;
    const ids: number[] = [];
    bytes.forEach((b, id) => {
      if (b !== undefined) ids.push(id);
    });
    ids.sort((a, b) => compareBytes(bytes[a] as Uint8Array, bytes[b] as Uint8Array));
    const byte = [0];
    const firstChild = [-1];
    const nextSibling = [-1];
    const lastChild = [-1];
    const firstToken = [-1];
    this.nextToken = new Int32Array(this.vocabSize).fill(-1);
    const path = [0];
    let prev: Uint8Array = new Uint8Array(0);
    for (const id of ids) {
      const word = bytes[id] as Uint8Array;
      let common = 0;
      while (common < prev.length && common < word.length && prev[common] === word[common])
        common += 1;
      for (let d = common; d < word.length; d += 1) {
        const parent = path[d] as number;
        const node = byte.length;
        byte.push(word[d] as number);
        firstChild.push(-1);
        nextSibling.push(-1);
        lastChild.push(-1);
        firstToken.push(-1);
        if (lastChild[parent] === -1) firstChild[parent] = node;
        else nextSibling[lastChild[parent] as number] = node;
        lastChild[parent] = node;
        path[d + 1] = node;
      }
      const at = path[word.length] as number;
      this.nextToken[id] = firstToken[at] as number;
      firstToken[at] = id;
      prev = word;
    }
    this.byte = Uint8Array.from(byte);
    this.firstChild = Int32Array.from(firstChild);
    this.nextSibling = Int32Array.from(nextSibling);
    this.firstToken = Int32Array.from(firstToken);
  }
}

/**
 * A place as one number: the DFA state, the bits of a character read so far, the bytes it still
 * owes and its whole length in bytes, and the leading spaces still to strip.
 */
export type Place = number;
/** A walk that left the pattern. */
export const NOWHERE: Place = -1;

export class TokenMasks {
  readonly dfa: CharDfa;
  readonly trie: TokenTrie;
  readonly start: Place;
  private readonly cache = new Map<Place, TokenMask>();

  constructor(dfa: CharDfa, trie: TokenTrie) {
    this.dfa = dfa;
    this.trie = trie;
    this.start = pack(dfa.initial, 0, 0, 0, trie.leadingStrip);
  }

  /** The place after a token's bytes, or NOWHERE when the pattern refuses them. */
  walk(place: Place, tokenId: number): Place {
    const word = this.trie.bytes[tokenId];
    if (word === undefined) return place;
    for (const b of word) {
      place = this.step(place, b);
      if (place === NOWHERE) return NOWHERE;
    }
    return place;
  }

  maskAt(place: Place): TokenMask {
    const cached = this.cache.get(place);
    if (cached !== undefined) return cached;
    const mask = this.build(place);
    if (this.cache.size < MAX_CACHED_MASKS) this.cache.set(place, mask);
    return mask;
  }

  /** Whether a place ends a complete match (no character left half-read). */
  complete(place: Place): boolean {
    if (place === NOWHERE) return false;
    const { state, owed } = unpack(place);
    return owed === 0 && this.dfa.accepts(state);
  }

  private build(place: Place): TokenMask {
    const { trie } = this;
    const bits = new Uint32Array(Math.ceil(trie.vocabSize / 32));
    let count = 0;
    const nodes: number[] = [];
    const places: number[] = [];
    for (let c = trie.firstChild[0] as number; c >= 0; c = trie.nextSibling[c] as number) {
      nodes.push(c);
      places.push(place);
    }
    while (nodes.length > 0) {
      const node = nodes.pop() as number;
      const next = this.step(places.pop() as number, trie.byte[node] as number);
      if (next === NOWHERE) continue;
      for (let id = trie.firstToken[node] as number; id >= 0; id = trie.nextToken[id] as number) {
        bits[id >>> 5] = (bits[id >>> 5] as number) | (1 << (id & 31));
        count += 1;
      }
      for (let c = trie.firstChild[node] as number; c >= 0; c = trie.nextSibling[c] as number) {
        nodes.push(c);
        places.push(next);
      }
    }
    return { bits, count, eos: this.complete(place) };
  }

  /** One byte on from a place: ASCII steps the DFA, a multi-byte character once it is whole. */
  private step(place: Place, b: number): Place {
    const { state, cp, owed, length, strip } = unpack(place);
    if (owed === 0) {
      if (strip > 0 && b === 0x20) return pack(state, 0, 0, 0, strip - 1);
      if (b < 0x80) return this.whole(state, b);
      if (b >= 0xc2 && b <= 0xdf) return this.partial(state, b & 0x1f, 1, 2);
      if (b >= 0xe0 && b <= 0xef) return this.partial(state, b & 0x0f, 2, 3);
      if (b >= 0xf0 && b <= 0xf4) return this.partial(state, b & 0x07, 3, 4);
      return NOWHERE;
    }
    if ((b & 0xc0) !== 0x80) return NOWHERE;
    const value = (cp << 6) | (b & 0x3f);
    if (owed > 1) return this.partial(state, value, owed - 1, length);
    // Overlong forms and surrogates are not UTF-8: the decoder would not give this character.
    if (value < (MIN_OF_LENGTH[length] as number) || (value >= 0xd800 && value <= 0xdfff))
      return NOWHERE;
    return this.whole(state, value);
  }

  private whole(state: number, cp: number): Place {
    const to = this.dfa.next(state, cp);
    return to < 0 ? NOWHERE : pack(to, 0, 0, 0, 0);
  }

  /** A character still owed bytes: kept only if some valid completion of it leads on. */
  private partial(state: number, value: number, owed: number, length: number): Place {
    const lo = Math.max(value * 2 ** (6 * owed), MIN_OF_LENGTH[length] as number);
    const hi = Math.min(value * 2 ** (6 * owed) + 2 ** (6 * owed) - 1, 0x10ffff);
    return lo <= hi && this.dfa.anyIn(state, lo, hi)
      ? pack(state, value, owed, length, 0)
      : NOWHERE;
  }
}

/** The smallest code point a UTF-8 sequence of each length may spell. */
const MIN_OF_LENGTH = [0, 0, 0x80, 0x800, 0x10000];

function pack(state: number, cp: number, owed: number, length: number, strip: number): Place {
  return (((state * 65536 + cp) * 4 + owed) * 8 + length) * 4 + strip;
}

function unpack(place: Place): {
  state: number;
  cp: number;
  owed: number;
  length: number;
  strip: number;
} {
  const strip = place % 4;
  let rest = (place - strip) / 4;
  const length = rest % 8;
  rest = (rest - length) / 8;
  const owed = rest % 4;
  rest = (rest - owed) / 4;
  const cp = rest % 65536;
  return { state: (rest - cp) / 65536, cp, owed, length, strip };
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i += 1) {
    const d = (a[i] as number) - (b[i] as number);
    if (d !== 0) return d;
  }
  return a.length - b.length;
}
