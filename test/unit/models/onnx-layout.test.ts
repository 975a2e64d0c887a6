// Which graphs a model folder loads: one (model.onnx, the only one, or the one asked for), or
// every graph of an Optimum split export; anything else asks for onnxFile.
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chooseOnnxFiles } from '../../../src/models/onnx-layout.ts';

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
    const files = await chooseOnnxFiles(clip, undefined);
    expect(names(files)).toEqual(['vision_model', 'text_model']);
    expect(files.main).toBe(join(clip, 'vision_model.onnx'));
    const sam = await folder('sam', [
      'prompt_encoder_mask_decoder.onnx',
      'vision_encoder.onnx',
      'vision_encoder_quantized.onnx',
    ]);
    expect(names(await chooseOnnxFiles(sam, undefined))).toEqual([
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
    const files = await chooseOnnxFiles(vlm, undefined);
    expect(names(files)).toEqual(['decoder_model_merged', 'embed_tokens', 'vision_encoder']);
    expect(files.main).toBe(join(vlm, 'decoder_model_merged.onnx'));
  });

  it('prefers model.onnx, and takes the one file asked for, alone', async () => {
    const both = await folder('both', ['model.onnx', 'text_model.onnx', 'vision_model.onnx']);
    expect(names(await chooseOnnxFiles(both, undefined))).toEqual(['model']);
    expect(names(await chooseOnnxFiles(both, 'text_model.onnx'))).toEqual(['text_model']);
  });

  it('asks for onnxFile when several files are not one split export', async () => {
    const half = await folder('half', ['text_model.onnx', 'audio_model.onnx']);
    const refused = chooseOnnxFiles(half, undefined);
    await expect(refused).rejects.toMatchObject({ name: 'ModelFolderError', field: 'onnxFile' });
    await expect(refused).rejects.toThrow(/not one split export .*vision_model \+ text_model/);
    await expect(chooseOnnxFiles(join(root, 'missing'), undefined)).rejects.toMatchObject({
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
    const files = await chooseOnnxFiles(tts, undefined);
    expect(names(files)).toEqual([
      'encoder_model',
      'decoder_model',
      'decoder_with_past_model',
      'decoder_postnet_and_vocoder',
    ]);
    expect(files.main).toBe(join(tts, 'encoder_model.onnx'));
  });
});
