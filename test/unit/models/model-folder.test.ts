// What `models list` says of a folder: its graphs in each variant with their sizes, its labels,
// the tasks its default graphs fit, and whether it is one of the tiny test fixtures.
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  findModelFolders,
  formatBytes,
  isFixturePath,
  summarizeModelFolder,
} from '../../../src/models/model-folder.ts';
import { buildCli } from '../../../src/cli/main.ts';

const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'models');
let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'hugot-models-'));
  const classifier = join(root, 'classifier');
  await mkdir(join(classifier, 'onnx'), { recursive: true });
  await writeFile(
    join(classifier, 'config.json'),
    JSON.stringify({ model_type: 'bert', id2label: { '10': 'ten', '2': 'two', '0': 'zero' } }),
  );
  await writeFile(join(classifier, 'model.onnx'), Buffer.alloc(2048));
  await writeFile(join(classifier, 'onnx', 'model_quantized.onnx'), Buffer.alloc(100));
  await writeFile(join(classifier, 'onnx', 'model_quantized.onnx_data'), Buffer.alloc(1000));
  await writeFile(join(classifier, 'tokenizer.json'), '{}');
  await mkdir(join(root, 'not-a-model'));
  // A real graph, so the tasks it fits can be judged: the NER fixture's, in an onnx/ folder.
  const ner = join(root, 'ner');
  await mkdir(join(ner, 'onnx'), { recursive: true });
  for (const file of ['config.json', 'tokenizer.json'])
    await copyFile(join(FIXTURES, 'bert-token-classification', file), join(ner, file));
  await copyFile(
    join(FIXTURES, 'bert-token-classification', 'model.onnx'),
    join(ner, 'onnx', 'model.onnx'),
  );
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('model folder summary', () => {
  it('orders labels by numeric id, and lists each variant with its external data', async () => {
    const summary = await summarizeModelFolder(join(root, 'classifier'));
    expect(summary?.labels).toEqual(['zero', 'two', 'ten']);
    expect(summary?.onnxFiles).toEqual(['model.onnx', 'onnx/model_quantized.onnx']);
    expect(summary?.variants).toEqual([
      { variant: 'fp32', files: ['model.onnx'], bytes: 2048 },
      { variant: 'quantized', files: ['onnx/model_quantized.onnx'], bytes: 1100 },
    ]);
    expect(summary?.hasTokenizer).toBe(true);
    expect(summary?.modelType).toBe('bert');
    expect(summary?.fixture).toBe(false);
  });

  it('skips folders without config.json and roots that do not exist', async () => {
    const found = await findModelFolders([root, join(root, 'missing')]);
    expect(found.map((m) => m.path)).toEqual([join(root, 'classifier'), join(root, 'ner')]);
  });

  it('marks the test fixtures apart from real models', () => {
    expect(isFixturePath(join(FIXTURES, 'bert-fill-mask'))).toBe(true);
    expect(isFixturePath(join(root, 'classifier'))).toBe(false);
    expect(isFixturePath('models/all-MiniLM-L6-v2-int8')).toBe(false);
  });

  it('sizes in binary units', () => {
    expect([formatBytes(512), formatBytes(1536), formatBytes(23 * 1024 * 1024)]).toEqual([
      '512 B',
      '1.5 KB',
      '23.0 MB',
    ]);
  });

  it('is what `hugot-stream models list` prints, with the tasks each folder fits', async () => {
    let printed = '';
    await buildCli((text) => (printed += text)).parseAsync(
      ['models', 'list', root, join(FIXTURES, 'bert-fill-mask')],
      { from: 'user' },
    );
    const lines = printed.split('\n');
    expect(lines.slice(0, 4)).toEqual([
      `${join(root, 'classifier')}  bert  labels=3`,
      '  fp32          2.0 KB  model.onnx',
      '  quantized     1.1 KB  onnx/model_quantized.onnx',
      // Its files are not graphs, so no task can be judged on them.
      expect.stringMatching(/^ {2}fits: not judged: .*model\.onnx is not a readable ONNX model/),
    ]);
    expect(lines.slice(4, 7)).toEqual([
      `${join(root, 'ner')}  bert  labels=9`,
      expect.stringMatching(/^ {2}fp32 +\d+\.\d KB {2}onnx\/model\.onnx$/),
      '  fits: featureExtraction, tokenClassification',
    ]);
    expect(lines[7]).toBe(
      `${join(FIXTURES, 'bert-fill-mask')}  bert  fixture (tiny random weights)`,
    );
    expect(lines[9]).toBe('  fits: featureExtraction, fillMask');
  });
});
