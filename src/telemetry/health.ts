// What /livez and /readyz answer (docs/operations.md#health). Ready: the models are warm, every
// source has started and (Kafka) joined its group, nothing is reconnecting, and the worker is not
// draining. Live: no source has failed for good. A source that reconnects for longer than the
// outage bound counts as failed for good too: a worker that cannot read is better restarted by
// its orchestrator than left up consuming nothing.
import type { SourceHealth } from '../connectors/source.ts';

export interface HealthOptions {
  /** A source degraded (reconnecting) this long is failed for good. */
  sourceOutageMs: number;
  now?: () => number;
}

export interface HealthAnswer {
  ok: boolean;
  /** Why not, one line per cause; empty when ok. */
  reasons: string[];
}

interface SourceState {
  started: boolean;
  /** Kafka: ready only after the group assigned partitions (an empty assignment counts). */
  needsJoin: boolean;
  joined: boolean;
  health: SourceHealth;
  degradedSince: number | undefined;
  timer: NodeJS.Timeout | undefined;
}

export class HealthState {
  private readonly options: Required<HealthOptions>;
  private readonly sources = new Map<string, SourceState>();
  private warm = false;
  private draining = false;
  /** What start-up still waits for (a broker, Redis, a topic). */
  private waiting: string[] = [];
  private failure: string | undefined;
  private readonly failureListeners = new Set<(reason: string) => void>();

  constructor(options: HealthOptions) {
    this.options = { now: () => performance.now(), ...options };
  }

  /** The models are loaded on every thread. */
  warmed(): void {
    this.warm = true;
  }

  addSource(name: string, needsJoin: boolean): void {
    this.sources.set(name, {
      started: false,
      needsJoin,
      joined: false,
      health: { state: 'healthy' },
      degradedSince: undefined,
      timer: undefined,
    });
  }

  sourceStarted(name: string): void {
    const source = this.sources.get(name);
    if (source !== undefined) source.started = true;
  }

  /** A source's report (SourceDeps.onHealth). 'healthy' after a join or a reconnect. */
  sourceHealth(name: string, health: SourceHealth): void {
    const source = this.sources.get(name);
    if (source === undefined) return;
    source.health = health;
    if (health.state === 'healthy') {
      source.joined = true;
      source.degradedSince = undefined;
      clearTimeout(source.timer);
      source.timer = undefined;
      return;
    }
    if (health.state === 'failed') {
      clearTimeout(source.timer);
      this.fail(`source ${name} failed for good: ${health.reason}`);
      return;
    }
    source.degradedSince ??= this.options.now() - health.sinceMs;
    if (source.timer === undefined) this.armOutageCheck(name, source);
  }

  /** What start-up still waits for; an empty list once everything answered. */
  waitingFor(missing: readonly string[]): void {
    this.waiting = [...missing];
  }

  startDraining(): void {
    this.draining = true;
  }

  /** Hears the first failure for good (once); returns the unsubscribe function. */
  onFailure(listener: (reason: string) => void): () => void {
    this.failureListeners.add(listener);
    return () => this.failureListeners.delete(listener);
  }

  get failed(): string | undefined {
    return this.failure;
  }

  liveness(): HealthAnswer {
    return this.failure === undefined
      ? { ok: true, reasons: [] }
      : { ok: false, reasons: [this.failure] };
  }

  readiness(): HealthAnswer {
    const reasons: string[] = [];
    if (this.failure !== undefined) reasons.push(this.failure);
    for (const missing of this.waiting) reasons.push(`start-up is waiting: ${missing}`);
    if (!this.warm) reasons.push('models are loading');
    if (this.draining) reasons.push('draining for shutdown');
    for (const [name, s] of this.sources) {
      if (!s.started) reasons.push(`source ${name} is starting`);
      else if (s.health.state === 'degraded')
        reasons.push(`source ${name} is reconnecting: ${s.health.reason}`);
      else if (s.needsJoin && !s.joined) reasons.push(`source ${name} has not joined its group`);
    }
    return { ok: reasons.length === 0, reasons };
  }

  close(): void {
    for (const source of this.sources.values()) clearTimeout(source.timer);
  }

  private armOutageCheck(name: string, source: SourceState): void {
    const since = source.degradedSince ?? this.options.now();
    const left = Math.max(0, since + this.options.sourceOutageMs - this.options.now());
    source.timer = setTimeout(() => {
      source.timer = undefined;
      if (source.health.state !== 'degraded' || source.degradedSince === undefined) return;
      const outage = this.options.now() - source.degradedSince;
      if (outage >= this.options.sourceOutageMs) {
        this.fail(
          `source ${name} could not reconnect for ${Math.round(outage)} ms (health.sourceOutageMs ${this.options.sourceOutageMs}): ${source.health.reason}`,
        );
      } else this.armOutageCheck(name, source);
    }, left);
    source.timer.unref();
  }

  private fail(reason: string): void {
    if (this.failure !== undefined) return;
    this.failure = reason;
    for (const listener of this.failureListeners) listener(reason);
  }
}
