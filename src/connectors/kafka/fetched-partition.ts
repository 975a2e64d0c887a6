// One partition of a raw Fetch response (@platformatic/kafka's consumer.fetch()) as the records
// the source may take: control records and (read_committed) records of aborted transactions
// removed, records below the fetch position dropped (a batch starts before it), and the offset
// after the last fetched record, so a fetch of only markers or aborted records still moves on.
import type { fetchV17, RecordsBatch } from '@platformatic/kafka';
import type { Headers } from '../../route/record.ts';
import { withoutAborted, type FilterableMessage } from './aborted-transactions.ts';
import type { DriverMessage } from './driver.ts';

/** Record batch attribute bits (Kafka's DefaultRecordBatch). */
const TRANSACTIONAL = 0x10;
const CONTROL = 0x20;

export interface FetchedPartition {
  messages: DriverMessage[];
  /** The offset after the last record of the response (records filtered out included). */
  end: bigint | undefined;
  highWatermark: bigint;
}

interface Candidate extends FilterableMessage {
  message: DriverMessage;
}

export function fetchedPartition(
  partition: Pick<
    fetchV17.FetchResponsePartition,
    'records' | 'abortedTransactions' | 'highWatermark'
  >,
  position: bigint,
  readCommitted: boolean,
): FetchedPartition {
  const batches: RecordsBatch[] = partition.records ?? [];
  const candidates: Candidate[] = [];
  let end: bigint | undefined;
  for (const batch of batches) {
    const last = batch.firstOffset + BigInt(batch.lastOffsetDelta) + 1n;
    if (end === undefined || last > end) end = last;
    const isControlRecord = (batch.attributes & CONTROL) !== 0;
    const inTransaction = (batch.attributes & TRANSACTIONAL) !== 0;
    for (const record of batch.records) {
      const offset = (batch.firstOffset + BigInt(record.offsetDelta)).toString();
      candidates.push({
        offset,
        key: record.key,
        isControlRecord,
        batchContext: { producerId: batch.producerId.toString(), inTransaction },
        message: {
          offset,
          key: record.key,
          value: record.value,
          headers: headersOf(record.headers),
        },
      });
    }
  }
  const committed = readCommitted
    ? withoutAborted(
        candidates,
        (partition.abortedTransactions ?? []).map((t) => ({
          producerId: t.producerId.toString(),
          firstOffset: t.firstOffset.toString(),
        })),
      )
    : candidates;
  const messages = committed
    .filter((c) => c.isControlRecord !== true && BigInt(c.offset) >= position)
    .map((c) => c.message);
  return { messages, end, highWatermark: partition.highWatermark };
}

/** Header bytes as they came; a repeated name's values in order (as kafkajs gives them). */
function headersOf(pairs: [Buffer | null, Buffer | null][]): Headers {
  const out: Headers = {};
  for (const [name, value] of pairs) {
    if (name === null || value === null) continue;
    const key = name.toString('utf8');
    const known = out[key];
    if (known === undefined) out[key] = value;
    else if (Array.isArray(known)) known.push(value);
    else out[key] = [known, value];
  }
  return out;
}
