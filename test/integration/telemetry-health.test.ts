// Health endpoints of a real worker process against a broker of its own (started here with the
// project's launcher, so that stopping it leaves the shared broker alone): /readyz is red until
// the models are warm and the source joined its group, then green; with the broker gone for
// longer than telemetry.health.sourceOutageMs, /livez turns red and the process exits 1 so
// that an orchestrator restarts it.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  defaultCacheDir,
  startKafka,
  type LocalKafka,
} from '../../scripts/services/kafka-local.ts';
import { freePort } from '../../scripts/services/process-control.ts';
import { waitForProgress } from '../helpers/progress.ts';
import { corpusRecords } from '../helpers/redis-routes.ts';
import { uniqueName } from '../helpers/unique-name.ts';
import { KafkaKit, kafkaRouteConfig } from './helpers/kafka-kit.ts';
import { startWorkerProcess } from './helpers/worker-process.ts';

const OUTAGE_MS = 4_000;

let kafka: LocalKafka;
let kit: KafkaKit;

beforeAll(async () => {
  const port = await freePort();
  kafka = await startKafka({
    cacheDir: defaultCacheDir(),
    port,
    dataDir: join(defaultCacheDir(), 'services', `kafka-health-${port}`),
    heapMb: 512,
  });
  kit = new KafkaKit(kafka.brokers.join(','));
});

afterAll(async () => {
  await kafka.stop();
});

interface Probe {
  status: number;
  body: string;
}

async function probe(port: number, path: '/livez' | '/readyz'): Promise<Probe | undefined> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      // Only a guard against a request that hangs: a loaded machine may answer slowly, and a
      // slow answer is still an answer.
      signal: AbortSignal.timeout(30_000),
    });
    return { status: response.status, body: await response.text() };
  } catch {
    return undefined; // not listening (yet, or any more)
  }
}

describe('health endpoints and no silent death', () => {
  it('/readyz red until warm and joined; broker gone past the bound: /livez red, exit 1', async () => {
    const input = uniqueName('in');
    const output = uniqueName('out');
    const groupId = uniqueName('group');
    await kit.createTopics([
      { topic: input, partitions: 1 },
      { topic: output, partitions: 1 },
    ]);
    const port = await freePort();
    const worker = startWorkerProcess({
      ...kafkaRouteConfig({ brokers: kit.brokers, input, output, groupId }),
      telemetry: {
        port,
        host: '127.0.0.1',
        health: { sourceOutageMs: OUTAGE_MS },
      },
      shutdown: { timeoutMs: 10_000 },
    });
    const watch = {
      abort: worker.gone,
      context: () => worker.output().slice(-3000),
    };
    try {
      // The server is up before the models load: its first answer is red, naming why.
      const first = await waitForProgress(() => probe(port, '/readyz'), {
        what: 'first /readyz answer',
        done: (answer) => answer !== undefined,
        intervalMs: 20,
        stallMs: 120_000,
        ...watch,
      });
      expect(first?.status, first?.body).toBe(503);
      expect(first?.body).toMatch(/model|source|join/i);
      expect((await probe(port, '/livez'))?.status).toBe(200);

      const ready = await waitForProgress(() => probe(port, '/readyz'), {
        what: '/readyz green',
        done: (answer) => answer?.status === 200,
        stallMs: 120_000,
        ...watch,
      });
      expect(ready?.status).toBe(200);

      // The records flow, so the route is really up.
      await kit.produce(
        input,
        corpusRecords(20).map((r) => ({ partition: 0, key: r.id, value: JSON.stringify(r) })),
      );
      await kit.readAll(output, { count: 20, quietMs: 0 });

      // Counted from before the stop: the outage cannot have begun earlier.
      const stoppedAt = performance.now();
      await kafka.stop();
      // What /livez and /readyz answer until the process is gone. Progress is any change of
      // answer; the longest quiet stretch is the outage bound itself.
      const seen: { livez: number | undefined; readyz: number | undefined; at: number }[] = [];
      await waitForProgress(
        async () => {
          const [livez, readyz] = await Promise.all([
            probe(port, '/livez'),
            probe(port, '/readyz'),
          ]);
          const last = seen.at(-1);
          if (last?.livez !== livez?.status || last?.readyz !== readyz?.status)
            seen.push({
              livez: livez?.status,
              readyz: readyz?.status,
              at: performance.now() - stoppedAt,
            });
          return { livez: livez?.status, readyz: readyz?.status, exited: worker.gone() };
        },
        {
          what: 'the worker to give up on its broker and exit',
          done: (state) => state.exited !== undefined,
          intervalMs: 25,
          stallMs: OUTAGE_MS + 60_000,
          context: () => `${JSON.stringify(seen)}\n${worker.output().slice(-3000)}`,
        },
      );
      const code = await worker.exited;
      const log = worker.output();
      expect(code, log.slice(-3000)).toBe(1);
      // Not ready during the outage, then not live once it outlasted the bound.
      const notReady = seen.find((s) => s.readyz === 503);
      const notLive = seen.find((s) => s.livez === 503);
      expect(notReady, JSON.stringify(seen)).toBeDefined();
      expect(notLive, JSON.stringify(seen)).toBeDefined();
      expect(notLive?.at ?? 0).toBeGreaterThanOrEqual(OUTAGE_MS);
      expect(log).toMatch(/failed for good/);
    } finally {
      if (worker.gone() === undefined) worker.child.kill('SIGKILL');
    }
  });
});
