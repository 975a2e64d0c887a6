// The engine's step loop over one ONNX session. Each step runs, in order:
//   1. one decode run: every decoding sequence's last token against the shared, left-padded
//      batch cache (the model's presents from the previous step become the next past);
//   2. one prefill run per planned prompt chunk, each against that sequence's own cache; a
//      sequence starts from the pipeline's prefix cache when its prompt begins with cached
//      blocks (looked up as its first chunk is planned, so the step's token budget pays only for
//      what is not cached), and every chunk's whole blocks go into that cache for later prompts.
// Decodes and prefills are separate runs because this export takes one [batch, seq] input_ids:
// padding every decode row to a chunk's width costs several times the two runs (measured in
// docs/generative.md). At the end of the step, sequences whose prompt is fully cached join in one
// re-assembly of the decode groups; sequences that finished leave in place, without one. It runs
// on a worker thread (generation-worker.ts); tests drive `step()` directly to control who arrives
// when.
import { CancelledError, DeadlineExceededError, InputError, serializeError } from '../errors.ts';
import { GenerationProgress } from '../pipelines/generation/generation-progress.ts';
import {
  emptyKvState,
  realSpan,
  releaseResident,
  residentCache,
  runStep,
  type KvState,
  type SharedPrefix,
} from '../pipelines/generation/kv-cache.ts';
import { NO_PREFIX_CACHE_STATS } from '../pipelines/generation/prefix-cache.ts';
import { toPrompt, type TextGenerationPipeline } from '../pipelines/generation/text-generation.ts';
import {
  defaultDecodeRunCost,
  formGroups,
  hostRowMoves,
  type DecodeGroup,
  type GroupMember,
  type RowMoves,
} from './decode-groups.ts';
import { dropRows, type DroppedRows } from './kv-batch.ts';
import { ResidentRows } from './resident-rows.ts';
import { isResident } from '../runtime/session.ts';
import type { LoopStats, SequenceEvent } from './protocol.ts';
import { Scheduler, type SchedulerLimits } from './scheduler.ts';
import { Sequence, type CancelReason } from './sequence.ts';
import type { StepLoop, SubmitRequest } from './step-loop.ts';

export type { SubmitRequest } from './step-loop.ts';

export class GenerationLoop implements StepLoop {
  private readonly pipeline: TextGenerationPipeline;
  private readonly scheduler: Scheduler<Sequence>;
  private readonly now: () => number;
  private readonly byId = new Map<number, Sequence>();
  /** The decoding sequences, in length groups that each run as one batch. */
  private groups: DecodeGroup<Sequence>[] = [];
  private readonly decodeText: (ids: readonly number[]) => Promise<string>;
  /**
   * Decode groups keep their cache where the session made it between steps (runtime.kvOn), and
   * rows join and leave by graphs on the same device (ResidentRows).
   */
  private readonly resident: boolean;
  /** The row moves of a resident cache, on its device. */
  private readonly residentRows: ResidentRows | undefined;
  /** Where rows are moved: residentRows, or on the host. */
  private readonly moves: RowMoves;
  /** Prefills leave their cache resident too (prefillsOnDevice); else they copy it to the host. */
  private readonly residentPrefills: boolean;
  /**
   * The shared prefixes the loop's rows have started from or moved onto: the prefix cache's
   * while it holds them; resident ones it dropped are freed here once no row decodes on them.
   */
  private readonly prefixes = new Set<SharedPrefix>();

  constructor(pipeline: TextGenerationPipeline, limits: SchedulerLimits, now = Date.now) {
    this.pipeline = pipeline;
    const resident = residentCache(pipeline.model, pipeline.layout);
    this.resident = resident.decodes;
    this.residentPrefills = resident.prefills;
    this.residentRows = this.resident
      ? new ResidentRows(pipeline.model, pipeline.layout)
      : undefined;
    this.moves = this.residentRows ?? hostRowMoves(pipeline.layout);
    this.scheduler = new Scheduler<Sequence>(limits);
    this.now = now;
    this.decodeText = (ids) => pipeline.decode(ids);
  }

  get idle(): boolean {
    return this.scheduler.idle;
  }

  stats(): LoopStats {
    return {
      waiting: this.scheduler.waitingCount,
      active: this.scheduler.activeCount,
      reservedKvTokens: this.scheduler.reservedKvTokens,
      batchKvTokens: this.groups.reduce((n, g) => n + g.state.batch * g.state.pastLength, 0),
      prefixCache: this.pipeline.prefixCache?.stats() ?? NO_PREFIX_CACHE_STATS,
    };
  }

  /** Tokenizes and queues a request; an invalid one comes back at once as its failed event. */
  async submit(request: SubmitRequest): Promise<SequenceEvent | undefined> {
    try {
      const prompt = toPrompt(request.input, 'input');
      const settings = await this.pipeline.settings(request.options);
      const promptIds = await this.pipeline.promptIds(prompt, settings.systemPrompt);
      const progress = new GenerationProgress(promptIds, settings, {
        toolCalls: prompt.kind === 'chat' && prompt.tools !== undefined,
      });
      const seq = new Sequence(
        request.id,
        promptIds,
        progress,
        settings.maxNewTokens,
        request.deadlineAt,
      );
      if (!this.scheduler.fits(seq)) {
        throw new InputError(
          promptIds.length === 0
            ? 'textGeneration: the prompt has no tokens'
            : `textGeneration: the prompt (${promptIds.length} tokens) plus maxNewTokens ` +
                `(${settings.maxNewTokens}) exceeds the engine's maxKvTokens ` +
                `(${this.scheduler.limits.maxKvTokens}); shorten one or raise the limit`,
          { field: 'input' },
        );
      }
      this.byId.set(seq.id, seq);
      this.scheduler.enqueue(seq);
      return undefined;
    } catch (err) {
      return { kind: 'failed', id: request.id, error: serializeError(err) };
    }
  }

  /** Marks a request cancelled; it leaves at the start of the next step. */
  cancel(id: number, reason: CancelReason): void {
    const seq = this.byId.get(id);
    if (seq !== undefined) seq.cancelled ??= reason;
  }

  /** One engine step; its token, done and failed events in order. Nothing to do: []. */
  async step(): Promise<SequenceEvent[]> {
    const events: SequenceEvent[] = [];
    const leaving = new Set<Sequence>();
    this.reap(events, leaving);
    if (leaving.size > 0) await this.regroup(leaving, []);
    leaving.clear();
    // A sequence is resumed from the prefix cache as its first chunk is planned, not at submit:
    // a prompt that arrived with others sharing its prefix finds the blocks that the first of
    // them prefilled in an earlier step.
    const plan = await this.scheduler.plan((seq) => this.resume(seq));
    const joining: Sequence[] = [];
    if (plan.decode.length > 0) await this.decode(events, leaving);
    for (const { seq, length } of plan.prefill) {
      try {
        const ids = seq.promptIds.slice(seq.prefilled, seq.prefilled + length);
        const before = seq.kv;
        const step = await runStep(
          this.pipeline.model.session,
          this.pipeline.layout,
          before ?? emptyKvState(this.pipeline.layout, 1),
          { ids: [ids] },
          { resident: this.residentPrefills },
        );
        seq.kv = step.state;
        // An earlier chunk's resident cache was this run's past, and so was a prefix-cache hit's
        // own columns, a copy the sequence owns. A shared prefix is never in `past`:
        // releaseResident leaves it to the cache and releasePrefixes.
        if (before !== undefined) releaseResident([before], [step.state]);
        seq.prefilled += ids.length;
        await this.pipeline.prefixCache?.store(seq.promptIds, seq.kv);
        if (seq.prefilled < seq.promptLength) continue;
        const [first] = step.logits;
        if ((await this.accept([{ seq, logits: first as Float32Array }], events)).length > 0)
          continue;
        this.scheduler.promote(seq);
        joining.push(seq);
      } catch (err) {
        this.fail(seq, err, events);
      }
    }
    if (leaving.size > 0 || joining.length > 0) await this.regroup(leaving, joining);
    this.releasePrefixes();
    return events;
  }

  /**
   * Frees what the loop holds on the device once it is done: the caches of its sequences and
   * decode groups, and its prefix cache's blocks, before the model's sessions close.
   */
  async close(): Promise<void> {
    releaseResident(this.states().flatMap((state) => (state === undefined ? [] : [state])));
    this.groups = [];
    for (const seq of this.scheduler.all()) seq.kv = undefined;
    this.releasePrefixes();
    await this.pipeline.prefixCache?.close();
  }

  /**
   * Frees the resident shared prefixes that no state of the loop decodes on any more and that
   * the prefix cache no longer holds (it evicted them, or never kept them): they were the rows'.
   */
  private releasePrefixes(): void {
    const cache = this.pipeline.prefixCache;
    if (!this.residentPrefills || cache === undefined) return;
    const live = new Set(this.states().map((state) => state?.shared));
    for (const shared of live) if (shared !== undefined) this.prefixes.add(shared);
    for (const shared of this.prefixes) {
      if (live.has(shared) || cache.holds(shared)) continue;
      this.prefixes.delete(shared);
      for (const t of shared.past) if (isResident(t)) t.release();
    }
  }

  /** Every cache the loop runs: its decode groups' and its prefilling sequences'. */
  private states(): (KvState | undefined)[] {
    return [...this.groups.map((group) => group.state), ...this.scheduler.all().map((s) => s.kv)];
  }

  /**
   * Starts a sequence from the longest cached prefix of its prompt, if any. A hit that could not
   * be assembled (a failed run on the device) is a miss: the prompt prefills in full, and a
   * device that is failing fails it there.
   */
  private async resume(seq: Sequence): Promise<void> {
    const hit = await this.pipeline.prefixCache?.lookup(seq.promptIds).catch(() => undefined);
    if (hit === undefined) return;
    // Known from the start: a row that fails in this step still leaves its prefix to free.
    if (this.residentPrefills && hit.state.shared !== undefined)
      this.prefixes.add(hit.state.shared);
    seq.kv = hit.state;
    seq.prefilled = hit.tokens;
  }

  private async decode(events: SequenceEvent[], leaving: Set<Sequence>): Promise<void> {
    for (const group of this.groups) {
      try {
        const step = await runStep(
          this.pipeline.model.session,
          this.pipeline.layout,
          group.state,
          { ids: group.rows.map((seq) => [seq.lastToken]) },
          { resident: this.resident },
        );
        releaseResident([group.state]);
        group.state = step.state;
        const rows = group.rows.map((seq, r) => ({ seq, logits: step.logits[r] as Float32Array }));
        for (const seq of await this.accept(rows, events)) leaving.add(seq);
      } catch (err) {
        for (const seq of group.rows) {
          if (leaving.has(seq)) continue;
          this.fail(seq, err, events);
          leaving.add(seq);
        }
      }
    }
  }

  /**
   * Chooses and records each row's next token; the sequences that this ended. The rows' text
   * decodes run at once: awaited one by one, their round trips to the tokenizer's thread held
   * the loop back (32 requests on one loop: 168 tokens/s, 197 with the decodes together).
   */
  private async accept(
    rows: readonly { seq: Sequence; logits: Float32Array }[],
    events: SequenceEvent[],
  ): Promise<Sequence[]> {
    const steps = await Promise.all(
      rows.map(({ seq: { progress }, logits }) =>
        progress.accept(progress.choose(logits), this.decodeText),
      ),
    );
    const ended: Sequence[] = [];
    rows.forEach(({ seq }, r) => {
      const step = steps[r];
      if (step === undefined) return;
      seq.lastToken = step.tokenId;
      events.push({
        kind: 'token',
        id: seq.id,
        tokenId: step.tokenId,
        text: step.text,
        index: seq.emitted++,
      });
      if (!step.done) return;
      events.push({ kind: 'done', id: seq.id, result: seq.progress.result() });
      this.release(seq);
      ended.push(seq);
    });
    return ended;
  }

  private reap(events: SequenceEvent[], leaving: Set<Sequence>): void {
    const now = this.now();
    for (const seq of this.scheduler.all()) {
      if (seq.cancelled === undefined && seq.deadlineAt !== undefined && now >= seq.deadlineAt)
        seq.cancelled = 'deadline';
      if (seq.cancelled === undefined) continue;
      const error =
        seq.cancelled === 'deadline'
          ? new DeadlineExceededError(
              `textGeneration: the request's deadline passed after ${seq.progress.generatedTokens} tokens`,
            )
          : new CancelledError(
              `textGeneration: the request was cancelled after ${seq.progress.generatedTokens} tokens`,
            );
      if (this.groups.some((g) => g.rows.includes(seq))) leaving.add(seq);
      this.fail(seq, error, events);
    }
  }

  private fail(seq: Sequence, err: unknown, events: SequenceEvent[]): void {
    events.push({ kind: 'failed', id: seq.id, error: serializeError(err) });
    this.release(seq);
  }

  private release(seq: Sequence): void {
    this.scheduler.remove(seq);
    this.byId.delete(seq.id);
    // A prefill's cache left resident by a sequence that ended before joining a decode group.
    if (seq.kv !== undefined) releaseResident([seq.kv]);
    seq.kv = undefined;
  }

  /**
   * The decode groups after a step: leavers out, joiners in. Joiners cost one re-assembly of the
   * decode cache (the groups are re-cut around them); a step where rows only leave compacts each
   * group in place instead (`dropRows`: one row copied per leaver), which is most steps once
   * prompts are in, since requests finish one by one.
   */
  private async regroup(
    leaving: ReadonlySet<Sequence>,
    joining: readonly Sequence[],
  ): Promise<void> {
    const before = this.groups.map((group) => group.state);
    try {
      await this.regroupRows(leaving, joining);
    } finally {
      // What the groups kept was copied into new values (or to the host): the old ones can go.
      releaseResident(
        before,
        this.groups.map((group) => group.state),
      );
    }
  }

  private async regroupRows(
    leaving: ReadonlySet<Sequence>,
    joining: readonly Sequence[],
  ): Promise<void> {
    if (joining.length === 0) {
      const kept: DecodeGroup<Sequence>[] = [];
      for (const group of this.groups) kept.push(...(await this.shrink(group, leaving)));
      this.groups = kept;
      return;
    }
    const members = this.groups.flatMap((group) =>
      group.rows.flatMap((seq, row) =>
        leaving.has(seq) ? [] : [this.member(seq, group.state, row)],
      ),
    );
    for (const seq of joining) if (seq.kv !== undefined) members.push(this.member(seq, seq.kv, 0));
    const groups = await formGroups(
      members,
      this.scheduler.limits.decodeRunCostTokens ?? defaultDecodeRunCost(this.pipeline.layout),
      this.moves,
    );
    this.groups = groups;
    // The joiners' prefill caches were copied into the groups' (or onto a shared prefix).
    releaseResident(
      joining.flatMap((seq) => (seq.kv === undefined ? [] : [seq.kv])),
      groups.map((group) => group.state),
    );
    for (const seq of joining) seq.kv = undefined;
  }

  /** A decode row, with the prefix cache's shared prefix of its prompt if it has none. */
  private member(seq: Sequence, state: KvState, row: number): GroupMember<Sequence> {
    const candidate = this.pipeline.prefixCache?.sharedFor(seq.promptIds, state, row);
    return { seq, ref: { state, row }, ...(candidate === undefined ? {} : { candidate }) };
  }

  /**
   * A group without its leavers. When its longest rows left, more than an eighth of its columns
   * would be padding in every row from now on, which every later step would carry: it is
   * re-assembled (trimmed) instead.
   */
  private async shrink(
    group: DecodeGroup<Sequence>,
    leaving: ReadonlySet<Sequence>,
  ): Promise<DecodeGroup<Sequence>[]> {
    const drop = new Set<number>();
    group.rows.forEach((seq, r) => {
      if (leaving.has(seq)) drop.add(r);
    });
    if (drop.size === 0) return [group];
    if (drop.size === group.rows.length) return [];
    const { state, from } = await this.dropRows(group.state, drop);
    const rows = from.map((r) => group.rows[r] as Sequence);
    const longest = from.reduce((max, _, r) => Math.max(max, realSpan(state, r)), 0);
    if (longest * 8 >= state.pastLength * 7) return [{ rows, state }];
    const trimmed = await this.moves.assemble(rows.map((_, row) => ({ state, row })));
    if (trimmed !== state) releaseResident([state], [trimmed]);
    return [{ rows, state: trimmed }];
  }

  /** dropRows where the cache lives: in place on the host, or by a gather on its device. */
  private async dropRows(state: KvState, drop: ReadonlySet<number>): Promise<DroppedRows> {
    const residentRows = this.residentRows;
    if (residentRows === undefined || !state.past.some(isResident))
      return dropRows(this.pipeline.layout, state, drop);
    const from = Array.from({ length: state.batch }, (_, r) => r).filter((r) => !drop.has(r));
    return { state: await residentRows.keepRows(state, from), from };
  }
}
