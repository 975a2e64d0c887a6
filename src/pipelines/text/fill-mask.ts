// Masked-token prediction with Python's FillMaskPipeline rules: a softmax over the vocabulary at
// each mask, optionally restricted to target tokens, and each candidate written back into the
// input and decoded. One mask gives a list of candidates; several masks give one list per mask,
// each decoded with the other masks (and special tokens) left visible, as Python does.
import type { z } from 'zod';
import { lazySchema } from '../../options/lazy-schema.ts';
import { ConfigError, InputError } from '../../errors.ts';
import { softmax, topKIndices } from '../runtime/math.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import { BasePipeline } from '../base-pipeline.ts';
import { assertString } from '../pipeline.ts';
import { floatOutput } from '../runtime/tensors.ts';
import { textInput, type TaskDefinition } from '../task-definition.ts';
import type { TextTokenizer } from '../runtime/text-tokenizer.ts';

export const fillMaskOptionsSchema = lazySchema((z) =>
  z
    .object({
      /** Candidates per mask, best first; capped at the number of targets. */
      topK: z.number().int().min(1).default(5),
      /** Restricts candidates to these tokens (a word missing from the vocabulary: its first token). */
      targets: z.union([z.string(), z.array(z.string()).min(1)]).optional(),
      /** Python does not truncate: a text longer than the model's limit is an input error. */
      truncation: z.boolean().default(false),
    })
    .strict(),
);

export type FillMaskOptions = z.input<typeof fillMaskOptionsSchema.schema>;
export interface FillMaskPrediction {
  score: number;
  token: number;
  token_str: string;
  sequence: string;
}
/** One list for a single mask; one list per mask, in text order, for several. */
export type FillMaskResult = FillMaskPrediction[] | FillMaskPrediction[][];

export interface ResolvedTargets {
  ids: number[];
  /** The targets that are not vocabulary entries, and what stands in for them (Python warns). */
  warnings: string[];
}

const TASK = 'fillMask';

export class FillMaskPipeline extends BasePipeline<
  string,
  FillMaskResult,
  typeof fillMaskOptionsSchema.schema
> {
  private readonly maskId: number;
  private targets: Promise<ResolvedTargets> | undefined;

  constructor(model: LoadedModel, options: FillMaskOptions = {}) {
    super(TASK, model, fillMaskOptionsSchema, options);
    const tokenizer = this.tokenizer;
    const maskId = tokenizer.tokenId(tokenizer.special.mask);
    if (maskId === undefined) {
      throw new ConfigError(`${TASK}: the tokenizer in ${model.folder} defines no mask token`, {
        field: 'model',
      });
    }
    this.maskId = maskId;
  }

  /** The target token ids (undefined without targets); resolved once, on first use. */
  resolvedTargets(): Promise<ResolvedTargets> | undefined {
    const { targets } = this.options;
    if (targets === undefined) return undefined;
    this.targets ??= resolveTargets(
      this.tokenizer,
      typeof targets === 'string' ? [targets] : targets,
    );
    return this.targets;
  }

  protected async runBatch(inputs: readonly string[]): Promise<FillMaskResult[]> {
    inputs.forEach((input, i) => assertString(input, TASK, `inputs[${i}]`));
    const tokenizer = this.tokenizer;
    const targets = await this.resolvedTargets();
    const encoded = await this.encode(inputs, {
      truncation: this.options.truncation ? 'longest_first' : false,
    });
    const masks = encoded.map(({ ids }, i) => {
      const limit = tokenizer.maxLength;
      if (limit !== undefined && ids.length > limit) {
        throw new InputError(
          `${TASK}: inputs[${i}] is ${ids.length} tokens, over the model's ${limit}; shorten it or set truncation`,
          { field: `inputs[${i}]` },
        );
      }
      const positions = ids.flatMap((id, p) => (id === this.maskId ? [p] : []));
      if (positions.length === 0) {
        throw new InputError(
          `${TASK}: inputs[${i}] has no mask token (${tokenizer.special.mask ?? 'mask'})`,
          { field: `inputs[${i}]` },
        );
      }
      return positions;
    });
    const outputs = await this.inferText(encoded);
    const logits = floatOutput(
      outputs,
      this.model.outputNames.includes('logits')
        ? 'logits'
        : (this.model.outputNames[0] ?? 'logits'),
    );
    const [, width = 0, vocab = 0] = logits.dims;
    return Promise.all(
      encoded.map(async ({ ids }, b) => {
        const positions = masks[b] ?? [];
        const single = positions.length === 1;
        const perMask = await Promise.all(
          positions.map((position) => {
            const offset = (b * width + position) * vocab;
            const probs = softmax(logits.data.subarray(offset, offset + vocab));
            return this.candidates(tokenizer, ids, position, probs, targets?.ids, single);
          }),
        );
        return single ? (perMask[0] ?? []) : perMask;
      }),
    );
  }

  private candidates(
    tokenizer: TextTokenizer,
    ids: readonly number[],
    position: number,
    probs: number[],
    targetIds: readonly number[] | undefined,
    single: boolean,
  ): Promise<FillMaskPrediction[]> {
    const pool = targetIds ?? probs.map((_, id) => id);
    const scores = pool.map((id) => probs[id] ?? 0);
    const padId = tokenizer.tokenId(tokenizer.special.pad);
    return Promise.all(
      topKIndices(scores, Math.min(this.options.topK, pool.length)).map(async (i) => {
        const token = pool[i] as number;
        const filled = ids.map((id, p) => (p === position ? token : id));
        // Python drops pad ids before decoding, and keeps special tokens (the other masks)
        // visible when the input has several masks.
        const tokens = filled.filter((id) => id !== padId);
        return {
          score: scores[i] ?? 0,
          token,
          token_str: await tokenizer.decode([token], false),
          sequence: await tokenizer.decode(tokens, single),
        };
      }),
    );
  }
}

/** A vocabulary entry is used as is; anything else by the first token it encodes to. */
async function resolveTargets(
  tokenizer: TextTokenizer,
  targets: readonly string[],
): Promise<ResolvedTargets> {
  const ids: number[] = [];
  const warnings: string[] = [];
  for (const target of targets) {
    let id = tokenizer.tokenId(target);
    if (id === undefined) {
      const [encoded] = await tokenizer.encode([target], {
        addSpecialTokens: false,
        truncation: 'longest_first',
        maxLength: 1,
      });
      id = encoded?.ids[0];
      warnings.push(
        id === undefined
          ? `target '${target}' is not in the vocabulary and encodes to nothing; ignored`
          : `target '${target}' is not in the vocabulary; using '${tokenizer.idToToken(id) ?? id}'`,
      );
      if (id === undefined) continue;
    }
    if (!ids.includes(id)) ids.push(id);
  }
  if (ids.length === 0) {
    throw new ConfigError(`${TASK}: none of the targets maps to a token`, {
      field: 'options.targets',
    });
  }
  return { ids, warnings };
}

export const fillMaskTask: TaskDefinition = {
  needs: {
    tokenizer: true,
    inputs: ['input_ids'],
    outputs: [
      {
        names: ['logits'],
        rank: 3,
        what: 'a masked-LM head [batch, tokens, vocab]',
        width: 'vocab',
      },
    ],
  },
  task: TASK,
  execution: 'batch',
  get optionsSchema() {
    return fillMaskOptionsSchema.schema;
  },
  create: (model, options) => new FillMaskPipeline(model, options as FillMaskOptions),
  ...textInput,
  inputKind: 'text',
};
