// npm run bench:kafkajs-idle — what an idle kafkajs client costs its process, with kafkajs' request
// queue as installed (its throttle check re-armed every 1 ms per connection) and with our
// replacement (src/connectors/kafka/kafkajs-negative-timeout.ts, which arms it only when there is
// work). Each side is a child process of its own (the replacement is process-wide): it connects an
// admin and a producer, creates a topic and sends one record, then sits idle for --idle-seconds
// and reports its CPU milliseconds per second (user + sys) and its setTimeout calls per second.
// Sides alternate over --rounds; the line gives each figure's median. Uses KAFKA_BROKERS or starts
// its own local broker. Options: --idle-seconds N (5), --rounds N (3). Internal: --child SIDE.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { percentile, round } from './lib/stats.ts';
import { writeResultLine } from './lib/run-record.ts';
import { benchKafka } from './lib/bench-kafka.ts';

const SIDES = ['installed', 'replaced'] as const;
type Side = (typeof SIDES)[number];

const { values } = parseArgs({
  options: {
    'idle-seconds': { type: 'string', default: '5' },
    rounds: { type: 'string', default: '3' },
    child: { type: 'string' },
    brokers: { type: 'string' },
  },
});
const idleSeconds = Number(values['idle-seconds']);

if (values.child !== undefined) {
  process.stdout.write(`${JSON.stringify(await idleChild(values.child as Side))}\n`);
  process.exit(0);
}

const { brokers, stop: stopKafka } = await benchKafka();
const runs: Record<Side, { cpuMsPerSecond: number; timersPerSecond: number }[]> = {
  installed: [],
  replaced: [],
};
try {
  for (let r = 0; r < Number(values.rounds); r += 1) {
    for (const side of r % 2 === 0 ? SIDES : [...SIDES].reverse()) {
      const out = execFileSync(
        process.execPath,
        [
          fileURLToPath(import.meta.url),
          '--child',
          side,
          '--brokers',
          brokers,
          '--idle-seconds',
          String(idleSeconds),
        ],
        { encoding: 'utf8' },
      );
      const result = JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as (typeof runs)[Side][0];
      runs[side].push(result);
      process.stderr.write(`round ${r + 1} ${side}: ${JSON.stringify(result)}\n`);
    }
  }
} finally {
  await stopKafka();
}
const figure = (side: Side, key: 'cpuMsPerSecond' | 'timersPerSecond'): number =>
  round(
    percentile(
      runs[side].map((x) => x[key]),
      50,
    ),
    2,
  );
writeResultLine({
  bench: 'kafkajs-idle',
  idle_seconds: idleSeconds,
  cpu_ms_per_s: {
    installed: figure('installed', 'cpuMsPerSecond'),
    replaced: figure('replaced', 'cpuMsPerSecond'),
  },
  set_timeout_per_s: {
    installed: figure('installed', 'timersPerSecond'),
    replaced: figure('replaced', 'timersPerSecond'),
  },
  ratios: {
    replaced_vs_installed_cpu: round(
      figure('replaced', 'cpuMsPerSecond') / figure('installed', 'cpuMsPerSecond'),
      3,
    ),
  },
  runs,
});

async function idleChild(side: Side): Promise<{ cpuMsPerSecond: number; timersPerSecond: number }> {
  if (side === 'replaced') await import('../src/connectors/kafka/kafkajs-negative-timeout.ts');
  const { Kafka, logLevel } = await import('kafkajs');
  const kafka = new Kafka({
    brokers: (values.brokers ?? '').split(','),
    clientId: `kafkajs-idle-${side}`,
    logLevel: logLevel.NOTHING,
  });
  const topic = `kafkajs-idle-${process.pid}`;
  const admin = kafka.admin();
  const producer = kafka.producer();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] });
  await producer.connect();
  await producer.send({ topic, messages: [{ value: 'x' }] });
  let timers = 0;
  const original = globalThis.setTimeout;
  globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => {
    timers += 1;
    return original(...args);
  }) as typeof setTimeout;
  const before = process.cpuUsage();
  await new Promise((resolve) => original(resolve, idleSeconds * 1000));
  const used = process.cpuUsage(before);
  globalThis.setTimeout = original;
  await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
  await producer.disconnect();
  await admin.disconnect();
  return {
    cpuMsPerSecond: round((used.user + used.system) / 1000 / idleSeconds, 2),
    timersPerSecond: round(timers / idleSeconds, 1),
  };
}
