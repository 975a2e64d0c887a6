// Committed fixtures re-laid as published repositories lay them out (transformers.js's onnx/
// folder with variant suffixes, an encoder–decoder set under onnx/, weights in an external data
// file beside an onnx/model.onnx) give the results the fixture gives in its own folder: the same
// graphs are found and loaded, on both bindings where the layout depends on the runtime.
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Hugot } from '../../../src/hugot.ts';
import { listGraphFiles } from '../../../src/models/onnx-layout.ts';
import { readOnnxSignature } from '../../../src/models/onnx-signature.ts';
import type { ModelSpec } from '../../../src/pipelines/runtime/model-store.ts';
import { splitExternalData } from '../../helpers/external-data.ts';

const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'models');
let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'hugot-layouts-'));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

/** The fixture's files other than its graphs, in a fresh folder; `graphs` maps each graph to its new path. */
async function relaid(fixture: string, name: string, graphs: Record<string, string>): Promise<string> {
  const from = join(FIXTURES, fixture);
  const to = join(scratch, name);
  await mkdir(join(to, 'onnx'), { recursive: true });
  for (const entry of await readdir(from, { withFileTypes: true }))
    if (entry.isFile() && !entry.name.endsWith('.onnx'))
      await copyFile(join(from, entry.name), join(to, entry.name));
  for (const [graph, path] of Object.entries(graphs))
    await copyFile(join(from, graph), join(to, path));
  return to;
}

async function outputs(
  spec: ModelSpec,
  task: string,
  inputs: unknown[],
): Promise<unknown[]> {
  const hugot = new Hugot();
  try {
    hugot.registerModel('m', spec);
    const pipeline = await hugot.registerPipeline('p', { task, model: 'm' });
    return await pipeline.run(inputs);
  } finally {
    await hugot.close();
  }
}

const TEXTS = ['Win a free cruise now', 'Meeting moved to Tuesday afternoon'];

describe('published layouts load and give the fixture results', () => {
  it("transformers.js's onnx/model_<variant>.onnx, chosen by variant", async () => {
    const folder = await relaid('bert-text-classification', 'js-classifier', {
      'model.onnx': 'onnx/model_quantized.onnx',
    });
    // A second variant beside it that is not the fixture: choosing it by name must not matter.
    await writeFile(join(folder, 'onnx', 'model_fp16.onnx'), 'not a model');
    const expected = await outputs(
      { path: join(FIXTURES, 'bert-text-classification') },
      'textClassification',
      TEXTS,
    );
    const got = await outputs(
      { path: folder, variant: 'quantized' },
      'textClassification',
      TEXTS,
    );
    expect(got).toEqual(expected);
    expect(got).toHaveLength(TEXTS.length);
  });

  it('an encoder–decoder set under onnx/ with a variant suffix', async () => {
    const folder = await relaid('t5-text2text', 'js-t5', {
      'encoder_model.onnx': 'onnx/encoder_model_q4.onnx',
      'decoder_model.onnx': 'onnx/decoder_model_q4.onnx',
      'decoder_with_past_model.onnx': 'onnx/decoder_with_past_model_q4.onnx',
    });
    const inputs = ['translate English to German: the house is small'];
    const expected = await outputs(
      { path: join(FIXTURES, 't5-text2text') },
      'text2textGeneration',
      inputs,
    );
    // q4 is the folder's only variant, so it is the default.
    expect(await outputs({ path: folder }, 'text2textGeneration', inputs)).toEqual(expected);
  });

  for (const binding of ['native', 'onnxruntime-node'] as const)
    it(`weights in onnx/model.onnx_data beside onnx/model.onnx (${binding})`, async () => {
      const folder = await relaid('bert-feature-extraction', `external-${binding}`, {});
      const fixture = join(FIXTURES, 'bert-feature-extraction', 'model.onnx');
      const split = splitExternalData(await readFile(fixture), 'model.onnx_data');
      expect(split.moved).toBeGreaterThan(0);
      await writeFile(join(folder, 'onnx', 'model.onnx'), split.model);
      await writeFile(join(folder, 'onnx', 'model.onnx_data'), split.data);
      const [graph] = await listGraphFiles(folder);
      expect(graph).toMatchObject({
        file: 'onnx/model.onnx',
        externalData: ['onnx/model.onnx_data'],
        bytes: split.model.length + split.data.length,
      });
      // The weights left the graph file, and its declared signature did not change.
      expect(split.model.length).toBeLessThan((await readFile(fixture)).length / 2);
      expect(await readOnnxSignature(join(folder, 'onnx', 'model.onnx'))).toEqual(
        await readOnnxSignature(fixture),
      );
      const runtime = { binding };
      const expected = await outputs(
        { path: join(FIXTURES, 'bert-feature-extraction'), runtime },
        'featureExtraction',
        TEXTS,
      );
      expect(await outputs({ path: folder, runtime }, 'featureExtraction', TEXTS)).toEqual(
        expected,
      );
    });
});
