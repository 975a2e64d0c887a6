// Text generation options: what users write, and how unset ones fall back to the model's
// generation_config.json and then to Python generate()'s own defaults, as Python resolves them.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { ModelFolderError } from '../../errors.ts';
import { parseWithSchema } from '../../options/parse.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import {
  GenerationConfigLayers,
  readTokenBans,
  refuseUnappliedKeys,
} from './generation-config-keys.ts';
import type { SamplingSettings } from './sampling.ts';
import type { CompiledFormat } from './structured/format-constraint.ts';
import { responseFormatSchema, type ResponseFormat } from './structured/response-format.ts';
import type { TokenBans } from './token-bans.ts';

export const generationOptionsSchema = z
  .object({
    /** Tokens to generate at most. Default: generation_config.json's max_new_tokens, else 256. */
    maxNewTokens: z.number().int().min(1).optional(),
    /** EOS is suppressed until this many tokens are generated (Python's min_new_tokens). Default 0. */
    minNewTokens: z.number().int().min(0).optional(),
    /**
     * Sample instead of taking the most likely token. Default: true when temperature, topK, topP
     * or seed is set, else generation_config.json's do_sample (false when absent).
     */
    doSample: z.boolean().optional(),
    /** Divides the logits before sampling; 0 means greedy. Default: generation_config, else 1. */
    temperature: z.number().min(0).optional(),
    /** Sample among the k most likely tokens; 0 turns it off. Default: generation_config, else 50. */
    topK: z.number().int().min(0).optional(),
    /** Nucleus sampling mass in (0, 1]. Default: generation_config, else 1 (off). */
    topP: z.number().gt(0).max(1).optional(),
    /** > 1 discourages tokens already in the prompt or output. Default: generation_config, else 1. */
    repetitionPenalty: z.number().gt(0).optional(),
    /**
     * No n-gram of this many tokens occurs twice (Python's no_repeat_ngram_size); 0 turns it off.
     * Default: generation_config's no_repeat_ngram_size, else 0.
     */
    noRepeatNgramSize: z.number().int().min(0).optional(),
    /** Seed of the sampling generator: the same seed gives the same tokens. Default: random. */
    seed: z.number().int().min(0).max(0xffffffff).optional(),
    /** Generation ends before the first of these appears in the text; it is not returned. */
    stopSequences: z.array(z.string().min(1)).default([]),
    /** Prepended as a system message to chat inputs that have none (needs a chat template). */
    systemPrompt: z.string().optional(),
    /**
     * The shape the output must have: `{type: json_schema, schema}` or `{type: regex, pattern}`.
     * Tokens that would leave it are masked out at every step. Default: none (free text).
     */
    responseFormat: responseFormatSchema.optional(),
  })
  .strict();

export type GenerationOptions = z.input<typeof generationOptionsSchema>;
export type ParsedGenerationOptions = z.output<typeof generationOptionsSchema>;

export interface GenerationSettings {
  maxNewTokens: number;
  minNewTokens: number;
  sampling: SamplingSettings;
  seed: number | undefined;
  stopSequences: readonly string[];
  systemPrompt: string | undefined;
  eosTokenIds: ReadonlySet<number>;
  responseFormat: ResponseFormat | undefined;
  /** The responseFormat compiled for the pipeline's tokenizer (the pipeline sets it). */
  format: CompiledFormat | undefined;
  /** Tokens ruled out at each step (no_repeat_ngram_size, bad_words_ids, suppress_tokens...). */
  bans?: TokenBans | undefined;
  /** Python's ForcedBOSTokenLogitsProcessor: the token chosen when the sequence holds one token. */
  forcedBosTokenId?: number | undefined;
  /** Python's ForcedEOSTokenLogitsProcessor: the token chosen as the last of maxNewTokens. */
  forcedEosTokenId?: number | undefined;
  /** EOS is ruled out while prompt and output together are shorter (Python's min_length). */
  minLength?: number | undefined;
}

/** The parts of generation_config.json that change what generate() does by default. */
export interface GenerationDefaults {
  maxNewTokens: number | undefined;
  doSample: boolean | undefined;
  temperature: number | undefined;
  topK: number | undefined;
  topP: number | undefined;
  repetitionPenalty: number | undefined;
  eosTokenIds: number[] | undefined;
  minNewTokens: number | undefined;
  minLength: number | undefined;
  forcedBosTokenId: number | undefined;
  forcedEosTokenId: number | undefined;
  /** generation_config.json itself, for the keys read per call (bans, refused keys). */
  layers: GenerationConfigLayers;
}

export function parseGenerationOptions(value: unknown, path = 'options'): ParsedGenerationOptions {
  return parseWithSchema(generationOptionsSchema, value ?? {}, path);
}

export async function readGenerationDefaults(model: LoadedModel): Promise<GenerationDefaults> {
  const path = join(model.folder, 'generation_config.json');
  const text = await readFile(path, 'utf8').catch(() => undefined);
  let raw: Record<string, unknown> = {};
  if (text !== undefined) {
    try {
      raw = JSON.parse(text) as Record<string, unknown>;
    } catch (cause) {
      throw new ModelFolderError(`${path} is not valid JSON`, {
        cause,
        field: 'generation_config.json',
      });
    }
  }
  const num = (key: string): number | undefined =>
    typeof raw[key] === 'number' ? raw[key] : undefined;
  const eos = raw['eos_token_id'];
  return {
    maxNewTokens: num('max_new_tokens'),
    doSample: typeof raw['do_sample'] === 'boolean' ? raw['do_sample'] : undefined,
    temperature: num('temperature'),
    topK: num('top_k'),
    topP: num('top_p'),
    repetitionPenalty: num('repetition_penalty'),
    minNewTokens: num('min_new_tokens'),
    minLength: num('min_length'),
    forcedBosTokenId: num('forced_bos_token_id'),
    forcedEosTokenId: num('forced_eos_token_id'),
    layers: new GenerationConfigLayers([{ file: path, values: raw }]),
    eosTokenIds:
      typeof eos === 'number'
        ? [eos]
        : Array.isArray(eos)
          ? eos.filter((v): v is number => typeof v === 'number')
          : undefined,
  };
}

/**
 * Per-call options over the pipeline's options over generation_config.json over Python's. A key
 * of generation_config.json that Python would apply and this pipeline cannot is a ConfigError.
 */
export function resolveSettings(
  options: ParsedGenerationOptions,
  defaults: GenerationDefaults,
  model: LoadedModel,
  /** Names the task in the messages of a key it refuses. */
  task: string,
): GenerationSettings {
  const asksForSampling =
    options.temperature !== undefined ||
    options.topK !== undefined ||
    options.topP !== undefined ||
    options.seed !== undefined;
  const doSample = options.doSample ?? (asksForSampling || (defaults.doSample ?? false));
  refuseUnappliedKeys(defaults.layers, { task, doSample, numBeams: 1 }, true);
  const eosTokenIds = new Set(defaults.eosTokenIds ?? model.config.eosTokenIds);
  return {
    maxNewTokens: options.maxNewTokens ?? defaults.maxNewTokens ?? 256,
    minNewTokens: options.minNewTokens ?? defaults.minNewTokens ?? 0,
    minLength: defaults.minLength,
    forcedBosTokenId: defaults.forcedBosTokenId,
    forcedEosTokenId: defaults.forcedEosTokenId,
    // A decoder-only model's prompt is at least one token, so begin_suppress_tokens applies to
    // the first generated one (Python's begin_index is the prompt's length).
    bans: readTokenBans(defaults.layers, options, eosTokenIds, 0, task),
    sampling: {
      doSample,
      temperature: options.temperature ?? defaults.temperature ?? 1,
      topK: options.topK ?? defaults.topK ?? 50,
      topP: options.topP ?? defaults.topP ?? 1,
      repetitionPenalty: options.repetitionPenalty ?? defaults.repetitionPenalty ?? 1,
    },
    seed: options.seed,
    stopSequences: options.stopSequences,
    systemPrompt: options.systemPrompt,
    eosTokenIds,
    responseFormat: options.responseFormat,
    format: undefined,
  };
}

/** Layers per-call options over the pipeline's: a field set in the call wins. */
export function mergeOptions(
  base: ParsedGenerationOptions,
  call: ParsedGenerationOptions | undefined,
  callInput: GenerationOptions | undefined,
): ParsedGenerationOptions {
  if (call === undefined || callInput === undefined) return base;
  const merged: Record<string, unknown> = { ...base };
  for (const key of Object.keys(callInput))
    merged[key] = call[key as keyof ParsedGenerationOptions];
  return merged as ParsedGenerationOptions;
}
