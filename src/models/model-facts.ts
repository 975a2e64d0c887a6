// What a model folder declares about itself, for the task-fit check: the files beside the
// graphs and the chosen graphs' inputs and outputs, read without loading any weight.
import { readFile, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { ModelFolderError } from '../errors.ts';
import { chooseOnnxFiles, type OnnxChoice } from './onnx-layout.ts';
import { readOnnxSignature, type OnnxSignature } from './onnx-signature.ts';
import type { ModelFacts } from './task-fit.ts';

const exists = (path: string): Promise<boolean> =>
  stat(path).then(
    (s) => s.isFile(),
    () => false,
  );

/** Whether config.json names its classes; a folder without config.json is refused. */
async function declaresLabels(folder: string): Promise<boolean> {
  const path = join(folder, 'config.json');
  const text = await readFile(path, 'utf8').catch((cause: unknown) => {
    throw new ModelFolderError(
      `${folder} has no readable config.json; an Optimum export writes one beside model.onnx`,
      { cause, field: 'config.json' },
    );
  });
  let config: unknown;
  try {
    config = JSON.parse(text);
  } catch (cause) {
    throw new ModelFolderError(`${path} is not valid JSON`, { cause, field: 'config.json' });
  }
  const id2label = (config as { id2label?: unknown } | null)?.id2label;
  return id2label !== null && typeof id2label === 'object' && Object.keys(id2label).length > 0;
}

export async function readModelFacts(folder: string, choice: OnnxChoice = {}): Promise<ModelFacts> {
  const onnx = await chooseOnnxFiles(folder, choice);
  const [hasLabels, hasTokenizer, hasPreprocessor, signatures] = await Promise.all([
    declaresLabels(folder),
    exists(join(folder, 'tokenizer.json')),
    exists(join(folder, 'preprocessor_config.json')),
    Promise.all([...onnx.graphs.values()].map((path) => readOnnxSignature(path))),
  ]);
  const names = [...onnx.graphs.keys()];
  const graphs = new Map<string, OnnxSignature>(
    names.map((name, i) => [name, signatures[i] as OnnxSignature]),
  );
  const main = names.find((name) => onnx.graphs.get(name) === onnx.main) ?? basename(onnx.main);
  return { hasTokenizer, hasPreprocessor, hasLabels, graphs, main };
}
