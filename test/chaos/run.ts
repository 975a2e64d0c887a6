// npm run test:chaos: the chaos and bad-input suites against real Kafka and Redis (started here by
// the project's launchers) and real worker processes. Prints one JSON line at the end and exits
// non-zero when any scenario or bad-input class failed. docs/testing.md#chaos-and-bad-input-suites.
// First: kafkajs' read_committed filter is replaced as kafkajs loads (kafka-local.ts loads it).
import '../../src/connectors/kafka/kafkajs-read-committed.ts';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { defaultCacheDir } from '../../scripts/services/kafka-local.ts';
import { runBadInputSuite, type BadInputReport } from './bad-input/suite.ts';
import { KafkaTools } from './kafka-tools.ts';
import type { ChaosContext, Scenario, ScenarioResult } from './scenario.ts';
import { brokerRestart } from './scenarios/broker-restart.ts';
import { groupKill } from './scenarios/group-kill.ts';
import { killCycles } from './scenarios/kill-cycles.ts';
import { redisRestart } from './scenarios/redis-restart.ts';
import { sigtermUnderLoad } from './scenarios/sigterm.ts';
import { sinkOutage } from './scenarios/sink-outage.ts';
import { partitionsAdded } from './scenarios/partitions-added.ts';
import { rebalanceStorm } from './scenarios/rebalance-storm.ts';
import { ChaosServices } from './services.ts';
import { WorkerPool } from './worker.ts';

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: process.env['CHAOS_RECORDS'] ?? '100000' },
    'kill-cycles': { type: 'string', default: process.env['CHAOS_KILL_CYCLES'] ?? '20' },
    only: { type: 'string', default: process.env['CHAOS_ONLY'] ?? '' },
    'kafka-port': { type: 'string', default: process.env['CHAOS_KAFKA_PORT'] ?? '' },
    'redis-port': { type: 'string', default: process.env['CHAOS_REDIS_PORT'] ?? '' },
    'stall-ms': { type: 'string', default: process.env['CHAOS_STALL_MS'] ?? '120000' },
  },
});

const total = Number(values.records);
const cycles = Number(values['kill-cycles']);
const only = values.only.split(',').filter((s) => s !== '');

/** Each scenario's share of the records. */
const plan: { name: string; share: number; run: Scenario }[] = [
  { name: 'kill9-at-least-once', share: 0.25, run: killCycles('at-least-once', cycles) },
  { name: 'kill9-exactly-once', share: 0.15, run: killCycles('exactly-once', cycles) },
  { name: 'kafka-broker-restart', share: 0.1, run: brokerRestart },
  { name: 'redis-restart', share: 0.1, run: redisRestart },
  { name: 'three-workers-one-killed', share: 0.15, run: groupKill },
  { name: 'sigterm-under-load', share: 0.1, run: sigtermUnderLoad },
  { name: 'sink-unavailable-60s', share: 0.15, run: sinkOutage },
  // At least 20,000 records each through four workers joining and leaving (issue 34's floor).
  { name: 'rebalance-storm-at-least-once', share: 0.2, run: rebalanceStorm('at-least-once') },
  { name: 'rebalance-storm-exactly-once', share: 0.2, run: rebalanceStorm('exactly-once') },
  { name: 'partitions-added', share: 0.05, run: partitionsAdded },
];

function log(message: string): void {
  process.stderr.write(`[chaos ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

async function main(): Promise<number> {
  if (!Number.isInteger(total) || total < plan.length)
    throw new Error(`--records must be an integer of at least ${plan.length}`);
  const dir = join(defaultCacheDir(), 'chaos', new Date().toISOString().replace(/[:.]/g, '-'));
  mkdirSync(dir, { recursive: true });
  log(`worker configs and logs in ${dir}`);
  const services = await ChaosServices.start({
    ...(values['kafka-port'] !== '' ? { kafka: Number(values['kafka-port']) } : {}),
    ...(values['redis-port'] !== '' ? { redis: Number(values['redis-port']) } : {}),
  });
  const workers = new WorkerPool(dir);
  const stopAll = (): void => {
    void workers
      .killAll()
      .then(() => services.stop())
      .finally(() => process.exit(130));
  };
  process.once('SIGINT', stopAll);
  process.once('SIGTERM', stopAll);
  const ctx: ChaosContext = {
    services,
    kafka: new KafkaTools(services.brokers),
    workers,
    stallMs: Number(values['stall-ms']),
    startMs: 180_000,
    log,
  };
  const results: ScenarioResult[] = [];
  let badInput: BadInputReport | undefined;
  const started = performance.now();
  try {
    for (const step of plan) {
      if (only.length > 0 && !only.includes(step.name)) continue;
      const count = Math.max(1, Math.round(total * step.share));
      log(`${step.name}: ${count} records`);
      const t0 = performance.now();
      const result = await step.run(ctx, count).catch((error: unknown): ScenarioResult => ({
        name: step.name,
        records: count,
        lost: 0,
        duplicates: 0,
        mode: 'at-least-once',
        failures: [
          `the scenario could not run: ${error instanceof Error ? error.message : String(error)}`,
        ],
        details: {},
      }));
      await workers.killAll();
      result.details['seconds'] = Math.round((performance.now() - t0) / 1000);
      results.push(result);
      log(
        `${step.name}: ${result.failures.length === 0 ? 'PASS' : 'FAIL'} ${JSON.stringify({ lost: result.lost, duplicates: result.duplicates, ...result.details })}`,
      );
      for (const f of result.failures) log(`  - ${f}`);
    }
    if (only.length === 0 || only.includes('bad-input')) {
      badInput = await runBadInputSuite(ctx, dir);
      await workers.killAll();
    }
  } finally {
    await workers.killAll();
    await services.stop();
  }
  const failedScenarios = results.filter((r) => r.failures.length > 0).length;
  const badFailed = badInput?.failed ?? 0;
  const line = {
    chaos: {
      records: results.reduce((a, r) => a + r.records, 0),
      lost: results.reduce((a, r) => a + r.lost, 0),
      duplicates_eos: results
        .filter((r) => r.mode === 'exactly-once')
        .reduce((a, r) => a + r.duplicates, 0),
      duplicates_alo: results
        .filter((r) => r.mode === 'at-least-once')
        .reduce((a, r) => a + r.duplicates, 0),
      scenarios: results.length + (badInput === undefined ? 0 : 1),
      failed: failedScenarios + (badFailed > 0 ? 1 : 0),
      bad_input_classes: badInput?.classes ?? 0,
      bad_input_failed: badFailed,
      failed_names: [
        ...results.filter((r) => r.failures.length > 0).map((r) => r.name),
        ...(badInput?.failedNames ?? []),
      ],
      seconds: Math.round((performance.now() - started) / 1000),
    },
  };
  process.stdout.write(`${JSON.stringify(line)}\n`);
  return line.chaos.failed > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    log(
      `the chaos suite could not run: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
    process.exit(2);
  },
);
