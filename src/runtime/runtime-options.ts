// ONNX Runtime session options as users write them, their defaults, and their translation into
// onnxruntime-node's SessionOptions (the native binding reads the compiled form itself).
// Validated once; errors name the field and the fix.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { InferenceSession } from 'onnxruntime-common';
import type { z } from 'zod';
import { ProviderUnavailableError } from '../errors.ts';
import { isCompiled } from '../options/compiled.ts';
import { lazySchema } from '../options/lazy-schema.ts';
import { parseOptions } from '../options/parse.ts';
import { onnxRuntimeBinDir } from './library-path.ts';
import {
  isQuantized,
  readOnnxGraphFacts,
  takesKvCache,
  type OnnxGraphFacts,
} from '../models/onnx-operators.ts';

export const BINDINGS = ['native', 'onnxruntime-node'] as const;
export type Binding = (typeof BINDINGS)[number];

/**
 * The binding a model runs on when its options do not say: HUGOT_ORT_BINDING when set (the test
 * suite runs parity once per binding with it), else our own.
 */
export function defaultBinding(env: NodeJS.ProcessEnv = process.env): Binding {
  const named = env['HUGOT_ORT_BINDING'];
  if (named === undefined || named === '') return 'native';
  if ((BINDINGS as readonly string[]).includes(named)) return named as Binding;
  throw new ProviderUnavailableError(
    `HUGOT_ORT_BINDING is '${named}'; it must be one of ${BINDINGS.join(', ')} (or unset)`,
    { field: 'HUGOT_ORT_BINDING' },
  );
}

const providerSchema = lazySchema((z) =>
  z.union([
    z.literal('cpu'),
    z.object({ name: z.literal('cpu') }).strict(),
    z.object({ name: z.literal('cuda'), deviceId: z.number().int().min(0).optional() }).strict(),
    z
      .object({ name: z.literal('tensorrt'), deviceId: z.number().int().min(0).optional() })
      .strict(),
  ]),
);

export const runtimeOptionsSchema = lazySchema((z) =>
  z
    .object({
      /**
       * Which binding runs the model: 'native' (ours, over ONNX Runtime's C API: one session per
       * model and shard, shared by the shard's threads) or 'onnxruntime-node' (a session per thread).
       */
      binding: z.enum(BINDINGS).default(() => defaultBinding()),
      /** Threads inside one operator. 0 lets ONNX Runtime use one per core. */
      intraOpThreads: z.number().int().min(0).default(1),
      /** Threads across independent operators (only used by parallel execution). */
      interOpThreads: z.number().int().min(0).default(1),
      graphOptimizationLevel: z.enum(['disabled', 'basic', 'extended', 'all']).default('all'),
      // On: off raised a CPU shard's peak RSS by 55-58 % on MiniLM (npm run bench:memory,
      // docs/performance.md#memory-npm-run-benchmemory).
      cpuMemArena: z.boolean().default(true),
      /**
       * ONNX Runtime's memory pattern: after a run it plans one block for all of that input shape's
       * intermediate tensors, keeps the plan per shape, and later runs of the shape take the block
       * whole. 'auto', the default, turns it on for every graph that takes no KV cache and off for
       * a decoder step (its shapes change every step, so a plan would never be reused). Off, the
       * threads that share a session allocate each intermediate tensor from the session's one
       * arena: on a 2-core AMD EPYC two threads doing so took up to 1.25 x the CPU per record of
       * planned runs in some passes, one thread never (docs/performance.md, "Memory patterns on
       * again"). 'quantized' keeps it on only for quantized graphs: the lower peak of a long fp32
       * model's mixed shapes, for a shard of one thread or a machine where the arena is cheap to
       * share.
       */
      memPattern: z.union([z.boolean(), z.literal('auto'), z.literal('quantized')]).optional(),
      /**
       * Whether ONNX Runtime keeps a kernel-friendly copy of constant weights (MatMul, Attention)
       * beside the originals; false sets the session config entry `session.disable_prepacking`.
       * On by default: off changed MiniLM's peak RSS by under 1 % (ONNX Runtime already frees an
       * original once it is prepacked; npm run bench:memory).
       */
      prepacking: z.boolean().default(true),
      /**
       * When the native binding hands the C heap's free pages back to the system (glibc's
       * malloc_trim; nothing on other C libraries, nor on onnxruntime-node): 'load' once a session
       * has loaded, 'runs' after every plain run as well (not the IO-binding runs of linked pooling
       * or of the generation loop's resident steps, whose memory stays bound between steps).
       */
      trimHeap: z.enum(['load', 'runs']).default('load'),
      executionProviders: z.array(providerSchema.schema).min(1).default(['cpu']),
      /**
       * Where featureExtraction pools (mean, cls, max) and normalizes: 'device' runs a small ONNX
       * graph on the encoder's output where it was computed, so only [batch, dim] comes to the host
       * (src/runtime/graphs/pooling-graph.ts); 'host' pools in JS. 'auto' is 'device' on a GPU
       * provider with the native binding, and 'host' on CPU (both read the same memory there, and
       * JS sums in float64) or on onnxruntime-node (which copies every output to the host).
       */
      poolingOn: z.enum(['auto', 'device', 'host']).default('auto'),
      /**
       * Where the generative engine's decode batch keeps its KV cache between steps: 'device' binds
       * each step's presents where the session made them and feeds them to the next step as they are
       * (src/runtime/native/resident-value.ts), 'host' copies them to JS and back every step. 'auto'
       * is 'device' with the native binding, on a GPU and on CPU alike (on CPU the engine made 1.31
       * and 1.37x the tokens/s of 'host': bench/results/cpu-2026-12-03/generate-kv-*.jsonl), and
       * 'host' on onnxruntime-node, which has no resident values. Exports that return only the
       * step's columns (model_appending.onnx) keep theirs on the host either way. Prompts' prefill
       * runs keep theirs on the device too on a GPU, or when 'device' is named: on CPU 'auto' leaves
       * prefills on the host, where resident ones made the engine no faster
       * (bench/results/cpu-2026-12-03/generate-kv-prefill-*.jsonl).
       */
      kvOn: z.enum(['auto', 'device', 'host']).default('auto'),
      /**
       * Where the native binding's runs read their host feeds (token ids, masks, pixels) from:
       * 'staging' copies each into a buffer that ONNX Runtime allocated for the session's device and
       * that the input keeps from run to run (src/runtime/native/staging-buffers.ts): on a GPU the
       * CUDA provider's pinned host memory, which the device reads by DMA without a bounce buffer.
       * 'js' hands ONNX Runtime the JS tensor's own memory. 'auto' is 'staging' on a GPU and 'js' on
       * CPU, where the copy buys nothing; 'staging' on CPU runs the same code on the host allocator.
       * onnxruntime-node always reads JS memory.
       */
      feedsFrom: z.enum(['auto', 'staging', 'js']).default('auto'),
    })
    .strict(),
);

export type RuntimeOptions = z.input<typeof runtimeOptionsSchema.schema>;
type ParsedRuntimeOptions = z.output<typeof runtimeOptionsSchema.schema>;
export type CompiledRuntimeOptions = Omit<ParsedRuntimeOptions, 'memPattern'> & {
  memPattern: boolean | 'auto' | 'quantized';
};
export type ExecutionProvider = z.output<typeof providerSchema.schema>;

export function compileRuntimeOptions(
  options: RuntimeOptions = {},
  path = 'runtime',
): CompiledRuntimeOptions {
  if (isCompiled(options)) return options as CompiledRuntimeOptions;
  const parsed = parseOptions(runtimeOptionsSchema, options, path);
  return {
    ...parsed,
    memPattern: parsed.memPattern ?? (sessionDevice(parsed).kind === 'cpu' ? 'auto' : true),
  };
}

/**
 * Whether a session of `source` plans its memory: the option where it is a boolean; for 'auto' (the
 * CPU default), whether the graph takes no KV cache; for 'quantized', whether it is also quantized.
 * A helper graph's bytes get none.
 */
export function memPatternFor(
  source: string | { bytes: Uint8Array },
  options: CompiledRuntimeOptions,
): boolean {
  if (typeof options.memPattern === 'boolean') return options.memPattern;
  if (typeof source !== 'string') return false;
  let facts: OnnxGraphFacts;
  try {
    facts = readOnnxGraphFacts(source);
  } catch {
    // A file this walk cannot read fails ONNX Runtime's load too, which says why in its own words.
    return false;
  }
  if (takesKvCache(facts)) return false;
  return options.memPattern === 'auto' || isQuantized(facts);
}

/** The memory a session's outputs live in: its first GPU provider's device, else the host's. */
export type SessionDevice = { kind: 'cpu' } | { kind: 'cuda'; id: number };

export function sessionDevice(
  options: Pick<CompiledRuntimeOptions, 'executionProviders'>,
): SessionDevice {
  for (const provider of options.executionProviders) {
    if (typeof provider === 'string' || provider.name === 'cpu') continue;
    return { kind: 'cuda', id: provider.deviceId ?? 0 };
  }
  return { kind: 'cpu' };
}

/**
 * Whether onnxruntime-node can take float16 inputs here. onnxruntime-common stores float16 in a
 * Float16Array wherever the platform has one (Node 23+), and onnxruntime-node 1.30's binding
 * sizes such an array as 0 bytes, so every float16 feed fails; where there is none it passes a
 * Uint16Array of half bits, which works. Our binding reads the bytes itself either way.
 */
export function nodeTakesFloat16Inputs(): boolean {
  return typeof (globalThis as { Float16Array?: unknown }).Float16Array === 'undefined';
}

/** Whether a session of these options can be fed float16 tensors (see nodeTakesFloat16Inputs). */
export function takesFloat16Inputs(options: CompiledRuntimeOptions): boolean {
  return options.binding === 'native' || nodeTakesFloat16Inputs();
}

/** Whether featureExtraction pools with the pooling graph (see the `poolingOn` option). */
export function poolsOnDevice(options: CompiledRuntimeOptions): boolean {
  if (options.poolingOn !== 'auto') return options.poolingOn === 'device';
  // onnxruntime-node copies every output to the host, so its GPU sessions gain nothing by it.
  return options.binding === 'native' && sessionDevice(options).kind !== 'cpu';
}

/** Whether the generative engine keeps its decode cache resident (see the `kvOn` option). */
export function kvOnDevice(options: CompiledRuntimeOptions): boolean {
  return options.binding === 'native' && options.kvOn !== 'host';
}

/** Whether the engine's prefill runs leave their cache resident as well (see the `kvOn` option). */
export function prefillsOnDevice(options: CompiledRuntimeOptions): boolean {
  return (
    kvOnDevice(options) && (options.kvOn === 'device' || sessionDevice(options).kind !== 'cpu')
  );
}

/** Whether the native binding copies feeds into staging buffers (see the `feedsFrom` option). */
export function stagesFeeds(options: CompiledRuntimeOptions): boolean {
  if (options.binding !== 'native' || options.feedsFrom === 'js') return false;
  return options.feedsFrom === 'staging' || sessionDevice(options).kind !== 'cpu';
}

/** A stable key so that pipelines asking for the same file with the same options share a session. */
export function runtimeOptionsKey(options: CompiledRuntimeOptions): string {
  return JSON.stringify(options);
}

export function toSessionOptions(
  options: CompiledRuntimeOptions,
  source: string | { bytes: Uint8Array },
): InferenceSession.SessionOptions {
  assertProvidersInstalled(options);
  return {
    intraOpNumThreads: options.intraOpThreads,
    interOpNumThreads: options.interOpThreads,
    graphOptimizationLevel: options.graphOptimizationLevel,
    enableCpuMemArena: options.cpuMemArena,
    enableMemPattern: memPatternFor(source, options),
    // onnxruntime-node passes `extra` to AddConfigEntry, nested keys joined with dots.
    ...(options.prepacking ? {} : { extra: { session: { disable_prepacking: '1' } } }),
    executionProviders: options.executionProviders.map((p) =>
      typeof p === 'string' ? p : { ...p },
    ),
  };
}

const PROVIDER_LIBRARIES: Record<string, string> = {
  cuda: 'libonnxruntime_providers_cuda.so',
  tensorrt: 'libonnxruntime_providers_tensorrt.so',
};

export function assertProvidersInstalled(options: CompiledRuntimeOptions): void {
  for (const provider of options.executionProviders) assertProviderInstalled(provider);
}

function assertProviderInstalled(provider: ExecutionProvider): void {
  const name = typeof provider === 'string' ? provider : provider.name;
  const library = PROVIDER_LIBRARIES[name];
  if (library === undefined) return;
  const binDir = onnxRuntimeBinDir();
  if (binDir !== undefined && existsSync(join(binDir, library))) return;
  throw new ProviderUnavailableError(
    `execution provider '${name}' needs ${library}, which onnxruntime-node did not install ` +
      `(looked in ${binDir ?? 'an unknown folder'}). Install it with \`npm run gpu:install\` ` +
      `(PyPI's onnxruntime-gpu, CUDA 13 + cuDNN 9), check the CUDA libraries with ` +
      `\`npm run gpu:install -- --check\` (docs/gpu.md), or use 'cpu'.`,
    { field: 'executionProviders' },
  );
}
