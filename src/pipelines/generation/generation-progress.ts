// What one generating sequence has produced so far, and the rules that end it: the token choice
// from the logits, EOS, max new tokens, stop sequences matched on the decoded text, and how much
// text a stream may show yet. The single-request pipeline and the batched engine both drive one
// of these per sequence, so a token means the same thing on either path.
import type { GenerationSettings } from './generation-options.ts';
import { randomSeed, seededRandom } from '../runtime/random.ts';
import { chooseToken } from './sampling.ts';
import { StopSequences } from './stop-sequences.ts';
import { FormatCursor } from './structured/format-constraint.ts';
import { banBeforeForcing, force, suppressTokens } from './token-bans.ts';
import { parseToolCalls, type ToolCall } from './tool-calls.ts';

export type FinishReason = 'eos' | 'length' | 'stop';

/** What a decoded sequence ends with; a task that adds fields has its own type (EngineResult). */
export interface GenerationResult {
  /** The generated text only (not the prompt), without special tokens or the stop sequence. */
  text: string;
  /** Every generated token, the EOS token included when generation ended on one. */
  tokenIds: number[];
  finishReason: FinishReason;
  promptTokens: number;
  generatedTokens: number;
  /** A json_schema responseFormat's output, parsed (present when it matched). */
  json?: unknown;
  /** Why the output does not satisfy the responseFormat (absent when it does or none was set). */
  formatError?: string;
  /** The tool calls in the output (Hermes-style `<tool_call>` blocks), when the input had tools. */
  toolCalls?: ToolCall[];
}

export interface ProgressOptions {
  /** Parse `<tool_call>` blocks out of the output (the input offered tools). */
  toolCalls?: boolean;
  /**
   * The encoder's input ids, for encoder_no_repeat_ngram_size. Default: the prompt, which is what
   * Python passes for a decoder-only model; an encoder–decoder row passes its own (or none).
   */
  encoderIds?: readonly number[];
}

export interface TokenStep {
  tokenId: number;
  /** Text this token settled; the texts of all steps add up to the result's text. */
  text: string;
  done: boolean;
}

/** Token ids to text, as the pipeline's tokenizer decodes a generated sequence. */
export type DecodeText = (ids: readonly number[]) => Promise<string>;

export class GenerationProgress {
  readonly promptTokens: number;
  private readonly settings: GenerationSettings;
  private readonly stops: StopSequences;
  private readonly random: () => number;
  private readonly history: number[];
  private readonly generated: number[] = [];
  private text = '';
  private shown = 0;
  private finish: FinishReason | undefined;
  private readonly cursor: FormatCursor | undefined;
  private readonly toolCalls: boolean;
  private readonly encoderIds: readonly number[];

  constructor(
    promptIds: readonly number[],
    settings: GenerationSettings,
    options: ProgressOptions = {},
  ) {
    this.promptTokens = promptIds.length;
    this.settings = settings;
    this.toolCalls = options.toolCalls ?? false;
    this.encoderIds = options.encoderIds ?? [...promptIds];
    this.cursor =
      settings.format === undefined
        ? undefined
        : new FormatCursor(settings.format, [...settings.eosTokenIds]);
    this.stops = new StopSequences(settings.stopSequences);
    this.random = seededRandom(settings.seed ?? randomSeed());
    this.history = [...promptIds];
  }

  get done(): boolean {
    return this.finish !== undefined;
  }

  get generatedTokens(): number {
    return this.generated.length;
  }

  /**
   * The next token from the last position's logits (which it may overwrite), through Python's
   * processors in its order: the bans over the tokens seen, the minimum lengths, the forced
   * tokens (which overrule all of those), the suppressed tokens, then the choice itself.
   */
  choose(logits: Float32Array): number {
    const { settings } = this;
    const generated = this.generated.length;
    const forced = this.forcedToken();
    if (forced !== undefined) force(logits, forced);
    else {
      if (settings.bans !== undefined)
        banBeforeForcing(logits, this.history, settings.bans, this.encoderIds);
      const short =
        generated < settings.minNewTokens ||
        (settings.minLength !== undefined && this.history.length < settings.minLength);
      // Python's MinLength / MinNewTokensLength processors: EOS cannot win before the minimum.
      if (short)
        for (const eos of settings.eosTokenIds) if (eos < logits.length) logits[eos] = -Infinity;
    }
    if (settings.bans !== undefined) suppressTokens(logits, generated, settings.bans);
    // After the minimum: a format that is complete ends the output even before minNewTokens.
    const restricted = this.cursor?.restrict(logits);
    if (restricted !== undefined) return restricted;
    return chooseToken(logits, this.history, settings.sampling, this.random);
  }

  /** Python's ForcedBOS (at a sequence of one token) and ForcedEOS (the last allowed token). */
  private forcedToken(): number | undefined {
    const { forcedBosTokenId, forcedEosTokenId, maxNewTokens } = this.settings;
    if (forcedBosTokenId !== undefined && this.history.length === 1) return forcedBosTokenId;
    if (forcedEosTokenId !== undefined && this.generated.length === maxNewTokens - 1)
      return forcedEosTokenId;
    return undefined;
  }

  /** Records a chosen token and says what text it settled and whether the sequence ended. */
  async accept(id: number, decode: DecodeText): Promise<TokenStep> {
    this.generated.push(id);
    this.history.push(id);
    this.cursor?.advance(id);
    this.text = await decode(this.generated);
    const stop = this.stops.find(this.text);
    if (stop !== undefined) {
      this.text = this.text.slice(0, stop.index);
      this.finish = 'stop';
    } else if (this.settings.eosTokenIds.has(id)) this.finish = 'eos';
    else if (this.generated.length >= this.settings.maxNewTokens) this.finish = 'length';
    const done = this.finish !== undefined;
    const visible = done
      ? this.text.length
      : Math.max(this.shown, this.stops.settledLength(this.text));
    const text = this.text.slice(this.shown, visible);
    this.shown = visible;
    return { tokenId: id, text, done };
  }

  result(): GenerationResult {
    const finishReason = this.finish ?? 'length';
    return {
      text: this.text,
      tokenIds: [...this.generated],
      finishReason,
      promptTokens: this.promptTokens,
      generatedTokens: this.generated.length,
      ...this.cursor?.verdict(this.text, finishReason),
      ...(this.toolCalls ? { toolCalls: parseToolCalls(this.text) } : {}),
    };
  }
}
