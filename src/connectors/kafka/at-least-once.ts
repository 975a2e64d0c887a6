// At-least-once delivery: outputs are sent as they come, and each partition's offset is committed
// after its longest prefix of written records, every commit interval and at stop. A record
// written but not yet committed when its worker dies is read and written again by the next owner.
import type { TransactionStager } from '../../route/sink.ts';
import type { Delivery } from './delivery.ts';
import type { KafkaConsumerDriver, TopicPartition } from './driver.ts';
import type { CommitPolicy } from './offset-tracker.ts';
import { PartitionLane } from './partition-lane.ts';

export interface AtLeastOnceOptions {
  consumer: Pick<KafkaConsumerDriver, 'commit'>;
  policy: CommitPolicy;
}

export class AtLeastOnce implements Delivery {
  private readonly options: AtLeastOnceOptions;

  constructor(options: AtLeastOnceOptions) {
    this.options = options;
  }

  freshLane(tp: TopicPartition, old: PartitionLane | undefined): PartitionLane {
    return new PartitionLane(tp, old?.committed);
  }

  successor(failed: PartitionLane): PartitionLane {
    return new PartitionLane(failed.tp, failed.committed);
  }

  transactionFor(): TransactionStager | undefined {
    return undefined;
  }

  written(): void {}

  async commit(lanes: PartitionLane[]): Promise<void> {
    const offsets = lanes.flatMap((lane) => {
      if (lane.retired) return [];
      const offset = this.options.policy.committable(lane.offsets, lane.committed);
      return offset === undefined ? [] : [{ lane, offset }];
    });
    if (offsets.length === 0) return;
    await this.options.consumer.commit(offsets.map(({ lane, offset }) => ({ ...lane.tp, offset })));
    for (const { lane, offset } of offsets) lane.committed = offset;
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
