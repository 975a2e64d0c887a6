// node scripts/stress/close-after-crash.ts [CYCLES] — starts a two-thread shard on the scripted
// test worker, has one batch kill its thread twice, runs one more batch and aborts the shard, CYCLES
// times (100). A shard closed while piscina starts a replacement thread is what aborted the process
// natively before src/shards/thread-entry.ts (about once in 450 cycles with three of these running
// beside `stress-ng --cpu 2`); the run prints "survived N" when the process lived through all.
import { join } from 'node:path';
import { silentLogger } from '../../src/logger.ts';
import { Shard } from '../../src/shards/shard.ts';
import { compileShard } from '../../src/shards/shard-spec.ts';

const WORKER = join(
  import.meta.dirname,
  '..',
  '..',
  'test',
  'fixtures',
  'workers',
  'scripted-worker.ts',
);
const cycles = Number(process.argv[2] ?? 100);

for (let i = 1; i <= cycles; i += 1) {
  const shard = new Shard({
    spec: compileShard({ device: 'cpu', threads: 2 }),
    setup: { models: {}, pipelines: {} },
    logger: silentLogger,
    workerFile: WORKER,
  });
  await shard.run('script', ['crash']).catch(() => undefined);
  await shard.run('script', ['echo:x']);
  await shard.abort();
  if (i % 50 === 0) process.stderr.write(`cycle ${i}\n`);
}
process.stdout.write(`survived ${cycles}\n`);
