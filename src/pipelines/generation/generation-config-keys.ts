// The generation-config keys Python's generate() acts on, read from the files a model declares
// them in: the ones we apply become settings (token bans), and the ones we do not apply refuse
// the pipeline at load with a ConfigError naming the key, its value, the file and the fix, unless
// the value is Python's own no-op default. Silently ignoring one would make outputs differ from
// Python's with no warning (bart-large-cnn ships no_repeat_ngram_size: 3, for instance).
import { ConfigError } from '../../errors.ts';
import type { TokenBans } from './token-bans.ts';

/** One file's generation keys; earlier layers win (Python: task_specific_params over the rest). */
export interface ConfigLayer {
  /** Where the keys were read, as a user finds them: `generation_config.json`. */
  file: string;
  values: Record<string, unknown>;
}

export class GenerationConfigLayers {
  private readonly layers: readonly ConfigLayer[];

  constructor(layers: readonly ConfigLayer[]) {
    this.layers = layers;
  }

  /** The first layer's value that is neither absent nor null (null is Python's None: unset). */
  get(key: string): unknown {
    return this.layerOf(key)?.values[key];
  }

  number(key: string): number | undefined {
    const value = this.get(key);
    return typeof value === 'number' ? value : undefined;
  }

  /** The file a key's value came from. */
  fileOf(key: string): string {
    return this.layerOf(key)?.file ?? 'the model folder';
  }

  private layerOf(key: string): ConfigLayer | undefined {
    return this.layers.find((l) => l.values[key] !== undefined && l.values[key] !== null);
  }
}

/** What the pipeline resolved, which decides whether a key acts at all (as in Python). */
export interface GenerationContext {
  /** The pipeline (`summarization`), for the messages. */
  task: string;
  doSample: boolean;
  numBeams: number;
}

interface Unapplied {
  /** True when Python would not act on the value either (its default, or not in this mode). */
  inert: (value: unknown, context: GenerationContext) => boolean;
  /** How to get Python's output or ours knowingly, after "remove it from <file>". */
  fix: string;
}

const isNone = (value: unknown): boolean => value === undefined || value === null;
const isEmpty = (value: unknown): boolean =>
  isNone(value) ||
  value === false ||
  (Array.isArray(value) && value.length === 0) ||
  (typeof value === 'object' && Object.keys(value as object).length === 0);
const greedyOrSample = (context: GenerationContext): boolean => context.numBeams <= 1;
const unlessSampling =
  (noop: (value: unknown) => boolean) =>
  (value: unknown, context: GenerationContext): boolean =>
    !context.doSample || noop(value);
const cutoffOff = (value: unknown): boolean =>
  isNone(value) || typeof value !== 'number' || value <= 0 || value >= 1;

/** Keys of Python's GenerationConfig that change tokens and that no pipeline here applies. */
const UNAPPLIED: Record<string, Unapplied> = {
  sequence_bias: { inert: isEmpty, fix: 'token biases are not applied here' },
  guidance_scale: {
    inert: (v) => isNone(v) || v === 1,
    fix: 'classifier-free guidance is not applied here',
  },
  encoder_repetition_penalty: {
    inert: (v) => isNone(v) || v === 1,
    fix: 'the penalty on the input tokens is not applied here',
  },
  exponential_decay_length_penalty: {
    inert: isNone,
    fix: 'the growing EOS bonus is not applied here; minNewTokens / maxNewTokens bound the length',
  },
  num_beam_groups: {
    inert: (v, c) => isNone(v) || (typeof v === 'number' && v <= 1) || greedyOrSample(c),
    fix: 'diverse (group) beam search is not run here; plain beam search is (numBeams)',
  },
  constraints: { inert: isEmpty, fix: 'constrained beam search is not run here' },
  force_words_ids: { inert: isEmpty, fix: 'constrained beam search is not run here' },
  penalty_alpha: {
    inert: (v, c) =>
      isNone(v) || (typeof v === 'number' && v <= 0) || c.doSample || !greedyOrSample(c),
    fix: 'contrastive search is not run here',
  },
  dola_layers: {
    inert: (v, c) => isNone(v) || !greedyOrSample(c),
    fix: 'DoLa decoding is not run here',
  },
  watermarking_config: { inert: isNone, fix: 'watermarking is not applied here' },
  token_healing: { inert: isEmpty, fix: 'token healing is not applied here' },
  stop_strings: {
    inert: isEmpty,
    fix: 'set options.stopSequences instead (they leave the stop string out of the output)',
  },
  max_time: { inert: isNone, fix: "bound the time with the route's deadline instead" },
  num_return_sequences: {
    inert: (v) => isNone(v) || v === 1,
    fix: 'one output per input is returned here',
  },
  typical_p: {
    inert: unlessSampling((v) => isNone(v) || (typeof v === 'number' && v >= 1)),
    fix: 'typical sampling is not applied here (or set options.doSample: false)',
  },
  epsilon_cutoff: {
    inert: unlessSampling(cutoffOff),
    fix: 'epsilon sampling is not applied here (or set options.doSample: false)',
  },
  eta_cutoff: {
    inert: unlessSampling(cutoffOff),
    fix: 'eta sampling is not applied here (or set options.doSample: false)',
  },
  min_p: {
    inert: unlessSampling(isNone),
    fix: 'min-p sampling is not applied here (or set options.doSample: false)',
  },
  top_h: {
    inert: unlessSampling(isNone),
    fix: 'top-h sampling is not applied here (or set options.doSample: false)',
  },
};

/** Beam search is only run by the encoder–decoder pipelines. */
const CAUSAL_UNAPPLIED: Record<string, Unapplied> = {
  num_beams: {
    inert: (v) => isNone(v) || (typeof v === 'number' && v <= 1),
    fix: 'textGeneration decodes greedily or samples, never by beam search',
  },
};

/** Throws a ConfigError for the first key Python would act on that this pipeline would ignore. */
export function refuseUnappliedKeys(
  layers: GenerationConfigLayers,
  context: GenerationContext,
  causal: boolean,
): void {
  const table = causal ? { ...UNAPPLIED, ...CAUSAL_UNAPPLIED } : UNAPPLIED;
  for (const [key, rule] of Object.entries(table)) {
    const value = layers.get(key);
    if (value === undefined) continue;
    if (rule.inert(value, context)) continue;
    const file = layers.fileOf(key);
    throw new ConfigError(
      `${context.task}: ${file} sets ${key}: ${JSON.stringify(value)}, which Python's generate() ` +
        `applies and this pipeline does not; remove ${key} from ${file} to run without it (` +
        `${rule.fix})`,
      { field: key },
    );
  }
}

/** Pipeline options that replace the keys' values. */
export interface BanOptions {
  noRepeatNgramSize?: number | undefined;
}

/** The token bans the layers ask for, checked the way Python's processors check them. */
export function readTokenBans(
  layers: GenerationConfigLayers,
  options: BanOptions,
  eosTokenIds: ReadonlySet<number>,
  beginSuppressAt: number,
  task: string,
): TokenBans {
  const fail = (key: string, value: unknown, want: string): never => {
    throw new ConfigError(
      `${task}: ${layers.fileOf(key)} sets ${key}: ${JSON.stringify(value)}; it must be ${want}`,
      { field: key },
    );
  };
  const ngram = options.noRepeatNgramSize ?? layers.get('no_repeat_ngram_size') ?? 0;
  if (!isTokenId(ngram)) fail('no_repeat_ngram_size', ngram, 'an integer >= 0');
  const encoderNgram = layers.get('encoder_no_repeat_ngram_size') ?? 0;
  if (!isTokenId(encoderNgram))
    fail('encoder_no_repeat_ngram_size', encoderNgram, 'an integer >= 0');
  const tokenList = (key: string): number[] => {
    const value = layers.get(key);
    if (value === undefined) return [];
    if (!Array.isArray(value) || !value.every(isTokenId)) fail(key, value, 'a list of token ids');
    return value as number[];
  };
  const badWords = layers.get('bad_words_ids');
  let badWordsIds: number[][] = [];
  if (badWords !== undefined) {
    const valid =
      Array.isArray(badWords) &&
      badWords.length > 0 &&
      badWords.every((w) => Array.isArray(w) && w.length > 0 && w.every(isTokenId));
    if (!valid) fail('bad_words_ids', badWords, 'a non-empty list of non-empty token id lists');
    // Python's NoBadWordsLogitsProcessor drops the entries that are a lone EOS token.
    badWordsIds = (badWords as number[][]).filter(
      (w) => !(w.length === 1 && eosTokenIds.has(w[0] as number)),
    );
  }
  return {
    noRepeatNgramSize: ngram as number,
    encoderNoRepeatNgramSize: encoderNgram as number,
    badWordsIds,
    suppressTokens: tokenList('suppress_tokens'),
    beginSuppressTokens: tokenList('begin_suppress_tokens'),
    beginSuppressAt,
  };
}

function isTokenId(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}
