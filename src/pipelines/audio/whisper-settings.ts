// What a Whisper generation runs with, resolved once per pipeline from generation_config.json,
// config.json and the options, as WhisperGenerationMixin.generate resolves it: the prompt
// (<|startoftranscript|>, the language - given or detected - the task, <|notimestamps|> unless
// timestamps are asked for), the token ids the logits processors need, and the length limits.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError, ModelFolderError } from '../../errors.ts';
import type { EarlyStopping } from '../seq2seq/seq2seq-settings.ts';
import type { LoadedModel } from '../runtime/model-store.ts';

export interface WhisperSettings {
  startId: number;
  eosId: number;
  noTimestampsId: number;
  /** <|notimestamps|> + 1: the first timestamp token (<|0.00|>). */
  timestampBegin: number;
  /** Language tokens by their token text (`<|en|>`), empty for an English-only model. */
  langToId: ReadonlyMap<string, number>;
  taskToId: ReadonlyMap<string, number>;
  /**
   * The prompt after <|startoftranscript|>, before <|notimestamps|> (promptFor adds it): `'detect'`
   * marks where the detected language goes.
   */
  prompt: readonly (number | 'detect')[];
  suppressTokens: readonly number[];
  beginSuppressTokens: readonly number[];
  maxInitialTimestampIndex: number | undefined;
  /** Timestamps asked for; audio over one segment (long-form) predicts them regardless. */
  timestamps: boolean;
  maxNewTokens: number;
  numBeams: number;
  lengthPenalty: number;
  earlyStopping: EarlyStopping;
  /** Mel frames one generation reads (3000) and the encoder's downsampling of them (2). */
  segmentFrames: number;
  inputStride: number;
  /** Seconds per timestamp step: chunk_length / max_source_positions (0.02). */
  timePrecision: number;
}

export interface WhisperCallOptions {
  language: string | undefined;
  task: 'transcribe' | 'translate' | undefined;
  timestamps: boolean;
  maxNewTokens: number | undefined;
  numBeams: number | undefined;
  lengthPenalty: number | undefined;
  earlyStopping: EarlyStopping | undefined;
}

/** The Python pipeline's own defaults where generation_config.json sets neither. */
const PIPELINE_MAX_NEW_TOKENS = 256;
const PIPELINE_NUM_BEAMS = 5;

export async function readWhisperConfig(model: LoadedModel): Promise<Record<string, unknown>> {
  const path = join(model.folder, 'generation_config.json');
  const text = await readFile(path, 'utf8').catch(() => undefined);
  if (text === undefined) return {};
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch (cause) {
    throw new ModelFolderError(`${path} is not valid JSON`, {
      cause,
      field: 'generation_config.json',
    });
  }
}

export function resolveWhisperSettings(
  model: LoadedModel,
  generation: Record<string, unknown>,
  call: WhisperCallOptions,
  chunkSeconds: number,
): WhisperSettings {
  const raw = model.config.raw;
  const declared = (key: string): unknown => generation[key] ?? raw[key];
  const id = (key: string): number => {
    const value = declared(key);
    if (typeof value !== 'number')
      throw new ModelFolderError(
        `${model.folder}: generation_config.json has no ${key}; Whisper needs it (export the model's generation config too)`,
        { field: 'generation_config.json' },
      );
    return value;
  };
  const eos = declared('eos_token_id');
  const eosId = Array.isArray(eos) ? (eos[0] as number) : id('eos_token_id');
  const startId = id('decoder_start_token_id');
  const noTimestampsId = id('no_timestamps_token_id');
  const langToId = idMap(generation['lang_to_id']);
  const taskToId = idMap(generation['task_to_id']);
  const multilingual = generation['is_multilingual'] !== false && langToId.size > 0;
  if (!multilingual && (call.language !== undefined || call.task !== undefined))
    throw new ConfigError(
      `${model.folder} is an English-only Whisper model: it takes neither language nor task`,
      { field: call.language !== undefined ? 'language' : 'task' },
    );
  const prompt = promptOf(generation, call, langToId, taskToId, multilingual);
  if (prompt.at(-1) === noTimestampsId) prompt.pop();
  const sourcePositions = numberOf(raw['max_source_positions']) ?? 1500;
  const targetPositions = numberOf(raw['max_target_positions']) ?? 448;
  const maxNewTokens =
    call.maxNewTokens ?? numberOf(generation['max_new_tokens']) ?? PIPELINE_MAX_NEW_TOKENS;
  // The prompt is <|startoftranscript|>, what follows it and <|notimestamps|>.
  if (maxNewTokens + prompt.length + (call.timestamps ? 1 : 2) > targetPositions)
    throw new ConfigError(
      `maxNewTokens ${maxNewTokens} with the ${prompt.length + 1}-token prompt exceeds the model's ` +
        `max_target_positions ${targetPositions}; lower maxNewTokens`,
      { field: 'maxNewTokens' },
    );
  const early = generation['early_stopping'];
  return {
    startId,
    eosId,
    noTimestampsId,
    timestampBegin: noTimestampsId + 1,
    langToId,
    taskToId,
    prompt,
    suppressTokens: idList(generation['suppress_tokens']),
    beginSuppressTokens: idList(generation['begin_suppress_tokens']),
    maxInitialTimestampIndex: numberOf(generation['max_initial_timestamp_index']),
    timestamps: call.timestamps,
    maxNewTokens,
    numBeams: call.numBeams ?? numberOf(generation['num_beams']) ?? PIPELINE_NUM_BEAMS,
    lengthPenalty: call.lengthPenalty ?? numberOf(generation['length_penalty']) ?? 1,
    earlyStopping: call.earlyStopping ?? (early === true || early === 'never' ? early : false),
    segmentFrames: 2 * sourcePositions,
    inputStride: 2,
    timePrecision: chunkSeconds / sourcePositions,
  };
}

/** The whole prompt of one generation, the detected language (if any) in its place. */
export function promptFor(
  settings: WhisperSettings,
  timestamps: boolean,
  detected: number | undefined,
): number[] {
  const prompt = [settings.startId];
  for (const token of settings.prompt)
    prompt.push(token === 'detect' ? (detected as number) : token);
  if (!timestamps) prompt.push(settings.noTimestampsId);
  return prompt;
}

/**
 * Python's _retrieve_init_tokens after <|startoftranscript|>: with neither language nor task, the
 * generation config's legacy forced_decoder_ids; a language (given, else detected on a
 * multilingual model) in the first place; the task after it (transcribe when only a language is
 * given).
 */
function promptOf(
  generation: Record<string, unknown>,
  call: WhisperCallOptions,
  langToId: ReadonlyMap<string, number>,
  taskToId: ReadonlyMap<string, number>,
  multilingual: boolean,
): (number | 'detect')[] {
  const prompt: (number | 'detect' | null)[] = [];
  const forced = generation['forced_decoder_ids'];
  if (call.language === undefined && call.task === undefined && Array.isArray(forced)) {
    let position = 1;
    for (const pair of forced as unknown[]) {
      if (!Array.isArray(pair) || pair[0] !== position) break;
      prompt.push(typeof pair[1] === 'number' ? pair[1] : null);
      position += 1;
    }
  }
  const languageId =
    call.language !== undefined
      ? languageToId(call.language, langToId)
      : multilingual && (prompt.length === 0 || prompt[0] === null)
        ? 'detect'
        : undefined;
  if (languageId !== undefined) {
    if (prompt.length > 0) prompt[0] = languageId;
    else prompt.push(languageId);
  }
  const tasks = new Set(taskToId.values());
  if (call.task !== undefined) {
    const taskId = taskToId.get(call.task);
    if (taskId === undefined)
      throw new ConfigError(`this model's generation_config has no task ${call.task}`, {
        field: 'task',
      });
    if (prompt.some((t) => typeof t === 'number' && tasks.has(t)))
      prompt.forEach((t, i) => {
        if (typeof t === 'number' && tasks.has(t)) prompt[i] = taskId;
      });
    else prompt.push(taskId);
  } else if (call.language !== undefined && taskToId.has('transcribe')) {
    if (!prompt.some((t) => typeof t === 'number' && tasks.has(t)))
      prompt.push(taskToId.get('transcribe') as number);
  }
  return prompt.filter((t): t is number | 'detect' => t !== null);
}

/**
 * A language as Python takes it: a language token (`<|fr|>`), a code (`fr`), or an English name
 * (`french`); names are matched through Intl's English language names, since the model only
 * lists codes.
 */
export function languageToId(language: string, langToId: ReadonlyMap<string, number>): number {
  const lower = language.toLowerCase();
  const direct = langToId.get(lower) ?? langToId.get(`<|${lower}|>`);
  if (direct !== undefined) return direct;
  const names = new Intl.DisplayNames(['en'], { type: 'language' });
  for (const [token, tokenId] of langToId) {
    const code = token.slice(2, -2);
    const name = safeName(names, code);
    if (name !== undefined && name.toLowerCase() === lower) return tokenId;
  }
  throw new ConfigError(
    `language ${JSON.stringify(language)} is not one this model knows; use one of ${[...langToId.keys()].map((t) => t.slice(2, -2)).join(', ')}`,
    { field: 'language' },
  );
}

function safeName(names: Intl.DisplayNames, code: string): string | undefined {
  try {
    return names.of(code);
  } catch {
    return undefined;
  }
}

function idMap(value: unknown): Map<string, number> {
  const map = new Map<string, number>();
  if (value !== null && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) if (typeof v === 'number') map.set(k, v);
  return map;
}

function idList(value: unknown): number[] {
  return Array.isArray(value) ? value.filter((v): v is number => typeof v === 'number') : [];
}

function numberOf(value: unknown): number | undefined {
  return typeof value === 'number' ? value : undefined;
}
