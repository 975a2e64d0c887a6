// A stream worker as a real child process (`node src/cli/main.ts run --config <file>`), which the
// chaos scenarios kill -9, SIGTERM and measure (resident memory, CPU time) from /proc.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..');
const CLOCK_TICKS_PER_S = 100;

export class ChaosWorker {
  readonly child: ChildProcess;
  readonly name: string;
  readonly exited: Promise<number | string>;
  private ended: number | string | undefined;
  private tail = '';
  private running = false;

  /** Writes the config (JSON is YAML) and its log under `dir`, named `name`. */
  constructor(dir: string, name: string, config: Record<string, unknown>) {
    this.name = name;
    const file = join(dir, `${name}.yaml`);
    writeFileSync(file, JSON.stringify(config, null, 2));
    this.child = spawn(
      process.execPath,
      [join(ROOT, 'src', 'cli', 'main.ts'), 'run', '--config', file],
      {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, HUGOT_LOG_LEVEL: process.env['CHAOS_LOG_LEVEL'] ?? 'info' },
      },
    );
    const log = createWriteStream(join(dir, `${name}.log`));
    const keep = (chunk: Buffer): void => {
      log.write(chunk);
      this.tail = (this.tail + chunk.toString()).slice(-6_000);
      if (!this.running && this.tail.includes('"stream worker running"')) this.running = true;
      for (const text of this.watched) if (this.tail.includes(text)) this.seen.add(text);
    };
    this.child.stdout?.on('data', keep);
    this.child.stderr?.on('data', keep);
    this.exited = new Promise((resolve) =>
      this.child.on('exit', (code, signal) => {
        this.ended = code ?? signal ?? 'unknown';
        log.end();
        resolve(this.ended);
      }),
    );
  }

  /** A scenario asked this worker to leave (it may still be draining). */
  stopping = false;
  private readonly watched = new Set<string>();
  private readonly seen = new Set<string>();

  /** Whether the log has shown `text` since watch(text) was called; the tail alone may not. */
  watch(text: string): () => boolean {
    this.watched.add(text);
    if (this.tail.includes(text)) this.seen.add(text);
    return () => this.seen.has(text);
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** Why the worker is gone, or undefined while it runs (an `abort` for waitForProgress). */
  gone = (): string | undefined =>
    this.ended === undefined
      ? undefined
      : `worker ${this.name} exited (${this.ended}): ${this.output()}`;

  /** The worker logged that its routes run (signal handlers are in place from then on). */
  isRunning(): boolean {
    return this.running;
  }

  alive(): boolean {
    return this.ended === undefined;
  }

  output(): string {
    return this.tail.slice(-3_000);
  }

  async kill9(): Promise<void> {
    if (this.alive()) this.child.kill('SIGKILL');
    await this.exited;
  }

  /** Resident set size in MiB, from /proc (the inference threads live in the same process). */
  rssMiB(): number {
    const status = readFileSync(`/proc/${this.pid}/status`, 'utf8');
    const kb = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
    return kb === undefined ? 0 : Number(kb) / 1024;
  }

  /** User + system CPU seconds the process has used so far. */
  cpuSeconds(): number {
    const stat = readFileSync(`/proc/${this.pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start at ") ".
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_S;
  }
}

/** Every worker started, so that the suite can kill what is left when it ends early. */
export class WorkerPool {
  private readonly all: ChaosWorker[] = [];
  private count = 0;
  readonly dir: string;

  constructor(dir: string) {
    this.dir = dir;
  }

  start(label: string, config: Record<string, unknown>): ChaosWorker {
    this.count += 1;
    const worker = new ChaosWorker(this.dir, `${label}-${this.count}`, config);
    this.all.push(worker);
    return worker;
  }

  async killAll(): Promise<void> {
    await Promise.all(this.all.filter((w) => w.alive()).map((w) => w.kill9()));
  }
}
