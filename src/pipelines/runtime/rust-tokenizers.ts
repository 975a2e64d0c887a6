// The Rust tokenizers behind one TextTokenizer. Truncation settings live inside a Rust tokenizer,
// so each setting an encode asks for gets its own instance; the first one built goes to the
// first setting asked for, so a pipeline that only ever truncates holds one, not two. Built at
// load ('now', so a file Rust cannot read fails there) or at the first call that needs one
// ('onDemand': an inference thread whose encodes arrive carried, carried-encoding.ts). ASCII
// texts may go to a twin of each instance that skips the accent stripping (ascii-twin.ts), built
// at its first such text.
import { Tokenizer, type TruncationStrategy as RustTruncationStrategy } from 'tokenizers';
import { ModelFolderError } from '../../errors.ts';
import { asciiTwinJson } from './ascii-twin.ts';

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
  /**
   * The instance built before any setting asked (at load, or for a lookup), until one claims it:
   * the ASCII twin where there is one (English text then holds one instance, not two).
   */
  private unclaimed: { tokenizer: Tokenizer; twin: boolean } | undefined;
  /** tokenizer.json of the ASCII twins; undefined where a twin would save nothing. */
  private readonly twinJson: string | undefined;

  constructor(folder: string, json: string, build: TokenizerBuild, asciiTwins = true) {
    this.folder = folder;
    this.json = json;
    this.twinJson = asciiTwins ? asciiTwinJson(json) : undefined;
    if (build === 'now') this.unclaimed = this.buildFirst();
  }

  get count(): number {
    return this.bySetting.size + (this.unclaimed === undefined ? 0 : 1);
  }

  /** Whether ASCII texts have a cheaper twin to go to (forSetting's `ascii`). */
  get hasAsciiTwin(): boolean {
    return this.twinJson !== undefined;
  }

  /** Any instance (vocabulary lookups and decoding do not depend on truncation), built if none is. */
  any(): Tokenizer {
    // The twin's vocabulary, decoder and added tokens are the original's.
    const held = this.unclaimed?.tokenizer ?? this.bySetting.values().next().value;
    if (held !== undefined) return held;
    this.unclaimed = this.buildFirst();
    return this.unclaimed.tokenizer;
  }

  /** `ascii`: the instance is for texts that are all ASCII (its twin, where there is one). */
  forSetting(setting: TruncationSetting, ascii = false): Tokenizer {
    const { truncation, maxLength, stride } = setting;
    const none = truncation === false || maxLength === undefined;
    const twin = ascii && this.twinJson !== undefined;
    const key = `${twin ? 'ascii:' : ''}${none ? 'none' : `${truncation}:${maxLength}:${stride}`}`;
    let tokenizer = this.bySetting.get(key);
    if (tokenizer === undefined) {
      if (this.unclaimed?.twin === twin) {
        tokenizer = this.unclaimed.tokenizer;
        this.unclaimed = undefined;
      } else tokenizer = this.build(twin ? this.twinJson : this.json);
      // Padding is the batcher's job: it pads to the longest member of the batch it cuts.
      tokenizer.disablePadding();
      if (none) tokenizer.disableTruncation();
      else
        tokenizer.setTruncation(maxLength, {
          strategy: STRATEGIES[truncation],
          stride,
          direction: setting.side,
        });
      this.bySetting.set(key, tokenizer);
    }
    return tokenizer;
  }

  private buildFirst(): { tokenizer: Tokenizer; twin: boolean } {
    const twin = this.twinJson !== undefined;
    return { tokenizer: this.build(twin ? this.twinJson : this.json), twin };
  }

  private build(json: string): Tokenizer {
    try {
      return Tokenizer.fromString(json);
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
