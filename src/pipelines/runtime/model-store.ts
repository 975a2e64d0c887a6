// Loads Optimum-style model folders: one ONNX session per (file, runtime options), shared by
// every pipeline that uses it, plus the tokenizer and config beside it. A folder holds one model
// (model.onnx, or the file onnxFile names) or, in Optimum's encoder–decoder layout, several:
// encoder_model.onnx with decoder_model_merged.onnx or decoder_model.onnx (+ decoder_with_past_model.onnx),
// in the folder or in its onnx/ folder, in one variant (src/models/onnx-layout.ts).
import { readdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { readModelConfig, type ModelConfig } from './model-config.ts';
import {
  compileRuntimeOptions,
  runtimeOptionsKey,
  type CompiledRuntimeOptions,
  type RuntimeOptions,
} from '../../runtime/runtime-options.ts';
import { SessionFactory, type SessionSharing } from '../../runtime/runtimes.ts';
import type { OrtSession } from '../../runtime/session.ts';
import { TextTokenizer } from './text-tokenizer.ts';
import { isBatchInvariant } from './batch-invariance.ts';
import { chooseOnnxFiles, type OnnxVariant } from '../../models/onnx-layout.ts';
import {
  readSentenceTransformersConfig,
  type SentenceTransformersConfig,
} from './sentence-transformers-config.ts';

export interface ModelSpec {
  /** The model folder. */
  path: string;
  /**
   * Which .onnx file inside it (any path inside the folder: onnx/model_q4.onnx); by default
   * model.onnx, or the only graph there is, or every graph of an Optimum split export, in the
   * folder or in its onnx/ folder (src/models/onnx-layout.ts).
   */
  onnxFile?: string;
  /** Which variant of the graphs (model_fp16.onnx: fp16); by default fp32, or the only one. */
  variant?: OnnxVariant;
  runtime?: RuntimeOptions;
}

export interface LoadedModel {
  folder: string;
  /** The main file: the model's, or an encoder–decoder's encoder_model.onnx. */
  onnxPath: string;
  config: ModelConfig;
  /** Absent for models without tokenizer.json (vision). */
  tokenizer: TextTokenizer | undefined;
  /** The main graph's session (the only one, for most models). */
  session: OrtSession;
  /**
   * Every graph's session by file name without `.onnx`: one for most models; each graph of an
   * Optimum split export (text_model + vision_model, vision_encoder + prompt_encoder_mask_decoder).
   */
  sessions: ReadonlyMap<string, OrtSession>;
  /** The main session's. */
  inputNames: readonly string[];
  outputNames: readonly string[];
  /** preprocessor_config.json, when the folder has one. */
  preprocessor: Record<string, unknown> | undefined;
  /** False when a row's result depends on its batch mates (dynamic quantization). */
  batchInvariant: boolean;
  /** sentence-transformers' files in the folder (featureExtraction's defaults), when it has them. */
  sentenceTransformers: SentenceTransformersConfig | undefined;
  /** The options its sessions were opened with. */
  runtime: CompiledRuntimeOptions;
  /**
   * A helper graph's session (src/runtime/graphs/) on the model's device and binding, opened once
   * per name and shared like the model's own; `bytes` is only read the first time.
   */
  helper(name: string, bytes: () => Uint8Array): Promise<OrtSession>;
}

export interface ModelStoreOptions {
  /** A shard's table: native sessions shared with the shard's other threads. */
  sharing?: SessionSharing | undefined;
  /**
   * Model folders (resolved) whose tokenizer.json the main thread has built, pricing by tokens:
   * their inputs' encodes mostly arrive carried (carried-encoding.ts), so a thread builds its own
   * Rust tokenizer only when a call needs it (TokenizerBuild 'onDemand'), ~5 MiB a thread saved.
   */
  tokenizersBuilt?: readonly string[] | undefined;
}

export class ModelStore {
  private readonly sessions = new Map<string, Promise<OrtSession>>();
  private readonly models = new Map<string, Promise<LoadedModel>>();
  private readonly factory: SessionFactory;
  private readonly tokenizersBuilt: ReadonlySet<string>;

  constructor(options: ModelStoreOptions = {}) {
    this.factory = new SessionFactory(options.sharing);
    this.tokenizersBuilt = new Set(options.tokenizersBuilt ?? []);
  }

  load(spec: ModelSpec): Promise<LoadedModel> {
    const runtime = compileRuntimeOptions(spec.runtime ?? {});
    const key = `${resolve(spec.path)}|${spec.onnxFile ?? ''}|${spec.variant ?? ''}|${runtimeOptionsKey(runtime)}`;
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
    const onnx = await chooseOnnxFiles(folder, { onnxFile: spec.onnxFile, variant: spec.variant });
    const config = await readModelConfig(folder);
    const sentenceTransformers = await readSentenceTransformersConfig(folder);
    const files = await readdir(folder);
    const preprocessor = files.includes('preprocessor_config.json')
      ? (JSON.parse(await readFile(join(folder, 'preprocessor_config.json'), 'utf8')) as Record<
          string,
          unknown
        >)
      : undefined;
    const graphs = [...onnx.graphs];
    const [ready, invariant] = await Promise.all([
      Promise.all(graphs.map(([, path]) => this.session(path, runtime))),
      Promise.all(graphs.map(([, path]) => isBatchInvariant(path))),
    ]);
    // After the sessions: ONNX Runtime's parse of a model with its weights inline holds ~half the
    // weights again until it ends, and a shard's other threads wait on it (the shared session);
    // tokenizers loaded only now are not resident beside that peak (docs/performance.md).
    const tokenizer = files.includes('tokenizer.json')
      ? await TextTokenizer.load(
          folder,
          config.maxPositionEmbeddings,
          this.tokenizersBuilt.has(folder) ? 'onDemand' : 'now',
        )
      : undefined;
    const sessions = new Map(graphs.map(([name], i) => [name, ready[i] as OrtSession]));
    const main = ready[graphs.findIndex(([, path]) => path === onnx.main)] as OrtSession;
    const batchInvariant = invariant.every(Boolean);
    return {
      folder,
      onnxPath: onnx.main,
      config,
      tokenizer,
      session: main,
      sessions,
      inputNames: main.inputNames,
      outputNames: main.outputNames,
      preprocessor,
      batchInvariant,
      sentenceTransformers,
      runtime,
      helper: (name, bytes) => this.session({ name, bytes }, runtime),
    };
  }

  /** One session per (file or helper graph, runtime options), shared by every model using it. */
  private session(
    source: string | { name: string; bytes: () => Uint8Array },
    runtime: ReturnType<typeof compileRuntimeOptions>,
  ): Promise<OrtSession> {
    const name = typeof source === 'string' ? source : `graph:${source.name}`;
    const key = `${name}|${runtimeOptionsKey(runtime)}`;
    let session = this.sessions.get(key);
    if (session === undefined) {
      session = this.factory.open(
        typeof source === 'string' ? source : { name, bytes: source.bytes() },
        runtime,
      );
      this.sessions.set(key, session);
      session.catch(() => this.sessions.delete(key));
    }
    return session;
  }
}
