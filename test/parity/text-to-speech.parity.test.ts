// textToSpeech / textToAudio against transformers' text-to-speech pipeline on the tiny SpeechT5
// fixture (kit/speecht5.py): waveforms ≤ 1e-4 after a WAV round trip, the sampling rate, the
// tokenizer, the stop paths (threshold, minlenratio, maxlenratio) and the inputs Python fails on.
import { readdir, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ModelStore } from '../../src/pipelines/runtime/model-store.ts';
import { scratchDir } from '../helpers/file-route.ts';
import { decodeAudio } from '../../src/pipelines/audio/audio-decode.ts';
import {
  TextToSpeechPipeline,
  type TextToSpeechInput,
  type TextToSpeechOptions,
  type TextToSpeechOutput,
} from '../../src/pipelines/audio/text-to-speech.ts';
import { InputError } from '../../src/errors.ts';
import { compareDeep } from './compare.ts';
import { modelPath, readGoldens, type GoldenCase } from './goldens.ts';
import { forPipeline, parityCase, tokenizerCase } from './parity-case.ts';
import { useModelStore } from './store.ts';
import { asPython as asPythonShape } from './python-output.ts';

const MODEL = 'speecht5-text-to-speech';
const load = useModelStore();

interface SpeechGoldens {
  speaker_embeddings: number[];
  tokenizer_ids: { text: string; input_ids: number[] }[];
  spectrograms: { inputs: string; frames: number }[];
  errors: { name: string; call: { inputs: string; options: TextToSpeechOptions }; error: string }[];
  batch: {
    inputs: string[];
    options: TextToSpeechOptions;
    frames_alone: number[];
    frames_batched: number[];
    pipeline_batch_size_2_audio_lengths: number[];
  }[];
}
const goldens = readGoldens(MODEL) as unknown as ReturnType<typeof readGoldens> & SpeechGoldens;

type Call = GoldenCase['call'] & { speaker_embeddings: number[] | null };

async function pipelineFor(
  options: TextToSpeechOptions = {},
  task = 'textToSpeech',
): Promise<TextToSpeechPipeline> {
  return new TextToSpeechPipeline(task, await load(MODEL), options);
}

/** Python's output shape: the WAV decoded back to its samples. */
async function asPython(outputs: TextToSpeechOutput[]): Promise<unknown[]> {
  return Promise.all(
    outputs.map(async (output) => {
      // The route's Python shape, its WAV decoded to the samples Python's array holds.
      const shaped = asPythonShape('textToSpeech', output) as {
        audio: Uint8Array;
        sampling_rate: number;
      };
      const decoded = await decodeAudio(shaped.audio, 'audio');
      expect(decoded.samplingRate).toBe(shaped.sampling_rate);
      expect(decoded.channels).toHaveLength(1);
      return { ...shaped, audio: Array.from(decoded.channels[0] ?? []) };
    }),
  );
}

function inputsOf(call: Call): TextToSpeechInput[] {
  const texts = call.inputs as string[];
  const speaker = call.speaker_embeddings;
  // A case with its own speaker gives it per record; the others use the folder's default file.
  return speaker === null ? texts : texts.map((text) => ({ text, speakerEmbeddings: speaker }));
}

describe('textToSpeech', forPipeline('textToSpeech'), () => {
  describe('tokenizer.json splits as SpeechT5Tokenizer (SentencePiece char model)', () => {
    for (const golden of goldens.tokenizer_ids) {
      const options = tokenizerCase(MODEL, [golden.text, golden.input_ids]);
      it(JSON.stringify(golden.text.slice(0, 40)), options, async () => {
        const model = await load(MODEL);
        const [encoded] =
          (await model.tokenizer?.encode([golden.text], { truncation: false })) ?? [];
        expect(encoded?.ids).toEqual(golden.input_ids);
      });
    }
  });

  describe('pipeline', () => {
    for (const golden of goldens.pipeline) {
      parityCase(golden, async ({ call }) => {
        const pipeline = await pipelineFor(call.options);
        return asPython(await pipeline.run(inputsOf(call as Call)));
      });
    }
  });

  describe('a batch answers each text as alone', () => {
    const defaults = goldens.pipeline.find((g) => g.name === 'defaults');
    if (defaults === undefined) throw new Error('the goldens have no defaults case');
    parityCase(
      defaults,
      async ({ call }) => {
        // Reversed, with the first text twice: Python's pipeline runs each alone (batch_size 1).
        const texts = call.inputs as string[];
        const out = await (await pipelineFor()).run([...texts].reverse().concat(texts.slice(-1)));
        expect(out.at(-1)).toEqual(out.at(0));
        return asPython(out.slice(0, -1).reverse());
      },
      { rerun: true },
    );
  });

  it('stops each text where generate() does alone, also where a Python batch would not', async () => {
    // In a batch Python takes max length from the padded text: the shorter text runs longer
    // there (frames_batched); every text here stops where it stops alone (frames_alone).
    for (const batch of goldens.batch) {
      const pipeline = await pipelineFor(batch.options);
      const frames = await Promise.all(batch.inputs.map((t) => pipeline.synthesize(t)));
      expect(frames.map((f) => f.frames)).toEqual(batch.frames_alone);
    }
    const quirk = goldens.batch.find((b) => b.options.maxlenratio !== undefined);
    expect(quirk?.frames_batched).not.toEqual(quirk?.frames_alone);
    const pipeline = await pipelineFor();
    for (const spectrogram of goldens.spectrograms)
      expect((await pipeline.synthesize(spectrogram.inputs)).frames).toBe(spectrogram.frames);
  });

  describe('fails where Python fails', () => {
    for (const golden of goldens.errors) {
      it(`${golden.name} (Python: ${golden.error.slice(0, 60)})`, async () => {
        const pipeline = await pipelineFor(golden.call.options);
        const run = pipeline.run([golden.call.inputs]);
        await expect(run).rejects.toBeInstanceOf(InputError);
        await expect(run).rejects.toThrow(
          golden.name.startsWith('text')
            ? /tokens and SpeechT5 reads at most 64 \(max_text_positions\)/
            : /did not stop within 256 frames \(max_speech_positions\)/,
        );
      });
    }
  });

  it('takes the speaker from a record, the option, or the folder, and checks its size', async () => {
    const text = 'Hello there.';
    const own = goldens.pipeline.find((g) => g.name === 'other_speaker');
    const speaker = (own?.call as Call).speaker_embeddings ?? [];
    const [byRecord] = await (await pipelineFor()).run([{ text, speakerEmbeddings: speaker }]);
    const [byOption] = await (await pipelineFor({ speakerEmbeddings: speaker })).run([text]);
    const [byFolder] = await (await pipelineFor()).run([text]);
    expect(byOption).toEqual(byRecord);
    expect(byFolder).not.toEqual(byRecord);
    await expect(
      (await pipelineFor()).run([{ text, speakerEmbeddings: [1, 2, 3] }]),
    ).rejects.toThrow(/3 values and the model takes 8 \(speaker_embedding_dim\)/);
  });

  it('pcm16 WAV holds the float32 samples rounded to 1/32768', async () => {
    const text = (goldens.pipeline[0]?.call.inputs as string[])[0] ?? '';
    const [float] = await (await pipelineFor()).run([text]);
    const [pcm] = await (await pipelineFor({ wavFormat: 'pcm16' })).run([text]);
    expect(pcm?.audio.length).toBeLessThan((float?.audio.length ?? 0) * 0.6);
    const [a, b] = (await asPython([float, pcm] as TextToSpeechOutput[])) as { audio: number[] }[];
    expect(compareDeep(b?.audio, a?.audio, 1 / 32768).differences).toEqual([]);
  });
});

describe('textToSpeech over a merged decoder', forPipeline('textToSpeech'), () => {
  // Most published SpeechT5 exports ship decoder_model_merged.onnx (one graph, switched by
  // use_cache_branch) instead of the two decoders: the fixture's merged/ holds the two merged
  // as Optimum merges them, swapped in here for the pair.
  const merged = scratchDir('tts-merged');
  const defaults = goldens.pipeline.find((g) => g.name === 'defaults');
  if (defaults === undefined) throw new Error('the goldens have no defaults case');
  parityCase(
    defaults,
    async ({ call }) => {
      const source = modelPath(MODEL);
      for (const name of await readdir(source)) {
        if (name.startsWith('decoder_model') || name.startsWith('decoder_with_past')) continue;
        await symlink(
          join(source, name === 'merged' ? 'merged/decoder_model_merged.onnx' : name),
          merged.file(name === 'merged' ? 'decoder_model_merged.onnx' : name),
        );
      }
      const store = new ModelStore();
      try {
        const model = await store.load({ path: merged.path });
        expect([...model.sessions.keys()]).toContain('decoder_model_merged');
        const pipeline = new TextToSpeechPipeline('textToSpeech', model);
        expect(pipeline.layout.merged).toBe(true);
        return await asPython(await pipeline.run(inputsOf(call as Call)));
      } finally {
        await store.close();
      }
    },
    { rerun: true },
  );
});

describe('textToAudio', forPipeline('textToAudio'), () => {
  // Python's text-to-audio task is the same TextToAudioPipeline; so is this one.
  for (const golden of goldens.pipeline.filter((g) => g.name !== 'other_speaker')) {
    parityCase({ ...golden, task: 'textToAudio' }, async ({ call }) => {
      const pipeline = await pipelineFor(call.options, 'textToAudio');
      return asPython(await pipeline.run(inputsOf(call as Call)));
    });
  }
});
