// imageToText against goldens from Python's generate(), called as transformers 4.x's
// image-to-text pipeline called it for a VisionEncoderDecoder (scripts/models/kit/image_to_text.py):
// the pipeline's outputs one image at a time and again as one batch, token ids of a batch, and the
// pixel values of the image processor.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ImageToTextPipeline,
  type ImageToTextOptions,
} from '../../src/pipelines/multimodal/image-to-text.ts';
import { modelPath, readGoldens } from './goldens.ts';
import { pixelValueCases } from './image-goldens.ts';
import { forPipeline, GOLDEN, parityCase } from './parity-case.ts';
import { useModelStore } from './store.ts';
import { asPython } from './python-output.ts';

const MODEL = 'vit-gpt2-image-to-text';
const load = useModelStore();
const goldens = readGoldens(MODEL);
const generation = (
  goldens as unknown as {
    generation: {
      name: string;
      inputs: string[];
      options: PythonOptions;
      output_ids: number[][];
    }[];
  }
).generation;

interface PythonOptions {
  max_new_tokens?: number;
  num_beams?: number;
  do_sample?: boolean;
  length_penalty?: number;
  early_stopping?: boolean | 'never';
  repetition_penalty?: number;
}

function options(python: PythonOptions): ImageToTextOptions {
  const ours: ImageToTextOptions = {};
  if (python.max_new_tokens !== undefined) ours.maxNewTokens = python.max_new_tokens;
  if (python.num_beams !== undefined) ours.numBeams = python.num_beams;
  if (python.do_sample !== undefined) ours.doSample = python.do_sample;
  if (python.length_penalty !== undefined) ours.lengthPenalty = python.length_penalty;
  if (python.early_stopping !== undefined) ours.earlyStopping = python.early_stopping;
  if (python.repetition_penalty !== undefined) ours.repetitionPenalty = python.repetition_penalty;
  return ours;
}

const paths = (inputs: unknown): string[] =>
  (inputs as string[]).map((p) => join(modelPath(MODEL), p));

/** generate()'s rows without the decoder start token and the padding after an ended row. */
function generated(row: readonly number[], eos: number): number[] {
  const ids = row.slice(1);
  const end = ids.indexOf(eos);
  return end < 0 ? ids : ids.slice(0, end + 1);
}

describe('imageToText', forPipeline('imageToText'), () => {
  describe('pipeline, one image at a time as Python', () => {
    for (const golden of goldens.pipeline) {
      parityCase(golden, async ({ call }) => {
        const pipeline = new ImageToTextPipeline(await load(MODEL), options(call.options));
        const outputs = [];
        for (const path of paths(call.inputs)) {
          const [output] = await pipeline.run([path]);
          outputs.push(asPython('imageToText', output));
        }
        return outputs;
      });
    }
  });

  describe('pipeline, the images as one batch', () => {
    for (const golden of goldens.pipeline) {
      parityCase(
        golden,
        async ({ call }) => {
          const pipeline = new ImageToTextPipeline(await load(MODEL), options(call.options));
          const outputs = await pipeline.run(paths(call.inputs));
          return outputs.map((o) => asPython('imageToText', o));
        },
        { rerun: true },
      );
    }
  });

  describe('token ids of a batch equal generate()', () => {
    for (const golden of generation) {
      it(golden.name, GOLDEN, async () => {
        const model = await load(MODEL);
        const pipeline = new ImageToTextPipeline(model, options(golden.options));
        const eos = model.config.eosTokenIds[0] ?? -1;
        const ids = await pipeline.generateIds(paths(golden.inputs));
        expect(ids).toEqual(golden.output_ids.map((row) => generated(row, eos)));
      });
    }
  });

  describe('pixel values equal the Python image processor', () => {
    pixelValueCases(MODEL, load);
  });

  it('refuses options that only text inputs have, naming the field', async () => {
    const model = await load(MODEL);
    expect(() => new ImageToTextPipeline(model, { truncation: true } as never)).toThrow(
      /truncation/,
    );
  });
});
