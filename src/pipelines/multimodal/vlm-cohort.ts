// A vision-language batch as the engine's cohort loop steps it: the first step is the prefill
// (the left-padded prompts, image features on their placeholder positions), every later step one
// token per live row. A row that finished keeps its place fed the pad token, as Python's batch
// does and as the batch path here does, so no cache is re-assembled when rows leave.
import { emptyKvState, type KvState, type StepTokens } from '../generation/kv-cache.ts';
import type { RowStepper } from '../generation/stepwise.ts';
import {
  decoderStep,
  embedTokens,
  type Embeddings,
  type RunSession,
  type VlmGraphs,
} from './vlm-decoder.ts';

export class VlmCohortStepper implements RowStepper {
  private readonly run: RunSession;
  private readonly graphs: VlmGraphs;
  private readonly prompt: StepTokens;
  private readonly promptEmbeds: Embeddings;
  private readonly padId: number;
  private readonly rows: number;
  /** The batch rows still generating, in the order the loop sees them. */
  private live: number[];
  private state: KvState | undefined;

  constructor(
    run: RunSession,
    graphs: VlmGraphs,
    prompt: StepTokens,
    promptEmbeds: Embeddings,
    padId: number,
  ) {
    this.run = run;
    this.graphs = graphs;
    this.prompt = prompt;
    this.promptEmbeds = promptEmbeds;
    this.padId = padId;
    this.rows = prompt.ids.length;
    this.live = Array.from({ length: this.rows }, (_, r) => r);
  }

  async step(tokens: readonly number[]): Promise<Float32Array[]> {
    let result;
    if (this.state === undefined) {
      const empty = emptyKvState(this.graphs.layout, this.rows);
      result = await decoderStep(this.run, this.graphs, empty, this.prompt, this.promptEmbeds);
    } else {
      const ids = Array.from({ length: this.rows }, () => [this.padId]);
      this.live.forEach((row, i) => (ids[row] = [tokens[i] ?? this.padId]));
      const embeds = await embedTokens(this.run, this.graphs, ids);
      result = await decoderStep(this.run, this.graphs, this.state, { ids }, embeds);
    }
    this.state = result.state;
    return this.live.map((row) => result.logits[row] as Float32Array);
  }

  select(rows: readonly number[]): void {
    this.live = rows.map((i) => this.live[i] as number);
  }
}
