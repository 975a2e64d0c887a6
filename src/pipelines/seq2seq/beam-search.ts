// Beam search as Python's generate() runs it (transformers 5, `_beam_search`): each step every
// running beam's log-softmax (after the logits processors) is added to its score; the best
// 2 x numBeams continuations of all beams are kept; those ending (EOS, or the length limit) among
// the first numBeams become finished hypotheses scored by score / length ** lengthPenalty; the
// best numBeams unfinished ones run on. earlyStopping true ends an input when numBeams hypotheses
// are finished; false ends it when the best running beam, at its current length, cannot beat the
// worst finished one; 'never' ends it when it cannot at the longest length (lengthPenalty > 0).
// Scores are float32 as in torch, so close calls fall the same way.
import { penalize } from '../generation/sampling.ts';
import { banBeforeForcing, force, suppressTokens } from '../generation/token-bans.ts';
import type { DecoderStepper } from './decoder-stepper.ts';
import { forcedToken, type Seq2SeqSettings } from './seq2seq-settings.ts';

const { fround } = Math;
// Python's stand-in for "impossible" in beam scores (not -Infinity, so sums stay finite).
const NEVER = -1e9;

interface Hypothesis {
  tokens: number[];
  score: number;
  finished: boolean;
}

interface Candidate extends Hypothesis {
  beam: number;
  ends: boolean;
}

interface Input {
  running: Hypothesis[];
  finished: Hypothesis[];
  /** Python's is_early_stop_heuristic_unsatisfied: a running beam may still beat a finished one. */
  improvable: boolean;
}

/** What a model's own generate() adds to the search (Whisper's prompt and logits processors). */
export interface BeamExtras {
  /**
   * Each input's decoder prompt, all of one length (default: the start token alone). The decoder
   * has been fed all but the last token of it; the search feeds the last.
   */
  prompts?: readonly (readonly number[])[];
  /** A logits processor: adjusts a beam's log-probabilities given its tokens (prompt included). */
  process?: (tokens: readonly number[], scores: Float32Array) => void;
}

/**
 * The best hypothesis of each input (its generated ids, the EOS included when it ended on one).
 * The decoder holds one row per input; it is expanded to numBeams rows per input here.
 */
export async function beamSearch(
  decoder: DecoderStepper,
  settings: Seq2SeqSettings,
  extras: BeamExtras = {},
  encoderIds?: readonly (readonly number[])[],
): Promise<number[][]> {
  const { numBeams, decoderStartTokenId: start, lengthPenalty, earlyStopping } = settings;
  const inputs = decoder.rows;
  decoder.select(Array.from({ length: inputs * numBeams }, (_, r) => Math.floor(r / numBeams)));
  const prompt = (i: number): number[] => [...(extras.prompts?.[i] ?? [start])];
  // Python's decoder_prompt_len: lengths below count from the whole sequence, the prompt included.
  const promptLength = prompt(0).length;
  const maxLength = promptLength + settings.maxNewTokens;
  const keep = Math.max(2, 1 + settings.eosTokenIds.size) * numBeams;
  const state: Input[] = Array.from({ length: inputs }, (_, i) => ({
    running: Array.from({ length: numBeams }, (_, b) => hypothesis(prompt(i), b === 0 ? 0 : NEVER)),
    finished: Array.from({ length: numBeams }, () => hypothesis(prompt(i), NEVER)),
    improvable: true,
  }));
  let length = promptLength;
  for (;;) {
    const logits = await decoder.step(state.flatMap((s) => s.running.map((h) => last(h.tokens))));
    let allEnd = true;
    const order: number[] = [];
    state.forEach((input, i) => {
      const rows = logits.slice(i * numBeams, (i + 1) * numBeams);
      const encoder = encoderIds?.[i] ?? [];
      const candidates = topContinuations(
        input,
        rows,
        settings,
        extras,
        length,
        maxLength,
        keep,
        encoder,
      );
      allEnd &&= candidates.every((c) => c.ends);
      const full = earlyStopping === true && input.finished.every((h) => h.finished);
      const finishing = candidates.map((c, k): Hypothesis => {
        let score = fround(c.score / Math.pow(length + 1 - promptLength, lengthPenalty));
        if (full) score = fround(score + NEVER);
        if (!input.improvable) score = fround(score + NEVER);
        const finished = c.ends && k < numBeams;
        if (!finished) score = fround(score + NEVER);
        return { tokens: c.tokens, score, finished };
      });
      input.finished = best([...input.finished, ...finishing], numBeams);
      const running = best(
        candidates.map((c) => ({ ...c, score: c.ends ? fround(c.score + NEVER) : c.score })),
        numBeams,
      );
      input.running = running;
      for (const c of running) order.push(i * numBeams + c.beam);
    });
    decoder.select(order);
    length += 1;
    for (const input of state)
      input.improvable &&= canImprove(
        input,
        settings,
        length - promptLength,
        maxLength - promptLength,
      );
    const anyImprovable = state.some((s) => s.improvable);
    const allFull =
      earlyStopping === true && state.every((s) => s.finished.every((h) => h.finished));
    if (!anyImprovable || allFull || allEnd) break;
  }
  return state.map((s) => (s.finished[0] as Hypothesis).tokens.slice(promptLength));
}

/** The `keep` best continuations of an input's running beams, best first. */
function topContinuations(
  input: Input,
  logits: readonly Float32Array[],
  settings: Seq2SeqSettings,
  extras: BeamExtras,
  length: number,
  maxLength: number,
  keep: number,
  encoderIds: readonly number[],
): Candidate[] {
  const generated = length - (extras.prompts?.[0]?.length ?? 1);
  const top: { score: number; beam: number; token: number }[] = [];
  input.running.forEach((beam, b) => {
    let scores = logSoftmax(logits[b] as Float32Array);
    if (settings.sampling.repetitionPenalty !== 1)
      penalize(scores, beam.tokens, settings.sampling.repetitionPenalty);
    // Python's processors in its order; the forced tokens overrule the bans and minimum before them.
    const forced = forcedToken(settings, generated);
    if (forced !== undefined) force(scores, forced);
    else {
      if (settings.bans !== undefined)
        banBeforeForcing(scores, beam.tokens, settings.bans, encoderIds);
      if (generated < settings.minNewTokens)
        for (const eos of settings.eosTokenIds) if (eos < scores.length) scores[eos] = -Infinity;
    }
    if (settings.bans !== undefined) suppressTokens(scores, generated, settings.bans);
    extras.process?.(beam.tokens, scores);
    if (settings.renormalizeLogits === true) scores = logSoftmax(scores);
    for (let t = 0; t < scores.length; t += 1) {
      const score = fround((scores[t] as number) + beam.score);
      if (top.length === keep && score <= (top[keep - 1] as { score: number }).score) continue;
      // Insertion keeps `top` sorted, best first, earlier (beam, token) first among equals.
      let at = top.length;
      while (at > 0 && (top[at - 1] as { score: number }).score < score) at -= 1;
      top.splice(at, 0, { score, beam: b, token: t });
      if (top.length > keep) top.pop();
    }
  });
  return top.map(({ score, beam, token }) => ({
    tokens: [...(input.running[beam] as Hypothesis).tokens, token],
    score,
    beam,
    finished: false,
    ends: settings.eosTokenIds.has(token) || length + 1 >= maxLength,
  }));
}

/** Python's _check_early_stop_heuristic for one input, after a step (lengths past the prompt). */
function canImprove(
  input: Input,
  settings: Seq2SeqSettings,
  generated: number,
  maxGenerated: number,
): boolean {
  const { lengthPenalty, earlyStopping } = settings;
  const hypothetical = earlyStopping === 'never' && lengthPenalty > 0 ? maxGenerated : generated;
  const bestRunning = fround(
    (input.running[0] as Hypothesis).score / Math.pow(hypothetical, lengthPenalty),
  );
  const worst = Math.min(...input.finished.map((h) => h.score));
  return input.finished.some((h) => bestRunning > (h.finished ? worst : NEVER));
}

/** The n best, best first; among equal scores the earlier one (as torch.topk on CPU). */
function best<T extends Hypothesis>(hypotheses: readonly T[], n: number): T[] {
  return hypotheses
    .map((h, i) => [h, i] as const)
    .sort(([a, i], [b, j]) => b.score - a.score || i - j)
    .slice(0, n)
    .map(([h]) => h);
}

/** torch.log_softmax in float32. */
function logSoftmax(logits: Float32Array): Float32Array {
  let max = -Infinity;
  for (const x of logits) if (x > max) max = x;
  let sum = 0;
  for (const x of logits) sum += Math.exp(x - max);
  const lse = Math.log(sum);
  return logits.map((x) => fround(x - max - lse));
}

function hypothesis(tokens: number[], score: number): Hypothesis {
  return { tokens, score, finished: false };
}

function last(tokens: readonly number[]): number {
  return tokens[tokens.length - 1] as number;
}
