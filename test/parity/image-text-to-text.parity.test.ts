// imageTextToText against Python's image-text-to-text pipeline on the tiny Llava fixture
// (scripts/models/kit/llava.py): greedy tokens identical to generate()'s, the text equal to the
// pipeline's generated_text, alone, in a batch of every case, and in Python's own left-padded batch.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ImageTextToTextPipeline,
  type ImageTextToTextInput,
} from '../../src/pipelines/multimodal/image-text-to-text.ts';
import { modelPath, readGoldens, type GoldenCase } from './goldens.ts';
import { pixelValueCases } from './image-goldens.ts';
import { forPipeline, GOLDEN, parityCase } from './parity-case.ts';
import { useModelStore } from './store.ts';
import { asPython } from './python-output.ts';

const MODEL = 'llava-image-text-to-text';
const load = useModelStore();

interface LlavaCase extends GoldenCase {
  prompt_ids: number[] | number[][];
  new_ids: number[] | number[][];
}

const cases = readGoldens(MODEL).pipeline as LlavaCase[];
const single = cases.filter((c) => !Array.isArray(c.call.inputs));
const batch = cases.find((c) => c.name === 'batch_left_padded') as LlavaCase;
const EOS = 2;

function inputOf(raw: unknown): ImageTextToTextInput {
  const { image, ...rest } = raw as { image: string } & Record<string, unknown>;
  return { image: join(modelPath(MODEL), image), ...rest } as ImageTextToTextInput;
}

function optionsOf(golden: GoldenCase): { maxNewTokens: number; doSample: boolean } {
  const { max_new_tokens: maxNewTokens, do_sample: doSample } = golden.call.options as {
    max_new_tokens: number;
    do_sample: boolean;
  };
  return { maxNewTokens, doSample };
}

/** generate()'s new tokens of a row up to and with its EOS; padding after it dropped. */
function untilEos(ids: readonly number[]): number[] {
  const at = ids.indexOf(EOS);
  return at < 0 ? [...ids] : ids.slice(0, at + 1);
}

/** What the pipeline must return for a case alone: Python's text, generate()'s tokens. */
function expected(golden: LlavaCase): unknown {
  const [output] = golden.output as { generated_text: string }[];
  return {
    generatedText: output?.generated_text,
    tokenIds: untilEos(golden.new_ids as number[]),
    promptTokens: (golden.prompt_ids as number[]).length,
  };
}

const picked = (r: { generatedText: string; tokenIds: number[]; promptTokens: number }) => ({
  generatedText: r.generatedText,
  tokenIds: r.tokenIds,
  promptTokens: r.promptTokens,
});

describe('imageTextToText', forPipeline('imageTextToText'), () => {
  describe("the route's Python shape, key for key (return_full_text=False, as the goldens)", () => {
    // Python's chat carries the image inside its image part (`url`); a record carries it beside
    // the messages, in `image`, and its input_text is the messages as the record gave them.
    const withoutUrls = (output: unknown): unknown =>
      JSON.parse(JSON.stringify(output), (key, value: unknown) =>
        key === 'url' ? undefined : value,
      );
    for (const golden of single) {
      parityCase(
        { ...golden, output: withoutUrls(golden.output) },
        async () => {
          const pipeline = new ImageTextToTextPipeline(await load(MODEL), optionsOf(golden));
          const [result] = await pipeline.run([inputOf(golden.call.inputs)]);
          return asPython('imageTextToText', result, {
            input: golden.call.inputs,
            returnFullText: false,
          });
        },
        { rerun: true },
      );
    }
  });

  describe('pipeline, one input at a time', () => {
    for (const golden of single) {
      parityCase({ ...golden, output: expected(golden) }, async () => {
        const pipeline = new ImageTextToTextPipeline(await load(MODEL), optionsOf(golden));
        const [result] = await pipeline.run([inputOf(golden.call.inputs)]);
        return result === undefined ? undefined : picked(result);
      });
    }
  });

  describe("prompts equal the processor's: template, placeholder expansion, special tokens", () => {
    for (const golden of single) {
      it(golden.name, GOLDEN, async () => {
        const pipeline = new ImageTextToTextPipeline(await load(MODEL));
        const [prompt] = await pipeline.prompts([inputOf(golden.call.inputs)]);
        const rendered = (golden as LlavaCase & { rendered?: string }).rendered;
        expect(prompt?.text).toBe(rendered ?? (golden.call.inputs as { text: string }).text);
        expect(prompt?.ids).toEqual(golden.prompt_ids);
      });
    }
  });

  describe('batches', () => {
    parityCase(
      {
        name: 'every single case in one left-padded batch',
        task: 'image-text-to-text',
        call: { inputs: single.map((g) => g.call.inputs), options: {} },
        output: single.map(expected),
      },
      async () => {
        const pipeline = new ImageTextToTextPipeline(await load(MODEL), optionsOf(single[0]!));
        const results = await pipeline.run(single.map((g) => inputOf(g.call.inputs)));
        return results.map(picked);
      },
      { rerun: true },
    );

    it("Python's left-padded batch: generate()'s tokens per row", GOLDEN, async () => {
      const pipeline = new ImageTextToTextPipeline(await load(MODEL), optionsOf(batch));
      const inputs = batch.call.inputs as unknown[];
      const results = await pipeline.run(inputs.map(inputOf));
      expect(results.map((r) => r.tokenIds)).toEqual(
        (batch.new_ids as number[][]).map((row) => untilEos(row)),
      );
      expect(results.map((r) => r.promptTokens)).toEqual(
        (batch.prompt_ids as number[][]).map((row) => row.length),
      );
      expect(results.map((r) => r.finishReason)).toEqual(
        (batch.new_ids as number[][]).map((row) => (row.includes(EOS) ? 'eos' : 'length')),
      );
    });
  });

  it('samples each row as it would alone: a seed gives the same tokens alone and in a batch', async () => {
    const pipeline = new ImageTextToTextPipeline(await load(MODEL), {
      maxNewTokens: 8,
      seed: 7,
      temperature: 1.5,
    });
    const inputs = single.map((g) => inputOf(g.call.inputs));
    const together = await pipeline.run(inputs);
    const alone = await Promise.all(inputs.map(async (i) => (await pipeline.run([i]))[0]));
    expect(together.map((r) => r.tokenIds)).toEqual(alone.map((r) => r?.tokenIds));
    // Sampling at this temperature leaves the greedy path somewhere.
    const greedy = single.map((g) => untilEos(g.new_ids as number[]));
    expect(
      together.some((r, i) => r.tokenIds.join() !== greedy[i]?.slice(0, r.tokenIds.length).join()),
    ).toBe(true);
  });

  describe("pixel values equal CLIPImageProcessor's", () => {
    pixelValueCases(MODEL, load);
  });
});
