// A source pulls records from somewhere and hands each to its route, acknowledging a record to
// its broker only once the route has written its output (or its dead letter).
import type { Pressure } from '../batching/batch-queue.ts';
import type { RouteConfig, WorkerConfig } from '../config/schema.ts';
import type { Logger } from '../logger.ts';
import type { ConnectionHealth } from './connection-health.ts';
import type { Sink } from '../route/sink.ts';
import type { RouteRunner } from '../route/route-runner.ts';

export interface SourceDeps {
  route: RouteConfig;
  delivery: WorkerConfig['delivery'];
  runner: RouteRunner;
  /** The route's pipeline queue says 'pause' when it is full and 'resume' when it drained. */
  onPressure: (listener: (pressure: Pressure) => void) => () => void;
  /** The route's sinks, for sources that must coordinate with them (Kafka transactions). */
  sink: Sink | undefined;
  dlq: Sink | undefined;
  logger: Logger;
  /** Hears the source's connection state (connection-health.ts). */
  onHealth?: (health: ConnectionHealth) => void;
  /** Hears what operators count (metrics): a failed commit or acknowledgement, a rebalance. */
  onEvent?: (event: SourceEvent) => void;
}

export type SourceEvent = 'commit-failed' | 'rebalance';

/**
 * What a lag sample is of, in the labels of the source's own kind: Kafka `topic` and `partition`,
 * BullMQ `queue`, Redis Streams `stream` and `group`.
 */
export type LagLabels =
  { topic: string; partition: string } | { queue: string } | { stream: string; group: string };

/** Records a source's broker holds that this route has not processed yet, per partition. */
export interface LagSample {
  of: LagLabels;
  lag: number;
}

export interface Source {
  start(): Promise<void>;
  /** For finite sources (a file): resolves when every record was read and handled. */
  readonly finished: Promise<void> | undefined;
  /** Stops taking records, lets those in flight finish, acknowledges what was written, disconnects. */
  stop(): Promise<void>;
  /** Finite sources: the records they will hand over in all, once known (a file is counted). */
  total?(): number | undefined;
  /** Asks the broker how far behind the route is (metrics); absent for sources without lag. */
  lag?(): Promise<LagSample[]>;
}
