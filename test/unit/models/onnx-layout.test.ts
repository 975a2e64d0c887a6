// Which graphs a model folder loads: one (model.onnx, the only one, or the one asked for), or
// every graph of an Optimum split export; anything else asks for onnxFile.
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  chooseOnnxFiles,
  listGraphFiles,
  parseGraphFile,
} from '../../../src/models/onnx-layout.ts';

let root: string;

async function folder(name: string, files: string[]): Promise<string> {
  const path = join(root, name);
  await mkdir(path);
  for (const file of files) await writeFile(join(path, file), '');
  return path;
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'hugot-onnx-files-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const names = (files: Awaited<ReturnType<typeof chooseOnnxFiles>>): string[] => [
  ...files.graphs.keys(),
];

describe('chooseOnnxFiles', () => {
  it('loads every graph of a split export, the first named as Optimum orders them as main', async () => {
    const clip = await folder('clip', ['text_model.onnx', 'vision_model.onnx', 'config.json']);
    const files = await chooseOnnxFiles(clip);
    expect(names(files)).toEqual(['vision_model', 'text_model']);
    expect(files.main).toBe(join(clip, 'vision_model.onnx'));
    const sam = await folder('sam', [
      'prompt_encoder_mask_decoder.onnx',
      'vision_encoder.onnx',
      'vision_encoder_quantized.onnx',
    ]);
    expect(names(await chooseOnnxFiles(sam))).toEqual([
      'vision_encoder',
      'prompt_encoder_mask_decoder',
    ]);
  });

  it('loads a vision-language export with its decoder as the main graph', async () => {
    const vlm = await folder('vlm', [
      'vision_encoder.onnx',
      'embed_tokens.onnx',
      'decoder_model_merged.onnx',
    ]);
    const files = await chooseOnnxFiles(vlm);
    expect(names(files)).toEqual(['decoder_model_merged', 'embed_tokens', 'vision_encoder']);
    expect(files.main).toBe(join(vlm, 'decoder_model_merged.onnx'));
  });

  it('prefers model.onnx, and takes the one file asked for, alone', async () => {
    const both = await folder('both', ['model.onnx', 'text_model.onnx', 'vision_model.onnx']);
    expect(names(await chooseOnnxFiles(both))).toEqual(['model']);
    expect(names(await chooseOnnxFiles(both, { onnxFile: 'text_model.onnx' }))).toEqual(['text_model']);
  });

  it('asks for onnxFile when several files are not one split export', async () => {
    const half = await folder('half', ['text_model.onnx', 'audio_model.onnx']);
    const refused = chooseOnnxFiles(half);
    await expect(refused).rejects.toMatchObject({ name: 'ModelFolderError', field: 'onnxFile' });
    await expect(refused).rejects.toThrow(/not one split export .*vision_model \+ text_model/);
    await expect(chooseOnnxFiles(join(root, 'missing'))).rejects.toMatchObject({
      field: 'path',
    });
  });

  it("loads SpeechT5's postnet-and-vocoder graph beside the encoder and the decoders", async () => {
    const tts = await folder('speecht5', [
      'decoder_model.onnx',
      'decoder_postnet_and_vocoder.onnx',
      'decoder_with_past_model.onnx',
      'encoder_model.onnx',
    ]);
    const files = await chooseOnnxFiles(tts);
    expect(names(files)).toEqual([
      'encoder_model',
      'decoder_model',
      'decoder_with_past_model',
      'decoder_postnet_and_vocoder',
    ]);
    expect(files.main).toBe(join(tts, 'encoder_model.onnx'));
  });
});

/** Files at paths inside the folder (onnx/ created as needed), each holding `bytes` bytes. */
async function layout(name: string, files: Record<string, number>): Promise<string> {
  const path = join(root, name);
  for (const [file, bytes] of Object.entries(files)) {
    await mkdir(join(path, file, '..'), { recursive: true });
    await writeFile(join(path, file), Buffer.alloc(bytes));
  }
  return path;
}

describe('published layouts', () => {
  it('reads a variant suffix after the longest graph name', () => {
    expect(parseGraphFile('decoder_model_merged_q4f16')).toEqual({
      graph: 'decoder_model_merged',
      variant: 'q4f16',
    });
    expect(parseGraphFile('decoder_model_quantized')).toEqual({
      graph: 'decoder_model',
      variant: 'quantized',
    });
    expect(parseGraphFile('model_qint8_avx512')).toEqual({
      graph: 'model',
      variant: 'qint8_avx512',
    });
    expect(parseGraphFile('custom_graph')).toEqual({ graph: 'custom_graph', variant: 'fp32' });
  });

  it("loads transformers.js's onnx/ folder: fp32 by default, any variant by name", async () => {
    const repo = await layout('transformers-js', {
      'onnx/model.onnx': 10,
      'onnx/model_fp16.onnx': 5,
      'onnx/model_quantized.onnx': 3,
      'onnx/model_q4.onnx': 2,
    });
    const fp32 = await chooseOnnxFiles(repo, {});
    expect(fp32.main).toBe(join(repo, 'onnx', 'model.onnx'));
    expect(fp32.variant).toBe('fp32');
    const q4 = await chooseOnnxFiles(repo, { variant: 'q4' });
    expect(q4.main).toBe(join(repo, 'onnx', 'model_q4.onnx'));
    expect(names(q4)).toEqual(['model']);
    const absent = chooseOnnxFiles(repo, { variant: 'bnb4' });
    await expect(absent).rejects.toMatchObject({ name: 'ModelFolderError', field: 'variant' });
    await expect(absent).rejects.toThrow(/no bnb4 variant; variants there: fp32, fp16, q4, quantized/);
  });

  it('takes the only variant there is, and asks when there are several and no fp32', async () => {
    const only = await layout('only-quantized', { 'onnx/model_quantized.onnx': 4 });
    expect((await chooseOnnxFiles(only, {})).variant).toBe('quantized');
    const two = await layout('two-variants', {
      'onnx/model_fp16.onnx': 4,
      'onnx/model_int8.onnx': 4,
    });
    const refused = chooseOnnxFiles(two, {});
    await expect(refused).rejects.toMatchObject({ field: 'variant' });
    await expect(refused).rejects.toThrow(/several variants \(fp16, int8\).*choose one with variant/);
  });

  it('loads one variant of a multi-file encoder–decoder set under onnx/, named by graph', async () => {
    const files: Record<string, number> = {};
    for (const graph of ['encoder_model', 'decoder_model', 'decoder_with_past_model', 'decoder_model_merged'])
      for (const suffix of ['', '_quantized', '_fp16']) files[`onnx/${graph}${suffix}.onnx`] = 1;
    const repo = await layout('seq2seq-js', files);
    const quantized = await chooseOnnxFiles(repo, { variant: 'quantized' });
    expect(names(quantized)).toEqual(['encoder_model', 'decoder_model_merged']);
    expect(quantized.graphs.get('decoder_model_merged')).toBe(
      join(repo, 'onnx', 'decoder_model_merged_quantized.onnx'),
    );
    expect(quantized.main).toBe(join(repo, 'onnx', 'encoder_model_quantized.onnx'));
    expect([...(await chooseOnnxFiles(repo, {})).graphs.values()]).toEqual([
      join(repo, 'onnx', 'encoder_model.onnx'),
      join(repo, 'onnx', 'decoder_model_merged.onnx'),
    ]);
  });

  it("loads sentence-transformers' onnx/ folder, whose other files are optimisation levels", async () => {
    const repo = await layout('sentence-transformers', {
      'model.safetensors': 8,
      'onnx/model.onnx': 8,
      'onnx/model_O3.onnx': 8,
      'onnx/model_qint8_avx512.onnx': 2,
    });
    expect((await chooseOnnxFiles(repo, {})).main).toBe(join(repo, 'onnx', 'model.onnx'));
    // A suffix that is not a variant name is reached by its path.
    const o3 = await chooseOnnxFiles(repo, { onnxFile: 'onnx/model_O3.onnx' });
    expect(o3).toMatchObject({ main: join(repo, 'onnx', 'model_O3.onnx'), variant: 'O3' });
  });

  it('takes onnxFile anywhere inside the folder, and nowhere outside it', async () => {
    const repo = await layout('anywhere', { 'model.onnx': 1, 'merged/decoder_model_merged.onnx': 1 });
    const merged = await chooseOnnxFiles(repo, { onnxFile: 'merged/decoder_model_merged.onnx' });
    expect(names(merged)).toEqual(['decoder_model_merged']);
    await expect(chooseOnnxFiles(repo, { onnxFile: '../transformers-js/onnx/model.onnx' })).rejects.toThrow(
      /outside the model folder/,
    );
    await expect(chooseOnnxFiles(repo, { onnxFile: 'onnx/missing.onnx' })).rejects.toThrow(
      /has no onnx\/missing\.onnx; \.onnx files there: model\.onnx$/,
    );
    await expect(
      chooseOnnxFiles(repo, { onnxFile: 'model.onnx', variant: 'fp16' }),
    ).rejects.toMatchObject({ field: 'variant' });
  });

  it('refuses the same graph in the folder and in onnx/, naming both', async () => {
    const repo = await layout('both-places', { 'model.onnx': 1, 'onnx/model.onnx': 1 });
    await expect(chooseOnnxFiles(repo, {})).rejects.toThrow(
      /has model twice \(model\.onnx and onnx\/model\.onnx\); choose one with onnxFile/,
    );
  });

  it('counts external data files in a graph size', async () => {
    const repo = await layout('external', {
      'onnx/model.onnx': 100,
      'onnx/model.onnx_data': 5000,
      'onnx/model_fp16.onnx': 50,
      'onnx/model_fp16.onnx_data': 2500,
      'onnx/model_fp16.onnx_data_1': 10,
    });
    const files = await listGraphFiles(repo);
    expect(files.map((f) => [f.file, f.bytes, f.externalData])).toEqual([
      ['onnx/model.onnx', 5100, ['onnx/model.onnx_data']],
      ['onnx/model_fp16.onnx', 2560, ['onnx/model_fp16.onnx_data', 'onnx/model_fp16.onnx_data_1']],
    ]);
  });
});
