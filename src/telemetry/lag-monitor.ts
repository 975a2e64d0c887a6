// Asks every source how far behind its route is, every lagIntervalMs, one round at a time.
// Lag costs a broker request (Kafka admin offsets, XINFO GROUPS, a BullMQ count), so it is read
// on a timer rather than at each scrape; a failed read keeps the last samples and is logged once
// per failure streak, since an outage is already reported by the source itself.
import type { LagSample } from '../connectors/source.ts';
import type { Logger } from '../logger.ts';

export interface LagSource {
  route: string;
  lag(): Promise<LagSample[]>;
}

export interface LagMonitorOptions {
  sources: readonly LagSource[];
  intervalMs: number;
  record: (route: string, samples: LagSample[]) => void;
  logger: Logger;
}

export class LagMonitor {
  private readonly options: LagMonitorOptions;
  private readonly failing = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private round: Promise<void> | undefined;

  constructor(options: LagMonitorOptions) {
    this.options = options;
  }

  start(): void {
    if (this.options.sources.length === 0) return;
    void this.poll();
    this.timer = setInterval(() => void this.poll(), this.options.intervalMs);
    this.timer.unref();
  }

  /** One round over every source (the timer's; tests call it directly). */
  poll(): Promise<void> {
    this.round ??= this.readAll().finally(() => (this.round = undefined));
    return this.round;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.round;
  }

  private async readAll(): Promise<void> {
    await Promise.all(
      this.options.sources.map(async (source) => {
        const route = source.route;
        try {
          this.options.record(route, await source.lag());
          this.failing.delete(route);
        } catch (err) {
          if (!this.failing.has(route))
            this.options.logger.warn({ err, route }, 'reading consumer lag failed');
          this.failing.add(route);
        }
      }),
    );
  }
}
