// The Rust tokenizers behind one TextTokenizer. Truncation settings live inside a Rust tokenizer,
// so each setting an encode asks for gets its own instance; the first one built goes to the
// first setting asked for, so a pipeline that only ever truncates holds one, not two. Built at
// load ('now', so a file Rust cannot read fails there) or at the first call that needs one
// ('onDemand': an inference thread whose encodes arrive carried, carried-encoding.ts).
import { Tokenizer, type TruncationStrategy as RustTruncationStrategy } from 'tokenizers';
import { ModelFolderError } from '../../errors.ts';

export type TruncationStrategy = 'longest_first' | 'only_first' | 'only_second';

/** When a tokenizer builds its Rust tokenizer (TextTokenizer.load). */
export type TokenizerBuild = 'now' | 'onDemand';

/** One instance's settings: no truncation, or a strategy at a length with a stride. */
export interface TruncationSetting {
  truncation: TruncationStrategy | false;
  maxLength: number | undefined;
  stride: number;
  /** tokenizer_config.json's truncation_side. */
  side: 'left' | 'right';
}

// The package declares these as an ambient const enum, which isolated modules cannot read;
// the strings are the enum's values.
const STRATEGIES = {
  longest_first: 'LongestFirst' as RustTruncationStrategy,
  only_first: 'OnlyFirst' as RustTruncationStrategy,
  only_second: 'OnlySecond' as RustTruncationStrategy,
} satisfies Record<TruncationStrategy, RustTruncationStrategy>;

export class RustTokenizers {
  private readonly folder: string;
  private readonly json: string;
  private readonly bySetting = new Map<string, Tokenizer>();
  /** The instance built before any setting asked (at load, or for a lookup), until one claims it. */
  private unclaimed: Tokenizer | undefined;

  constructor(folder: string, json: string, build: TokenizerBuild) {
    this.folder = folder;
    this.json = json;
    if (build === 'now') this.unclaimed = this.build();
  }

  get count(): number {
    return this.bySetting.size + (this.unclaimed === undefined ? 0 : 1);
  }

  /** Any instance (vocabulary lookups and decoding do not depend on truncation), built if none is. */
  any(): Tokenizer {
    const held = this.unclaimed ?? this.bySetting.values().next().value;
    if (held !== undefined) return held;
    this.unclaimed = this.build();
    return this.unclaimed;
  }

  forSetting(setting: TruncationSetting): Tokenizer {
    const { truncation, maxLength, stride } = setting;
    const key =
      truncation === false || maxLength === undefined
        ? 'none'
        : `${truncation}:${maxLength}:${stride}`;
    let tokenizer = this.bySetting.get(key);
    if (tokenizer === undefined) {
      tokenizer = this.unclaimed ?? this.build();
      this.unclaimed = undefined;
      // Padding is the batcher's job: it pads to the longest member of the batch it cuts.
      tokenizer.disablePadding();
      if (key === 'none') tokenizer.disableTruncation();
      else
        tokenizer.setTruncation(maxLength as number, {
          strategy: STRATEGIES[truncation as TruncationStrategy],
          stride,
          direction: setting.side,
        });
      this.bySetting.set(key, tokenizer);
    }
    return tokenizer;
  }

  private build(): Tokenizer {
    try {
      return Tokenizer.fromString(this.json);
    } catch (cause) {
      throw tokenizerLoadError(this.folder, cause);
    }
  }
}

export function tokenizerLoadError(folder: string, cause: unknown): ModelFolderError {
  return new ModelFolderError(`${folder}/tokenizer.json could not be loaded: ${String(cause)}`, {
    cause,
    field: 'tokenizer.json',
  });
}
