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

interface Declared {
  labelCount: number | undefined;
  vocabSize: number | undefined;
}

/** What config.json says of the classes and the vocabulary; a folder without one is refused. */
async function readDeclared(folder: string): Promise<Declared> {
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
  const { id2label, vocab_size: vocab } = (config ?? {}) as Record<string, unknown>;
  const labels =
    id2label !== null && typeof id2label === 'object' ? Object.keys(id2label).length : 0;
  return {
    labelCount: labels > 0 ? labels : undefined,
    vocabSize: typeof vocab === 'number' ? vocab : undefined,
  };
}

export async function readModelFacts(folder: string, choice: OnnxChoice = {}): Promise<ModelFacts> {
  const onnx = await chooseOnnxFiles(folder, choice);
  const [declared, hasTokenizer, hasPreprocessor, signatures] = await Promise.all([
    readDeclared(folder),
    exists(join(folder, 'tokenizer.json')),
    exists(join(folder, 'preprocessor_config.json')),
    Promise.all([...onnx.graphs.values()].map((path) => readOnnxSignature(path))),
  ]);
  const names = [...onnx.graphs.keys()];
  const graphs = new Map<string, OnnxSignature>(
    names.map((name, i) => [name, signatures[i] as OnnxSignature]),
  );
  const main = names.find((name) => onnx.graphs.get(name) === onnx.main) ?? basename(onnx.main);
  return {
    hasTokenizer,
    hasPreprocessor,
    hasLabels: declared.labelCount !== undefined,
    ...declared,
    graphs,
    main,
  };
}
