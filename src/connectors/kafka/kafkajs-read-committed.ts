// kafkajs 2.2.4 lets records of aborted transactions through a read_committed consumer. The broker
// lists a fetch's aborted transactions in the order they ended, not by first offset, and kafkajs
// looks only at the head of that list, one entry per record: a transaction that started before
// the head's is not recognised until the head's first offset, and its records up to there are
// delivered as if committed. Exactly-once outputs written by several transactional producers into
// one partition, with kills aborting some of them, read back with ~5% "duplicates" that are
// aborted records (the chaos suite's kill9-exactly-once; a Java read_committed consumer reads the
// same topics without one).
//
// The corrected filter follows the Java consumer: aborted transactions by first offset, every one
// whose first offset is reached marks its producer, the producer's abort marker clears it. kafkajs'
// Batch takes the filter with require() when it loads, so the corrected one must be in Node's
// module cache first: this module is imported before kafkajs by every module that loads it.
import { createRequire } from 'node:module';
import {
  withoutAborted,
  type AbortedTransaction,
  type FilterableMessage,
} from './aborted-transactions.ts';

export { withoutAborted, type AbortedTransaction, type FilterableMessage };

const INSTALLED = Symbol.for('hugot.kafkajs.readCommittedFilter');

/**
 * Puts the corrected filter where kafkajs' Batch will require it, and tells whether Batch uses
 * it: false when kafkajs' Batch was loaded earlier (by a module that imported kafkajs first),
 * and a read_committed consumer would then still read aborted records.
 */
export function installReadCommittedFilter(): boolean {
  const require = createRequire(import.meta.url);
  const filterPath = require.resolve('kafkajs/src/consumer/filterAbortedMessages.js');
  const batchPath = require.resolve('kafkajs/src/consumer/batch.js');
  const isOurs = (): boolean =>
    (require.cache[filterPath]?.exports as Record<symbol, unknown> | undefined)?.[INSTALLED] ===
    true;
  if (isOurs()) return (globalThis as Record<symbol, unknown>)[INSTALLED] === true;
  const batchLoaded = require.cache[batchPath] !== undefined;
  require(filterPath);
  const entry = require.cache[filterPath];
  if (entry === undefined) return false;
  const filter = ({
    messages,
    abortedTransactions,
  }: {
    messages: FilterableMessage[];
    abortedTransactions?: AbortedTransaction[];
  }): FilterableMessage[] => withoutAborted(messages, abortedTransactions);
  Object.defineProperty(filter, INSTALLED, { value: true });
  entry.exports = filter;
  // Remembered process-wide: this module may be evaluated again (test runners) after Batch loaded.
  (globalThis as Record<symbol, unknown>)[INSTALLED] = !batchLoaded;
  return !batchLoaded;
}

/** Whether kafkajs' read_committed consumers use the corrected filter (see above). */
export const readCommittedFilterActive = installReadCommittedFilter();
