// Which files one variant needs, for the layouts ONNX repositories on the Hub use.
import { describe, expect, it } from 'vitest';
import { variantFiles, variantsIn } from '../../../src/hub/variants.ts';

const ONNX_COMMUNITY = [
  '.gitattributes',
  'README.md',
  'config.json',
  'generation_config.json',
  'tokenizer.json',
  'tokenizer_config.json',
  'special_tokens_map.json',
  'onnx/encoder_model.onnx',
  'onnx/encoder_model_q4.onnx',
  'onnx/encoder_model_q4f16.onnx',
  'onnx/decoder_model_merged.onnx',
  'onnx/decoder_model_merged.onnx_data',
  'onnx/decoder_model_merged_q4.onnx',
  'onnx/decoder_model_merged_q4f16.onnx',
];

describe('variant files', () => {
  it('every graph of the variant, with external data and the describing files, nothing else', () => {
    expect(variantFiles(ONNX_COMMUNITY, 'q4')).toEqual({
      files: [
        'README.md',
        'config.json',
        'generation_config.json',
        'onnx/decoder_model_merged_q4.onnx',
        'onnx/encoder_model_q4.onnx',
        'special_tokens_map.json',
        'tokenizer.json',
        'tokenizer_config.json',
      ],
      graphs: ['onnx/decoder_model_merged_q4.onnx', 'onnx/encoder_model_q4.onnx'],
    });
    // q4f16 is not read as q4, and fp32 brings the external data of its graph.
    expect(variantFiles(ONNX_COMMUNITY, 'q4f16')?.graphs).toEqual([
      'onnx/decoder_model_merged_q4f16.onnx',
      'onnx/encoder_model_q4f16.onnx',
    ]);
    expect(variantFiles(ONNX_COMMUNITY, 'fp32')?.files).toContain(
      'onnx/decoder_model_merged.onnx_data',
    );
    expect(variantsIn(ONNX_COMMUNITY)).toEqual(['fp32', 'q4', 'q4f16']);
    expect(variantFiles(ONNX_COMMUNITY, 'fp16')).toBeUndefined();
  });

  it('an Optimum export at the root, with the sentence-transformers pooling config', () => {
    const optimum = [
      'config.json',
      'model.onnx',
      'model_quantized.onnx',
      'tokenizer.json',
      'vocab.txt',
      '1_Pooling/config.json',
      'modules.json',
      'pytorch_model.bin',
      'model.safetensors',
    ];
    expect(variantFiles(optimum, 'fp32')?.files).toEqual([
      '1_Pooling/config.json',
      'config.json',
      'model.onnx',
      'modules.json',
      'tokenizer.json',
      'vocab.txt',
    ]);
    expect(variantFiles(optimum, 'quantized')?.graphs).toEqual(['model_quantized.onnx']);
    // int8 is the `_int8` suffix only, as the loader reads it: not the quantized file.
    expect(variantFiles(optimum, 'int8')).toBeUndefined();
  });

  it('onnx/ wins over root graphs of the same variant; a repository without ONNX offers none', () => {
    expect(variantFiles(['model.onnx', 'onnx/model.onnx', 'config.json'], 'fp32')?.graphs).toEqual([
      'onnx/model.onnx',
    ]);
    expect(variantsIn(['config.json', 'model.safetensors'])).toEqual([]);
    expect(variantFiles(['config.json', 'model.safetensors'], 'fp32')).toBeUndefined();
  });
});
