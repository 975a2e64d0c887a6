// A shard is a group of inference threads with its own copy of every session: `cpu` (threads x
// intra-op threads sized to the cores) or `cuda:<id>` (threads sharing one GPU: while one thread
// tokenizes, builds feeds or post-processes on the host, another's batch runs on the device).
import { availableParallelism } from 'node:os';
import { z } from 'zod';
import { parseWithSchema } from '../options/parse.ts';
import { didYouMean } from '../options/suggest.ts';
import type { ExecutionProvider } from '../runtime/runtime-options.ts';
import { cudaDeviceId, isDeviceName } from './device-name.ts';

const SHARD_FORMS =
  "'cpu', 'cuda:<device id>', {device: cpu, threads?, intraOpThreads?, runsPerThread?} or {device: cuda, deviceId, threads?}";

/** 'cpu' or 'cuda:<id>'; a GPU named the way other tools name it is pointed at its CUDA name. */
const shardName = z.string().superRefine((name, ctx) => {
  if (isDeviceName(name)) return;
  const gpu = /^(?:gpu|cuda|device)[:\s_-]*(\d*)$/i.exec(name);
  const hint = gpu !== null ? `; did you mean 'cuda:${gpu[1] || '0'}'?` : didYouMean(name, ['cpu']);
  ctx.addIssue({
    code: 'custom',
    message: `'${name}' is not a shard${hint === '' ? `; a shard is ${SHARD_FORMS}` : hint}`,
  });
});

export const shardSchema = z.union(
  [
    shardName,
    z
      .object({
        device: z.literal('cpu'),
        threads: z.number().int().min(1).optional(),
        intraOpThreads: z.number().int().min(1).optional(),
        runsPerThread: z.number().int().min(1).optional(),
      })
      .strict(),
    z
      .object({
        device: z.literal('cuda'),
        deviceId: z.number().int().min(0),
        threads: z.number().int().min(1).optional(),
      })
      .strict(),
  ],
  { error: `a shard is ${SHARD_FORMS}` },
);

export type ShardOption = z.input<typeof shardSchema>;

export interface ShardSpec {
  name: string;
  /** Worker threads in the shard. */
  threads: number;
  /** ONNX Runtime threads inside each worker. */
  intraOpThreads: number;
  /**
   * Runs of a shared native session each worker keeps going at once, on libuv's pool (1: on the
   * worker's own thread). One worker with two runs uses two cores like two workers, with one
   * JavaScript isolate (its modules and tokenizer) fewer.
   */
  runsPerThread: number;
  executionProviders: ExecutionProvider[];
}

export function compileShard(
  option: ShardOption,
  path = 'shard',
  cores = availableParallelism(),
): ShardSpec {
  const parsed = parseWithSchema(shardSchema, option, path);
  const cuda = typeof parsed === 'string' ? cudaDeviceId(parsed) : undefined;
  if (cuda !== undefined) return cudaShard(cuda, defaultCudaThreads(cores));
  if (typeof parsed === 'object' && parsed.device === 'cuda')
    return cudaShard(parsed.deviceId, parsed.threads ?? defaultCudaThreads(cores));
  const cpu: {
    threads?: number | undefined;
    intraOpThreads?: number | undefined;
    runsPerThread?: number | undefined;
  } = typeof parsed === 'object' && parsed.device === 'cpu' ? parsed : {};
  // Fill the cores: by default one run per core, each on single-threaded kernels, which beats
  // fewer runs with more intra-op threads on small batches.
  const intraOpThreads = cpu.intraOpThreads ?? 1;
  const runsPerThread = cpu.runsPerThread ?? 1;
  const threads = cpu.threads ?? Math.max(1, Math.floor(cores / (intraOpThreads * runsPerThread)));
  return { name: 'cpu', threads, intraOpThreads, runsPerThread, executionProviders: ['cpu'] };
}

/**
 * Threads per GPU when none is configured. Host work (tokenizing, feeds, pooling) is what limits a
 * GPU shard, so threads pay until they run out of cores: MiniLM on an H200 with 16 cores ran
 * 1,100 / 1,802 / 2,794 / 2,966 records/s at 2 / 4 / 8 / 16 threads (docs/gpu.md).
 */
export const DEFAULT_CUDA_THREADS = 8;

/** DEFAULT_CUDA_THREADS where the cores allow, never fewer than two (one feeds, one runs). */
export function defaultCudaThreads(cores: number): number {
  return Math.min(DEFAULT_CUDA_THREADS, Math.max(2, cores));
}

function cudaShard(deviceId: number, threads: number): ShardSpec {
  return {
    name: `cuda:${deviceId}`,
    threads,
    intraOpThreads: 1,
    runsPerThread: 1,
    executionProviders: [{ name: 'cuda', deviceId }],
  };
}
