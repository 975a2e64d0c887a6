// A feature extractor's fields from preprocessor_config.json: defaults when absent, and a bad value
// refused at load with the file and the field named.
import { describe, expect, it } from 'vitest';
import { ModelFolderError } from '../../../src/errors.ts';
import { compileAstFeatures } from '../../../src/pipelines/audio/ast-features.ts';
import { preprocessorFields } from '../../../src/pipelines/audio/preprocessor-fields.ts';
import { compileWhisperFeatures } from '../../../src/pipelines/audio/whisper-features.ts';

describe('preprocessor fields', () => {
  it('reads integers and numbers, with defaults for absent fields', () => {
    const fields = preprocessorFields({ sampling_rate: 22_050, mean: -4.27 }, '/m');
    expect(fields.int('sampling_rate', 16_000)).toBe(22_050);
    expect(fields.int('num_mel_bins', 128)).toBe(128);
    expect(fields.real('mean', 0)).toBe(-4.27);
  });

  it('refuses a bad value naming the file and the field, in every extractor', () => {
    const fields = preprocessorFields({ sampling_rate: 16_000.5, std: 'wide' }, '/m');
    expect(() => fields.int('sampling_rate', 16_000)).toThrow(
      '/m/preprocessor_config.json: sampling_rate must be a positive integer, got 16000.5',
    );
    expect(() => fields.real('std', 1)).toThrow(
      '/m/preprocessor_config.json: std must be a number, got "wide"',
    );
    expect(() => compileWhisperFeatures({ n_fft: 0 }, '/w')).toThrow(ModelFolderError);
    expect(() => compileAstFeatures({ max_length: -1 }, '/a')).toThrow(
      /\/a\/preprocessor_config.json: max_length must be a positive integer, got -1/,
    );
  });
});
