// A Redis stream read through a consumer group. Entry layout: field `value` holds the record's
// bytes (read as raw bytes, so a value that is not UTF-8 reaches the DLQ intact), field `key` its
// key if any, and every other field is a header. An entry is acknowledged (XACK) only after its
// output or its dead letter was written; one whose write failed stays pending and is reclaimed.
//
// Entries left pending by a consumer that died are taken over with XAUTOCLAIM once idle for
// `claimIdleMs`; this consumer keeps its own in-flight entries from looking idle by touching them
// (XCLAIM JUSTID, which does not count as a delivery). An entry delivered more than
// `maxDeliveries` times (it keeps killing the workers that take it) goes to the DLQ unprocessed.
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { closeRedis, connectRedis, redisReady, type RedisTarget } from './redis-connection.ts';
import { deadLetter } from '../../route/dead-letter.ts';
import type { SourceRecord } from '../../route/record.ts';
import type { LagSample, Source, SourceDeps } from '../source.ts';
import { parseEntries, type StreamEntry } from './stream-entries.ts';

export interface RedisStreamSourceOptions {
  stream: string;
  group: string;
  consumer?: string | undefined;
  count: number;
  blockMs: number;
  claimIdleMs: number;
  maxDeliveries: number;
}

export class RedisStreamSource implements Source {
  readonly finished = undefined;
  private readonly options: RedisStreamSourceOptions;
  private readonly deps: SourceDeps;
  private readonly consumer: string;
  private readonly maxInFlight: number;
  /** Commands, acknowledgements and claims. */
  private client: Redis | undefined;
  /** Only the blocking XREADGROUP, which holds its connection for up to blockMs. */
  private reader: Redis | undefined;
  private readerId: number | undefined;
  private readonly inFlight = new Set<string>();
  private readonly roomWaiters = new Set<() => void>();
  private pressured = false;
  private stopping = false;
  private loop: Promise<void> | undefined;
  private claiming: Promise<void> | undefined;
  private claimTimer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;

  private readonly redis: RedisTarget;

  constructor(options: RedisStreamSourceOptions, deps: SourceDeps, redis: RedisTarget) {
    this.options = options;
    this.deps = deps;
    this.redis = redis;
    this.consumer = options.consumer ?? `${hostname()}-${process.pid}`;
    this.maxInFlight = options.count * 4;
  }

  async start(): Promise<void> {
    const target = this.redis;
    const { stream, group } = this.options;
    // No auto-pipelining here: ioredis then mangles callBuffer (XAUTOCLAIM read as raw bytes).
    this.client = connectRedis(target, `hugot-stream-${this.consumer}`);
    this.reader = connectRedis(target, `hugot-stream-reader-${this.consumer}`);
    // Wrong credentials or certificates fail the start with a clear error instead of a
    // reconnect loop that logs the refusal forever.
    await Promise.all([redisReady(this.client, target.url), redisReady(this.reader, target.url)]);
    // ioredis holds commands while it reconnects (maxRetriesPerRequest: null), so an outage shows
    // as reconnect events rather than failed reads: reported, so that one longer than
    // telemetry.health.sourceOutageMs fails /livez.
    let down: { since: number; attempt: number } | undefined;
    this.reader.on('reconnecting', () => {
      if (this.stopping) return;
      down ??= { since: performance.now(), attempt: 0 };
      down.attempt += 1;
      this.deps.onHealth?.({
        state: 'degraded',
        reason: `Redis unreachable (stream ${stream})`,
        attempt: down.attempt,
        sinceMs: Math.round(performance.now() - down.since),
      });
    });
    this.reader.on('ready', () => {
      if (down === undefined) return;
      down = undefined;
      this.deps.onHealth?.({ state: 'healthy' });
    });
    this.readerId = Number(await this.reader.client('ID'));
    try {
      // From '0': a new group takes what the stream already holds, as Kafka's fromBeginning.
      await this.client.xgroup('CREATE', stream, group, '0', 'MKSTREAM');
    } catch (err) {
      if (!(err instanceof Error && err.message.startsWith('BUSYGROUP'))) throw err;
    }
    this.unsubscribe = this.deps.onPressure((pressure) => {
      this.pressured = pressure === 'pause';
      this.wakeReader();
    });
    this.loop = this.readLoop();
    const every = Math.min(15_000, Math.max(100, Math.floor(this.options.claimIdleMs / 2)));
    this.claimTimer = setInterval(() => {
      this.claiming ??= this.reclaim().finally(() => (this.claiming = undefined));
    }, every);
  }

  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    clearInterval(this.claimTimer);
    this.unsubscribe?.();
    this.wakeReader();
    // A blocked XREADGROUP returns at once, as if it had timed out, so nothing is half-read.
    if (this.client !== undefined && this.readerId !== undefined) {
      await this.client.client('UNBLOCK', this.readerId).catch(() => undefined);
    }
    await this.loop;
    await this.claiming;
    while (this.inFlight.size > 0) await new Promise<void>((r) => this.roomWaiters.add(r));
    for (const connection of [this.client, this.reader]) {
      if (connection !== undefined) await closeRedis(connection);
    }
  }

  /** The group's lag (entries not yet delivered, XINFO GROUPS) plus its pending entries. */
  async lag(): Promise<LagSample[]> {
    const client = this.client;
    if (client === undefined || this.stopping) return [];
    const groups = (await client.xinfo('GROUPS', this.options.stream)) as unknown[][];
    for (const fields of groups) {
      const info = new Map<string, unknown>();
      for (let i = 0; i + 1 < fields.length; i += 2) info.set(String(fields[i]), fields[i + 1]);
      if (info.get('name') !== this.options.group) continue;
      // lag is null when Redis cannot tell (entries deleted from the middle of the stream).
      const behind = Number(info.get('lag') ?? 0) + Number(info.get('pending') ?? 0);
      return [
        {
          of: { stream: this.options.stream, group: this.options.group },
          lag: Number.isFinite(behind) ? behind : 0,
        },
      ];
    }
    return [];
  }

  private async readLoop(): Promise<void> {
    const reader = this.reader;
    if (reader === undefined) return;
    const { stream, group } = this.options;
    // First this consumer's own pending entries (a restart under the same name), then new ones.
    let historyFrom: string | undefined = '0';
    let outage: { since: number; attempt: number } | undefined;
    while (!this.stopping) {
      const room = this.maxInFlight - this.inFlight.size;
      if (this.pressured || room <= 0) {
        await new Promise<void>((r) => this.roomWaiters.add(r));
        continue;
      }
      const count = Math.min(this.options.count, room);
      let entries: StreamEntry[];
      try {
        const reply = await reader.callBuffer(
          'XREADGROUP',
          'GROUP',
          group,
          this.consumer,
          'COUNT',
          count,
          ...(historyFrom === undefined ? ['BLOCK', this.options.blockMs] : []),
          'STREAMS',
          stream,
          historyFrom ?? '>',
        );
        entries = parseEntries(reply);
      } catch (err) {
        if (this.stopping) break;
        this.deps.logger.error({ err, stream }, 'XREADGROUP failed; retrying in a second');
        // Reported so that an outage past telemetry.health.sourceOutageMs fails /livez.
        outage ??= { since: performance.now(), attempt: 0 };
        outage.attempt += 1;
        this.deps.onHealth?.({
          state: 'degraded',
          reason: err instanceof Error ? err.message : String(err),
          attempt: outage.attempt,
          sinceMs: Math.round(performance.now() - outage.since),
        });
        await sleep(1000);
        continue;
      }
      if (outage !== undefined) {
        outage = undefined;
        this.deps.onHealth?.({ state: 'healthy' });
      }
      if (historyFrom !== undefined) {
        if (entries.length === 0) historyFrom = undefined;
        else {
          historyFrom = entries.at(-1)?.id;
          await this.acceptCounted(entries);
        }
        continue;
      }
      for (const entry of entries) this.accept(entry, 1);
    }
  }

  /** Takes over entries that dead consumers left pending for claimIdleMs. */
  private async reclaim(): Promise<void> {
    const client = this.client;
    if (client === undefined || this.stopping) return;
    const { stream, group, claimIdleMs } = this.options;
    try {
      if (this.inFlight.size > 0) {
        await client.xclaim(stream, group, this.consumer, 0, ...this.inFlight, 'JUSTID');
      }
      let cursor = '0-0';
      do {
        const room = this.maxInFlight - this.inFlight.size;
        if (this.stopping || this.pressured || room <= 0) return;
        const reply = (await client.callBuffer(
          'XAUTOCLAIM',
          stream,
          group,
          this.consumer,
          claimIdleMs,
          cursor,
          'COUNT',
          Math.min(this.options.count, room),
        )) as [Buffer, unknown, unknown?];
        cursor = reply[0].toString('utf8');
        const claimed = parseEntries([[Buffer.from(stream), reply[1]]]).filter(
          (e) => !this.inFlight.has(e.id),
        );
        if (claimed.length > 0) {
          this.deps.logger.info(
            { stream, group, consumer: this.consumer, entries: claimed.length },
            'reclaimed entries left pending by another consumer',
          );
          await this.acceptCounted(claimed);
        }
      } while (cursor !== '0-0');
    } catch (err) {
      if (!this.stopping) this.deps.logger.error({ err, stream }, 'reclaiming entries failed');
    }
  }

  /** Entries that may have been delivered before: their delivery counts decide their fate. */
  private async acceptCounted(entries: StreamEntry[]): Promise<void> {
    const client = this.client;
    const first = entries[0];
    const last = entries.at(-1);
    if (client === undefined || first === undefined || last === undefined) return;
    const { stream, group } = this.options;
    const pending = (await client.xpending(
      stream,
      group,
      first.id,
      last.id,
      entries.length + this.inFlight.size,
      this.consumer,
    )) as [string, string, number, number][];
    const deliveries = new Map(pending.map(([id, , , times]) => [id, times]));
    for (const entry of entries) this.accept(entry, deliveries.get(entry.id) ?? 1);
  }

  private accept(entry: StreamEntry, deliveries: number): void {
    const { stream, group } = this.options;
    const client = this.client;
    if (client === undefined) return;
    this.inFlight.add(entry.id);
    const record: SourceRecord = {
      value: entry.value ?? Buffer.alloc(0),
      key: entry.key,
      headers: entry.headers,
      origin: { kind: 'redis-stream', stream, id: entry.id },
    };
    const refuse = (
      code: 'VALUE_FIELD_MISSING' | 'MAX_DELIVERIES',
      message: string,
    ): Promise<unknown> =>
      this.deps.runner.write({
        kind: 'dead',
        record: deadLetter(record, 'decode', code, message),
        code,
        message,
      });
    let handled: Promise<unknown>;
    if (entry.value === null) {
      handled = refuse('VALUE_FIELD_MISSING', "the stream entry has no 'value' field");
    } else if (deliveries > this.options.maxDeliveries) {
      handled = refuse(
        'MAX_DELIVERIES',
        `the entry was delivered ${deliveries} times, over maxDeliveries (${this.options.maxDeliveries})`,
      );
    } else {
      handled = this.deps.runner.handle(record);
    }
    handled
      .then(() => client.xack(stream, group, entry.id))
      .catch((err: unknown) =>
        this.deps.logger.error(
          { err, stream, id: entry.id },
          'an entry could not be written; it stays pending and will be reclaimed',
        ),
      )
      .finally(() => {
        this.inFlight.delete(entry.id);
        this.wakeReader();
      });
  }

  private wakeReader(): void {
    for (const wake of this.roomWaiters) wake();
    this.roomWaiters.clear();
  }
}
