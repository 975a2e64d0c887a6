// Partitions added to a source's topic at run time (Flink's partition discovery): the topic's
// partition count is asked every interval, and when it grew the consumer joins its group again,
// so that the group's leader assigns the new partitions and their records are read.
import type { Logger } from '../../logger.ts';
import type { KafkaConsumerDriver, KafkaDriver } from './driver.ts';

export interface PartitionDiscoveryOptions {
  driver: Pick<KafkaDriver, 'topicPartitions'>;
  consumer: Pick<KafkaConsumerDriver, 'rejoin'>;
  topic: string;
  intervalMs: number;
  logger: Logger;
  /** A reconnect or a stop under way: a rejoin now would race it; the next tick asks again. */
  busy: () => boolean;
}

export class PartitionDiscovery {
  private readonly options: PartitionDiscoveryOptions;
  /** The topic's partitions when last asked. */
  private count: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private asking = false;

  constructor(options: PartitionDiscoveryOptions) {
    this.options = options;
  }

  async start(): Promise<void> {
    this.count = await this.partitions();
    this.timer = setInterval(() => void this.check(), this.options.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private async partitions(): Promise<number | undefined> {
    const { driver, topic } = this.options;
    return (await driver.topicPartitions([topic])).get(topic);
  }

  private async check(): Promise<void> {
    if (this.options.busy() || this.asking) return;
    this.asking = true;
    const { topic, logger } = this.options;
    try {
      const count = await this.partitions();
      if (count === undefined || this.count === undefined || count <= this.count) {
        this.count ??= count;
        return;
      }
      logger.info(
        { topic, from: this.count, to: count },
        `topic ${topic} grew from ${this.count} to ${count} partitions: joining the group again so that the new ones are read`,
      );
      this.count = count;
      await this.options.consumer.rejoin();
    } catch (err) {
      // A broker that does not answer is the reconnect loop's to report; the next tick asks again.
      logger.debug({ err, topic }, 'partition discovery failed');
    } finally {
      this.asking = false;
    }
  }
}
