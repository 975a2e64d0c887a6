// Which ONNX graphs of a model folder a model loads. Most folders hold one (model.onnx, or the one
// the spec names); a model that Optimum exports as several graphs is loaded whole, each graph as
// its own session named by its file (text_model, vision_model, ...).
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { ModelFolderError } from '../../errors.ts';

/**
 * Optimum's file names for models exported as several graphs; the first is the model's main
 * session (its inputs and outputs are the model's). Encoder–decoder exports are chosen apart
 * (encoderDecoder below): their decoder comes in variants of which one set is loaded.
 */
export const SPLIT_EXPORTS: readonly (readonly string[])[] = [
  // Two-tower models with separate towers (CLIP-style: clip-vision/-text-with-projection).
  ['vision_model', 'text_model'],
  // Segment Anything: the image encoder and the prompt encoder + mask decoder.
  ['vision_encoder', 'prompt_encoder_mask_decoder'],
  // Vision-language decoders (transformers.js's layout): the decoder over inputs_embeds is the
  // main graph, so its KV cache inputs are the model's.
  ['decoder_model_merged', 'embed_tokens', 'vision_encoder'],
];

/** Optimum's encoder–decoder files (optimum-cli export onnx --task text2text-generation-with-past). */
const ENCODER = 'encoder_model';
const MERGED_DECODER = 'decoder_model_merged';
const DECODER = 'decoder_model';
const DECODER_WITH_PAST = 'decoder_with_past_model';
/** SpeechT5 text-to-speech exports add the speech postnet and the vocoder as a fourth graph. */
const POSTNET_AND_VOCODER = 'decoder_postnet_and_vocoder';

export interface OnnxFiles {
  /** The main graph's path. */
  main: string;
  /** Every graph to load, by file name without `.onnx`; the main one included. */
  graphs: ReadonlyMap<string, string>;
}

export async function chooseOnnxFiles(
  folder: string,
  requested: string | undefined,
): Promise<OnnxFiles> {
  const files = await readdir(folder).catch((cause: unknown) => {
    throw new ModelFolderError(`model folder ${folder} does not exist or cannot be read`, {
      cause,
      field: 'path',
    });
  });
  const onnx = files.filter((f) => f.endsWith('.onnx')).sort();
  const single = (file: string): OnnxFiles => ({
    main: join(folder, file),
    graphs: new Map([[file.slice(0, -'.onnx'.length), join(folder, file)]]),
  });
  if (requested !== undefined) {
    if (!onnx.includes(requested)) {
      throw new ModelFolderError(
        `${folder} has no ${requested}; .onnx files there: ${onnx.join(', ') || '(none)'}`,
        { field: 'onnxFile' },
      );
    }
    return single(requested);
  }
  if (onnx.includes('model.onnx')) return single('model.onnx');
  if (onnx.length === 1 && onnx[0] !== undefined) return single(onnx[0]);
  if (onnx.length === 0) {
    throw new ModelFolderError(
      `${folder} has no .onnx file; export the model with Optimum (optimum-cli export onnx)`,
      { field: 'path' },
    );
  }
  if (onnx.includes(`${ENCODER}.onnx`)) return encoderDecoder(folder, onnx);
  const split = SPLIT_EXPORTS.find((names) => names.every((n) => onnx.includes(`${n}.onnx`)));
  if (split !== undefined)
    return {
      main: join(folder, `${split[0] as string}.onnx`),
      graphs: new Map(split.map((name) => [name, join(folder, `${name}.onnx`)])),
    };
  throw new ModelFolderError(
    `${folder} has several .onnx files (${onnx.join(', ')}) and they are not one split export ` +
      `(${SPLIT_EXPORTS.map((names) => names.join(' + ')).join('; ')}); choose one with onnxFile`,
    { field: 'onnxFile' },
  );
}

/** The encoder with one decoder set: the merged decoder when there is one, else the two it merges. */
function encoderDecoder(folder: string, onnx: readonly string[]): OnnxFiles {
  const has = (name: string): boolean => onnx.includes(`${name}.onnx`);
  const decoders = has(MERGED_DECODER)
    ? [MERGED_DECODER]
    : [DECODER, DECODER_WITH_PAST].filter(has);
  if (!decoders.includes(MERGED_DECODER) && !decoders.includes(DECODER)) {
    throw new ModelFolderError(
      `${folder} has ${ENCODER}.onnx but no ${MERGED_DECODER}.onnx or ${DECODER}.onnx; export the ` +
        'decoder too (optimum-cli export onnx --task text2text-generation-with-past)',
      { field: 'path' },
    );
  }
  const names = [ENCODER, ...decoders, ...[POSTNET_AND_VOCODER].filter(has)];
  return {
    main: join(folder, `${ENCODER}.onnx`),
    graphs: new Map(names.map((name) => [name, join(folder, `${name}.onnx`)])),
  };
}
