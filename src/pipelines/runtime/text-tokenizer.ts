// Hugging Face tokenizers (Rust, via the `tokenizers` package) configured the way Python's
// `PreTrainedTokenizerFast.__call__` configures them: truncation to the model's maximum length,
// longest-first for pairs, padding done by the caller when it assembles a batch.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Encoding, Tokenizer } from 'tokenizers';
import { InputError, ModelFolderError } from '../../errors.ts';
import {
  RustTokenizers,
  tokenizerLoadError,
  type TokenizerBuild,
  type TruncationStrategy,
} from './rust-tokenizers.ts';
import { toTokenized, type TokenizedText } from './lazy-encoding.ts';
import {
  CarriedStore,
  plainEncodeLength,
  type CarriedEncoding,
  type CarriedEncodings,
} from './carried-encoding.ts';
import { singleTypeIdsAreZero } from './post-processor.ts';
import { wordPrefix } from './word-prefix.ts';

/**
 * Characters a token the inference thread's first prefix is given: spam-assassin's English
 * e-mails average about 4.5 (all-MiniLM-L6-v2), and at 5 only 43 of 2,000 fall short and need
 * the next rung. Pricing keeps its own, longer prefix (word-prefix.ts): it reads one prefix only.
 */
const PREFIX_FIRST_RUNG = 5;

export type { TokenizerBuild, TruncationStrategy } from './rust-tokenizers.ts';

export interface EncodeOptions {
  /** false disables truncation; default 'longest_first' as in Python's `truncation=True`. */
  truncation?: TruncationStrategy | false;
  maxLength?: number;
  /** Overlap between overflowing windows (question answering's doc stride). */
  stride?: number;
  addSpecialTokens?: boolean;
}

export type { TokenizedText } from './lazy-encoding.ts';

export type TextInput = string | readonly [string, string];

interface TokenizerConfigFile {
  model_max_length?: number;
  padding_side?: string;
  truncation_side?: string;
  chat_template?: string | { name: string; template: string }[];
  [key: string]: unknown;
}

export interface SpecialTokens {
  pad: string | undefined;
  unk: string | undefined;
  cls: string | undefined;
  sep: string | undefined;
  mask: string | undefined;
  bos: string | undefined;
  eos: string | undefined;
}

const LEFT_PADDING_CLASSES = new Set(['LlamaTokenizer', 'CodeLlamaTokenizer', 'GemmaTokenizer']);

// Python uses int(1e30) to say "no limit"; anything this large means the same.
const NO_LIMIT = 1e12;

export class TextTokenizer {
  readonly folder: string;
  readonly json: string;
  readonly maxLength: number | undefined;
  readonly special: SpecialTokens;
  readonly config: TokenizerConfigFile;
  private readonly rust: RustTokenizers;
  /** tokenizer.json's added tokens (the special ones among them), by content: no Rust call. */
  private readonly addedIds: ReadonlyMap<string, number>;
  /** A single text's type ids are all 0 (tokenizer.json's post-processor says so). */
  private readonly singleTypesZero: boolean;
  /** Encodings the batches under way carried from the main thread (carry). */
  private readonly carried = new CarriedStore();

  private constructor(
    folder: string,
    json: string,
    config: TokenizerConfigFile,
    special: SpecialTokens,
    fallbackMax: number | undefined,
    build: TokenizerBuild,
  ) {
    this.folder = folder;
    this.json = json;
    this.config = config;
    this.special = special;
    this.maxLength = declaredMaxLength(config, fallbackMax);
    const parsed = JSON.parse(json) as { post_processor?: unknown; added_tokens?: unknown };
    this.singleTypesZero = singleTypeIdsAreZero(parsed.post_processor);
    this.addedIds = addedTokenIds(parsed.added_tokens);
    this.rust = new RustTokenizers(folder, json, build);
  }

  /**
   * The maxLength a load of `folder` would have, without building the Rust tokenizer (the main
   * thread's pricing by characters needs no more).
   */
  static async readMaxLength(
    folder: string,
    fallbackMaxLength?: number,
  ): Promise<number | undefined> {
    const config = await readJsonIfPresent<TokenizerConfigFile>(
      join(folder, 'tokenizer_config.json'),
    );
    return declaredMaxLength(config, fallbackMaxLength);
  }

  /**
   * `fallbackMaxLength` is used when tokenizer_config.json declares no usable limit. `build`:
   * 'now' builds the Rust tokenizer here, so a tokenizer.json Rust cannot read fails the load;
   * 'onDemand' waits for the first call that needs it, for an inference thread whose encodes
   * the main thread makes (carried-encoding.ts) and whose main thread built the same file already.
   */
  static async load(
    folder: string,
    fallbackMaxLength?: number,
    build: TokenizerBuild = 'now',
  ): Promise<TextTokenizer> {
    const json = await readFile(join(folder, 'tokenizer.json'), 'utf8').catch((cause: unknown) => {
      throw new ModelFolderError(
        `${folder} has no readable tokenizer.json; export the model with its fast tokenizer (Optimum does)`,
        {
          cause,
          field: 'tokenizer.json',
        },
      );
    });
    const config = await readJsonIfPresent<TokenizerConfigFile>(
      join(folder, 'tokenizer_config.json'),
    );
    const specialMap = await readJsonIfPresent<Record<string, unknown>>(
      join(folder, 'special_tokens_map.json'),
    );
    const pick = (key: string): string | undefined =>
      tokenContent(config[key]) ?? tokenContent(specialMap[key]);
    const special: SpecialTokens = {
      pad: pick('pad_token'),
      unk: pick('unk_token'),
      cls: pick('cls_token'),
      sep: pick('sep_token'),
      mask: pick('mask_token'),
      bos: pick('bos_token'),
      eos: pick('eos_token'),
    };
    try {
      return new TextTokenizer(folder, json, config, special, fallbackMaxLength, build);
    } catch (cause) {
      throw tokenizerLoadError(folder, cause);
    }
  }

  /** The Rust tokenizers this one holds (for tests and diagnostics). */
  get instanceCount(): number {
    return this.rust.count;
  }

  private get vocabulary(): Tokenizer {
    return this.rust.any();
  }

  tokenId(token: string | undefined): number | undefined {
    if (token === undefined) return undefined;
    return this.addedIds.get(token) ?? this.vocabulary.tokenToId(token) ?? undefined;
  }

  idToToken(id: number): string | undefined {
    return this.vocabulary.idToToken(id) ?? undefined;
  }

  /**
   * Python's tokenizer classes carry their own default when tokenizer_config.json says nothing:
   * the Llama family pads on the left, everything else on the right.
   */
  get paddingSide(): 'left' | 'right' {
    const declared = this.config.padding_side;
    if (declared === 'left' || declared === 'right') return declared;
    const cls =
      typeof this.config['tokenizer_class'] === 'string' ? this.config['tokenizer_class'] : '';
    return LEFT_PADDING_CLASSES.has(cls.replace(/Fast$/, '')) ? 'left' : 'right';
  }

  get padId(): number {
    return this.tokenId(this.special.pad) ?? 0;
  }

  vocabSize(): number {
    return this.vocabulary.getVocabSize(true);
  }

  async encode(
    inputs: readonly TextInput[],
    options: EncodeOptions = {},
  ): Promise<TokenizedText[]> {
    for (const [i, input] of inputs.entries()) assertTextInput(input, i);
    if (this.carried.size > 0) {
      const maxLength = plainEncodeLength(options, this.maxLength);
      if (maxLength !== undefined) return this.encodeWithCarried(inputs, maxLength, options);
    }
    return this.encodeAll(inputs, options);
  }

  /**
   * The encodings of `texts` as a pipeline's plain encode at `maxLength` makes them, in the form
   * an inference thread's tokenizer takes (carry).
   */
  async encodeToCarry(texts: readonly string[], maxLength: number): Promise<CarriedEncoding[]> {
    const encoded = await this.encode(texts, { maxLength });
    return encoded.map((e, i) => ({
      text: texts[i] as string,
      maxLength,
      ids: e.ids,
      ...(this.singleTypesZero ? {} : { typeIds: e.typeIds }),
    }));
  }

  /**
   * Holds a batch's carried encodings until the returned release is called: meanwhile an encode
   * of the same text with the same plain options answers from them without a Rust call.
   */
  carry(encodings: CarriedEncodings): () => void {
    return this.carried.hold(encodings);
  }

  /** Texts answered from carried encodings since the tokenizer was loaded (tests, diagnostics). */
  get carriedCount(): number {
    return this.carried.answered;
  }

  private async encodeWithCarried(
    inputs: readonly TextInput[],
    maxLength: number,
    options: EncodeOptions,
  ): Promise<TokenizedText[]> {
    const found = inputs.map((input) =>
      typeof input === 'string' ? this.carried.find(input, maxLength) : undefined,
    );
    const missing = inputs.filter((_, i) => found[i] === undefined);
    const made = missing.length > 0 ? await this.encodeAll(missing, options) : [];
    let next = 0;
    return found.map((encoding) => encoding ?? (made[next++] as TokenizedText));
  }

  private async encodeAll(
    inputs: readonly TextInput[],
    options: EncodeOptions,
  ): Promise<TokenizedText[]> {
    const cap = this.prefixCap(options);
    if (cap !== undefined && inputs.every((input) => typeof input === 'string'))
      return this.encodePrefixes(inputs, cap, options);
    return this.encodeWhole(inputs, options);
  }

  /**
   * Where a truncating encode of single texts may stop reading: its length cap, when truncation
   * keeps the start (right side) and no overflowing windows are asked for.
   */
  private prefixCap(options: EncodeOptions): number | undefined {
    const maxLength = options.maxLength ?? this.maxLength;
    if (options.truncation === false || options.stride || maxLength === undefined) return undefined;
    return this.config.truncation_side === 'left' ? undefined : maxLength;
  }

  /**
   * Long texts are encoded from a word-aligned prefix (word-prefix.ts). Only a prefix that
   * truncation cut (it overflowed) is kept: the token at the cut, which a run of spaces can make
   * differ from the whole text's, is then among the dropped ones. A prefix that fell short is
   * tried again twice as long, and a text no longer than the next prefix is encoded whole, so
   * the result always equals the whole text's. The first prefix is short (PREFIX_FIRST_RUNG
   * characters a token) because most of an encode's cost is the characters it reads, and a
   * miss costs only a prefix twice as long, never the whole of a long text.
   */
  private async encodePrefixes(
    texts: readonly string[],
    cap: number,
    options: EncodeOptions,
  ): Promise<TokenizedText[]> {
    const encoded: TokenizedText[] = new Array<TokenizedText>(texts.length);
    let pending = texts.map((_, i) => i);
    for (let perToken = PREFIX_FIRST_RUNG; pending.length > 0; perToken *= 2) {
      const prefixes = pending.map((i) => wordPrefix(texts[i] as string, cap * perToken));
      const round = await this.encodeWhole(
        pending.map((i, k) => prefixes[k] ?? (texts[i] as string)),
        options,
      );
      const short: number[] = [];
      round.forEach((e, k) => {
        const i = pending[k] as number;
        if (prefixes[k] === undefined) encoded[i] = e;
        // Fewer ids than the cap: nothing was cut, no need to ask the encoding for its windows.
        else if (e.ids.length < cap || e.overflowing.length === 0) short.push(i);
        else {
          // The prefix's overflow is not the text's; no caller here asked for it (no stride).
          e.overflowing = [];
          encoded[i] = e;
        }
      });
      pending = short;
    }
    return encoded;
  }

  private async encodeWhole(
    inputs: readonly TextInput[],
    options: EncodeOptions,
  ): Promise<TokenizedText[]> {
    const tokenizer = this.instance(options);
    const encodeOptions = { addSpecialTokens: options.addSpecialTokens ?? true };
    // encodeBatch takes single sequences only; pairs go through encode one by one. So does a lone
    // text (CPU batches are mostly of one record): encodeBatch of one costs ~10 % more than encode
    // (0.40 against 0.36 ms for a 256-token e-mail, identical encodings).
    const encodings =
      inputs.length > 1 && inputs.every((input) => typeof input === 'string')
        ? await tokenizer.encodeBatch([...inputs], encodeOptions)
        : await Promise.all(
            inputs.map((input) =>
              typeof input === 'string'
                ? tokenizer.encode(input, null, encodeOptions)
                : this.encodePair(tokenizer, input, options),
            ),
          );
    return encodings.map((e, i) =>
      'ids' in e ? e : toTokenized(e, this.singleTypesZero && typeof inputs[i] === 'string'),
    );
  }

  /**
   * The Rust core inside the npm package splits a longest-first pair budget differently from the
   * one Python ships (it gives the odd token to the other sequence), so that one case is cut
   * here with Python's rule: the shorter sequence keeps what it can, and when both are too long
   * they share the budget, the longer one getting the odd token.
   */
  private async encodePair(
    tokenizer: Tokenizer,
    pair: readonly [string, string],
    options: EncodeOptions,
  ): Promise<Encoding | TokenizedText> {
    const addSpecialTokens = options.addSpecialTokens ?? true;
    const maxLength = options.maxLength ?? this.maxLength;
    const manual =
      (options.truncation ?? 'longest_first') === 'longest_first' &&
      maxLength !== undefined &&
      !options.stride;
    if (!manual) return tokenizer.encode(pair[0], pair[1], { addSpecialTokens });
    const [first, second] = await Promise.all([
      this.base.encode(pair[0], null, { addSpecialTokens: false }),
      this.base.encode(pair[1], null, { addSpecialTokens: false }),
    ]);
    const budget = maxLength - (addSpecialTokens ? await this.pairSpecialTokenCount() : 0);
    let [n1, n2] = [first.getLength(), second.getLength()];
    if (n1 + n2 > budget) {
      const swap = n1 > n2;
      let [short, long] = swap ? [n2, n1] : [n1, n2];
      long = short > budget ? short : Math.max(short, budget - short);
      if (short + long > budget) {
        short = Math.floor(budget / 2);
        long = short + (budget % 2);
      }
      [n1, n2] = swap ? [long, short] : [short, long];
      const direction = this.config.truncation_side === 'left' ? 'left' : 'right';
      first.truncate(n1, 0, direction);
      second.truncate(n2, 0, direction);
    }
    // Post-processing an encoding a second time trims byte-level offsets again, so offsets come
    // from the two single encodings; everything else from the post-processed pair.
    const merged = toTokenized(this.base.postProcess(first, second, addSpecialTokens), false);
    const own = [first.getOffsets(), second.getOffsets()];
    const next = [0, 0];
    merged.offsets = merged.sequenceIds.map((sequence, i) => {
      if (sequence === null || merged.specialTokensMask[i] === 1) return [0, 0];
      const offset = own[sequence]?.[next[sequence]!++];
      return [offset?.[0] ?? 0, offset?.[1] ?? 0];
    });
    return merged;
  }

  private pairSpecialTokens: Promise<number> | undefined;
  private pairSpecialTokenCount(): Promise<number> {
    this.pairSpecialTokens ??= this.base
      .encode('', '', { addSpecialTokens: true })
      .then((e) => e.getLength());
    return this.pairSpecialTokens;
  }

  async decode(ids: readonly number[], skipSpecialTokens: boolean): Promise<string> {
    return this.vocabulary.decode([...ids], skipSpecialTokens);
  }

  /** The instance that never truncates, for pair pieces and post-processing (which truncates). */
  private get base(): Tokenizer {
    return this.instance({ truncation: false });
  }

  private instance(options: EncodeOptions): Tokenizer {
    return this.rust.forSetting({
      truncation: options.truncation ?? 'longest_first',
      maxLength: options.maxLength ?? this.maxLength,
      stride: options.stride ?? 0,
      side: this.config.truncation_side === 'left' ? 'left' : 'right',
    });
  }
}

function assertTextInput(input: unknown, index: number): void {
  if (typeof input === 'string') return;
  if (
    Array.isArray(input) &&
    input.length === 2 &&
    typeof input[0] === 'string' &&
    typeof input[1] === 'string'
  )
    return;
  throw new InputError(
    `input ${index} must be a string or a [text, textPair] pair of strings, got ${describe(input)}`,
    {
      field: `inputs[${index}]`,
    },
  );
}

export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return `an array of ${value.length}`;
  return typeof value;
}

function tokenContent(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (
    value !== null &&
    typeof value === 'object' &&
    'content' in value &&
    typeof value.content === 'string'
  )
    return value.content;
  return undefined;
}

function declaredMaxLength(
  config: Partial<TokenizerConfigFile>,
  fallback: number | undefined,
): number | undefined {
  const declared = config.model_max_length;
  return typeof declared === 'number' && declared < NO_LIMIT ? declared : fallback;
}

async function readJsonIfPresent<T>(path: string): Promise<Partial<T>> {
  const text = await readFile(path, 'utf8').catch(() => undefined);
  if (text === undefined) return {};
  try {
    return JSON.parse(text) as Partial<T>;
  } catch (cause) {
    throw new ModelFolderError(`${path} is not valid JSON`, { cause, field: path });
  }
}

/** tokenizer.json's `added_tokens`: [{id, content}, ...]; anything else reads as none. */
function addedTokenIds(added: unknown): Map<string, number> {
  const ids = new Map<string, number>();
  if (!Array.isArray(added)) return ids;
  for (const token of added as { id?: unknown; content?: unknown }[])
    if (typeof token.content === 'string' && typeof token.id === 'number')
      ids.set(token.content, token.id);
  return ids;
}
