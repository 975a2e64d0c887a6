// Turning a classifier's logits into ranked labels, shared by text and image classification:
// Python's choice of score function from the config, the logits output, and top-k ranking.
import type { Tensor } from '../../runtime/tensor.ts';
import { sigmoid, softmax, topKIndices } from './math.ts';
import type { LoadedModel } from './model-store.ts';
import { floatOutput, type FloatOutput } from './tensors.ts';

export type ScoreFunction = 'softmax' | 'sigmoid' | 'none';

export interface LabelScore {
  label: string;
  score: number;
}

export function labelOf(model: LoadedModel, index: number): string {
  return model.config.labels[index] ?? `LABEL_${index}`;
}

/** Python: none for regression, sigmoid for multi-label or one-logit models, softmax otherwise. */
export function defaultScoreFunction(model: LoadedModel): ScoreFunction {
  const { problemType, labels } = model.config;
  if (problemType === 'regression') return 'none';
  if (problemType === 'multi_label_classification' || labels.length === 1) return 'sigmoid';
  return 'softmax';
}

export function logitsOf(model: LoadedModel, outputs: Record<string, Tensor>): FloatOutput {
  return floatOutput(
    outputs,
    model.outputNames.includes('logits') ? 'logits' : (model.outputNames[0] ?? 'logits'),
  );
}

/** Scores every label, then keeps the best `topK` (all when null), best first, ties by index. */
export function rankLabels(
  model: LoadedModel,
  logits: Float32Array,
  apply: ScoreFunction,
  topK: number | null,
): LabelScore[] {
  const scores =
    apply === 'softmax'
      ? softmax(logits)
      : apply === 'sigmoid'
        ? Array.from(logits, sigmoid)
        : Array.from(logits);
  // Python caps top_k at the number of labels.
  const k = Math.min(topK ?? scores.length, scores.length);
  return topKIndices(scores, k).map((i) => ({ label: labelOf(model, i), score: scores[i] ?? 0 }));
}
