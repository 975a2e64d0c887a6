// Options of the encoder–decoder text pipelines (text2textGeneration, summarization, translation):
// the causal pipeline's generation options plus beam search, and how unset ones fall back as
// Python resolves them: the pipeline's options, then config.json's task_specific_params for the
// task, then generation_config.json, then the removed Python pipelines' own defaults
// (max_new_tokens 256, num_beams 4), then generate()'s.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { ConfigError, ModelFolderError } from '../../errors.ts';
import {
  GenerationConfigLayers,
  readTokenBans,
  refuseUnappliedKeys,
} from '../generation/generation-config-keys.ts';
import { generationOptionsSchema } from '../generation/generation-options.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import type { Seq2SeqSettings } from './seq2seq-settings.ts';

export const seq2seqOptionsSchema = generationOptionsSchema
  .pick({
    maxNewTokens: true,
    minNewTokens: true,
    doSample: true,
    temperature: true,
    topK: true,
    topP: true,
    repetitionPenalty: true,
    noRepeatNgramSize: true,
    seed: true,
    stopSequences: true,
  })
  .extend({
    /**
     * Beams kept by beam search; 1 decodes greedily (or samples). Default: generation_config's
     * num_beams, else 4 (the Python pipelines' default).
     */
    numBeams: z.number().int().min(1).max(64).optional(),
    /** Beam scores are divided by length ** lengthPenalty. Default: generation_config, else 1. */
    lengthPenalty: z.number().optional(),
    /** When beam search ends: true, false or 'never', as in Python. Default: generation_config, else false. */
    earlyStopping: z.union([z.boolean(), z.literal('never')]).optional(),
    /**
     * Cut inputs longer than the model reads to its length. Default false, as Python: such an
     * input is refused (dead-lettered) instead.
     */
    truncation: z.boolean().default(false),
  })
  .strict();

export const translationOptionsSchema = seq2seqOptionsSchema
  .extend({
    /**
     * Source and target language codes: with both, the prefix comes from config.json's
     * task_specific_params `translation_<src>_to_<tgt>`. Default: its first translation_* entry.
     */
    srcLang: z.string().min(1).optional(),
    tgtLang: z.string().min(1).optional(),
  })
  .strict();

export type Seq2SeqOptions = z.input<typeof translationOptionsSchema>;
export type ParsedSeq2SeqOptions = z.output<typeof translationOptionsSchema>;

/** What config.json and generation_config.json say, read once per pipeline. */
export interface Seq2SeqDefaults {
  /** Text put before each input (task_specific_params[task].prefix, else config.prefix). */
  prefix: string;
  settings: Seq2SeqSettings;
}

/**
 * The Python task name whose task_specific_params apply: the pipeline's own (`summarization`),
 * but Python's `translation` names its languages (`translation_en_to_de`).
 */
function taskParamsName(python: string, options: ParsedSeq2SeqOptions, model: LoadedModel): string {
  if (python !== 'translation') return python;
  const { srcLang, tgtLang } = options;
  if ((srcLang === undefined) !== (tgtLang === undefined))
    throw new ConfigError('translation: set both srcLang and tgtLang, or neither', {
      field: srcLang === undefined ? 'srcLang' : 'tgtLang',
    });
  if (srcLang !== undefined && tgtLang !== undefined) return `translation_${srcLang}_to_${tgtLang}`;
  // Python's pipeline('translation') picks the model's first translation_XX_to_YY entry.
  const params = model.config.raw['task_specific_params'];
  const first = isRecord(params)
    ? Object.keys(params).find((k) => k.startsWith('translation'))
    : undefined;
  return first ?? 'translation';
}

/** What the Python pipeline itself set under the model's generation_config. */
export interface PipelineGenerationDefaults {
  /** The removed text pipelines' num_beams=4; image-to-text set none (greedy). */
  numBeams: number;
}

const TEXT_PIPELINE_DEFAULTS: PipelineGenerationDefaults = { numBeams: 4 };

export async function resolveSeq2SeqDefaults(
  model: LoadedModel,
  task: string,
  /** Python's name of the task's pipeline (`text2text-generation`). */
  pythonTask: string,
  options: ParsedSeq2SeqOptions,
  pipelineDefaults: PipelineGenerationDefaults = TEXT_PIPELINE_DEFAULTS,
): Promise<Seq2SeqDefaults> {
  const raw = model.config.raw;
  const generation = await readGenerationConfig(model.folder);
  const python = taskParamsName(pythonTask, options, model);
  const config = join(model.folder, 'config.json');
  const taskParams = taskSpecificParams(raw, python);
  // What the task's params, then generation_config.json, then config.json set.
  const layers = new GenerationConfigLayers([
    { file: `${config} (task_specific_params.${python})`, values: taskParams },
    { file: join(model.folder, 'generation_config.json'), values: generation },
    { file: config, values: raw },
  ]);
  const declared = (key: string): unknown => layers.get(key);
  const number = (key: string): number | undefined => layers.number(key);
  const maxLength = number('max_length');
  const minLength = number('min_length');
  const eos = declared('eos_token_id');
  const eosTokenIds = new Set(
    typeof eos === 'number' ? [eos] : Array.isArray(eos) ? eos.filter(isNumber) : [],
  );
  const start = number('decoder_start_token_id') ?? number('bos_token_id');
  if (start === undefined)
    throw new ModelFolderError(
      `${model.folder}: neither generation_config.json nor config.json has decoder_start_token_id`,
      { field: 'config.json' },
    );
  const asksForSampling =
    options.temperature !== undefined ||
    options.topK !== undefined ||
    options.topP !== undefined ||
    options.seed !== undefined;
  const early = declared('early_stopping');
  const doSample =
    options.doSample ??
    (asksForSampling || (declared('do_sample') as boolean | undefined) === true);
  const forcedBosTokenId = number('forced_bos_token_id');
  const settings: Seq2SeqSettings = {
    decoderStartTokenId: start,
    eosTokenIds,
    forcedBosTokenId,
    forcedEosTokenId: number('forced_eos_token_id'),
    // A max_length the model declares counts the decoder start token and wins over the
    // pipeline's max_new_tokens default, as in Python.
    maxNewTokens:
      options.maxNewTokens ??
      number('max_new_tokens') ??
      (maxLength !== undefined ? Math.max(1, maxLength - 1) : 256),
    minNewTokens:
      options.minNewTokens ?? (minLength !== undefined ? Math.max(0, minLength - 1) : 0),
    sampling: {
      doSample,
      temperature: options.temperature ?? number('temperature') ?? 1,
      topK: options.topK ?? number('top_k') ?? 50,
      topP: options.topP ?? number('top_p') ?? 1,
      repetitionPenalty: options.repetitionPenalty ?? number('repetition_penalty') ?? 1,
    },
    seed: options.seed,
    stopSequences: options.stopSequences,
    // Python would run beam sampling for doSample with its default 4 beams; sampling here is
    // single-beam (docs/pipelines.md#text2textgeneration).
    numBeams: options.numBeams ?? number('num_beams') ?? (doSample ? 1 : pipelineDefaults.numBeams),
    lengthPenalty: options.lengthPenalty ?? number('length_penalty') ?? 1,
    earlyStopping: options.earlyStopping ?? (early === true || early === 'never' ? early : false),
    // Python's begin_index: the decoder's one start token, one more after a forced BOS.
    bans: readTokenBans(layers, options, eosTokenIds, forcedBosTokenId === undefined ? 0 : 1, task),
    renormalizeLogits: declared('renormalize_logits') === true,
  };
  refuseUnappliedKeys(
    layers,
    { task, doSample: settings.sampling.doSample, numBeams: settings.numBeams },
    false,
  );
  if (settings.numBeams > 1 && settings.sampling.doSample)
    throw new ConfigError(
      'beam search with sampling (numBeams > 1 and doSample) is not supported; set numBeams: 1 to sample',
      { field: 'numBeams' },
    );
  if (settings.numBeams > 1 && settings.stopSequences.length > 0)
    throw new ConfigError('stopSequences need numBeams: 1 (greedy decoding or sampling)', {
      field: 'stopSequences',
    });
  const prefix = taskParams['prefix'] ?? raw['prefix'];
  return { prefix: typeof prefix === 'string' ? prefix : '', settings };
}

async function readGenerationConfig(folder: string): Promise<Record<string, unknown>> {
  const path = join(folder, 'generation_config.json');
  const text = await readFile(path, 'utf8').catch(() => undefined);
  if (text === undefined) return {};
  try {
    const value: unknown = JSON.parse(text);
    return isRecord(value) ? value : {};
  } catch (cause) {
    throw new ModelFolderError(`${path} is not valid JSON`, {
      cause,
      field: 'generation_config.json',
    });
  }
}

function taskSpecificParams(raw: Record<string, unknown>, task: string): Record<string, unknown> {
  const all = raw['task_specific_params'];
  const params = isRecord(all) ? all[task] : undefined;
  return isRecord(params) ? params : {};
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function isNumber(value: unknown): value is number {
  return typeof value === 'number';
}
