// What the cohort and segment loops (pipelines the engine drives through an interface, not a
// decoder-only model it schedules itself) say alike about a request: per-request options are
// refused, a cancel or a deadline ends it with its own error, and their stats have no KV budget
// or prefix cache to report.
import { CancelledError, DeadlineExceededError, InputError } from '../errors.ts';
import type { GenerationOptions } from '../pipelines/generation/generation-options.ts';
import { NO_PREFIX_CACHE_STATS } from '../pipelines/generation/prefix-cache.ts';
import type { LoopStats } from './protocol.ts';
import type { CancelReason } from './sequence.ts';

/** Throws InputError when a request brings options of its own. */
export function refuseRequestOptions(task: string, options: GenerationOptions | undefined): void {
  if (options === undefined || Object.keys(options).length === 0) return;
  throw new InputError(
    `${task} on the generative engine runs with its pipeline's options; ` +
      'per-request generation options are for textGeneration (remove generation.optionsField)',
    { field: 'options' },
  );
}

export function cancelError(task: string, reason: CancelReason, tokens: number): Error {
  return reason === 'deadline'
    ? new DeadlineExceededError(`${task}: the request's deadline passed after ${tokens} tokens`)
    : new CancelledError(`${task}: the request was cancelled after ${tokens} tokens`);
}

export function requestLoopStats(waiting: number, active: number): LoopStats {
  return {
    waiting,
    active,
    reservedKvTokens: 0,
    batchKvTokens: 0,
    prefixCache: NO_PREFIX_CACHE_STATS,
  };
}
