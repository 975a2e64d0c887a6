// Whisper's prompt and options as generate() resolves them, on the tiny fixture's
// generation_config.json: language and task tokens, <|notimestamps|>, detection, refusals.
import { describe, expect, it } from 'vitest';
import { SpeechRecognitionPipeline } from '../../../src/pipelines/audio/speech-recognition.ts';
import {
  languageToId,
  promptFor,
  readWhisperConfig,
  resolveWhisperSettings,
  type WhisperCallOptions,
} from '../../../src/pipelines/audio/whisper-settings.ts';
import { ConfigError } from '../../../src/errors.ts';
import { useModelStore } from '../../parity/store.ts';

const load = useModelStore();
const MODEL = 'whisper-speech-recognition';
// The fixture's ids: <|startoftranscript|> 401, <|en|> 402, <|fr|> 408, <|translate|> 410,
// <|transcribe|> 411, <|notimestamps|> 415.
const call = (o: Partial<WhisperCallOptions>): WhisperCallOptions => ({
  language: undefined,
  task: undefined,
  timestamps: false,
  maxNewTokens: 20,
  numBeams: 1,
  lengthPenalty: undefined,
  earlyStopping: undefined,
  ...o,
});

describe('Whisper settings', () => {
  it('builds the prompt as _retrieve_init_tokens does', async () => {
    const model = await load(MODEL);
    const generation = await readWhisperConfig(model);
    const settings = (o: Partial<WhisperCallOptions>) =>
      resolveWhisperSettings(model, generation, call(o), 30);
    expect(promptFor(settings({ language: 'en' }), false, undefined)).toEqual([401, 402, 411, 415]);
    expect(promptFor(settings({ language: 'French', task: 'translate' }), true, undefined)).toEqual(
      [401, 408, 410],
    );
    // No language: detected; no task either, and no forced_decoder_ids: no task token.
    expect(settings({}).prompt).toEqual(['detect']);
    expect(promptFor(settings({}), false, 404)).toEqual([401, 404, 415]);
    expect(promptFor(settings({ task: 'translate' }), false, 402)).toEqual([401, 402, 410, 415]);
    const s = settings({ language: 'en' });
    expect([s.timestampBegin, s.timePrecision, s.segmentFrames]).toEqual([416, 0.02, 3000]);
    expect(() => settings({ maxNewTokens: 446 })).toThrow(/max_target_positions 448/);
  });

  it('takes a language as code, token or English name, and names the choices otherwise', () => {
    const langs = new Map([
      ['<|en|>', 1],
      ['<|fr|>', 2],
      ['<|de|>', 3],
    ]);
    expect(['fr', '<|de|>', 'French', 'german', 'EN'].map((l) => languageToId(l, langs))).toEqual([
      2, 3, 2, 3, 1,
    ]);
    expect(() => languageToId('klingon', langs)).toThrow(/use one of en, fr, de/);
  });

  it('refuses strides longer than the chunk', async () => {
    const model = await load(MODEL);
    expect(
      () => new SpeechRecognitionPipeline(model, { chunkLengthS: 4, strideLengthS: [2, 3] }),
    ).toThrow(ConfigError);
  });
});
