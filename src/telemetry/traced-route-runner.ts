// A route runner that makes each record's spans (record-tracing.ts): the process span starts
// when a source hands the record over (decide, or handle, which decides first) and ends once its
// output or dead letter is written; the send span wraps that write and its context becomes the
// output's traceparent. Used only when tracing is on, so an untraced worker runs the plain class.
import type { Outcome } from '../route/processor.ts';
import type { SourceRecord } from '../route/record.ts';
import type { TransactionStager } from '../route/sink.ts';
import { RouteRunner, type Handled, type RouteRunnerOptions } from '../route/route-runner.ts';
import type { RecordTracing } from './record-tracing.ts';

export class TracedRouteRunner extends RouteRunner {
  private readonly tracing: RecordTracing;
  private readonly sinkName: string;

  constructor(options: RouteRunnerOptions, tracing: RecordTracing, sinkName: string) {
    super(options);
    this.tracing = tracing;
    this.sinkName = sinkName;
  }

  override async decide(record: SourceRecord): Promise<Exclude<Outcome, { kind: 'retry' }>> {
    this.tracing.received(this.name, record);
    try {
      return await super.decide(record);
    } catch (err) {
      this.tracing.finished(record.origin, 'failed', err);
      throw err;
    }
  }

  override async write(
    decided: Exclude<Outcome, { kind: 'retry' }>,
    transaction?: TransactionStager,
  ): Promise<Handled> {
    const origin = decided.record.origin;
    const sent = this.tracing.sending(
      decided.record,
      decided.kind === 'dead' ? 'dead letters' : this.sinkName,
    );
    try {
      const handled = await super.write(decided, transaction);
      sent();
      this.tracing.finished(origin, handled.kind);
      return handled;
    } catch (err) {
      sent(err);
      this.tracing.finished(origin, 'failed', err);
      throw err;
    }
  }
}
