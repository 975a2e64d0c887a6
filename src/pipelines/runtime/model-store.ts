// Loads Optimum-style model folders: one ONNX session per (file, runtime options), shared by
// every pipeline that uses it, plus the tokenizer and config beside it. A folder holds one model
// (model.onnx, or the file onnxFile names) or, in Optimum's encoder–decoder layout, several:
// encoder_model.onnx with decoder_model_merged.onnx or decoder_model.onnx (+ decoder_with_past_model.onnx).
import { readdir, readFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { InferenceSession } from 'onnxruntime-node';
import { ModelFolderError, ProviderUnavailableError } from '../../errors.ts';
import { readModelConfig, type ModelConfig } from './model-config.ts';
import {
  compileRuntimeOptions,
  runtimeOptionsKey,
  toSessionOptions,
  type RuntimeOptions,
} from './runtime-options.ts';
import { TextTokenizer } from './text-tokenizer.ts';
import { isBatchInvariant } from './batch-invariance.ts';
import {
  readSentenceTransformersConfig,
  type SentenceTransformersConfig,
} from './sentence-transformers-config.ts';

export interface ModelSpec {
  /** The model folder. */
  path: string;
  /**
   * Which .onnx file inside it; by default model.onnx, the only .onnx file there is, or Optimum's
   * encoder–decoder files together.
   */
  onnxFile?: string;
  runtime?: RuntimeOptions;
}

export interface LoadedModel {
  folder: string;
  /** The main file: the model's, or an encoder–decoder's encoder_model.onnx. */
  onnxPath: string;
  config: ModelConfig;
  /** Absent for models without tokenizer.json (vision). */
  tokenizer: TextTokenizer | undefined;
  /** The session of onnxPath; inputNames and outputNames are its own. */
  session: InferenceSession;
  /**
   * Every session of the folder by file name without `.onnx` (`encoder_model`, `decoder_model`,
   * ...); a single-file model has one, the same as `session`.
   */
  sessions: Readonly<Record<string, InferenceSession>>;
  inputNames: readonly string[];
  outputNames: readonly string[];
  /** preprocessor_config.json, when the folder has one. */
  preprocessor: Record<string, unknown> | undefined;
  /** False when a row's result depends on its batch mates (dynamic quantization). */
  batchInvariant: boolean;
  /** sentence-transformers' files in the folder (featureExtraction's defaults), when it has them. */
  sentenceTransformers: SentenceTransformersConfig | undefined;
}

export class ModelStore {
  private readonly sessions = new Map<string, Promise<InferenceSession>>();
  private readonly models = new Map<string, Promise<LoadedModel>>();

  load(spec: ModelSpec): Promise<LoadedModel> {
    const runtime = compileRuntimeOptions(spec.runtime ?? {});
    const key = `${resolve(spec.path)}|${spec.onnxFile ?? ''}|${runtimeOptionsKey(runtime)}`;
    let model = this.models.get(key);
    if (model === undefined) {
      model = this.loadUncached(spec, runtime);
      this.models.set(key, model);
      // A failed load is not remembered: fixing the folder and retrying should work.
      model.catch(() => this.models.delete(key));
    }
    return model;
  }

  async close(): Promise<void> {
    const sessions = await Promise.allSettled(this.sessions.values());
    this.sessions.clear();
    this.models.clear();
    for (const session of sessions) {
      if (session.status === 'fulfilled') await session.value.release();
    }
  }

  private async loadUncached(
    spec: ModelSpec,
    runtime: ReturnType<typeof compileRuntimeOptions>,
  ): Promise<LoadedModel> {
    const folder = resolve(spec.path);
    const onnxPaths = await chooseOnnxFiles(folder, spec.onnxFile);
    const onnxPath = onnxPaths[0] as string;
    const config = await readModelConfig(folder);
    const sentenceTransformers = await readSentenceTransformersConfig(folder);
    const files = await readdir(folder);
    const tokenizer = files.includes('tokenizer.json')
      ? await TextTokenizer.load(folder, config.maxPositionEmbeddings)
      : undefined;
    const preprocessor = files.includes('preprocessor_config.json')
      ? (JSON.parse(await readFile(join(folder, 'preprocessor_config.json'), 'utf8')) as Record<
          string,
          unknown
        >)
      : undefined;
    const [sessions, invariant] = await Promise.all([
      Promise.all(onnxPaths.map((path) => this.session(path, runtime))),
      Promise.all(onnxPaths.map((path) => isBatchInvariant(path))),
    ]);
    const ready = sessions[0] as InferenceSession;
    return {
      folder,
      onnxPath,
      config,
      tokenizer,
      session: ready,
      sessions: Object.fromEntries(
        onnxPaths.map((path, i) => [basename(path, '.onnx'), sessions[i] as InferenceSession]),
      ),
      inputNames: ready.inputNames,
      outputNames: ready.outputNames,
      preprocessor,
      batchInvariant: invariant.every(Boolean),
      sentenceTransformers,
    };
  }

  private session(
    onnxPath: string,
    runtime: ReturnType<typeof compileRuntimeOptions>,
  ): Promise<InferenceSession> {
    const sessionKey = `${onnxPath}|${runtimeOptionsKey(runtime)}`;
    let session = this.sessions.get(sessionKey);
    if (session === undefined) {
      session = createSession(onnxPath, runtime);
      this.sessions.set(sessionKey, session);
      session.catch(() => this.sessions.delete(sessionKey));
    }
    return session;
  }
}

/** Optimum's encoder–decoder files (optimum-cli export onnx --task text2text-generation-with-past). */
export const ENCODER_FILE = 'encoder_model.onnx';
const MERGED_DECODER_FILE = 'decoder_model_merged.onnx';
const DECODER_FILE = 'decoder_model.onnx';
const DECODER_WITH_PAST_FILE = 'decoder_with_past_model.onnx';

/**
 * The files of the folder's model, the main one first: the requested file, model.onnx, the only
 * .onnx file, or the encoder and decoder files of Optimum's encoder–decoder layout.
 */
async function chooseOnnxFiles(folder: string, requested: string | undefined): Promise<string[]> {
  const files: string[] = await readdir(folder).catch(() => []);
  if (requested === undefined && !files.includes('model.onnx') && files.includes(ENCODER_FILE)) {
    // Optimum writes the merged decoder beside the two it merges; one decoder is enough.
    const decoders = files.includes(MERGED_DECODER_FILE)
      ? [MERGED_DECODER_FILE]
      : [DECODER_FILE, DECODER_WITH_PAST_FILE].filter((f) => files.includes(f));
    if (!decoders.includes(MERGED_DECODER_FILE) && !decoders.includes(DECODER_FILE)) {
      throw new ModelFolderError(
        `${folder} has ${ENCODER_FILE} but no ${MERGED_DECODER_FILE} or ${DECODER_FILE}; ` +
          'export the decoder too (optimum-cli export onnx --task text2text-generation-with-past)',
        { field: 'path' },
      );
    }
    return [ENCODER_FILE, ...decoders].map((f) => join(folder, f));
  }
  return [await chooseOnnxFile(folder, requested)];
}

async function chooseOnnxFile(folder: string, requested: string | undefined): Promise<string> {
  const files = await readdir(folder).catch((cause: unknown) => {
    throw new ModelFolderError(`model folder ${folder} does not exist or cannot be read`, {
      cause,
      field: 'path',
    });
  });
  const onnx = files.filter((f) => f.endsWith('.onnx')).sort();
  if (requested !== undefined) {
    if (!onnx.includes(requested)) {
      throw new ModelFolderError(
        `${folder} has no ${requested}; .onnx files there: ${onnx.join(', ') || '(none)'}`,
        {
          field: 'onnxFile',
        },
      );
    }
    return join(folder, requested);
  }
  if (onnx.includes('model.onnx')) return join(folder, 'model.onnx');
  if (onnx.length === 1 && onnx[0] !== undefined) return join(folder, onnx[0]);
  if (onnx.length === 0) {
    throw new ModelFolderError(
      `${folder} has no .onnx file; export the model with Optimum (optimum-cli export onnx)`,
      { field: 'path' },
    );
  }
  throw new ModelFolderError(
    `${folder} has several .onnx files (${onnx.join(', ')}); choose one with onnxFile`,
    {
      field: 'onnxFile',
    },
  );
}

async function createSession(
  onnxPath: string,
  runtime: ReturnType<typeof compileRuntimeOptions>,
): Promise<InferenceSession> {
  const options = toSessionOptions(runtime);
  try {
    return await InferenceSession.create(onnxPath, options);
  } catch (cause) {
    const message = cause instanceof Error ? cause.message : String(cause);
    if (
      /provider|cuda|tensorrt/i.test(message) &&
      runtime.executionProviders.some((p) => p !== 'cpu')
    ) {
      throw new ProviderUnavailableError(
        `ONNX Runtime could not start the requested execution provider: ${message} ` +
          '(`npm run gpu:install -- --check` lists the CUDA and cuDNN libraries it cannot find)',
        {
          cause,
          field: 'executionProviders',
        },
      );
    }
    throw new ModelFolderError(`ONNX Runtime could not load ${onnxPath}: ${message}`, {
      cause,
      field: 'onnxFile',
    });
  }
}
