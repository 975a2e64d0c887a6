// read_committed filtering of one fetched partition, as the Java consumer does it: the broker lists
// the aborted transactions that overlap the fetch (in the order they ended, not by first offset);
// sorted by first offset, every one whose first offset is reached marks its producer as aborting,
// and that producer's abort marker clears it. Both kafkajs 2.2.4 and @platformatic/kafka 2.12.1
// get this wrong in their own ways (docs/sources-and-sinks.md), so both drivers run this one.
export interface FilterableMessage {
  offset: string;
  key: Buffer | null;
  isControlRecord?: boolean;
  batchContext: { producerId: string | number; inTransaction: boolean };
}

export interface AbortedTransaction {
  producerId: string | number;
  firstOffset: string | number;
}

/** A control record's key: version (int16) then type (int16), 0 = abort, 1 = commit. */
const ABORT_MARKER_KEY = Buffer.from([0, 0, 0, 0]);

function isAbortMarker(message: FilterableMessage): boolean {
  return message.key !== null && Buffer.from(message.key).equals(ABORT_MARKER_KEY);
}

/**
 * The records of one fetched partition without those of aborted transactions. Control records
 * stay: kafkajs drops them afterwards (and needs them to step over a batch of only markers).
 */
export function withoutAborted<M extends FilterableMessage>(
  messages: M[],
  abortedTransactions: AbortedTransaction[] | undefined,
): M[] {
  if (abortedTransactions === undefined || abortedTransactions.length === 0) return messages;
  const pending = abortedTransactions
    .map((t) => ({ producerId: String(t.producerId), firstOffset: BigInt(t.firstOffset) }))
    .sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : a.firstOffset > b.firstOffset ? 1 : 0));
  const aborting = new Set<string>();
  let next = 0;
  return messages.filter((message) => {
    const offset = BigInt(message.offset);
    for (let t = pending[next]; t !== undefined && t.firstOffset <= offset; t = pending[next]) {
      aborting.add(t.producerId);
      next += 1;
    }
    const producerId = String(message.batchContext.producerId);
    if (message.isControlRecord === true) {
      if (isAbortMarker(message)) aborting.delete(producerId);
      return true;
    }
    return !(message.batchContext.inTransaction && aborting.has(producerId));
  });
}
