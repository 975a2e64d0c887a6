// Predictions of a scikit-learn model exported with skl2onnx (ONNX-ML TreeEnsemble*, Linear*), as
// its Python `predict` and `predict_proba` give them: for a classifier the predicted class, its
// probability and every class's probability, best first; for a regressor the predicted value.
// A batch's rows go through one session.run; each row's result depends on that row alone.
import { Tensor } from '../../runtime/tensor.ts';
import type { z } from 'zod';
import { lazySchema } from '../../options/lazy-schema.ts';
import { InferenceError, InputError } from '../../errors.ts';
import { BasePipeline } from '../base-pipeline.ts';
import type { LabelScore } from '../runtime/label-scores.ts';
import { topKIndices } from '../runtime/math.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import { isObject, UNIT_COST, type TaskDefinition } from '../task-definition.ts';
import { describeTabularModel, type TabularHead, type TabularModel } from './tabular-model.ts';
import { ROW_SHAPE, rowShapeProblem, rowValues, type TabularRow } from './tabular-row.ts';

export type { TabularRow } from './tabular-row.ts';

export const tabularOptionsSchema = lazySchema((z) =>
  z
    .object({
      /** How many classes `scores` lists, best first; null (the default) lists every class, as predict_proba. */
      topK: z.number().int().min(1).nullable().default(null),
    })
    .strict(),
);

export type TabularOptions = z.input<typeof tabularOptionsSchema.schema>;

export interface TabularClassification {
  /** The class `predict` returns (its name from config.json's id2label). */
  label: string;
  /** Its probability. */
  score: number;
  /** predict_proba's row: classes best first, ties by class index, cut to topK. */
  scores: LabelScore[];
}

export interface TabularRegression {
  value: number;
}

export type TabularPrediction = TabularClassification | TabularRegression;

const TASK = 'tabular';

export class TabularPipeline extends BasePipeline<
  TabularRow,
  TabularPrediction,
  typeof tabularOptionsSchema.schema
> {
  readonly description: TabularModel;

  constructor(model: LoadedModel, options: TabularOptions = {}) {
    super(TASK, model, tabularOptionsSchema, options, { tokenizer: false });
    this.description = describeTabularModel(model, TASK);
  }

  protected async runBatch(inputs: readonly TabularRow[]): Promise<TabularPrediction[]> {
    const { input, head } = this.description;
    const values =
      input.type === 'float32'
        ? new Float32Array(inputs.length * input.width)
        : new Float64Array(inputs.length * input.width);
    // Every row is checked before any runs: a bad one fails the batch, and the engine then runs
    // its batch mates without it.
    inputs.forEach((row, i) =>
      values.set(rowValues(row, input, `inputs[${i}]`, TASK), i * input.width),
    );
    const feeds = { [input.name]: new Tensor(input.type, values, [inputs.length, input.width]) };
    if (head.kind === 'regressor') {
      const outputs = await this.infer(feeds, [head.value]);
      const predicted = floats(outputs[head.value], head.value, inputs.length, 1);
      return Array.from(predicted, (value) => ({ value }));
    }
    const names =
      head.label === undefined ? [head.probabilities] : [head.probabilities, head.label];
    const outputs = await this.infer(feeds, names);
    const classes = head.classes.length;
    const probabilities = floats(
      outputs[head.probabilities],
      head.probabilities,
      inputs.length,
      classes,
    );
    return inputs.map((_, b) => {
      const row = probabilities.subarray(b * classes, (b + 1) * classes);
      const index =
        head.label === undefined
          ? (topKIndices(row, 1)[0] ?? 0)
          : classIndex(head, outputs[head.label], b);
      return this.classification(row, index, head.labels);
    });
  }

  private classification(
    row: ArrayLike<number>,
    index: number,
    labels: readonly string[],
  ): TabularClassification {
    const k = Math.min(this.options.topK ?? row.length, row.length);
    return {
      label: labels[index] ?? String(index),
      score: row[index] ?? 0,
      scores: topKIndices(row, k).map((i) => ({
        label: labels[i] ?? String(i),
        score: row[i] ?? 0,
      })),
    };
  }
}

/** A float tensor of `batch` rows of `width` values as one flat array. */
function floats(
  tensor: Tensor | undefined,
  name: string,
  batch: number,
  width: number,
): Float32Array | Float64Array {
  if (tensor === undefined) throw new InferenceError(`${TASK}: the model returned no '${name}'`);
  if (tensor.type !== 'float32' && tensor.type !== 'float64')
    throw new InferenceError(
      `${TASK}: output '${name}' is ${tensor.type}, expected float32 or float64`,
    );
  if (tensor.dims[0] !== batch || tensor.data.length !== batch * width)
    throw new InferenceError(
      `${TASK}: output '${name}' is [${tensor.dims.join(', ')}], expected ${batch} rows of ${width}`,
    );
  return tensor.data as Float32Array | Float64Array;
}

/** The class index of row `b`'s predicted label (skl2onnx's `label`: the class value itself). */
function classIndex(
  head: Extract<TabularHead, { kind: 'classifier' }>,
  labels: Tensor | undefined,
  b: number,
): number {
  const value = (labels?.data as ArrayLike<bigint | number | string> | undefined)?.[b];
  const index =
    value === undefined ? -1 : head.classes.findIndex((c) => String(c) === String(value));
  if (index < 0)
    throw new InferenceError(
      `${TASK}: the model predicted class ${String(value)}, which config.json's classes do not list`,
    );
  return index;
}

export const tabularTask: TaskDefinition = {
  needs: {
    soleInput: { rank: 2, what: 'feature rows [batch, features]' },
    outputs: [
      {
        names: ['probabilities', 'variable'],
        orFirst: true,
        rank: 2,
        what: "skl2onnx's class probabilities or regression value [batch, n]",
      },
    ],
  },
  task: TASK,
  execution: 'batch',
  get optionsSchema() {
    return tabularOptionsSchema.schema;
  },
  create: (model, options) => new TabularPipeline(model, options as TabularOptions),
  // The row's shape is checked here; its width and feature names are the model's, which the route
  // does not hold, so the pipeline checks those (a mismatch is dead-lettered at inference).
  inputSchema(input, check) {
    if (!Array.isArray(input) && !isObject(input)) check.fail(ROW_SHAPE);
    const problem = rowShapeProblem(input, check.field);
    if (problem !== undefined) throw new InputError(problem, { field: check.field });
  },
  // Not an image: the route hands the pipeline the record's JSON value as it is.
  inputKind: 'text',
  // No tokens: every row is one row of the same width.
  cost: () => Promise.resolve(UNIT_COST),
};
