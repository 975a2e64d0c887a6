// A question and a document given as words, encoded as Python's fast tokenizers encode
// `is_split_into_words=True` pairs: every word normalized and pre-tokenized on its own, the two
// word sequences joined by the tokenizer's own pair template, and each token's word id the index of
// the word it came from in the list given (not the pre-tokenizer's finer pieces). The npm binding
// cannot take word lists, so the words are encoded one by one and merged before the template.
import { mergeEncodings, Tokenizer, type Encoding } from 'tokenizers';
import type { TokenizedText } from '../runtime/text-tokenizer.ts';

interface EncodedWords {
  encoding: Encoding;
  /** The word each token came from. */
  wordIds: number[];
}

export class WordPairEncoder {
  private readonly tokenizer: Tokenizer;

  /** `json`: the model's tokenizer.json. */
  constructor(json: string) {
    this.tokenizer = Tokenizer.fromString(json);
    // Windows are cut from the whole pair afterwards (qa-windows.ts), padding by the batch.
    this.tokenizer.disableTruncation();
    this.tokenizer.disablePadding();
  }

  /** The pair with special tokens, untruncated; `wordIds` index `first` or `second` by sequence. */
  async encode(first: readonly string[], second: readonly string[]): Promise<TokenizedText> {
    const [a, b] = await Promise.all([this.words(first), this.words(second)]);
    const pair = this.tokenizer.postProcess(a.encoding, b.encoding, true);
    const sequenceIds = pair.getSequenceIds().map((s) => s ?? null);
    const specialTokensMask = pair.getSpecialTokensMask();
    const next = [0, 0];
    const own = [a.wordIds, b.wordIds];
    return {
      ids: pair.getIds(),
      typeIds: pair.getTypeIds(),
      attentionMask: pair.getAttentionMask(),
      specialTokensMask,
      offsets: pair.getOffsets().map((o) => [o[0] ?? 0, o[1] ?? 0]),
      wordIds: sequenceIds.map((s, i) =>
        s === null || specialTokensMask[i] === 1 ? null : (own[s]?.[(next[s] as number)++] ?? null),
      ),
      sequenceIds,
      overflowing: [],
    };
  }

  private async words(words: readonly string[]): Promise<EncodedWords> {
    const encodings = await this.tokenizer.encodeBatch([...words], { addSpecialTokens: false });
    const wordIds = encodings.flatMap((e, w) => new Array<number>(e.getLength()).fill(w));
    return { encoding: mergeEncodings(encodings, false), wordIds };
  }
}
