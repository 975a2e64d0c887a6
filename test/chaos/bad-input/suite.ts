// The bad-input suite: every class of classes.ts between good records, on a file route and on a
// Kafka route, for a text pipeline and two image routes. A class passes on a route when its
// record was dead-lettered with a code and a reason (original bytes kept) or processed faithfully,
// as the class allows, exactly once; the worker must stay up (Kafka: commit to the end while
// alive; file: read to the end and exit 0) and every good record must come out byte-faithful.
import {
  copyFileSync,
  mkdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import type { IHeaders } from 'kafkajs';
import { waitForProgress } from '../../helpers/progress.ts';
import type { Produced } from '../kafka-tools.ts';
import { idOf } from '../routes.ts';
import { failureText, terminate, unique, waitCommitted, type ChaosContext } from '../scenario.ts';
import {
  badInputClasses,
  goodRecord,
  GOOD_PNG,
  type BadInputClass,
  type BadPipeline,
} from './classes.ts';
import { headersKept, insertionOnly } from './faithful.ts';

const MODELS = join(import.meta.dirname, '..', '..', 'fixtures', 'models');
const FIELD = 'result';

export interface BadInputReport {
  classes: number;
  failed: number;
  failedNames: string[];
}

interface Sent {
  value: Buffer | null;
  key: Buffer | string | null;
  headers: IHeaders | undefined;
  /** The class, or undefined for a good record. */
  cls: BadInputClass | undefined;
  goodId?: string;
}

interface Landed {
  value: Buffer | null;
  key: Buffer | null;
  headers: IHeaders;
}

function pipelineConfig(pipeline: BadPipeline, root: string): Record<string, unknown> {
  if (pipeline === 'text')
    return {
      models: { m: { path: join(MODELS, 'bert-text-classification') } },
      pipelines: { run: { task: 'textClassification', model: 'm' } },
      input: { format: 'json', field: 'text' },
    };
  return {
    models: { m: { path: join(MODELS, 'vit-image-classification') } },
    pipelines: { run: { task: 'imageClassification', model: 'm' } },
    input: {
      format: 'json',
      field: 'image',
      ...(pipeline === 'image-path' ? { images: { from: 'path', root } } : {}),
    },
  };
}

function config(
  pipeline: BadPipeline,
  root: string,
  route: Record<string, unknown>,
  brokers?: string,
): Record<string, unknown> {
  const { input, ...models } = pipelineConfig(pipeline, root);
  return {
    ...models,
    routes: [
      {
        name: 'bad-input',
        pipeline: 'run',
        input,
        output: { mode: 'merge', field: FIELD },
        ...route,
      },
    ],
    shards: [{ device: 'cpu', threads: 1 }],
    batching: { maxBatchSize: 16, maxWaitMs: 5 },
    ...(brokers !== undefined ? { connections: { kafka: { brokers: [brokers] } } } : {}),
    delivery: { mode: 'at-least-once', commitIntervalMs: 200 },
  };
}

/** good, bad, good, bad, ..., good */
function sequence(classes: readonly BadInputClass[], pipeline: BadPipeline): Sent[] {
  const sent: Sent[] = [];
  let good = 0;
  const addGood = (): void => {
    const goodId = `good-${good}`;
    sent.push({
      value: goodRecord(pipeline, good),
      key: goodId,
      headers: { origin: 'chaos' },
      cls: undefined,
      goodId,
    });
    good += 1;
  };
  addGood();
  for (const cls of classes) {
    sent.push({
      value: cls.value,
      key: cls.key === undefined ? `bad-${cls.name}` : cls.key,
      headers: cls.headers,
      cls,
    });
    addGood();
  }
  return sent;
}

function header(headers: IHeaders | Record<string, unknown>, name: string): string | undefined {
  const v = (headers as Record<string, unknown>)[name];
  const one = Array.isArray(v) ? (v as unknown[]).at(-1) : v;
  return one === undefined || one === null
    ? undefined
    : Buffer.isBuffer(one)
      ? one.toString('utf8')
      : typeof one === 'string'
        ? one
        : JSON.stringify(one);
}

/**
 * Judges one route: `outputs` (by id), `deadLetters` (by position in `sent`). Returns failures
 * as `class@route: reason` and the DLQ messages by class name (for the path oracle check).
 */
function judge(
  route: string,
  sent: readonly Sent[],
  outputs: readonly Landed[],
  deadLetters: ReadonlyMap<number, Landed[]>,
  compareKeys: boolean,
): { failures: Map<string, string>; messages: Map<string, string> } {
  const failures = new Map<string, string>();
  const messages = new Map<string, string>();
  const byId = new Map<string, Landed[]>();
  let strangers = 0;
  for (const o of outputs) {
    const id = idOf(o.value);
    if (id === undefined) strangers += 1;
    else byId.set(id, [...(byId.get(id) ?? []), o]);
  }
  const fail = (name: string, reason: string): void => {
    if (!failures.has(name)) failures.set(name, `${name}@${route}: ${reason}`);
  };
  if (strangers > 0) fail('unattributed-outputs', `${strangers} outputs without an id`);
  sent.forEach((s, index) => {
    const name = s.cls?.name ?? 'good-records';
    const id = s.cls === undefined ? s.goodId : `bad-${s.cls.name}`;
    const out = id === undefined ? [] : (byId.get(id) ?? []);
    const dead = deadLetters.get(index) ?? [];
    if (out.length > 0 && dead.length > 0)
      return fail(name, `${id ?? ''} is both in the output and dead-lettered`);
    if (out.length === 0 && dead.length === 0)
      return fail(name, `${id ?? `record ${index}`} is lost: neither output nor dead letter`);
    if (dead.length > 0) {
      const d = dead[0] as Landed;
      const code = header(d.headers, 'hugot.error.code');
      const message = header(d.headers, 'hugot.error.message');
      if (s.cls === undefined)
        return fail(name, `${id ?? ''} was dead-lettered (${code ?? '?'}: ${message ?? ''})`);
      if (s.cls.expect === 'output')
        return fail(
          name,
          `dead-lettered (${code ?? '?'}: ${message ?? ''}) though it should be processed`,
        );
      if (code === undefined || code === '' || message === undefined || message === '')
        return fail(name, 'dead letter without hugot.error.code / hugot.error.message');
      messages.set(s.cls.name, message);
      const dropped = header(d.headers, 'hugot.error.value.dropped.bytes');
      const original = s.value ?? Buffer.alloc(0);
      const kept =
        (d.value ?? Buffer.alloc(0)).equals(original) || dropped === String(original.length);
      if (!kept)
        return fail(
          name,
          `dead letter's value is not the original bytes (${d.value?.length ?? 0} vs ${original.length})`,
        );
      if (compareKeys && header(d.headers, 'hugot.error.headers.dropped') === undefined) {
        const lost = headersKept(s.headers, d.headers);
        if (lost !== undefined) return fail(name, `dead letter: ${lost}`);
      }
      return;
    }
    if (out.length > 1 && !out.every((o) => o.value?.equals(out[0]?.value ?? Buffer.alloc(0))))
      return fail(name, `${id ?? ''} came out ${out.length} times, differently`);
    if (s.cls?.expect === 'dlq')
      return fail(
        name,
        `processed (${out[0]?.value?.subarray(0, 120).toString('utf8') ?? ''}) though it should be refused`,
      );
    const o = out[0] as Landed;
    // A leading byte-order mark is dropped from JSON output (strict readers refuse it); every
    // other byte of the input is kept.
    const input = withoutBom(s.value ?? Buffer.alloc(0));
    const changed = insertionOnly(input, o.value ?? Buffer.alloc(0), FIELD);
    if (changed !== undefined) return fail(name, `${id ?? ''} not faithful: ${changed}`);
    if (compareKeys) {
      const key = s.key === null ? null : Buffer.from(s.key);
      if (!(key === null ? o.key === null : o.key?.equals(key) === true))
        return fail(name, `${id ?? ''}: the key changed`);
      // Incoming hugot.error.* headers are never passed on (they would spoof a dead letter).
      const spoofed = Object.keys(o.headers ?? {}).find((h) => h.startsWith('hugot.error.'));
      if (spoofed !== undefined) return fail(name, `${id ?? ''}: header ${spoofed} passed on`);
      const kept = Object.fromEntries(
        Object.entries(s.headers ?? {}).filter(([h]) => !h.startsWith('hugot.error.')),
      );
      const lost = headersKept(kept, o.headers);
      if (lost !== undefined) return fail(name, `${id ?? ''}: ${lost}`);
    }
  });
  return { failures, messages };
}

function withoutBom(bytes: Buffer): Buffer {
  return bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? bytes.subarray(3) : bytes;
}

/** A path that exists outside the root and one that does not must be refused in the same words. */
function pathOracle(route: string, messages: Map<string, string>): string | undefined {
  const a = messages.get('path-absolute-outside-root')?.replaceAll('/etc/passwd', '<path>');
  const b = messages
    .get('path-nonexistent-outside-root')
    ?.replaceAll('/etc/hugot-chaos-no-such-file', '<path>');
  if (a === undefined || b === undefined)
    return `path-existence-not-revealed@${route}: a path record was not dead-lettered`;
  if (a !== b) return `path-existence-not-revealed@${route}: the refusals differ (${a} | ${b})`;
  return undefined;
}

async function fileRoute(
  ctx: ChaosContext,
  dir: string,
  pipeline: BadPipeline,
  classes: readonly BadInputClass[],
  root: string,
): Promise<Map<string, string>> {
  const sent = sequence(
    classes.filter((c) => c.routes.includes('file')),
    pipeline,
  );
  const input = join(dir, `bad-${pipeline}.jsonl`);
  const output = join(dir, `bad-${pipeline}.out.jsonl`);
  const dlq = join(dir, `bad-${pipeline}.dlq.jsonl`);
  writeFileSync(
    input,
    Buffer.concat(sent.flatMap((s) => [s.value ?? Buffer.alloc(0), Buffer.from('\n')])),
  );
  writeFileSync(output, '');
  writeFileSync(dlq, '');
  const worker = ctx.workers.start(
    `bad-file-${pipeline}`,
    config(pipeline, root, {
      source: { type: 'file', path: input },
      sink: { type: 'file', path: output },
      dlq: { type: 'file', path: dlq },
    }),
  );
  const route = `file/${pipeline}`;
  const failures = new Map<string, string>();
  try {
    await waitForProgress(() => [statSync(output).size, statSync(dlq).size, worker.alive()], {
      what: `${route}: the worker reads the file to its end`,
      done: () => !worker.alive(),
      stallMs: ctx.stallMs,
      firstProgressMs: Math.max(ctx.stallMs, ctx.startMs),
    });
  } catch (error) {
    failures.set('worker-alive', `worker-alive@${route}: ${failureText(error)}`);
    await worker.kill9();
  }
  const code = await worker.exited;
  if (code !== 0)
    failures.set(
      'worker-alive',
      `worker-alive@${route}: exit ${code}: ${worker.output().slice(-600)}`,
    );
  const lines = (file: string): Buffer[] => {
    const bytes = readFileSync(file);
    const out: Buffer[] = [];
    for (let at = 0; at < bytes.length;) {
      const nl = bytes.indexOf(0x0a, at);
      const end = nl === -1 ? bytes.length : nl;
      if (end > at) out.push(bytes.subarray(at, end));
      at = end + 1;
    }
    return out;
  };
  const outputs: Landed[] = lines(output).map((value) => ({ value, key: null, headers: {} }));
  const deadLetters = new Map<number, Landed[]>();
  for (const line of lines(dlq)) {
    const env = JSON.parse(line.toString('utf8')) as {
      value?: string;
      valueBase64?: string;
      headers?: Record<string, string>;
    };
    const headers = env.headers ?? {};
    const index = Number(headers['hugot.error.origin.line']) - 1;
    const value =
      env.valueBase64 !== undefined
        ? Buffer.from(env.valueBase64, 'base64')
        : Buffer.from(env.value ?? '', 'utf8');
    deadLetters.set(index, [...(deadLetters.get(index) ?? []), { value, key: null, headers }]);
  }
  const judged = judge(route, sent, outputs, deadLetters, false);
  for (const [k, v] of judged.failures) failures.set(k, v);
  if (pipeline === 'image-path') {
    const oracle = pathOracle(route, judged.messages);
    if (oracle !== undefined) failures.set('path-existence-not-revealed', oracle);
  }
  return failures;
}

async function kafkaRoute(
  ctx: ChaosContext,
  pipeline: BadPipeline,
  classes: readonly BadInputClass[],
  root: string,
): Promise<Map<string, string>> {
  const sent = sequence(
    classes.filter((c) => c.routes.includes('kafka')),
    pipeline,
  );
  const tag = unique(`bad-${pipeline}`);
  const [input, output, dlq, groupId] = [`${tag}-in`, `${tag}-out`, `${tag}-dlq`, `${tag}-group`];
  await ctx.kafka.createTopic(input, 1, { 'max.message.bytes': String(8 * 1024 * 1024) });
  await ctx.kafka.createTopic(output, 1);
  await ctx.kafka.createTopic(dlq, 1);
  const produced: Produced[] = sent.map((s) => ({
    partition: 0,
    key: s.key,
    value: s.value,
    ...(s.headers !== undefined ? { headers: s.headers } : {}),
  }));
  await ctx.kafka.produce(input, produced, 1);
  const route = `kafka/${pipeline}`;
  const failures = new Map<string, string>();
  const worker = ctx.workers.start(
    `bad-kafka-${pipeline}`,
    config(
      pipeline,
      root,
      {
        source: {
          type: 'kafka',
          topic: input,
          groupId,
          sessionTimeoutMs: 6_000,
          heartbeatIntervalMs: 1_000,
        },
        sink: { type: 'kafka', topic: output },
        dlq: { type: 'kafka', topic: dlq },
      },
      ctx.services.brokers,
    ),
  );
  try {
    await waitCommitted(
      ctx,
      groupId,
      input,
      sent.length,
      [worker],
      `${route}: the worker commits every record`,
    );
    if (!worker.alive())
      failures.set('worker-alive', `worker-alive@${route}: ${worker.gone() ?? ''}`);
  } catch (error) {
    failures.set('worker-alive', `worker-alive@${route}: ${failureText(error)}`);
  }
  const goods = sent.filter((s) => s.cls === undefined).length;
  const outs = await ctx.kafka.read(output, {
    readCommitted: false,
    enough: (got) => got.length >= goods,
    stallMs: 20_000,
  });
  const deads = await ctx.kafka.read(dlq, {
    readCommitted: false,
    enough: () => true,
    stallMs: 20_000,
  });
  const code = await terminate(worker, 90_000);
  if (code !== 0 && !failures.has('worker-alive'))
    failures.set('worker-alive', `worker-alive@${route}: SIGTERM exit ${code}`);
  const deadLetters = new Map<number, Landed[]>();
  for (const d of deads) {
    const index = Number(header(d.headers, 'hugot.error.origin.offset'));
    deadLetters.set(index, [...(deadLetters.get(index) ?? []), d]);
  }
  const judged = judge(route, sent, outs, deadLetters, true);
  for (const [k, v] of judged.failures) failures.set(k, v);
  if (pipeline === 'image-path') {
    const oracle = pathOracle(route, judged.messages);
    if (oracle !== undefined) failures.set('path-existence-not-revealed', oracle);
  }
  return failures;
}

export async function runBadInputSuite(ctx: ChaosContext, dir: string): Promise<BadInputReport> {
  const classes = badInputClasses();
  const root = join(dir, 'image-root');
  mkdirSync(root, { recursive: true });
  writeFileSync(join(root, 'good.png'), GOOD_PNG);
  symlinkSync('/etc/passwd', join(root, 'escape.png'));
  copyFileSync(join(root, 'good.png'), join(root, 'good-copy.png'));
  const failed = new Map<string, string[]>();
  const pipelines: BadPipeline[] = ['text', 'image', 'image-path'];
  for (const pipeline of pipelines) {
    const mine = classes.filter((c) => c.pipeline === pipeline);
    for (const run of [
      () => fileRoute(ctx, dir, pipeline, mine, root),
      () => kafkaRoute(ctx, pipeline, mine, root),
    ]) {
      let found: Map<string, string>;
      try {
        found = await run();
      } catch (error) {
        found = new Map([[`suite-${pipeline}`, `suite-${pipeline}: ${failureText(error)}`]]);
      }
      for (const [name, reason] of found) {
        failed.set(name, [...(failed.get(name) ?? []), reason]);
        ctx.log(`bad-input FAIL ${reason.slice(0, 400)}`);
      }
    }
  }
  const names = new Set([...classes.map((c) => c.name), 'path-existence-not-revealed']);
  ctx.log(
    `bad-input: ${names.size} classes, ${[...failed.keys()].filter((k) => names.has(k)).length} failing; other failures: ${[...failed.keys()].filter((k) => !names.has(k)).join(', ') || 'none'}`,
  );
  return {
    classes: names.size,
    failed: failed.size,
    failedNames: [...failed.values()].flat().map((r) => r.slice(0, 160)),
  };
}
