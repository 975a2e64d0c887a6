// Image-text-to-text as Python's pipeline runs a Llava-style model: the prompt (a text with one
// `<image>` placeholder, or chat messages with image and text parts rendered by the processor's
// chat template), the placeholder expanded to one token per image feature, the image through the
// vision encoder, and greedy decoding or sampling over the decoder with its KV cache. A batch is
// left-padded and decoded together; each row ends on its own (EOS, maxNewTokens, a stop sequence).
import type { z } from 'zod';
import { InputError } from '../../errors.ts';
import { BasePipeline } from '../base-pipeline.ts';
import type { ContentPart, PartsMessage } from '../generation/chat-template.ts';
import {
  generationOptionsSchema,
  readGenerationDefaults,
  resolveSettings,
  type GenerationDefaults,
  type GenerationSettings,
  type ParsedGenerationOptions,
} from '../generation/generation-options.ts';
import { GenerationProgress, type FinishReason } from '../generation/generation-progress.ts';
import { emptyKvState, leftPad, type StepTokens } from '../generation/kv-cache.ts';
import type { GenerationCohort, StepwiseGenerator } from '../generation/stepwise.ts';
import { cleanUpTokenization, textGenerationTask } from '../generation/text-generation.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import { isObject, UNIT_COST, type InputCheck, type TaskDefinition } from '../task-definition.ts';
import { imageFeeds, sameSizeGroups, type PreparedImage } from '../vision/image-batch.ts';
import { decodeImage, type ImageInput } from '../vision/image-decode.ts';
import { preprocessImage } from '../vision/image-preprocess.ts';
import {
  expandImageToken,
  imageTokenCount,
  loadLlavaProcessor,
  type LlavaProcessor,
} from './llava-processor.ts';
import {
  decoderStep,
  embedTokens,
  encodeImages,
  scatterImageFeatures,
  vlmGraphsOf,
  type RunSession,
  type VlmGraphs,
} from './vlm-decoder.ts';
import { VlmCohortStepper } from './vlm-cohort.ts';
import { fullText, generatedText } from '../python-output.ts';
import { readySchema } from '../../options/lazy-schema.ts';

// textGeneration's decoding options; a response format and a system prompt are text-chat matters.
export const imageTextToTextOptionsSchema = generationOptionsSchema.omit({
  responseFormat: true,
  systemPrompt: true,
});

export type ImageTextToTextOptions = z.input<typeof imageTextToTextOptionsSchema>;

/** An image with a prompt holding one `<image>`, or with chat messages holding one image part. */
export type ImageTextToTextInput =
  { image: ImageInput; text: string } | { image: ImageInput; messages: readonly PartsMessage[] };

export interface ImageTextToTextOutput {
  /** The generated text only (Python's return_full_text=False), without special tokens. */
  generatedText: string;
  /** Every generated token, the EOS token included when generation ended on one. */
  tokenIds: number[];
  finishReason: FinishReason;
  promptTokens: number;
  generatedTokens: number;
}

const TASK = 'imageTextToText';

interface Prepared {
  image: PreparedImage;
  prompt: string;
  /** The chat path tokenizes without special tokens when the template wrote the BOS itself. */
  addSpecialTokens: boolean;
}

/** One engine request, prepared: its image and its prompt's token ids. */
export interface PreparedRequest {
  prepared: Prepared;
  promptIds: number[];
}

export class ImageTextToTextPipeline
  extends BasePipeline<
    ImageTextToTextInput,
    ImageTextToTextOutput,
    typeof imageTextToTextOptionsSchema
  >
  implements StepwiseGenerator<PreparedRequest>
{
  readonly graphs: VlmGraphs;
  private processor: Promise<LlavaProcessor> | undefined;
  private defaults: Promise<GenerationDefaults> | undefined;

  constructor(model: LoadedModel, options: ImageTextToTextOptions = {}) {
    super(TASK, model, readySchema(imageTextToTextOptionsSchema), options);
    this.graphs = vlmGraphsOf(model);
  }

  protected async runBatch(
    inputs: readonly ImageTextToTextInput[],
  ): Promise<ImageTextToTextOutput[]> {
    const settings = await this.settings();
    const { processor, prepared, promptIds, fields } = await this.preparePrompts(inputs);
    const features = await this.imageFeatures(prepared);
    return this.generate(this.runner(), processor, promptIds, features, fields, settings);
  }

  async assertStepwise(): Promise<void> {
    await this.settings();
  }

  /** One request for the generative engine (stepwise.ts): its image and prompt ids. */
  async prepareInput(input: unknown): Promise<PreparedRequest> {
    const { prepared, promptIds } = await this.preparePrompts([input as ImageTextToTextInput]);
    return { prepared: prepared[0] as Prepared, promptIds: promptIds[0] ?? [] };
  }

  /** The prefill of a cohort: one vision run per image size, one left-padded prompt batch. */
  async startCohort(requests: readonly PreparedRequest[]): Promise<GenerationCohort> {
    this.processor ??= loadLlavaProcessor(this.model, this.tokenizer);
    const processor = await this.processor;
    const settings = await this.settings();
    const prompts = requests.map((r) => r.promptIds);
    const features = await this.imageFeatures(requests.map((r) => r.prepared));
    const tokens = leftPad(prompts, this.tokenizer.padId);
    const embeds = await embedTokens(this.runner(), this.graphs, tokens.ids);
    const fields = requests.map(() => 'input');
    scatterImageFeatures(embeds, tokens.ids, processor.imageTokenId, features, fields);
    return {
      decoder: new VlmCohortStepper(
        this.runner(),
        this.graphs,
        tokens,
        embeds,
        this.tokenizer.padId,
      ),
      progress: prompts.map((ids) => new GenerationProgress(ids, settings)),
      firstTokens: prompts.map(() => this.tokenizer.padId),
      promptTokens: prompts.map((ids) => ids.length),
    };
  }

  private runner(): RunSession {
    return (session, feeds, names) => this.infer(feeds, names, session);
  }

  private async imageFeatures(prepared: readonly Prepared[]): Promise<Float32Array[]> {
    const features = new Array<Float32Array>(prepared.length);
    for (const group of sameSizeGroups(prepared.map((p) => p.image))) {
      const { pixel_values: pixels } = imageFeeds(
        group.map((i) => (prepared[i] as Prepared).image),
        ['pixel_values'],
      );
      if (pixels === undefined) continue;
      const out = await encodeImages(this.runner(), this.graphs, pixels);
      group.forEach((index, k) => (features[index] = out[k] as Float32Array));
    }
    return features;
  }

  /**
   * The rendered prompt and its token ids per input, the image placeholder expanded, as Python's
   * processor hands them to generate().
   */
  async prompts(
    inputs: readonly ImageTextToTextInput[],
  ): Promise<{ text: string; ids: number[] }[]> {
    const { prepared, promptIds } = await this.preparePrompts(inputs);
    return prepared.map((p, i) => ({ text: p.prompt, ids: promptIds[i] ?? [] }));
  }

  private async preparePrompts(inputs: readonly ImageTextToTextInput[]): Promise<{
    processor: LlavaProcessor;
    prepared: Prepared[];
    promptIds: number[][];
    fields: string[];
  }> {
    this.processor ??= loadLlavaProcessor(this.model, this.tokenizer);
    const processor = await this.processor;
    const fields = inputs.map((_, i) => `inputs[${i}]`);
    const prepared = await Promise.all(
      inputs.map((input, i) => this.prepare(processor, input, fields[i] as string)),
    );
    const promptIds = await Promise.all(
      prepared.map(async (p, i) => {
        const count = imageTokenCount(processor, p.image.height, p.image.width);
        const at = `${fields[i] as string}.${'messages' in (inputs[i] as object) ? 'messages' : 'text'}`;
        const [e] = await this.encode([expandImageToken(processor, p.prompt, count, at)], {
          truncation: false,
          addSpecialTokens: p.addSpecialTokens,
        });
        return e?.ids ?? [];
      }),
    );
    return { processor, prepared, promptIds, fields };
  }

  private async generate(
    run: RunSession,
    processor: LlavaProcessor,
    prompts: readonly number[][],
    features: readonly Float32Array[],
    fields: readonly string[],
    settings: GenerationSettings,
  ): Promise<ImageTextToTextOutput[]> {
    const padId = this.tokenizer.padId;
    const progress = prompts.map((ids) => new GenerationProgress(ids, settings));
    const decode = (ids: readonly number[]): Promise<string> => this.decodeText(ids);
    let tokens: StepTokens = leftPad(prompts, padId);
    let embeds = await embedTokens(run, this.graphs, tokens.ids);
    scatterImageFeatures(embeds, tokens.ids, processor.imageTokenId, features, fields);
    let state = emptyKvState(this.graphs.layout, prompts.length);
    for (;;) {
      const step = await decoderStep(run, this.graphs, state, tokens, embeds);
      state = step.state;
      const next: number[] = [];
      for (const [r, p] of progress.entries()) {
        if (p.done) {
          // Python keeps finished rows in the batch, fed the pad token; no live row attends to them.
          next.push(padId);
          continue;
        }
        const { tokenId } = await p.accept(p.choose(step.logits[r] as Float32Array), decode);
        next.push(tokenId);
      }
      if (progress.every((p) => p.done)) break;
      tokens = { ids: next.map((id) => [id]) };
      embeds = await embedTokens(run, this.graphs, tokens.ids);
    }
    return progress.map((p) => {
      const { text, tokenIds, finishReason, promptTokens, generatedTokens } = p.result();
      return { generatedText: text, tokenIds, finishReason, promptTokens, generatedTokens };
    });
  }

  private async prepare(
    processor: LlavaProcessor,
    input: unknown,
    field: string,
  ): Promise<Prepared> {
    const example = toExample(input, field);
    const original = await decodeImage(example.image, `${field}.image`);
    const image = { original, ...preprocessImage(original, processor.image) };
    if ('text' in example) return { image, prompt: example.text, addSpecialTokens: true };
    const template = processor.chatTemplate;
    if (template === undefined)
      throw new InputError(
        `${TASK}: ${field}.messages need a chat template (chat_template.jinja) in ` +
          `${this.model.folder}, and it has none; send {image, text} instead`,
        { field: `${field}.messages` },
      );
    // As Python's pipeline: a chat ending in an assistant message is a prefill to continue.
    const continueFinal = example.messages[example.messages.length - 1]?.role === 'assistant';
    const prompt = template.renderParts(example.messages, {
      addGenerationPrompt: !continueFinal,
      continueFinalMessage: continueFinal,
    });
    const bos = this.tokenizer.special.bos;
    return {
      image,
      prompt,
      addSpecialTokens: bos === undefined || !prompt.startsWith(bos),
    };
  }

  private async settings(): Promise<GenerationSettings> {
    this.defaults ??= readGenerationDefaults(this.model);
    const options: ParsedGenerationOptions = {
      ...this.options,
      systemPrompt: undefined,
      responseFormat: undefined,
    };
    // Its decoding options are textGeneration's, so a generation_config key it refuses is named as theirs.
    return resolveSettings(options, await this.defaults, this.model, textGenerationTask.task);
  }

  /** Python's decode: no special tokens, and the tokenizer's own clean-up. */
  async decodeText(ids: readonly number[]): Promise<string> {
    const text = await this.tokenizer.decode(ids, true);
    return this.tokenizer.config['clean_up_tokenization_spaces'] === true
      ? cleanUpTokenization(text)
      : text;
  }
}

function toExample(input: unknown, field: string): ImageTextToTextInput {
  if (!isObject(input))
    throw new InputError(`${TASK}: ${field} must be {image, text} or {image, messages}`, {
      field,
    });
  if (input['image'] === undefined || input['image'] === null)
    throw new InputError(`${TASK}: ${field}.image is missing`, { field: `${field}.image` });
  const image = input['image'] as ImageInput;
  if (typeof input['text'] === 'string') return { image, text: input['text'] };
  const messages = input['messages'];
  if (Array.isArray(messages) && messages.length > 0)
    return {
      image,
      messages: messages.map((m: unknown, i) => toMessage(m, `${field}.messages[${i}]`)),
    };
  throw new InputError(
    `${TASK}: ${field} needs text (a prompt with one <image>) or messages (a non-empty array)`,
    { field },
  );
}

function toMessage(value: unknown, field: string): PartsMessage {
  if (isObject(value) && typeof value['role'] === 'string') {
    const { role, content } = value;
    if (typeof content === 'string') return { role, content };
    if (Array.isArray(content))
      return { role, content: content.map((p: unknown, i) => toPart(p, `${field}.content[${i}]`)) };
  }
  throw new InputError(
    `${TASK}: ${field} must be {role: string, content: string or [{type: 'image'} | {type: 'text', text}]}`,
    { field },
  );
}

function toPart(value: unknown, field: string): ContentPart {
  if (isObject(value) && value['type'] === 'image') return { type: 'image' };
  if (isObject(value) && value['type'] === 'text' && typeof value['text'] === 'string')
    return { type: 'text', text: value['text'] };
  throw new InputError(`${TASK}: ${field} must be {type: 'image'} or {type: 'text', text}`, {
    field,
  });
}

export const imageTextToTextTask: TaskDefinition = {
  needs: {
    tokenizer: true,
    preprocessor: true,
    graphs: [['decoder_model_merged', 'embed_tokens', 'vision_encoder']],
    cache: true,
  },
  task: TASK,
  execution: 'cohort',
  optionsSchema: imageTextToTextOptionsSchema,
  create: (model, options) => new ImageTextToTextPipeline(model, options as ImageTextToTextOptions),
  pythonOutput: (result, call) => {
    const record = isObject(call.input) ? call.input : {};
    const prompt = record['text'] ?? record['messages'];
    const text = generatedText(result, 'generatedText');
    return [{ input_text: prompt, generated_text: fullText(prompt, text, call.returnFullText) }];
  },
  // The route reads `image` itself (src/route/image-input.ts, held to the image limits); the
  // texts are held to limits.maxTextLength here.
  inputSchema(input: unknown, check: InputCheck): void {
    if (
      !isObject(input) ||
      !(typeof input['image'] === 'string' || input['image'] instanceof Uint8Array)
    )
      check.fail('{image, text} or {image, messages}: the image in base64 (or a path)');
    if (typeof input['text'] === 'string') return check.text(input['text'], `${check.field}.text`);
    const messages = input['messages'];
    if (!Array.isArray(messages) || messages.length === 0)
      check.fail('{image, text} or {image, messages}: text a string, messages a non-empty array');
    check.list(messages, `${check.field}.messages`);
    messages.forEach((m: unknown, i) => {
      const at = `${check.field}.messages[${i}].content`;
      const content = isObject(m) ? m['content'] : undefined;
      if (typeof content === 'string') check.text(content, at);
      else if (Array.isArray(content)) {
        check.list(content, at);
        content.forEach((p: unknown, j) => {
          if (isObject(p) && typeof p['text'] === 'string')
            check.text(p['text'], `${at}[${j}].text`);
        });
      }
    });
  },
  inputKind: 'imageText',
  cost: async (input, meter) =>
    isObject(input) && typeof input['text'] === 'string'
      ? { tokens: Math.min(await meter.length(input['text']), meter.maxTokens), rows: 1 }
      : UNIT_COST,
};
