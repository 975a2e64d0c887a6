import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  compileViltPreprocessor,
  viltPreprocessorFor,
} from '../../src/pipelines/multimodal/vilt-preprocess.ts';
import {
  VisualQuestionAnsweringPipeline,
  type VisualQuestionAnsweringInput,
} from '../../src/pipelines/multimodal/visual-question-answering.ts';
import { decodeImage } from '../../src/pipelines/vision/image-decode.ts';
import { preprocessImage } from '../../src/pipelines/vision/image-preprocess.ts';
import { compareDeep } from './compare.ts';
import { modelPath, readGoldens, type GoldenCase } from './goldens.ts';
import { float32FromBase64, preprocessingGoldens } from './image-goldens.ts';
import { forPipeline, GOLDEN, parityCase } from './parity-case.ts';
import { useModelStore } from './store.ts';

const MODEL = 'vilt-visual-question-answering';
const load = useModelStore();
const goldens = readGoldens(MODEL).pipeline;

/** The golden's input with its image as a path in the model folder. */
function inputOf(golden: GoldenCase): VisualQuestionAnsweringInput {
  const { image, question } = golden.call.inputs as { image: string; question: string };
  return { image: join(modelPath(MODEL), image), question };
}

function optionsOf(golden: GoldenCase): { topK?: number; truncation?: boolean } {
  const { top_k: topK, truncation } = golden.call.options as {
    top_k?: number;
    truncation?: boolean;
  };
  return {
    ...(topK !== undefined ? { topK } : {}),
    ...(truncation !== undefined ? { truncation } : {}),
  };
}

describe('visualQuestionAnswering', forPipeline('visualQuestionAnswering'), () => {
  describe('pipeline', () => {
    for (const golden of goldens) {
      parityCase(golden, async () => {
        const pipeline = new VisualQuestionAnsweringPipeline(await load(MODEL), optionsOf(golden));
        const [answers] = await pipeline.run([inputOf(golden)]);
        return answers;
      });
    }
  });

  describe("pixel values equal ViLT's image processor", () => {
    for (const golden of preprocessingGoldens(MODEL)) {
      it(golden.image, GOLDEN, async ({ task }) => {
        const model = await load(MODEL);
        const image = await decodeImage(join(modelPath(MODEL), golden.image), 'image');
        const vilt = compileViltPreprocessor(model.preprocessor, model.folder);
        const pixels = preprocessImage(image, viltPreprocessorFor(vilt, image.height, image.width));
        expect([3, pixels.height, pixels.width]).toEqual(golden.shape);
        expect(golden.pixel_mask_ones).toBe(pixels.height * pixels.width);
        const expected = float32FromBase64(golden.pixel_values_f32le_base64);
        const comparison = compareDeep(Array.from(pixels.data), Array.from(expected), 1e-6);
        task.meta.maxAbsDiff = comparison.maxAbsDiff;
        expect(comparison.differences).toEqual([]);
      });
    }
  });

  describe('batches', () => {
    // Python runs one input at a time; ours share runs by image size with padded questions.
    const defaults = goldens.filter((g) => Object.keys(g.call.options).length === 0);
    parityCase(
      {
        name: 'every default case in one batch',
        task: 'visual-question-answering',
        call: { inputs: defaults.map((g) => g.call.inputs), options: {} },
        output: defaults.map((g) => g.output),
      },
      async () => {
        const pipeline = new VisualQuestionAnsweringPipeline(await load(MODEL));
        return pipeline.run(defaults.map(inputOf));
      },
      { rerun: true },
    );

    it('gives each input the answers it gets alone, whatever its batch mates', async () => {
      const pipeline = new VisualQuestionAnsweringPipeline(await load(MODEL), { topK: 12 });
      const inputs = defaults.map(inputOf);
      const alone = await Promise.all(
        inputs.map(async (input) => (await pipeline.run([input]))[0]),
      );
      const reversed = (await pipeline.run([...inputs].reverse())).reverse();
      const comparison = compareDeep(reversed, alone, 1e-5);
      expect(comparison.differences).toEqual([]);
    });
  });
});
