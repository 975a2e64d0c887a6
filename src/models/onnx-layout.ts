// Where the ONNX graphs of a model folder are, and which of them a model loads.
//
// Published folders put their graphs in one of two places: the folder itself (Optimum's
// `optimum-cli export onnx`: model.onnx, or encoder_model.onnx + decoder_*.onnx), or an `onnx/`
// folder beside the tokenizer (transformers.js and onnx-community repositories, and the
// `onnx/` folder of sentence-transformers repositories). transformers.js publishes each graph in
// variants named by a suffix (model_fp16.onnx, decoder_model_merged_quantized.onnx, ...); one
// variant's graphs are loaded together. A graph over 2 GB keeps its weights in external data
// files beside it (model.onnx_data), which ONNX Runtime finds next to the file it opens.
import { readdir, stat } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { ModelFolderError } from '../errors.ts';

/** The variants a model config may ask for; fp32 is the file without a suffix. */
export const ONNX_VARIANTS = [
  'fp32',
  'fp16',
  'int8',
  'uint8',
  'quantized',
  'q4',
  'q4f16',
  'bnb4',
] as const;
export type OnnxVariant = (typeof ONNX_VARIANTS)[number];

/** The folders inside a model folder where graphs are looked for, in this order. */
export const GRAPH_FOLDERS = ['', 'onnx'] as const;

/**
 * Optimum's file names for models exported as several graphs; the first is the model's main
 * session (its inputs and outputs are the model's). Encoder–decoder exports are chosen apart
 * (encoderDecoder below): their decoder comes in forms of which one set is loaded.
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
export const ENCODER = 'encoder_model';
const MERGED_DECODER = 'decoder_model_merged';
const DECODER = 'decoder_model';
const DECODER_WITH_PAST = 'decoder_with_past_model';
/** SpeechT5 text-to-speech exports add the speech postnet and the vocoder as a fourth graph. */
const POSTNET_AND_VOCODER = 'decoder_postnet_and_vocoder';

/**
 * Graph names a variant suffix is read after, longest first so that
 * decoder_model_merged_fp16 is the merged decoder's fp16 and not decoder_model's `merged_fp16`.
 */
const GRAPH_NAMES = [
  'model',
  ENCODER,
  DECODER,
  MERGED_DECODER,
  DECODER_WITH_PAST,
  POSTNET_AND_VOCODER,
  ...SPLIT_EXPORTS.flat(),
]
  .filter((name, i, all) => all.indexOf(name) === i)
  .sort((a, b) => b.length - a.length);

export interface OnnxGraphFile {
  /** The graph's name: the file name without `.onnx` and without its variant suffix. */
  graph: string;
  /** `fp32` for no suffix; any other suffix as written (fp16, quantized, O3, qint8_avx512, ...). */
  variant: string;
  /** Path inside the model folder, with `/` (onnx/model_fp16.onnx). */
  file: string;
  /** Bytes of the .onnx and of its external data files. */
  bytes: number;
  /** External data files beside it, inside the model folder. */
  externalData: string[];
}

export interface OnnxFiles {
  /** The main graph's path. */
  main: string;
  /** Every graph to load, by graph name (decoder_model_merged, not ..._quantized); main included. */
  graphs: ReadonlyMap<string, string>;
  /** The variant loaded (fp32 for files without a suffix), or the suffix of the file onnxFile names. */
  variant: string;
}

export interface OnnxChoice {
  /** One .onnx file, by its path inside the folder. */
  onnxFile?: string | undefined;
  variant?: OnnxVariant | undefined;
}

/** Splits `decoder_model_merged_q4f16` into its graph and variant. */
export function parseGraphFile(stem: string): { graph: string; variant: string } {
  for (const name of GRAPH_NAMES) {
    if (stem === name) return { graph: name, variant: 'fp32' };
    if (stem.startsWith(`${name}_`)) return { graph: name, variant: stem.slice(name.length + 1) };
  }
  return { graph: stem, variant: 'fp32' };
}

/** External data files of `model.onnx`: model.onnx_data, model.onnx.data, model.onnx_data_1, ... */
export function isExternalDataOf(onnxName: string, file: string): boolean {
  return file.startsWith(`${onnxName}_data`) || file.startsWith(`${onnxName}.data`);
}

/** Every .onnx file in the places graphs are looked for, with its variant and size. */
export async function listGraphFiles(folder: string): Promise<OnnxGraphFile[]> {
  await readdir(folder).catch((cause: unknown) => {
    throw new ModelFolderError(`model folder ${folder} does not exist or cannot be read`, {
      cause,
      field: 'path',
    });
  });
  const found: OnnxGraphFile[] = [];
  for (const sub of GRAPH_FOLDERS) {
    const dir = join(folder, sub);
    const files = (await readdir(dir).catch(() => [] as string[])).sort();
    for (const name of files.filter((f) => f.endsWith('.onnx'))) {
      const external = files.filter((f) => f !== name && isExternalDataOf(name, f));
      const sizes = await Promise.all([name, ...external].map((f) => stat(join(dir, f))));
      found.push({
        ...parseGraphFile(name.slice(0, -'.onnx'.length)),
        file: sub === '' ? name : `${sub}/${name}`,
        bytes: sizes.reduce((n, s) => n + s.size, 0),
        externalData: external.map((f) => (sub === '' ? f : `${sub}/${f}`)),
      });
    }
  }
  return found;
}

/** The graphs a model loads: the file onnxFile names, or one variant's set (see the header). */
export async function chooseOnnxFiles(
  folder: string,
  { onnxFile, variant }: OnnxChoice = {},
): Promise<OnnxFiles> {
  const files = await listGraphFiles(folder);
  if (onnxFile !== undefined) return await requestedFile(folder, onnxFile, variant, files);
  const variants = [...new Set(files.map((f) => f.variant))];
  if (files.length === 0) {
    throw new ModelFolderError(
      `${folder} has no .onnx file in it or in onnx/; export the model with Optimum (optimum-cli export onnx)`,
      { field: 'path' },
    );
  }
  const chosen =
    variant ?? (variants.includes('fp32') ? 'fp32' : variants.length === 1 ? variants[0] : undefined);
  if (chosen === undefined) {
    throw new ModelFolderError(
      `${folder} has its graphs in several variants (${variants.join(', ')}) and none without a suffix (fp32); choose one with variant`,
      { field: 'variant' },
    );
  }
  const set = files.filter((f) => f.variant === chosen);
  if (set.length === 0) {
    throw new ModelFolderError(
      `${folder} has no ${chosen} variant; variants there: ${variants.join(', ')} (${files.map((f) => f.file).join(', ')})`,
      { field: 'variant' },
    );
  }
  const byGraph = new Map<string, OnnxGraphFile>();
  for (const file of set) {
    const other = byGraph.get(file.graph);
    if (other !== undefined) {
      throw new ModelFolderError(
        `${folder} has ${file.graph} twice (${other.file} and ${file.file}); choose one with onnxFile`,
        { field: 'onnxFile' },
      );
    }
    byGraph.set(file.graph, file);
  }
  return { ...chooseGraphs(folder, byGraph), variant: chosen };
}

async function requestedFile(
  folder: string,
  onnxFile: string,
  variant: OnnxVariant | undefined,
  files: readonly OnnxGraphFile[],
): Promise<OnnxFiles> {
  if (variant !== undefined) {
    throw new ModelFolderError(
      `onnxFile and variant both choose the graph; keep one (onnxFile ${onnxFile}, variant ${variant})`,
      { field: 'variant' },
    );
  }
  const path = resolve(folder, onnxFile);
  const inside = relative(folder, path);
  if (isAbsolute(onnxFile) || inside.startsWith(`..${sep}`) || inside === '..') {
    throw new ModelFolderError(
      `onnxFile ${onnxFile} is outside the model folder ${folder}; give a path inside it`,
      { field: 'onnxFile' },
    );
  }
  const found = await stat(path).catch(() => undefined);
  if (found?.isFile() !== true || !path.endsWith('.onnx')) {
    throw new ModelFolderError(
      `${folder} has no ${onnxFile}; .onnx files there: ${files.map((f) => f.file).join(', ') || '(none)'}`,
      { field: 'onnxFile' },
    );
  }
  const name = inside.split(sep).pop() ?? inside;
  const { graph, variant: suffix } = parseGraphFile(name.slice(0, -'.onnx'.length));
  return { main: path, graphs: new Map([[graph, path]]), variant: suffix };
}

/** One variant's graphs: model.onnx, the only one, an encoder–decoder set or a split export. */
function chooseGraphs(
  folder: string,
  byGraph: ReadonlyMap<string, OnnxGraphFile>,
): Omit<OnnxFiles, 'variant'> {
  const path = (graph: string): string => join(folder, byGraph.get(graph)?.file ?? graph);
  const single = (graph: string): Omit<OnnxFiles, 'variant'> => ({
    main: path(graph),
    graphs: new Map([[graph, path(graph)]]),
  });
  const names = [...byGraph.keys()];
  if (byGraph.has('model')) return single('model');
  if (names.length === 1 && names[0] !== undefined) return single(names[0]);
  if (byGraph.has(ENCODER)) return encoderDecoder(folder, names, path);
  const split = SPLIT_EXPORTS.find((set) => set.every((n) => byGraph.has(n)));
  if (split !== undefined)
    return {
      main: path(split[0] as string),
      graphs: new Map(split.map((name) => [name, path(name)])),
    };
  throw new ModelFolderError(
    `${folder} has several .onnx files (${[...byGraph.values()].map((f) => f.file).join(', ')}) and they are not one split export ` +
      `(${SPLIT_EXPORTS.map((set) => set.join(' + ')).join('; ')}); choose one with onnxFile`,
    { field: 'onnxFile' },
  );
}

/** The encoder with one decoder set: the merged decoder when there is one, else the two it merges. */
function encoderDecoder(
  folder: string,
  names: readonly string[],
  path: (graph: string) => string,
): Omit<OnnxFiles, 'variant'> {
  const has = (name: string): boolean => names.includes(name);
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
  const graphs = [ENCODER, ...decoders, ...[POSTNET_AND_VOCODER].filter(has)];
  return { main: path(ENCODER), graphs: new Map(graphs.map((name) => [name, path(name)])) };
}
