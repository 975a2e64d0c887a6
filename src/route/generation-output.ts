// Where a decoder-only generation's result becomes a route's output: a result that asked for a
// responseFormat and did not get one (maxNewTokens ran out mid-object) is refused here, so its
// record goes to the DLQ with the reason rather than to a consumer that would fail to parse it.
import { OutputInvalidError } from '../errors.ts';

/** Throws OutputInvalidError for a result whose output does not satisfy its responseFormat. */
export function checkGenerationOutput(result: unknown): void {
  if (result === null || typeof result !== 'object') return;
  const { formatError } = result as { formatError?: unknown };
  if (typeof formatError === 'string')
    throw new OutputInvalidError(formatError, { field: 'responseFormat' });
}
