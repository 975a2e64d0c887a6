// Sentence and token embeddings: the encoder's hidden states pooled over the attention mask
// (sentence-transformers' mean pooling), the first token (CLS), the largest value per dimension
// (max), the model's own pooled output, or no pooling at all. In a sentence-transformers folder
// the defaults are the folder's own (sentence-transformers-config.ts), so that no options give
// what `SentenceTransformer(folder).encode` gives.
import { resolve } from 'node:path';
import type { z } from 'zod';
import { lazySchema } from '../../options/lazy-schema.ts';
import { InferenceError, ModelFolderError } from '../../errors.ts';
import { l2Normalize, maskedMean } from '../runtime/math.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import { BasePipeline } from '../base-pipeline.ts';
import { assertString } from '../pipeline.ts';
import { readSentenceTransformersConfig } from '../runtime/sentence-transformers-config.ts';
import {
  sizeIn,
  textInput,
  truncatesAtMaxLength,
  type TaskDefinition,
} from '../task-definition.ts';
import { floatOutput, textFeeds } from '../runtime/tensors.ts';
import { outputScratch } from '../../runtime/output-scratch.ts';
import { poolsOnDevice, takesFloat16Inputs } from '../../runtime/runtime-options.ts';
import {
  POOLING_INPUTS,
  POOLING_OUTPUT,
  poolingGraph,
  poolingGraphName,
  type PoolingGraphSpec,
} from '../../runtime/graphs/pooling-graph.ts';
import type { TokenizedText } from '../runtime/text-tokenizer.ts';

// pooling, normalize, maxLength and lowerCase have no schema default: an unset one falls back to
// the model folder's sentence-transformers files, then to the defaults in `settle` below.
export const featureExtractionOptionsSchema = lazySchema((z) =>
  z
    .object({
      /** Default: the folder's Pooling config, else mean. */
      pooling: z.enum(['mean', 'cls', 'max', 'pooled', 'none']).optional(),
      /** Default: true when the folder's modules.json lists a Normalize module, else false. */
      normalize: z.boolean().optional(),
      /** Which model output holds the hidden states; default last_hidden_state or the first output. */
      outputName: z.string().optional(),
      truncation: z.boolean().default(true),
      /** Truncation length; default sentence_bert_config.json's max_seq_length, else the tokenizer's. */
      maxLength: z.number().int().min(1).optional(),
      /** Lower-case texts before tokenizing; default sentence_bert_config.json's do_lower_case, else false. */
      lowerCase: z.boolean().optional(),
    })
    .strict(),
);

export type FeatureExtractionOptions = z.input<typeof featureExtractionOptionsSchema.schema>;
/** A vector for pooled embeddings; one vector per token when pooling is 'none'. */
export type FeatureExtractionResult = Float32Array | Float32Array[];

const TASK = 'featureExtraction';

export class FeatureExtractionPipeline extends BasePipeline<
  string,
  FeatureExtractionResult,
  typeof featureExtractionOptionsSchema.schema
> {
  /** The options with the folder's sentence-transformers defaults filled in. */
  private readonly settled: Settled;
  private readonly outputName: string;
  /** Set when pooling runs as a graph on the encoder's device (runtime.poolingOn). */
  private readonly devicePooling: PoolingGraphSpec | undefined;
  /**
   * A model that is not batch invariant (an int8 export's per-tensor quantization) runs one row
   * per session call here, after the whole batch is tokenized at once: an encode right after a
   * run finds the tokenizer's tables pushed out of the CPU's caches by the model's weights, and
   * costs several times what the same encode costs among other encodes.
   */
  readonly splitsRows = true;

  constructor(model: LoadedModel, options: FeatureExtractionOptions = {}) {
    super(TASK, model, featureExtractionOptionsSchema, options);
    this.settled = settle(model, this.options);
    const fallback = this.settled.pooling === 'pooled' ? 'pooler_output' : 'last_hidden_state';
    const wanted =
      this.settled.outputName ??
      (model.outputNames.includes(fallback) ? fallback : model.outputNames[0]);
    if (wanted === undefined || !model.outputNames.includes(wanted)) {
      throw new InferenceError(
        `${model.onnxPath} has no output '${String(wanted)}'; outputs: ${model.outputNames.join(', ')}`,
      );
    }
    this.outputName = wanted;
    this.devicePooling = devicePoolingOf(model, wanted, this.settled);
  }

  protected async runBatch(inputs: readonly string[]): Promise<FeatureExtractionResult[]> {
    inputs.forEach((text, i) => assertString(text, TASK, `inputs[${i}]`));
    const { lowerCase, truncation, maxLength } = this.settled;
    const texts = lowerCase ? inputs.map((text) => text.toLowerCase()) : inputs;
    const encoded = await this.encode(texts, {
      truncation: truncation ? 'longest_first' : false,
      ...(maxLength !== undefined ? { maxLength } : {}),
    });
    if (this.model.batchInvariant) return this.embed(encoded);
    const out: FeatureExtractionResult[] = [];
    for (const row of encoded) out.push(...(await this.embed([row])));
    return out;
  }

  /** One session call over `encoded`: pooled on the device or in JS. */
  private async embed(encoded: readonly TokenizedText[]): Promise<FeatureExtractionResult[]> {
    const { normalize } = this.settled;
    if (this.devicePooling !== undefined) return this.poolOnDevice(encoded, this.devicePooling);
    // Every pooling copies what it keeps, so the hidden states go back to the scratch after it.
    const outputs = await this.inferText(encoded, [this.outputName], { scratch: true });
    const hidden = floatOutput(outputs, this.outputName);
    try {
      return encoded.map((encoding, b) => {
        const result = this.pool(hidden.data, hidden.dims, b, encoding.attentionMask);
        if (!normalize) return result;
        return Array.isArray(result) ? result.map(l2Normalize) : l2Normalize(result);
      });
    } finally {
      outputScratch.giveBack(outputs[this.outputName]?.data);
    }
  }

  /** One linked run: the encoder, then the pooling graph on its output, where it was computed. */
  private async poolOnDevice(
    encoded: readonly TokenizedText[],
    spec: PoolingGraphSpec,
  ): Promise<FeatureExtractionResult[]> {
    const pooler = await this.model.helper(poolingGraphName(spec), () => poolingGraph(spec));
    const mask = textFeeds(encoded, [POOLING_INPUTS.mask], 0)[POOLING_INPUTS.mask];
    const outputs = await this.inferLinked({
      feeds: textFeeds(encoded, this.model.inputNames, this.tokenizer.padId),
      next: pooler,
      link: { [POOLING_INPUTS.hidden]: this.outputName },
      nextFeeds: { [POOLING_INPUTS.mask]: mask as NonNullable<typeof mask> },
    });
    const { data, dims } = floatOutput(outputs, POOLING_OUTPUT);
    const size = dims[1] ?? 0;
    return encoded.map((_, b) => data.slice(b * size, (b + 1) * size));
  }

  private pool(
    data: Float32Array,
    dims: readonly number[],
    b: number,
    mask: readonly number[],
  ): FeatureExtractionResult {
    if (dims.length === 2) {
      // Already one vector per input (a pooled output).
      const size = dims[1] ?? 0;
      return data.slice(b * size, (b + 1) * size);
    }
    const seq = dims[1] ?? 0;
    const size = dims[2] ?? 0;
    const base = b * seq * size;
    const token = (t: number): Float32Array => data.slice(base + t * size, base + (t + 1) * size);
    switch (this.settled.pooling) {
      case 'cls':
      case 'pooled':
        return token(0);
      case 'none':
        return Array.from({ length: mask.length }, (_, t) => token(t));
      case 'mean':
        return maskedMean(data, base, size, mask);
      case 'max': {
        const max = new Float32Array(size).fill(-Infinity);
        for (let t = 0; t < mask.length; t += 1) {
          if (mask[t] !== 1) continue;
          const offset = base + t * size;
          for (let h = 0; h < size; h += 1)
            max[h] = Math.max(max[h] ?? -Infinity, data[offset + h] ?? -Infinity);
        }
        // An input with no attended token has nothing to take a maximum of.
        return max.map((v) => (v === -Infinity ? 0 : v));
      }
    }
  }
}

/**
 * The pooling graph's spec when the model's runtime pools on the device and the graph can: a
 * mean, CLS or max pooling of a [batch, tokens, hidden] float or fp16 output.
 */
function devicePoolingOf(
  model: LoadedModel,
  outputName: string,
  settled: Settled,
): PoolingGraphSpec | undefined {
  if (!poolsOnDevice(model.runtime)) return undefined;
  const { pooling, normalize } = settled;
  if (pooling !== 'mean' && pooling !== 'cls' && pooling !== 'max') return undefined;
  const meta = model.session.outputMetadata.find((m) => m.name === outputName);
  if (meta === undefined || !meta.isTensor || meta.shape.length !== 3) return undefined;
  if (meta.type !== 'float32' && meta.type !== 'float16') return undefined;
  // The pooling graph is fed the hidden states as they are, which onnxruntime-node cannot do for
  // float16 on Node 23+; JS pools them there instead.
  if (meta.type === 'float16' && !takesFloat16Inputs(model.runtime)) return undefined;
  return { pooling, normalize, hiddenType: meta.type };
}

type Parsed = z.output<typeof featureExtractionOptionsSchema.schema>;
type Settled = Parsed & {
  pooling: NonNullable<Parsed['pooling']>;
  normalize: boolean;
  lowerCase: boolean;
};

/** Explicit options first, then the folder's sentence-transformers files, then plain defaults. */
function settle(model: LoadedModel, options: Parsed): Settled {
  const st = model.sentenceTransformers;
  if (options.pooling === undefined && st !== undefined) {
    // A default that would silently differ from sentence-transformers' embeddings is refused;
    // choosing a pooling explicitly says the user wants our output anyway.
    if (st.unsupportedModules.length > 0) {
      throw new ModelFolderError(
        `${String(st.modulesFile)} lists ${st.unsupportedModules.join(', ')}, which featureExtraction does not run, so its embeddings would differ from sentence-transformers'. Set the pipeline's options.pooling to embed with the encoder and pooling alone`,
        { field: 'modules.json' },
      );
    }
    if (st.poolingProblem !== undefined)
      throw new ModelFolderError(st.poolingProblem, { field: 'pooling' });
  }
  const maxLength = options.maxLength ?? st?.maxSeqLength;
  return {
    ...options,
    pooling: options.pooling ?? st?.pooling ?? 'mean',
    normalize: options.normalize ?? st?.normalize ?? false,
    lowerCase: options.lowerCase ?? st?.lowerCase ?? false,
    ...(maxLength !== undefined ? { maxLength } : {}),
  };
}

export const featureExtractionTask: TaskDefinition = {
  needs: { tokenizer: true, inputs: ['input_ids'] },
  task: TASK,
  execution: 'batch',
  get optionsSchema() {
    return featureExtractionOptionsSchema.schema;
  },
  create: (model, options) =>
    new FeatureExtractionPipeline(model, options as FeatureExtractionOptions),
  // A pooled vector is sentence-transformers' encode(); every token's vector is the transformers
  // pipeline's, which keeps the batch dimension of 1.
  pythonOutput: (result) => (Array.isArray(result) ? [result] : result),
  // The encoder's width, by the names transformers' configs give it (BERT, T5, DistilBERT, GPT-2);
  // an output chosen by name (a projected sentence_embedding) may be any width.
  vectorSize: (config, options) =>
    options['outputName'] === undefined
      ? sizeIn(config, ['hidden_size', 'd_model', 'dim', 'n_embd'])
      : undefined,
  ...textInput,
  inputKind: 'text',
  cutsLongText: (options) => options['truncation'] !== false,
  // Pricing must see the length the pipeline will run, or long inputs look several times their
  // size and batches come out part full.
  truncatesAt: truncatesAtMaxLength,
  // The text settle() hands the tokenizer; the folder's lower-casing comes from costOptions.
  encodedText: (input, options) =>
    typeof input === 'string' && options['truncation'] !== false
      ? options['lowerCase'] === true
        ? input.toLowerCase()
        : input
      : undefined,
  // A pipeline that leaves maxLength to the folder truncates at sentence-transformers'
  // max_seq_length, and its inputs must be priced so (and encoded as the thread would encode
  // them: lower-cased where the folder says so).
  async costOptions(declared, folder) {
    if (declared['maxLength'] !== undefined && declared['lowerCase'] !== undefined) return declared;
    const st = await readSentenceTransformersConfig(resolve(folder));
    const maxLength = declared['maxLength'] ?? st?.maxSeqLength;
    const lowerCase = declared['lowerCase'] ?? st?.lowerCase;
    return {
      ...declared,
      ...(maxLength !== undefined ? { maxLength } : {}),
      ...(lowerCase !== undefined ? { lowerCase } : {}),
    };
  },
};
