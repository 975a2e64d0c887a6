// What the tabular pipeline needs to know about a scikit-learn model exported with skl2onnx: its
// input (name, width, float32 or float64), whether it classifies or regresses, and the names of its
// features and classes. The ONNX graph settles the shapes; config.json (written by the model kit,
// docs/pipelines.md#tabular) adds the names. Everything is checked once, when the pipeline is built,
// so a folder that does not fit fails at start-up rather than on the first record.
import type { ValueMetadata } from '../../runtime/session.ts';
import { ModelFolderError } from '../../errors.ts';
import type { LoadedModel } from '../runtime/model-store.ts';

export interface TabularInput {
  /** The ONNX input that takes the rows, [batch, features]. */
  readonly name: string;
  readonly type: 'float32' | 'float64';
  /** Features per row. */
  readonly width: number;
  /** From config.json's feature_names; rows given as objects are keyed by them. */
  readonly featureNames: readonly string[] | undefined;
}

export type TabularHead =
  | {
      readonly kind: 'classifier';
      /** skl2onnx's `probabilities` output (converted with zipmap=False), [batch, classes]. */
      readonly probabilities: string;
      /** skl2onnx's `label` output: what `predict` returns; absent, the best probability is taken. */
      readonly label: string | undefined;
      /** Class names by index (config id2label, else the class values). */
      readonly labels: readonly string[];
      /** What `predict` returns per class index (config `classes`, else the index itself). */
      readonly classes: readonly (number | string)[];
    }
  | {
      readonly kind: 'regressor';
      /** skl2onnx's `variable` output, [batch, 1]. */
      readonly value: string;
    };

export interface TabularModel {
  readonly input: TabularInput;
  readonly head: TabularHead;
}

type Metadata = ValueMetadata;

export function describeTabularModel(model: LoadedModel, task: string): TabularModel {
  const fail = (message: string, field: string): never => {
    throw new ModelFolderError(`${task}: ${model.folder}: ${message}`, { field });
  };
  const input = readInput(model.session.inputMetadata, model.config.raw, fail);
  const outputs = model.session.outputMetadata;
  const byName = new Map(outputs.map((o) => [o.name, o]));
  if (outputs.some((o) => !o.isTensor)) {
    fail(
      'an output is not a tensor (a ZipMap of class -> probability); convert the classifier with ' +
        "skl2onnx's options={id(model): {'zipmap': False}}",
      'onnxFile',
    );
  }
  const probabilities = byName.get('probabilities');
  if (probabilities !== undefined) {
    const width = tensorWidth(probabilities);
    const classes = readClasses(model, width, fail);
    const labels = model.config.labels.length > 0 ? model.config.labels : classes.map(String);
    if (labels.length !== classes.length)
      fail(
        `config.json names ${labels.length} classes in id2label but has ${classes.length} classes`,
        'id2label',
      );
    return {
      input,
      head: {
        kind: 'classifier',
        probabilities: 'probabilities',
        label: byName.has('label') ? 'label' : undefined,
        labels,
        classes,
      },
    };
  }
  const value = byName.get('variable') ?? (outputs.length === 1 ? outputs[0] : undefined);
  if (value === undefined)
    return fail(
      `cannot tell its outputs (${outputs.map((o) => o.name).join(', ')}) apart; a classifier ` +
        "exported by skl2onnx has 'label' and 'probabilities', a regressor 'variable'",
      'onnxFile',
    );
  const targets = tensorWidth(value);
  if (targets !== undefined && targets !== 1)
    fail(
      `its output '${value.name}' has ${targets} targets; only single-target regressors are supported`,
      'onnxFile',
    );
  return { input, head: { kind: 'regressor', value: value.name } };
}

function readInput(
  inputs: readonly Metadata[],
  raw: Record<string, unknown>,
  fail: (message: string, field: string) => never,
): TabularInput {
  const [first, ...rest] = inputs;
  if (first === undefined || rest.length > 0 || !first.isTensor)
    return fail(
      `expected one tensor input [batch, features], got ${inputs.map((i) => i.name).join(', ') || 'none'}`,
      'onnxFile',
    );
  if (first.shape.length !== 2)
    return fail(
      `its input '${first.name}' has ${first.shape.length} dimensions; a tabular model takes [batch, features]`,
      'onnxFile',
    );
  if (first.type !== 'float32' && first.type !== 'float64')
    return fail(
      `its input '${first.name}' is ${first.type}; export it with FloatTensorType or DoubleTensorType`,
      'onnxFile',
    );
  const names = raw['feature_names'];
  let featureNames: string[] | undefined;
  if (names !== undefined) {
    if (!Array.isArray(names) || !names.every((n): n is string => typeof n === 'string'))
      return fail('config.json feature_names must be a list of strings', 'feature_names');
    if (new Set(names).size !== names.length)
      return fail('config.json feature_names lists a name twice', 'feature_names');
    featureNames = names;
  }
  const declared = tensorWidth(first);
  const width = declared ?? featureNames?.length;
  if (width === undefined)
    return fail(
      `its input '${first.name}' has no fixed width and config.json has no feature_names`,
      'feature_names',
    );
  if (featureNames !== undefined && featureNames.length !== width)
    return fail(
      `config.json names ${featureNames.length} features but the model takes ${width}`,
      'feature_names',
    );
  return { name: first.name, type: first.type, width, featureNames };
}

function readClasses(
  model: LoadedModel,
  width: number | undefined,
  fail: (message: string, field: string) => never,
): (number | string)[] {
  const declared = model.config.raw['classes'];
  if (declared !== undefined) {
    if (
      !Array.isArray(declared) ||
      !declared.every((c): c is number | string => typeof c === 'number' || typeof c === 'string')
    )
      return fail('config.json classes must be a list of numbers or strings', 'classes');
    if (width !== undefined && declared.length !== width)
      return fail(
        `config.json lists ${declared.length} classes but the model scores ${width}`,
        'classes',
      );
    return declared;
  }
  const count = width ?? model.config.labels.length;
  if (count === 0)
    return fail('the number of classes is unknown: add id2label to config.json', 'id2label');
  return Array.from({ length: count }, (_, i) => i);
}

/** The second dimension of a [batch, n] tensor, when the graph fixes it. */
function tensorWidth(metadata: Metadata): number | undefined {
  if (!metadata.isTensor) return undefined;
  const width = metadata.shape[1];
  return typeof width === 'number' && width > 0 ? width : undefined;
}
