// The three graphs of a vision-language decoder (transformers.js's layout): vision_encoder
// (pixel_values -> image_features), embed_tokens (input_ids -> inputs_embeds) and
// decoder_model_merged, a causal decoder over inputs_embeds with the KV cache of kv-cache.ts.
// The prompt's embeddings get the image features on its image-token positions, in order, as
// Python's masked_scatter puts them; every later step embeds the chosen tokens alone.
import { Tensor } from '../../runtime/tensor.ts';
import type { OrtSession } from '../../runtime/session.ts';
import { InferenceError, InputError, ModelFolderError } from '../../errors.ts';
import {
  advance,
  kvLayoutOf,
  hostFeeds,
  stepFeeds,
  type KvLayout,
  type KvState,
  type StepResult,
  type StepTokens,
} from '../generation/kv-cache.ts';
import { floatData } from '../../runtime/half-float.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import type { Feeds } from '../runtime/tensors.ts';

export const VISION_ENCODER = 'vision_encoder';
export const EMBED_TOKENS = 'embed_tokens';
export const DECODER = 'decoder_model_merged';

/** A counted session run (the pipeline's `infer`). */
export type RunSession = (
  session: OrtSession,
  feeds: Feeds,
  outputNames: readonly string[],
) => Promise<Record<string, Tensor>>;

export interface VlmGraphs {
  vision: OrtSession;
  embed: OrtSession;
  decoder: OrtSession;
  layout: KvLayout;
}

export function vlmGraphsOf(model: LoadedModel): VlmGraphs {
  const get = (name: string): OrtSession => {
    const session = model.sessions.get(name);
    if (session === undefined)
      throw new ModelFolderError(
        `${model.folder} has no ${name}.onnx; a vision-language model needs ${VISION_ENCODER}.onnx, ` +
          `${EMBED_TOKENS}.onnx and ${DECODER}.onnx`,
        { field: 'path' },
      );
    return session;
  };
  const decoder = get(DECODER);
  if (model.session !== decoder)
    throw new ModelFolderError(`${model.folder}: ${DECODER}.onnx must be the main graph`, {
      field: 'onnxFile',
    });
  for (const [name, input] of [
    [VISION_ENCODER, 'pixel_values'],
    [EMBED_TOKENS, 'input_ids'],
    [DECODER, 'inputs_embeds'],
  ] as const)
    if (!get(name).inputNames.includes(input))
      throw new ModelFolderError(`${model.folder}/${name}.onnx has no input ${input}`, {
        field: 'path',
      });
  return {
    vision: get(VISION_ENCODER),
    embed: get(EMBED_TOKENS),
    decoder,
    layout: kvLayoutOf(model),
  };
}

/** Rows of equal length as embeddings: [rows * width * hidden] and the hidden size. */
export interface Embeddings {
  data: Float32Array;
  hidden: number;
}

export async function embedTokens(
  run: RunSession,
  graphs: VlmGraphs,
  ids: readonly (readonly number[])[],
): Promise<Embeddings> {
  const width = ids[0]?.length ?? 0;
  const flat = new BigInt64Array(ids.length * width);
  ids.forEach((row, r) => row.forEach((id, c) => (flat[r * width + c] = BigInt(id))));
  const outputs = await run(
    graphs.embed,
    { input_ids: new Tensor('int64', flat, [ids.length, width]) },
    ['inputs_embeds'],
  );
  const tensor = outputs['inputs_embeds'];
  if (tensor === undefined) throw new InferenceError(`${EMBED_TOKENS} returned no inputs_embeds`);
  return { data: floatData(tensor, 'inputs_embeds'), hidden: tensor.dims[2] ?? 0 };
}

/** Each image's features, [image tokens * hidden], from one run over same-size images. */
export async function encodeImages(
  run: RunSession,
  graphs: VlmGraphs,
  pixels: Tensor,
): Promise<Float32Array[]> {
  const name = graphs.vision.outputNames[0] ?? 'image_features';
  const outputs = await run(graphs.vision, { pixel_values: pixels }, [name]);
  const tensor = outputs[name];
  if (tensor === undefined) throw new InferenceError(`${VISION_ENCODER} returned no ${name}`);
  const data = floatData(tensor, name);
  const per = data.length / (tensor.dims[0] ?? 1);
  return Array.from({ length: tensor.dims[0] ?? 0 }, (_, i) => data.slice(i * per, (i + 1) * per));
}

/**
 * Puts each row's image features on its image-token positions, in order. The counts must match,
 * as Python's get_placeholder_mask demands.
 */
export function scatterImageFeatures(
  embeds: Embeddings,
  ids: readonly (readonly number[])[],
  imageTokenId: number,
  features: readonly Float32Array[],
  fields: readonly string[],
): void {
  const { hidden, data } = embeds;
  const width = ids[0]?.length ?? 0;
  ids.forEach((row, r) => {
    const rowFeatures = features[r] ?? new Float32Array(0);
    let next = 0;
    row.forEach((id, c) => {
      if (id !== imageTokenId) return;
      if ((next + 1) * hidden <= rowFeatures.length)
        data.set(
          rowFeatures.subarray(next * hidden, (next + 1) * hidden),
          (r * width + c) * hidden,
        );
      next += 1;
    });
    if (next * hidden !== rowFeatures.length)
      throw new InputError(
        `imageTextToText: ${fields[r] ?? `inputs[${r}]`} has ${next} image tokens but the image ` +
          `gives ${rowFeatures.length / hidden} features`,
        { field: fields[r] ?? `inputs[${r}]` },
      );
  });
}

/** One decoder step over embeddings: kv-cache.ts's feeds with inputs_embeds for input_ids. */
export async function decoderStep(
  run: RunSession,
  graphs: VlmGraphs,
  state: KvState,
  tokens: StepTokens,
  embeds: Embeddings,
): Promise<StepResult> {
  const { layout } = graphs;
  const feeds = hostFeeds(stepFeeds(layout, state, tokens));
  delete feeds['input_ids'];
  const width = tokens.ids[0]?.length ?? 0;
  feeds['inputs_embeds'] = new Tensor('float32', embeds.data, [state.batch, width, embeds.hidden]);
  const outputs = await run(graphs.decoder, feeds, [layout.logitsName, ...layout.presentNames]);
  const logits = outputs[layout.logitsName];
  if (logits === undefined)
    throw new InferenceError(`the decoder returned no '${layout.logitsName}'`);
  const data = floatData(logits, layout.logitsName);
  const [batch = 0, seq = 0, vocab = 0] = logits.dims;
  const last = Array.from({ length: batch }, (_, r) =>
    data.slice((r * seq + seq - 1) * vocab, (r * seq + seq) * vocab),
  );
  return { logits: last, state: advance(layout, state, tokens, outputs) };
}
