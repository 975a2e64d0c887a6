// What /livez and /readyz answer (docs/operations.md#health). Ready: the models are warm, every
// source has started and (Kafka) joined its group, no source or sink is reconnecting, and the
// worker is not draining. Live: no source has failed for good. A source that reconnects for
// longer than the outage bound counts as failed for good too: a worker that cannot read is better
// restarted by its orchestrator than left up consuming nothing. A sink's outage turns readiness
// red only: what it could not write is delivered again by the source, and a restart would not
// bring its destination back.
import type { ConnectionHealth } from '../connectors/connection-health.ts';

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

interface EndState {
  /** How readiness names it: "source r1", "sink of route r1". */
  label: string;
  /** Sinks: an outage makes the worker not ready, never failed. */
  bounded: boolean;
  started: boolean;
  /** Kafka: ready only after the group assigned partitions (an empty assignment counts). */
  needsJoin: boolean;
  joined: boolean;
  health: ConnectionHealth;
  degradedSince: number | undefined;
  timer: NodeJS.Timeout | undefined;
}

export class HealthState {
  private readonly options: Required<HealthOptions>;
  private readonly ends = new Map<string, EndState>();
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
    this.ends.set(name, {
      label: `source ${name}`,
      bounded: true,
      started: false,
      needsJoin,
      joined: false,
      health: { state: 'healthy' },
      degradedSince: undefined,
      timer: undefined,
    });
  }

  /** A route's sink or DLQ, under a key of its own; reconnects make the worker not ready. */
  addSink(key: string, label: string): void {
    this.ends.set(key, {
      label,
      bounded: false,
      started: true,
      needsJoin: false,
      joined: true,
      health: { state: 'healthy' },
      degradedSince: undefined,
      timer: undefined,
    });
  }

  sourceStarted(name: string): void {
    const source = this.ends.get(name);
    if (source !== undefined) source.started = true;
  }

  /** A source's or sink's report (SourceDeps.onHealth). 'healthy' after a join or a reconnect. */
  connectionHealth(name: string, health: ConnectionHealth): void {
    const source = this.ends.get(name);
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
      this.fail(`${source.label} failed for good: ${health.reason}`);
      return;
    }
    source.degradedSince ??= this.options.now() - health.sinceMs;
    if (source.bounded && source.timer === undefined) this.armOutageCheck(source);
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
    for (const s of this.ends.values()) {
      if (!s.started) reasons.push(`${s.label} is starting`);
      else if (s.health.state === 'degraded')
        reasons.push(`${s.label} is reconnecting: ${s.health.reason}`);
      else if (s.needsJoin && !s.joined) reasons.push(`${s.label} has not joined its group`);
    }
    return { ok: reasons.length === 0, reasons };
  }

  close(): void {
    for (const source of this.ends.values()) clearTimeout(source.timer);
  }

  private armOutageCheck(source: EndState): void {
    const since = source.degradedSince ?? this.options.now();
    const left = Math.max(0, since + this.options.sourceOutageMs - this.options.now());
    source.timer = setTimeout(() => {
      source.timer = undefined;
      if (source.health.state !== 'degraded' || source.degradedSince === undefined) return;
      const outage = this.options.now() - source.degradedSince;
      if (outage >= this.options.sourceOutageMs) {
        this.fail(
          `${source.label} could not reconnect for ${Math.round(outage)} ms (health.sourceOutageMs ${this.options.sourceOutageMs}): ${source.health.reason}`,
        );
      } else this.armOutageCheck(source);
    }, left);
    source.timer.unref();
  }

  private fail(reason: string): void {
    if (this.failure !== undefined) return;
    this.failure = reason;
    for (const listener of this.failureListeners) listener(reason);
  }
}
