// Audio classification as Python's pipeline does it: the clip decoded, mixed down to mono and
// resampled to the feature extractor's rate (torchaudio's resample), the features of the folder's
// extractor (preprocessor_config.json's feature_extractor_type: the normalised waveform of
// Wav2Vec2FeatureExtractor and kin, or ASTFeatureExtractor's Kaldi fbank), then the model's logits
// scored (softmax, or sigmoid for multi-label, none for regression) and ranked. Python runs one clip
// per forward pass; inputs of equal shape share a run here (a Wav2Vec2 model, per-clip group norm
// and no padding, answers row by row; every AST input is max_length frames).
import { Tensor } from '../../runtime/tensor.ts';
import type { z } from 'zod';
import { lazySchema } from '../../options/lazy-schema.ts';
import { ModelFolderError } from '../../errors.ts';
import { BasePipeline } from '../base-pipeline.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import {
  logitsOf,
  rankLabels,
  type LabelScore,
  type ScoreFunction,
} from '../runtime/label-scores.ts';
import { row } from '../runtime/tensors.ts';
import type { TaskDefinition } from '../task-definition.ts';
import { logitsNeed } from '../task-definition.ts';
import { audioInput } from './audio-task.ts';
import { decodeAudio, mixdown, type AudioInput } from './audio-decode.ts';
import { resample } from './resample.ts';
import { astInputValues, compileAstFeatures, type AstFeatures } from './ast-features.ts';
import {
  compileWav2Vec2Features,
  wav2vec2InputValues,
  type Wav2Vec2Features,
} from './wav2vec2-features.ts';

export type { AudioInput, PcmAudio } from './audio-decode.ts';

export const audioClassificationOptionsSchema = lazySchema((z) =>
  z
    .object({
      /** Default: none for regression, sigmoid for multi-label, softmax otherwise (Python's choice). */
      functionToApply: z.enum(['softmax', 'sigmoid', 'none']).optional(),
      /**
       * How many labels to return, best first; null (the default) returns every label. Python's
       * constructor sets 5, but each call without top_k resets it to every label
       * (docs/pipelines.md#audioclassification).
       */
      topK: z.number().int().min(1).nullable().default(null),
    })
    .strict(),
);

export type AudioClassificationOptions = z.input<typeof audioClassificationOptionsSchema.schema>;

const TASK = 'audioClassification';

/** The feature extractors whose model input is the normalised waveform. */
const WAVEFORM_EXTRACTORS = new Set([
  'Wav2Vec2FeatureExtractor',
  'HubertFeatureExtractor',
  'WavLMFeatureExtractor',
]);

/** What the folder's feature extractor makes of a clip: the model's input for it. */
export type ClassifierFeatures = Wav2Vec2Features | AstFeatures;

const SUPPORTED = [...WAVEFORM_EXTRACTORS, 'ASTFeatureExtractor'];

export function compileClassifierFeatures(
  raw: Record<string, unknown> | undefined,
  folder: string,
): ClassifierFeatures {
  if (raw === undefined)
    throw new ModelFolderError(
      `${folder} has no preprocessor_config.json; audio pipelines need the feature extractor's settings`,
      { field: 'preprocessor_config.json' },
    );
  const type = raw['feature_extractor_type'] ?? 'Wav2Vec2FeatureExtractor';
  if (type === 'ASTFeatureExtractor') return compileAstFeatures(raw, folder);
  if (typeof type !== 'string' || !WAVEFORM_EXTRACTORS.has(type))
    throw new ModelFolderError(
      `${folder}/preprocessor_config.json: feature_extractor_type ${JSON.stringify(type)} is not supported for ${TASK}; supported: ${SUPPORTED.join(', ')}`,
      { field: 'feature_extractor_type' },
    );
  return compileWav2Vec2Features(raw, folder);
}

interface ClipInput {
  data: Float32Array;
  /** The input's dims without the batch: [samples] or [frames, mel bins]. */
  dims: number[];
}

function clipInput(mono: Float32Array, features: ClassifierFeatures, field: string): ClipInput {
  if (features.kind === 'ast')
    return {
      data: astInputValues(mono, features, field),
      dims: [features.maxLength, features.melBins],
    };
  const data = wav2vec2InputValues(mono, features);
  return { data, dims: [data.length] };
}

/** Python's audio pipeline looks at problem_type only (a one-logit model still gets softmax). */
function defaultAudioScoreFunction(model: LoadedModel): ScoreFunction {
  const { problemType } = model.config;
  if (problemType === 'regression') return 'none';
  if (problemType === 'multi_label_classification') return 'sigmoid';
  return 'softmax';
}

export class AudioClassificationPipeline extends BasePipeline<
  AudioInput,
  LabelScore[],
  typeof audioClassificationOptionsSchema.schema
> {
  private readonly features: ClassifierFeatures;
  private readonly apply: ScoreFunction;
  private readonly inputName: string;
  private readonly maskName: string | undefined;

  constructor(model: LoadedModel, options: AudioClassificationOptions = {}) {
    super(TASK, model, audioClassificationOptionsSchema, options, { tokenizer: false });
    this.features = compileClassifierFeatures(model.preprocessor, model.folder);
    this.apply = this.options.functionToApply ?? defaultAudioScoreFunction(model);
    this.inputName = model.inputNames.includes('input_values')
      ? 'input_values'
      : (model.inputNames[0] ?? 'input_values');
    this.maskName = model.inputNames.includes('attention_mask') ? 'attention_mask' : undefined;
  }

  protected async runBatch(inputs: readonly AudioInput[]): Promise<LabelScore[][]> {
    const clips = await Promise.all(
      inputs.map(async (input, i) => {
        const decoded = await decodeAudio(input, `inputs[${i}]`);
        const mono = resample(
          mixdown(decoded.channels),
          decoded.samplingRate,
          this.features.samplingRate,
        );
        return clipInput(mono, this.features, `inputs[${i}]`);
      }),
    );
    const results = new Array<LabelScore[]>(clips.length);
    // Equal shapes share a run: padding would change a Wav2Vec2 model's answer.
    const byShape = new Map<string, number[]>();
    clips.forEach((clip, i) => {
      const key = clip.dims.join('x');
      const group = byShape.get(key) ?? [];
      group.push(i);
      byShape.set(key, group);
    });
    for (const indices of byShape.values()) {
      const first = clips[indices[0] as number] as ClipInput;
      const size = first.data.length;
      const batch = new Float32Array(size * indices.length);
      indices.forEach((index, b) => batch.set((clips[index] as ClipInput).data, b * size));
      const dims = [indices.length, ...first.dims];
      const feeds: Record<string, Tensor> = {
        [this.inputName]: new Tensor('float32', batch, dims),
      };
      // Only waveform models take a mask: every sample of an unpadded clip is real.
      if (this.maskName !== undefined && first.dims.length === 1)
        feeds[this.maskName] = new Tensor('int64', new BigInt64Array(batch.length).fill(1n), dims);
      const logits = logitsOf(this.model, await this.infer(feeds));
      indices.forEach((index, b) => {
        results[index] = rankLabels(this.model, row(logits, b), this.apply, this.options.topK);
      });
    }
    return results;
  }
}

export const audioClassificationTask: TaskDefinition = {
  needs: {
    preprocessor: true,
    labels: true,
    outputs: [logitsNeed(2, 'class logits [batch, labels]')],
  },
  task: TASK,
  execution: 'batch',
  get optionsSchema() {
    return audioClassificationOptionsSchema.schema;
  },
  create: (model, options) =>
    new AudioClassificationPipeline(model, options as AudioClassificationOptions),
  ...audioInput,
};
