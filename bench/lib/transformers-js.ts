// The transformers.js contender: @huggingface/transformers' own pipelines in Node on the same ONNX
// file. It wants a hub-shaped folder (onnx/model.onnx beside the configs), so one is staged under
// .cache/bench with links to the real files; tokenizer_config.json gets the truncation length
// every contender uses, since transformers.js truncates at model_max_length and has no
// per-call max_length in its feature-extraction pipeline.
import { copyFileSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import type * as Transformers from '@huggingface/transformers';

const STAGE = resolve('.cache/bench/transformers-js');

export function stageModel(folder: string, maxLength: number): string {
  const name = basename(folder);
  const target = join(STAGE, name);
  rmSync(target, { recursive: true, force: true });
  mkdirSync(join(target, 'onnx'), { recursive: true });
  for (const file of ['config.json', 'tokenizer.json', 'special_tokens_map.json'])
    copyFileSync(join(folder, file), join(target, file));
  const tokenizerConfig = JSON.parse(
    readFileSync(join(folder, 'tokenizer_config.json'), 'utf8'),
  ) as Record<string, unknown>;
  writeFileSync(
    join(target, 'tokenizer_config.json'),
    JSON.stringify({ ...tokenizerConfig, model_max_length: maxLength }),
  );
  symlinkSync(resolve(folder, 'model.onnx'), join(target, 'onnx', 'model.onnx'));
  return name;
}

/**
 * transformers.js, loaded at first use: the benchmarks that import the task specs without running
 * it (bench:memory's children) must not carry its modules in their peak memory.
 */
async function transformersJs(): Promise<typeof Transformers> {
  const library = await import('@huggingface/transformers');
  library.env.localModelPath = `${STAGE}/`;
  library.env.allowRemoteModels = false;
  library.env.allowLocalModels = true;
  return library;
}

/** 'cuda' runs transformers.js on onnxruntime-node's CUDA provider (the one gpu:install puts). */
export type TjsDevice = 'cpu' | 'cuda';

const sessionOptions = (intraOpThreads: number, device: TjsDevice) => ({
  dtype: 'fp32' as const,
  device,
  session_options: { intraOpNumThreads: intraOpThreads, interOpNumThreads: 1 },
});

export interface TjsEmbedder {
  embed(texts: string[]): Promise<Float32Array[]>;
  close(): Promise<void>;
}

export async function tjsEmbedder(
  modelName: string,
  intraOpThreads: number,
  device: TjsDevice = 'cpu',
): Promise<TjsEmbedder> {
  const { pipeline } = await transformersJs();
  const extractor = await pipeline(
    'feature-extraction',
    modelName,
    sessionOptions(intraOpThreads, device),
  );
  return {
    async embed(texts) {
      const output = await extractor(texts, { pooling: 'mean', normalize: true });
      const data = output.data as Float32Array;
      const size = output.dims[1] ?? 0;
      return texts.map((_, i) => data.slice(i * size, (i + 1) * size));
    },
    close: () => extractor.dispose(),
  };
}

export interface TjsLabel {
  label: string;
  score: number;
}

export interface TjsClassifier {
  classify(texts: string[]): Promise<TjsLabel[]>;
  close(): Promise<void>;
}

export async function tjsClassifier(
  modelName: string,
  intraOpThreads: number,
  device: TjsDevice = 'cpu',
): Promise<TjsClassifier> {
  const { pipeline } = await transformersJs();
  const classifier = await pipeline(
    'text-classification',
    modelName,
    sessionOptions(intraOpThreads, device),
  );
  return {
    async classify(texts) {
      const output = (await classifier(texts, { top_k: 1 })) as unknown;
      // One text gives [{label, score}]; a batch gives one entry (or a one-element list) per text.
      const list = Array.isArray(output) ? output : [output];
      return list.map((entry: unknown) => (Array.isArray(entry) ? entry[0] : entry) as TjsLabel);
    },
    close: () => classifier.dispose(),
  };
}
