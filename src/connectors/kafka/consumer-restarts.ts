// Broker outages as the Kafka source sees them: the consumer stopped (the broker went away, the
// coordinator moved) and is restarted with jittered backoff until it runs again, however long
// the outage. Never exits the process; a bound after which the source gives up would report
// 'failed' through onHealth.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../../logger.ts';
import { Backoff } from '../backoff.ts';
import type { SourceDeps } from '../source.ts';
import type { KafkaConsumerDriver } from './driver.ts';

export interface ConsumerRestartsOptions {
  consumer: Pick<KafkaConsumerDriver, 'restart'>;
  topic: string;
  logger: Logger;
  onHealth: SourceDeps['onHealth'];
}

export class ConsumerRestarts {
  private readonly options: ConsumerRestartsOptions;
  private readonly backoff = new Backoff({ initialMs: 500, maxMs: 30_000 });
  private since: number | undefined;
  private restarting: Promise<void> | undefined;
  private crashes = 0;
  private readonly stopSignal = new AbortController();

  constructor(options: ConsumerRestartsOptions) {
    this.options = options;
  }

  /** The consumer is down: there is no group to commit to (the rejoin reads from the last commit). */
  get outage(): boolean {
    return this.since !== undefined;
  }

  /** A restart is under way. */
  get busy(): boolean {
    return this.restarting !== undefined;
  }

  /** The source stops: no restart is tried any more. */
  stop(): void {
    this.stopSignal.abort();
  }

  crashed(err: Error): void {
    this.crashes += 1;
    if (this.stopSignal.signal.aborted) return;
    this.since ??= performance.now();
    this.options.logger.warn(
      { err, topic: this.options.topic },
      'the Kafka consumer stopped; reconnecting with backoff',
    );
    this.restarting ??= this.restart(err.message).finally(() => {
      this.restarting = undefined;
    });
  }

  /** The consumer is in its group again: an outage, if there was one, ended. */
  rejoined(): void {
    if (this.since === undefined) return;
    this.options.logger.info(
      {
        topic: this.options.topic,
        outageMs: Math.round(performance.now() - this.since),
        attempts: this.backoff.attempts,
      },
      'the Kafka consumer is back in its group',
    );
    this.since = undefined;
    this.backoff.reset();
  }

  private async restart(firstReason: string): Promise<void> {
    let reason = firstReason;
    while (!this.stopSignal.signal.aborted) {
      const delay = this.backoff.next();
      this.options.onHealth?.({
        state: 'degraded',
        reason,
        attempt: this.backoff.attempts,
        sinceMs: Math.round(performance.now() - (this.since ?? performance.now())),
      });
      try {
        await sleep(delay, undefined, { signal: this.stopSignal.signal, ref: false });
      } catch {
        return;
      }
      const crashesBefore = this.crashes;
      try {
        await this.options.consumer.restart();
        // kafkajs reports a failed join as a crash from inside run(): try again.
        if (this.crashes === crashesBefore) return;
      } catch (err) {
        reason = err instanceof Error ? err.message : String(err);
        this.options.logger.warn(
          { err, topic: this.options.topic, attempt: this.backoff.attempts },
          'reconnecting to Kafka failed; trying again',
        );
      }
    }
  }
}
