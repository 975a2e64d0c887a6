// JSONL from a file or standard input: one record per line, outputs written in input order.
// Lines are split on raw bytes so that a record that is not valid UTF-8 reaches the dead-letter
// destination with its bytes intact.
import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';
import { SinkError } from '../../errors.ts';
import { InOrderWriter } from '../../route/in-order.ts';
import type { SourceRecord } from '../../route/record.ts';
import type { Source, SourceDeps } from '../source.ts';
import { countRecordLines, isBlankLine } from './record-lines.ts';

const MAX_IN_FLIGHT = 4096;

export class FileSource implements Source {
  readonly finished: Promise<void>;
  private readonly path: string;
  private readonly deps: SourceDeps;
  private readonly writer = new InOrderWriter();
  private input: Readable | undefined;
  private inFlight = 0;
  private pressured = false;
  private stopped = false;
  private line = 0;
  private readonly allDone: PromiseWithResolvers<void> = Promise.withResolvers<void>();
  private reading = true;
  private readonly settledWaiters = new Set<() => void>();
  private counted: number | undefined;
  private firstUnwritten: number | undefined;
  private readonly counting: PromiseWithResolvers<void> = Promise.withResolvers<void>();

  constructor(path: string, deps: SourceDeps) {
    this.path = path;
    this.deps = deps;
    // Finished once counted too, so that a run's last counters always carry the total.
    this.finished = Promise.all([this.allDone.promise, this.counting.promise]).then(
      () => undefined,
    );
  }

  start(): Promise<void> {
    const input: Readable = this.path === '-' ? process.stdin : createReadStream(this.path);
    this.input = input;
    // A second, streamed pass gives the run its total; standard input can be read only once.
    if (this.path === '-') this.counting.resolve();
    else
      countRecordLines(this.path)
        .then(
          (records) => void (this.counted = records),
          () => undefined, // the reading pass reports an unreadable file
        )
        .finally(() => this.counting.resolve());
    this.deps.onPressure((pressure) => {
      this.pressured = pressure === 'pause';
      this.updateFlow();
    });
    let carry = Buffer.alloc(0);
    input.on('data', (chunk: Buffer) => {
      let data = carry.length > 0 ? Buffer.concat([carry, chunk]) : chunk;
      for (let newline = data.indexOf(0x0a); newline !== -1; newline = data.indexOf(0x0a)) {
        this.accept(data.subarray(0, newline));
        data = data.subarray(newline + 1);
      }
      carry = Buffer.from(data);
    });
    input.on('end', () => {
      if (carry.length > 0) this.accept(carry);
      this.reading = false;
      this.maybeFinish();
    });
    input.on('error', (err) => this.allDone.reject(err));
    return Promise.resolve();
  }

  total(): number | undefined {
    return this.counted;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.input?.pause();
    this.reading = false;
    await new Promise<void>((resolve) => {
      this.settledWaiters.add(resolve);
      this.maybeFinish();
    });
  }

  private accept(raw: Buffer): void {
    this.line += 1;
    const bytes = raw.at(-1) === 0x0d ? raw.subarray(0, -1) : raw;
    if (this.stopped || isBlankLine(bytes)) return;
    const line = this.line;
    const record: SourceRecord = {
      value: Buffer.from(bytes),
      key: null,
      headers: {},
      origin: { kind: 'file', path: this.path, line },
    };
    const ticket = this.writer.ticket();
    this.inFlight += 1;
    this.updateFlow();
    this.deps.runner
      .decide(record)
      .then(
        (outcome) =>
          this.writer.complete(ticket, () => this.deps.runner.write(outcome).then(() => undefined)),
        // A record that could not be decided still gives up its place in line (its failure is
        // logged below), or every later line would wait for it forever.
        (err: unknown) =>
          this.writer.complete(ticket, () =>
            Promise.reject(err instanceof Error ? err : new Error(String(err))),
          ),
      )
      .catch((err: unknown) => {
        if (err instanceof SinkError) this.sinkFailed(err, line);
        else this.deps.logger.error({ err, line: record.origin }, 'a record could not be written');
      })
      .finally(() => {
        this.inFlight -= 1;
        this.updateFlow();
        this.maybeFinish();
      });
  }

  /**
   * A sink that cannot write (a full disk) ends the route: reading on would only fail again.
   * Writes complete in input order, so the first failure names the first unwritten record.
   */
  private sinkFailed(err: SinkError, line: number): void {
    if (this.firstUnwritten !== undefined) return;
    this.firstUnwritten = line;
    this.stopped = true;
    this.reading = false;
    this.input?.pause();
    const reason = `${err.message}; the first unwritten record is ${this.path} line ${this.firstUnwritten} (every line before it was written)`;
    this.deps.logger.error({ err, firstUnwrittenLine: this.firstUnwritten }, reason);
    this.deps.onHealth?.({ state: 'failed', reason });
    this.maybeFinish();
  }

  private updateFlow(): void {
    if (this.input === undefined || this.stopped) return;
    if (this.pressured || this.inFlight >= MAX_IN_FLIGHT) this.input.pause();
    else if (this.reading) this.input.resume();
  }

  private maybeFinish(): void {
    if (this.reading || this.inFlight > 0) return;
    this.allDone.resolve();
    for (const resolve of this.settledWaiters) resolve();
    this.settledWaiters.clear();
  }
}
