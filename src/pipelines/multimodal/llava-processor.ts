// LlavaProcessor's side of image-text-to-text: the image through the CLIP image processor
// (preprocessor_config.json), the chat template with image parts (the processor's
// chat_template.jinja), and each `<image>` placeholder expanded to one token per image feature,
// as Python's processor rewrites the prompt before tokenizing it.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { InputError, ModelFolderError } from '../../errors.ts';
import { ChatTemplate } from '../generation/chat-template.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import type { TextTokenizer } from '../runtime/text-tokenizer.ts';
import { compilePreprocessor, type ImagePreprocessor } from '../vision/image-preprocess.ts';

export interface LlavaProcessor {
  image: ImagePreprocessor;
  imageToken: string;
  imageTokenId: number;
  patchSize: number;
  /** Positions the vision tower adds to the patches (CLIP's CLS: 1). */
  additionalImageTokens: number;
  /** vision_feature_select_strategy 'default': the CLS position is dropped from the features. */
  dropsCls: boolean;
  chatTemplate: ChatTemplate | undefined;
}

type Json = Record<string, unknown>;

async function readJson(folder: string, name: string): Promise<Json | undefined> {
  const text = await readFile(join(folder, name), 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as Json;
  } catch (cause) {
    throw new ModelFolderError(`${folder}/${name} is not valid JSON`, { cause, field: name });
  }
}

/** Reads the processor's files: processor_config.json (transformers 5) over config.json. */
export async function loadLlavaProcessor(
  model: LoadedModel,
  tokenizer: TextTokenizer,
): Promise<LlavaProcessor> {
  const { folder } = model;
  const processor = (await readJson(folder, 'processor_config.json')) ?? {};
  const nested = processor['image_processor'];
  const imageConfig =
    model.preprocessor ??
    (typeof nested === 'object' && nested !== null ? (nested as Json) : undefined);
  const raw = model.config.raw;
  const vision = (raw['vision_config'] ?? {}) as Json;
  const patchSize = processor['patch_size'] ?? vision['patch_size'];
  if (typeof patchSize !== 'number' || !Number.isInteger(patchSize) || patchSize < 1)
    throw new ModelFolderError(
      `${folder}: processor_config.json (or config.json vision_config) must give patch_size, a positive integer`,
      { field: 'patch_size' },
    );
  const imageToken =
    typeof processor['image_token'] === 'string' ? processor['image_token'] : '<image>';
  const imageTokenId = tokenizer.tokenId(imageToken);
  if (imageTokenId === undefined)
    throw new ModelFolderError(`${folder}: the tokenizer has no image token ${imageToken}`, {
      field: 'image_token',
    });
  const strategy =
    processor['vision_feature_select_strategy'] ?? raw['vision_feature_select_strategy'];
  const additional = processor['num_additional_image_tokens'] ?? 0;
  return {
    image: compilePreprocessor(imageConfig, folder),
    imageToken,
    imageTokenId,
    patchSize,
    // Python's default when the processor config leaves it out is 0.
    additionalImageTokens: typeof additional === 'number' ? additional : 0,
    dropsCls: strategy === 'default',
    chatTemplate: await readChatTemplate(folder, processor, tokenizer),
  };
}

/** Where processors keep the template, newest layout first; the tokenizer's as a last resort. */
async function readChatTemplate(
  folder: string,
  processor: Json,
  tokenizer: TextTokenizer,
): Promise<ChatTemplate | undefined> {
  const jinja = await readFile(join(folder, 'chat_template.jinja'), 'utf8').catch(() => undefined);
  if (jinja !== undefined)
    return ChatTemplate.fromSource(jinja, tokenizer, `${folder}/chat_template.jinja`);
  const json = await readJson(folder, 'chat_template.json');
  if (typeof json?.['chat_template'] === 'string')
    return ChatTemplate.fromSource(
      json['chat_template'],
      tokenizer,
      `${folder}/chat_template.json`,
    );
  if (typeof processor['chat_template'] === 'string')
    return ChatTemplate.fromSource(
      processor['chat_template'],
      tokenizer,
      `${folder}/processor_config.json`,
    );
  return ChatTemplate.fromTokenizer(tokenizer);
}

/** LlavaProcessor.replace_image_token: the feature count of an image of this (processed) size. */
export function imageTokenCount(p: LlavaProcessor, height: number, width: number): number {
  const patches = Math.floor(height / p.patchSize) * Math.floor(width / p.patchSize);
  return patches + p.additionalImageTokens - (p.dropsCls ? 1 : 0);
}

/**
 * The prompt with its one `<image>` placeholder repeated `count` times. Python would fail later,
 * inside the model, on a prompt whose placeholders do not match its images; this says so first.
 */
export function expandImageToken(
  p: LlavaProcessor,
  prompt: string,
  count: number,
  field: string,
): string {
  const pieces = prompt.split(p.imageToken);
  if (pieces.length !== 2)
    throw new InputError(
      `imageTextToText: ${field} must hold the image placeholder ${p.imageToken} exactly once ` +
        `(one image per input), and it holds it ${pieces.length - 1} times`,
      { field },
    );
  return pieces.join(p.imageToken.repeat(count));
}
