import { mkdtemp, mkdir, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findModelFolders, summarizeModelFolder } from '../../../src/models/model-folder.ts';
import { buildCli } from '../../../src/cli/main.ts';

let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'hugot-models-'));
  const classifier = join(root, 'classifier');
  await mkdir(classifier);
  await writeFile(
    join(classifier, 'config.json'),
    JSON.stringify({ model_type: 'bert', id2label: { '10': 'ten', '2': 'two', '0': 'zero' } }),
  );
  await writeFile(join(classifier, 'model.onnx'), '');
  await writeFile(join(classifier, 'model_quantized.onnx'), '');
  await writeFile(join(classifier, 'tokenizer.json'), '{}');
  await mkdir(join(root, 'not-a-model'));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('model folder summary', () => {
  it('orders labels by numeric id, not by string', async () => {
    const summary = await summarizeModelFolder(join(root, 'classifier'));
    expect(summary?.labels).toEqual(['zero', 'two', 'ten']);
    expect(summary?.onnxFiles).toEqual(['model.onnx', 'model_quantized.onnx']);
    expect(summary?.hasTokenizer).toBe(true);
    expect(summary?.modelType).toBe('bert');
  });

  it('skips folders without config.json and roots that do not exist', async () => {
    const found = await findModelFolders([root, join(root, 'missing')]);
    expect(found.map((m) => m.path)).toEqual([join(root, 'classifier')]);
  });

  it('is what `hugot-stream models list` prints', async () => {
    let printed = '';
    await buildCli((text) => (printed += text)).parseAsync(['models', 'list', root], {
      from: 'user',
    });
    expect(printed).toBe(
      `${join(root, 'classifier')}  bert  model.onnx,model_quantized.onnx labels=3\n`,
    );
  });
});
