// Constrained decoding for one tokenizer: formats compiled once and kept (a few, most recently
// used), and a cursor per generating sequence that masks the logits before the token is chosen
// and follows the chosen token. The sampler itself is untouched, so greedy, sampled and batched
// generation all see the same masked logits; without a responseFormat none of this runs.
import { ConfigError } from '../../../errors.ts';
import { PatternError } from './char-dfa.ts';
import { formatDfa, type ResponseFormat } from './response-format.ts';
import { NOWHERE, TokenMasks, TokenTrie, type Place } from './token-masks.ts';
import { tokenVocabulary } from './token-vocabulary.ts';

export interface CompiledFormat {
  readonly format: ResponseFormat;
  readonly masks: TokenMasks;
}

/** Formats a tokenizer keeps compiled; a record's own format past these is compiled again. */
const MAX_FORMATS = 32;

export class FormatCompiler {
  private readonly tokenizerJson: string;
  private readonly folder: string;
  private trie: TokenTrie | undefined;
  private readonly formats = new Map<string, CompiledFormat>();

  constructor(tokenizerJson: string, folder: string) {
    this.tokenizerJson = tokenizerJson;
    this.folder = folder;
  }

  compile(format: ResponseFormat): CompiledFormat {
    const key = JSON.stringify(format);
    const known = this.formats.get(key);
    if (known !== undefined) {
      // Most recently used last, so the oldest is the one dropped.
      this.formats.delete(key);
      this.formats.set(key, known);
      return known;
    }
    let dfa;
    try {
      dfa = formatDfa(format);
    } catch (err) {
      if (!(err instanceof PatternError)) throw err;
      throw new ConfigError(`responseFormat: ${err.message}`, {
        cause: err,
        field: 'responseFormat',
      });
    }
    this.trie ??= new TokenTrie(tokenVocabulary(this.tokenizerJson, this.folder));
    const compiled = { format, masks: new TokenMasks(dfa, this.trie) };
    this.formats.set(key, compiled);
    if (this.formats.size > MAX_FORMATS) this.formats.delete(this.formats.keys().next().value!);
    return compiled;
  }
}

/** What the finished output is, checked against its format. */
export interface FormatVerdict {
  /** The parsed output of a json_schema format that completed. */
  json?: unknown;
  /** Why the output does not satisfy the format; absent when it does. */
  formatError?: string;
}

export class FormatCursor {
  private readonly masks: TokenMasks;
  private readonly format: ResponseFormat;
  private readonly eosIds: readonly number[];
  private place: Place;

  constructor(compiled: CompiledFormat, eosIds: readonly number[]) {
    this.masks = compiled.masks;
    this.format = compiled.format;
    this.eosIds = eosIds;
    this.place = compiled.masks.start;
  }

  /**
   * Sets every token the format refuses to -Infinity. Returns the token to take without
   * sampling when there is no choice: EOS once the output is complete and nothing may follow
   * (or when no token can continue it, which the verdict then reports).
   */
  restrict(logits: Float32Array): number | undefined {
    const eos = this.eosIds[0] as number;
    if (this.place === NOWHERE) return eos;
    const mask = this.masks.maskAt(this.place);
    if (mask.count === 0) return eos;
    const { bits } = mask;
    const kept = mask.eos ? this.eosIds.map((id) => logits[id] as number) : [];
    for (let i = 0; i < logits.length; i += 1) {
      if (((bits[i >>> 5] ?? 0) & (1 << (i & 31))) === 0) logits[i] = -Infinity;
    }
    this.eosIds.forEach((id, k) => {
      if (k < kept.length) logits[id] = kept[k] as number;
    });
    return undefined;
  }

  /** Follows a chosen token. */
  advance(tokenId: number): void {
    if (this.place !== NOWHERE && !this.eosIds.includes(tokenId))
      this.place = this.masks.walk(this.place, tokenId);
  }

  /** The final text against the format: the DFA in full, then JSON.parse for a schema. */
  verdict(text: string, finish: string): FormatVerdict {
    const kind = this.format.type;
    if (!this.masks.dfa.matches(text)) {
      const why =
        finish === 'length'
          ? 'maxNewTokens was reached before it was complete'
          : finish === 'stop'
            ? 'a stop sequence cut it short'
            : 'no token could continue it';
      return { formatError: `the output does not match the responseFormat (${kind}): ${why}` };
    }
    if (kind !== 'json_schema') return {};
    try {
      return { json: JSON.parse(text) as unknown };
    } catch (err) {
      return {
        formatError: `the output matches the schema's pattern but is not JSON: ${String(err)}`,
      };
    }
  }
}
