// TapasTokenizer's encoding of a question and a table, which has no fast (Rust) version in
// transformers: [CLS] question [SEP] then the table flattened row by row (the header first), each
// token with seven type ids: segment (0 question, 1 table), column (from 1), row (header 0, cells
// from 1), the previous answer's label (conversational models), the cell's rank in its numeric
// column and the inverse rank, and the cell's numeric relations to the question's numbers (bit 1
// equal, 2 the question's is less, 4 greater). A table too long for the model loses rows from the
// end (drop_rows_to_fit) and, if even then it does not fit, long cells keep only their first words.
//
// Words are split into WordPieces by the model's WordPiece vocabulary through `tokenizers`; the
// rules TapasTokenizer lays over BERT's are kept here: an empty text has no token, a text with no
// letter or digit (or "n/a", "?", "nan") is the one [EMPTY] token, and a special token is one only
// as a whole white-space separated word.
import { Tokenizer } from 'tokenizers';
import { InputError, ModelFolderError } from '../../errors.ts';
import type { Table } from './table-input.ts';
import {
  compareKeys,
  consolidateColumn,
  questionValues,
  sortKeyFor,
  type NumericValue,
  type SortKey,
} from './tapas-numbers.ts';
import { pythonSplit } from './word-boxes.ts';

export const TYPE_IDS = 7;
const ROW = 2;
const COLUMN = 1;
const PREV_LABEL = 3;

export interface TapasSpecials {
  cls: string;
  sep: string;
  empty: string;
  unk: string;
  /** Further special tokens kept whole when written as a word ([PAD], [MASK]). */
  others?: readonly string[];
}

export interface TapasLimits {
  /** The longest encoding, in tokens (the tokenizer's model_max_length). */
  maxLength: number;
  /** Column and row ids must stay under these (tokenizer_config's max_column_id / max_row_id). */
  maxColumnId: number;
  maxRowId: number;
}

export interface TapasEncoding {
  ids: number[];
  /** Per token, the seven type ids in TapasTokenizer's order. */
  typeIds: number[][];
}

interface Piece {
  token: string;
  id: number;
}

/** Each cell's WordPieces, the header as row 0. */
type TokenizedTable = Piece[][][];

const ALNUM = /^[\p{L}\p{N}]/u;

/** TapasTokenizer's format_text(text) == EMPTY: nothing to read in the cell. */
export function isEmptyText(text: string): boolean {
  const trimmed = pythonSplit(text.toLowerCase()).join(' ');
  if (trimmed === 'n/a' || trimmed === '?' || trimmed === 'nan') return true;
  return ![...text.toLowerCase()].some((char) => ALNUM.test(char));
}

export class TapasEncoder {
  private readonly tokenizer: Tokenizer;
  private readonly vocab: Map<string, number>;
  private readonly specials: TapasSpecials;
  private readonly specialWords: Set<string>;
  readonly limits: TapasLimits;

  /** `json`: a tokenizer.json of the model's WordPiece vocabulary (BERT's normalizer and pre-tokenizer). */
  constructor(json: string, specials: TapasSpecials, limits: TapasLimits) {
    const parsed = JSON.parse(json) as {
      added_tokens?: unknown[];
      post_processor?: unknown;
      truncation?: unknown;
      padding?: unknown;
      model: { vocab: Record<string, number> };
    };
    // TapasTokenizer recognises special tokens only as whole words (the check below); the Rust
    // tokenizer would cut them out of any text, so it gets none.
    this.tokenizer = Tokenizer.fromString(
      JSON.stringify({
        ...parsed,
        added_tokens: [],
        post_processor: null,
        truncation: null,
        padding: null,
      }),
    );
    this.vocab = new Map(Object.entries(parsed.model.vocab));
    this.specials = specials;
    const tokens = [specials.cls, specials.sep, specials.empty, specials.unk];
    for (const token of tokens)
      if (!this.vocab.has(token))
        throw new ModelFolderError(`the TAPAS vocabulary (tokenizer.json) has no ${token} token`);
    this.specialWords = new Set(
      [...tokens, ...(specials.others ?? [])].filter((t) => this.vocab.has(t)),
    );
    this.limits = limits;
  }

  private id(token: string): number {
    return this.vocab.get(token) ?? (this.vocab.get(this.specials.unk) as number);
  }

  /** TapasTokenizer.tokenize for many texts. */
  async tokenize(texts: readonly string[]): Promise<Piece[][]> {
    // Each text as parts in order: a special token kept whole, or a text for WordPiece.
    const parts: { index: number; special?: string; text?: string }[] = [];
    texts.forEach((text, index) => {
      if (text === '') return;
      if (isEmptyText(text)) {
        parts.push({ index, special: this.specials.empty });
        return;
      }
      const words = pythonSplit(text);
      if (!words.some((w) => this.specialWords.has(w))) {
        parts.push({ index, text });
        return;
      }
      // A special token written as a word stays one; the words around it are tokenized alone.
      for (const word of words)
        parts.push(this.specialWords.has(word) ? { index, special: word } : { index, text: word });
    });
    const plain = parts.flatMap((p) => (p.text === undefined ? [] : [p.text]));
    const encodings = await this.tokenizer.encodeBatch(plain, { addSpecialTokens: false });
    const out: Piece[][] = texts.map(() => []);
    let next = 0;
    for (const { index, special } of parts) {
      const pieces = out[index] as Piece[];
      if (special !== undefined) {
        pieces.push({ token: special, id: this.id(special) });
        continue;
      }
      const encoding = encodings[next++];
      if (encoding === undefined) continue;
      const ids = encoding.getIds();
      encoding.getTokens().forEach((token, t) => pieces.push({ token, id: ids[t] as number }));
    }
    return out;
  }

  async tokenizeTable(table: Table): Promise<TokenizedTable> {
    const width = table.header.length;
    const flat = await this.tokenize([table.header, ...table.rows].flat());
    return Array.from({ length: table.rows.length + 1 }, (_, r) =>
      flat.slice(r * width, (r + 1) * width),
    );
  }

  /**
   * The question and table encoded; `truncate` drops rows (and then trims cells) to fit
   * limits.maxLength as drop_rows_to_fit does. `field` names the input in errors.
   */
  async encode(
    table: Table,
    query: string,
    { truncate = true, field = 'input' }: { truncate?: boolean; field?: string } = {},
  ): Promise<TapasEncoding> {
    const { maxLength, maxColumnId, maxRowId } = this.limits;
    const [tokenized, [question = []]] = await Promise.all([
      this.tokenizeTable(table),
      this.tokenize([query]),
    ]);
    const numColumns = table.header.length;
    if (numColumns >= maxColumnId)
      throw new InputError(
        `${field}.table has ${numColumns} columns; the model reads fewer than ${maxColumnId}`,
        { field: `${field}.table` },
      );
    let numRows = table.rows.length;
    if (numRows >= maxRowId) {
      if (!truncate)
        throw new InputError(
          `${field}.table has ${numRows} rows; the model reads fewer than ${maxRowId} (options.truncation drops the rest)`,
          { field: `${field}.table` },
        );
      numRows = maxRowId - 1;
    }
    const cells = new CellCosts(tokenized);
    let numTokens = cells.maxTokens;
    if (truncate) {
      const budget = maxLength - (question.length + 2);
      let fit: number | undefined;
      for (;;) {
        fit = cells.maxTokensWithin(budget, numRows, numColumns);
        if (fit !== undefined) break;
        numRows -= 1;
        if (numRows < 1) break;
      }
      // Python's `num_tokens or 1`: a table that fits nowhere keeps each cell's first word.
      numTokens = fit || 1;
    }

    const ids = [
      this.id(this.specials.cls),
      ...question.map((p) => p.id),
      this.id(this.specials.sep),
    ];
    const typeIds = ids.map(() => new Array<number>(TYPE_IDS).fill(0));
    // Where each kept cell's tokens sit, for the numeric features.
    const cellTokens = new Map<string, number[]>();
    for (let r = 0; r <= numRows; r += 1)
      for (let c = 0; c < numColumns; c += 1) {
        const kept = cells.kept(r, c, numTokens);
        const pieces = tokenized[r]?.[c] ?? [];
        for (let t = 0; t < kept; t += 1) {
          if (r > 0) {
            const key = `${c},${r - 1}`;
            cellTokens.set(key, [...(cellTokens.get(key) ?? []), ids.length]);
          }
          ids.push((pieces[t] as Piece).id);
          typeIds.push([1, c + 1, r, 0, 0, 0, 0]);
        }
      }
    if (ids.length > maxLength)
      throw new InputError(
        `${field}: the question and the table header alone take ${ids.length} tokens, over the ${maxLength} the model reads`,
        { field },
      );
    this.addNumericFeatures(table, query, typeIds, cellTokens);
    return { ids, typeIds };
  }

  /** Column ranks and numeric relations, computed over every row of the table (kept or not). */
  private addNumericFeatures(
    table: Table,
    query: string,
    typeIds: number[][],
    cellTokens: Map<string, number[]>,
  ): void {
    const asked = questionValues(query);
    table.header.forEach((_, c) => {
      const values = consolidateColumn(table.rows.map((row) => row[c] as string));
      const present = values.flatMap((v, r) => (v === undefined ? [] : [{ r, v }]));
      if (present.length === 0) return;
      const tokensOf = (r: number): number[] => cellTokens.get(`${c},${r}`) ?? [];
      const key = sortKeyFor(present.map((p) => p.v));
      if (key !== undefined) {
        const keys = present.map((p) => key(p.v));
        const unique = uniqueSorted(keys);
        present.forEach(({ r }, i) => {
          const rank = unique.findIndex((k) => compareKeys(k, keys[i] as SortKey) === 0);
          for (const t of tokensOf(r)) {
            (typeIds[t] as number[])[4] = rank + 1;
            (typeIds[t] as number[])[5] = unique.length - rank;
          }
        });
      }
      const relations = new Map<number, number>();
      for (const value of asked) {
        const compare = sortKeyFor([...present.map((p) => p.v), value]);
        if (compare === undefined) continue;
        for (const { r, v } of present) {
          const order = compareKeys(compare(value), compare(v));
          const bit = order === 0 ? 1 : order < 0 ? 2 : 4;
          relations.set(r, (relations.get(r) ?? 0) | bit);
        }
      }
      for (const [r, bits] of relations)
        for (const t of tokensOf(r)) (typeIds[t] as number[])[6] = bits;
    });
  }
}

function uniqueSorted(keys: readonly SortKey[]): SortKey[] {
  const sorted = [...keys].sort(compareKeys);
  return sorted.filter((k, i) => i === 0 || compareKeys(k, sorted[i - 1] as SortKey) !== 0);
}

/**
 * How many tokens of each cell survive a cut to `n` tokens per cell: a token stays when the word
 * it belongs to starts before `n` (TapasTokenizer never keeps part of a word).
 */
class CellCosts {
  /** begins[r][c][t]: where the word of token t starts. */
  private readonly begins: number[][][];
  readonly maxTokens: number;

  constructor(table: TokenizedTable) {
    let longest = 0;
    this.begins = table.map((row) =>
      row.map((cell) => {
        longest = Math.max(longest, cell.length);
        let begin = 0;
        return cell.map((piece, t) => {
          if (!piece.token.startsWith('##')) begin = t;
          return begin;
        });
      }),
    );
    this.maxTokens = longest;
  }

  kept(r: number, c: number, n: number): number {
    const begins = this.begins[r]?.[c] ?? [];
    let count = 0;
    while (count < begins.length && (begins[count] as number) < n) count += 1;
    return count;
  }

  /** Tokens of rows 0..r (header included) when cells keep `n` tokens, memoised per `n` (one table, so numColumns never changes). */
  private readonly prefixes = new Map<number, number[]>();

  private cost(numRows: number, numColumns: number, n: number): number {
    let prefix = this.prefixes.get(n);
    if (prefix === undefined) {
      let total = 0;
      prefix = this.begins.map((row, r) => {
        for (let c = 0; c < Math.min(numColumns, row.length); c += 1) total += this.kept(r, c, n);
        return total;
      });
      this.prefixes.set(n, prefix);
    }
    return prefix[Math.min(numRows, prefix.length - 1)] ?? 0;
  }

  /** _get_max_num_tokens: the most tokens per cell that fit, undefined when not even one does. */
  maxTokensWithin(budget: number, numRows: number, numColumns: number): number | undefined {
    let n = 0;
    for (; n <= this.maxTokens; n += 1) if (this.cost(numRows, numColumns, n + 1) > budget) break;
    n = Math.min(n, this.maxTokens);
    return n < this.maxTokens && n === 0 ? undefined : n;
  }
}

/** The previous answer's labels on a new encoding: 1 on every token of a cell selected before. */
export function withPreviousAnswer(
  encoding: TapasEncoding,
  selected: ReadonlySet<string>,
): TapasEncoding {
  return {
    ids: encoding.ids,
    typeIds: encoding.typeIds.map((types) => {
      const copy = [...types];
      const key = `${(types[COLUMN] as number) - 1},${(types[ROW] as number) - 1}`;
      copy[PREV_LABEL] = types[0] === 1 && types[ROW]! > 0 && selected.has(key) ? 1 : 0;
      return copy;
    }),
  };
}

export type { NumericValue };
