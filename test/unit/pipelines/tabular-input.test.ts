// The tabular row check: its shape on the route (before a batch), its width and feature names in
// the pipeline (the model's), and the folder check when the pipeline is built.
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, InputError, ModelFolderError } from '../../../src/errors.ts';
import { ModelStore } from '../../../src/pipelines/runtime/model-store.ts';
import { TabularPipeline } from '../../../src/pipelines/tabular/tabular.ts';
import type { LoadedModel } from '../../../src/pipelines/runtime/model-store.ts';
import {
  describeTabularModel,
  type TabularInput,
} from '../../../src/pipelines/tabular/tabular-model.ts';
import { rowShapeProblem, rowValues } from '../../../src/pipelines/tabular/tabular-row.ts';
import { checkInputShape } from '../../../src/route/input-shape.ts';
import { thrownBy } from '../../helpers/thrown.ts';

const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'models');
const store = new ModelStore();
afterAll(() => store.close());
const load = (name: string) => store.load({ path: join(FIXTURES, name) });

const iris: TabularInput = {
  name: 'input',
  type: 'float32',
  width: 4,
  featureNames: ['sepal length (cm)', 'sepal width (cm)', 'petal length (cm)', 'petal width (cm)'],
};
const row = { 'sepal length (cm)': 5.1, 'sepal width (cm)': 3.5, 'petal length (cm)': 1.4 };

let scratch: string | undefined;
afterAll(() => (scratch === undefined ? undefined : rm(scratch, { recursive: true, force: true })));

/** The iris tree's model.onnx beside another config.json. */
async function folderWith(config: Record<string, unknown>): Promise<string> {
  scratch ??= await mkdtemp(join(tmpdir(), 'hugot-tabular-'));
  const folder = await mkdtemp(join(scratch, 'model-'));
  await copyFile(
    join(FIXTURES, 'sklearn-decision-tree-iris', 'model.onnx'),
    join(folder, 'model.onnx'),
  );
  await writeFile(join(folder, 'config.json'), JSON.stringify(config));
  return folder;
}

function refusal(run: () => unknown): InputError {
  return thrownBy(InputError, run);
}

describe('tabular row shape (the route check)', () => {
  const check = (input: unknown): void =>
    checkInputShape('tabular', input, "'features'", { maxTextLength: 10, maxListItems: 2 });

  it('takes an array of numbers or an object of numbers, of any width', () => {
    expect(rowShapeProblem([1, 2.5, -3e10], 'row')).toBeUndefined();
    expect(rowShapeProblem(row, 'row')).toBeUndefined();
    // Rows are not lists of items: limits.maxListItems does not apply to their width.
    expect(() => check([1, 2, 3, 4, 5])).not.toThrow();
  });

  it('refuses other shapes, naming the field and the value', () => {
    expect(refusal(() => check('5.1,3.5')).message).toBe(
      "'features' must be a row: an array of numbers, or an object of feature name -> number for tabular, got string",
    );
    expect(refusal(() => check(null)).message).toMatch(/got null$/);
    expect(refusal(() => check([])).message).toBe(
      "'features' is empty; it must hold the model's features",
    );
    expect(refusal(() => check({})).message).toMatch(/is empty/);
    expect(refusal(() => check([1, '2'])).message).toBe(
      "'features'[1] must be a number, got string",
    );
    expect(refusal(() => check({ a: 1, b: null })).message).toBe(
      "'features'.b must be a number, got null",
    );
    expect(refusal(() => check([[1, 2]])).message).toMatch(/\[0\] must be a number, got object/);
    expect(refusal(() => check([1, 'x'])).field).toBe("'features'");
  });

  it('refuses non-finite numbers (JSON 1e400 parses to Infinity; a library call can pass NaN)', () => {
    expect(refusal(() => check(JSON.parse('[1, 1e400]'))).message).toBe(
      "'features'[1] must be a finite number, got Infinity",
    );
    expect(rowShapeProblem([Number.NaN], 'row')).toBe('row[0] must be a finite number, got NaN');
    expect(rowShapeProblem({ x: -Infinity }, 'row')).toMatch(/row\.x must be a finite number/);
  });
});

describe('tabular row values (the model check)', () => {
  it("orders an object's values by the model's feature names", () => {
    expect(rowValues({ ...row, 'petal width (cm)': 0.2 }, iris, 'inputs[0]', 'tabular')).toEqual([
      5.1, 3.5, 1.4, 0.2,
    ]);
    const reordered = { 'petal width (cm)': 0.2, ...row };
    expect(rowValues(reordered, iris, 'inputs[0]', 'tabular')).toEqual([5.1, 3.5, 1.4, 0.2]);
    expect(rowValues([1, 2, 3, 4], iris, 'inputs[0]', 'tabular')).toEqual([1, 2, 3, 4]);
  });

  it('refuses a wrong feature count, naming the features', () => {
    const err = refusal(() => rowValues([1, 2, 3], iris, 'inputs[2]', 'tabular'));
    expect(err.message).toBe(
      "tabular: inputs[2] has 3 values; the model takes 4 features ('sepal length (cm)', 'sepal width (cm)', 'petal length (cm)', 'petal width (cm)')",
    );
    expect(err.field).toBe('inputs[2]');
  });

  it('refuses unknown keys with a hint, and missing ones by name', () => {
    expect(
      refusal(() => rowValues({ ...row, 'petal widht (cm)': 0.2 }, iris, 'inputs[0]', 'tabular'))
        .message,
    ).toBe(
      "tabular: inputs[0] has a key the model does not know: 'petal widht (cm)'; did you mean 'petal width (cm)'?",
    );
    expect(refusal(() => rowValues(row, iris, 'inputs[0]', 'tabular')).message).toBe(
      "tabular: inputs[0] lacks feature 'petal width (cm)'",
    );
  });

  it('refuses objects when the model names no features', () => {
    const unnamed = { ...iris, featureNames: undefined };
    expect(refusal(() => rowValues(row, unnamed, 'inputs[0]', 'tabular')).message).toMatch(
      /names no features \(feature_names\); pass the row as an array of 4 numbers/,
    );
  });
});

describe('TabularPipeline', () => {
  it('fails the batch with the bad row named; the rows alone still run', async () => {
    const pipeline = new TabularPipeline(await load('sklearn-decision-tree-iris'));
    const good = [5.1, 3.5, 1.4, 0.2];
    await expect(pipeline.run([good, [1, 2]])).rejects.toMatchObject({
      name: 'InputError',
      field: 'inputs[1]',
    });
    await expect(pipeline.run([good, [1, 2, 3, Number.NaN]])).rejects.toThrow(
      'inputs[1][3] must be a finite number, got NaN',
    );
    expect(pipeline.statistics.inference.calls).toBe(0);
    const [result] = await pipeline.run([good]);
    expect(result).toMatchObject({ label: 'setosa', score: 1 });
  });

  it('validates its options once, naming the field', async () => {
    const model = await load('sklearn-decision-tree-iris');
    expect(() => new TabularPipeline(model, { topK: 0 })).toThrow(ConfigError);
    expect(() => new TabularPipeline(model, { topk: 2 } as never)).toThrow(/did you mean 'topK'/);
  });

  it('runs a bare skl2onnx export (config.json without names) on arrays, class values as labels', async () => {
    const folder = await folderWith({ model_type: 'sklearn' });
    const pipeline = new TabularPipeline(await store.load({ path: folder }), { topK: 1 });
    expect(await pipeline.run([[5.1, 3.5, 1.4, 0.2]])).toEqual([
      { label: '0', score: 1, scores: [{ label: '0', score: 1 }] },
    ]);
    await expect(pipeline.run([row])).rejects.toThrow(/names no features/);
  });

  it('refuses a config.json that disagrees with the graph', async () => {
    const folder = await folderWith({ feature_names: ['a', 'b'] });
    await expect(store.load({ path: folder }).then((m) => new TabularPipeline(m))).rejects.toThrow(
      /config.json names 2 features but the model takes 4/,
    );
    const classes = await folderWith({ classes: [0, 1] });
    await expect(store.load({ path: classes }).then((m) => new TabularPipeline(m))).rejects.toThrow(
      /config.json lists 2 classes but the model scores 3/,
    );
  });

  it('refuses a ZipMap export, naming the converter option to set', () => {
    // What onnxruntime reports for skl2onnx's default (zipmap=True) classifier outputs.
    const model = {
      folder: '/models/zipmap',
      config: { labels: [], raw: {} },
      session: {
        inputMetadata: [{ name: 'input', isTensor: true, type: 'float32', shape: ['N', 4] }],
        outputMetadata: [
          { name: 'output_label', isTensor: true, type: 'int64', shape: ['N'] },
          { name: 'output_probability', isTensor: false },
        ],
      },
    } as unknown as LoadedModel;
    expect(() => describeTabularModel(model, 'tabular')).toThrow(
      /not a tensor \(a ZipMap of class -> probability\); convert the classifier with skl2onnx's options=\{id\(model\): \{'zipmap': False\}\}/,
    );
  });

  it('refuses a folder that is not a tabular model when it is built', async () => {
    const model = await load('vit-image-classification');
    expect(() => new TabularPipeline(model)).toThrow(ModelFolderError);
    expect(() => new TabularPipeline(model)).toThrow(
      /input 'pixel_values' has 4 dimensions; a tabular model takes \[batch, features\]/,
    );
  });
});
