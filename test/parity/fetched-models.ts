// The real-weight parity tests (MiniLM fp32, SmolLM2) need what `npm run models:fetch` builds into
// .cache/models. On a developer's machine without it they are skipped, and reported as skipped;
// in CI, which fetches them first (.ci/run), absent weights mean a broken step, so the tests run
// and fail, saying what is missing, instead of turning a green run into one that proved less.
import { it } from 'vitest';

/** CI (CI=true, as CI runners set it) or HUGOT_REQUIRE_FETCHED=1: the weights must be there. */
export const WEIGHTS_REQUIRED =
  process.env['CI'] === 'true' || process.env['HUGOT_REQUIRE_FETCHED'] === '1';

/** `it` where the weights are there or required (then missingWeights fails the test); else skipped. */
export const whenFetched = (fetched: boolean): ReturnType<typeof it.skipIf> =>
  it.skipIf(!fetched && !WEIGHTS_REQUIRED);

/** The error a required real-weight test fails with when its model was not fetched. */
export function missingWeights(what: string): Error {
  return new Error(
    `${what} is not in .cache/models, and this run requires the real weights (CI or ` +
      'HUGOT_REQUIRE_FETCHED=1): run `npm run models:ensure` (or `npm run models:fetch -- --tests`) first, as `npm test` does',
  );
}
