// node-llama-cpp as bench:generate's contender: what a Node team would install for text
// generation in a worker. One context with a sequence per concurrent request (llama.cpp batches
// every sequence's next token into one decode), greedy, each request fed the very prompt token
// ids our engine gets and run for the same number of new tokens.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { getLlama, LlamaLogLevel, type LlamaContext, type Token } from 'node-llama-cpp';

/** Per request: when it arrived and when each of its tokens reached the caller. */
export interface LlamaTrace {
  arrival: number;
  tokens: number[];
}

export interface LlamaCppSettings {
  ggufPath: string;
  /** Context sequences: one per concurrent request. */
  sequences: number;
  /** Cells each sequence may hold: its longest prompt plus its new tokens. */
  tokensPerSequence: number;
  threads: number;
}

export interface LlamaCppContender {
  readonly settings: LlamaCppSettings;
  /** Model file read and weights mapped. */
  readonly loadMs: number;
  /** Context created (KV cells for every sequence) and one short request run. */
  readonly warmUpMs: number;
  run(
    prompts: readonly (readonly number[])[],
    arrivals: readonly number[],
    newTokens: number,
  ): Promise<{ traces: LlamaTrace[]; started: number }>;
  close(): Promise<void>;
}

/**
 * The GGUF a model folder carries (the fixture script copies SmolLM2's next to its ONNX export),
 * or undefined when it has none: the contender is then left out of the run, and says so.
 */
export function ggufIn(folder: string): string | undefined {
  if (!existsSync(folder)) return undefined;
  const found = readdirSync(folder)
    .filter((f) => f.endsWith('.gguf'))
    .sort();
  return found[0] === undefined ? undefined : join(folder, found[0]);
}

export async function startLlamaCpp(settings: LlamaCppSettings): Promise<LlamaCppContender> {
  const llama = await getLlama({ gpu: false, logLevel: LlamaLogLevel.warn });
  const loadStarted = performance.now();
  const model = await llama.loadModel({ modelPath: settings.ggufPath });
  const loadMs = performance.now() - loadStarted;
  const warmStarted = performance.now();
  const context = await model.createContext({
    sequences: settings.sequences,
    contextSize: settings.tokensPerSequence,
    // Every sequence may prefill at once: one decode call takes all queued prompt tokens.
    batchSize: Math.max(512, settings.sequences * 16),
    threads: settings.threads,
  });
  await generate(context, model.tokenize('warm up'), 2);
  const warmUpMs = performance.now() - warmStarted;
  return {
    settings,
    loadMs,
    warmUpMs,
    async run(prompts, arrivals, newTokens) {
      const started = performance.now();
      const traces = await Promise.all(
        prompts.map(async (ids, i) => {
          await sleep(arrivals[i] ?? 0);
          const trace: LlamaTrace = { arrival: performance.now(), tokens: [] };
          await generate(context, ids as Token[], newTokens, trace.tokens);
          return trace;
        }),
      );
      return { traces, started };
    },
    async close() {
      await context.dispose();
      await model.dispose();
      await llama.dispose();
    },
  };
}

/** One request on a free sequence of the context, its cells cleared for the next request after. */
async function generate(
  context: LlamaContext,
  ids: Token[],
  newTokens: number,
  times: number[] = [],
): Promise<Token[]> {
  const sequence = context.getSequence();
  const out: Token[] = [];
  try {
    // yieldEogToken: an end-of-generation token is yielded and generation goes on, so every
    // request makes exactly newTokens tokens, one decode each, as minNewTokens makes ours do. (A
    // TokenBias banning them is not applied by 3.21.1's greedy sampling: requests still ended.)
    for await (const token of sequence.evaluate(ids, { temperature: 0, yieldEogToken: true })) {
      times.push(performance.now());
      out.push(token);
      if (out.length >= newTokens) break;
    }
  } finally {
    await sequence.dispose();
  }
  return out;
}
