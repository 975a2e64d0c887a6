// A single-node KRaft Kafka broker built from Maven Central jars, for tests and local runs on
// machines without a Docker engine. CLI: node scripts/services/kafka-local.ts install|start|stop
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import { certificatesDirFor, saslSslListener, type SecureListener } from './kafka-secure.ts';
import {
  startLogged,
  waitOrStop,
  stopFromPidFile,
  freePort,
  requireTool,
} from './process-control.ts';

export const KAFKA_VERSION = '4.1.1';
const LOG4J_VERSION = '2.24.3';

export interface KafkaInstallOptions {
  cacheDir: string;
  version?: string;
}

export interface LocalKafkaOptions extends KafkaInstallOptions {
  port: number;
  dataDir: string;
  /** Detached brokers keep running after this process exits (the CLI's `start`). */
  detached?: boolean;
  heapMb?: number;
  startTimeoutMs?: number;
  /**
   * Restart a broker that ran in `dataDir` before, keeping its topics, offsets and ports (tests
   * that take a broker down and bring it back). Without it every start is a fresh cluster.
   */
  keepData?: boolean;
  /** A second, secured listener (kafka-secure.ts builds it: SASL_SSL with SCRAM users). */
  secure?: SecureListener;
}

export interface LocalKafka {
  brokers: string[];
  pid: number;
  dataDir: string;
  stop: () => Promise<void>;
}

export function defaultCacheDir(): string {
  return resolve(process.env['HUGOT_CACHE_DIR'] ?? '.cache');
}

/** Resolves the broker's jars once into `<cacheDir>/kafka/<version>/lib`; later calls are free. */
export function installKafka(opts: KafkaInstallOptions): string {
  const version = opts.version ?? KAFKA_VERSION;
  const home = join(opts.cacheDir, 'kafka', version);
  const lib = join(home, 'lib');
  const marker = join(home, '.installed');
  if (existsSync(marker)) return lib;
  const purpose = 'to run a local Kafka broker';
  requireTool(
    'java',
    '-version',
    purpose,
    'install a JDK 17+ (Debian: apt-get install openjdk-17-jre-headless)',
  );
  requireTool('mvn', '-v', purpose, 'install Maven (Debian: apt-get install maven)');
  mkdirSync(home, { recursive: true });
  writeFileSync(join(home, 'pom.xml'), runtimePom(version));
  rmSync(lib, { recursive: true, force: true });
  execFileSync(
    'mvn',
    [
      '-q',
      '-B',
      '-Dstyle.color=never',
      'dependency:copy-dependencies',
      `-DoutputDirectory=${lib}`,
      '-DincludeScope=runtime',
    ],
    { cwd: home, stdio: ['ignore', 'inherit', 'inherit'] },
  );
  writeFileSync(marker, new Date().toISOString());
  return lib;
}

function runtimePom(version: string): string {
  // slf4j 1.7 is what the broker logs through; the log4j binding sends it to a file we read
  // when start-up fails.
  return `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.hugot-stream</groupId>
  <artifactId>kafka-runtime</artifactId>
  <version>${version}</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>${version}</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>${LOG4J_VERSION}</version></dependency>
  </dependencies>
</project>
`;
}

/** Kafka cluster ids are 16 random bytes in URL-safe base64 without padding. */
function newClusterId(): string {
  return randomBytes(16).toString('base64url');
}

export async function startKafka(opts: LocalKafkaOptions): Promise<LocalKafka> {
  const lib = installKafka(opts);
  const dataDir = resolve(opts.dataDir);
  const pidFile = join(dataDir, 'kafka.pid');
  await stopFromPidFile(pidFile);
  const propsFile = join(dataDir, 'server.properties');
  const logFile = join(dataDir, 'server.log');
  const classpath = `${lib}/*`;
  const log4j = `-Dlog4j2.configurationFile=${join(dataDir, 'log4j2.properties')}`;
  // The same server.properties (ports included: the controller's address is part of the
  // formatted quorum) and the same formatted log directory.
  const restart = opts.keepData === true && existsSync(join(dataDir, 'logs', 'meta.properties'));
  if (!restart) {
    rmSync(join(dataDir, 'logs'), { recursive: true, force: true });
    mkdirSync(dataDir, { recursive: true });
    const controllerPort = await freePort();
    writeFileSync(
      propsFile,
      serverProperties(opts.port, controllerPort, join(dataDir, 'logs'), opts.secure),
    );
    writeFileSync(join(dataDir, 'log4j2.properties'), log4jProperties(logFile));
    formatStorage(classpath, log4j, propsFile, opts.secure?.formatArgs ?? []);
  }
  const heap = `${opts.heapMb ?? 768}m`;
  const proc = startLogged(
    'java',
    [`-Xms256m`, `-Xmx${heap}`, '-XX:+UseG1GC', log4j, '-cp', classpath, 'kafka.Kafka', propsFile],
    { logFile: join(dataDir, 'stdout.log'), pidFile, detached: opts.detached ?? false },
  );
  const brokers = [`127.0.0.1:${opts.port}`];
  await waitOrStop('Kafka broker', () => metadataAnswers(brokers), {
    timeoutMs: opts.startTimeoutMs ?? 60_000,
    pid: proc.pid,
    logFile,
  });
  return {
    brokers,
    pid: proc.pid,
    dataDir,
    stop: () => stopFromPidFile(pidFile).then(() => undefined),
  };
}

function formatStorage(
  classpath: string,
  log4j: string,
  propsFile: string,
  extraArgs: string[],
): void {
  execFileSync(
    'java',
    [
      log4j,
      '-cp',
      classpath,
      'kafka.tools.StorageTool',
      'format',
      // The '=' form: a base64url id may start with '-', which would read as another option.
      `--cluster-id=${newClusterId()}`,
      '--config',
      propsFile,
      ...extraArgs,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
}

function serverProperties(
  port: number,
  controllerPort: number,
  logDir: string,
  secure?: SecureListener,
): string {
  // The plaintext listener stays for the launcher's readiness probe and the broker's own traffic.
  const extra = secure === undefined ? '' : `,${secure.protocol}://127.0.0.1:${secure.port}`;
  const extraMap = secure === undefined ? '' : `,${secure.protocol}:${secure.protocol}`;
  return [
    'process.roles=broker,controller',
    'node.id=1',
    `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
    `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}${extra}`,
    `advertised.listeners=PLAINTEXT://127.0.0.1:${port}${extra}`,
    'controller.listener.names=CONTROLLER',
    'inter.broker.listener.name=PLAINTEXT',
    `listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT${extraMap}`,
    ...(secure?.properties ?? []),
    `log.dirs=${logDir}`,
    // One broker: internal topics cannot be replicated, and tests should not wait 3 s per group.
    'offsets.topic.replication.factor=1',
    'offsets.topic.num.partitions=4',
    'transaction.state.log.replication.factor=1',
    'transaction.state.log.min.isr=1',
    'transaction.state.log.num.partitions=4',
    'share.coordinator.state.topic.replication.factor=1',
    'share.coordinator.state.topic.min.isr=1',
    'group.initial.rebalance.delay.ms=0',
    // Broker and controller share one JVM: on a starved CPU (a loaded 2-core CI machine) the
    // broker's heartbeat to its own controller can miss the default 9 s session, and the
    // controller then fences the only broker, leaving every partition without a leader. No other
    // broker could take over, so give the session a minute.
    'broker.session.timeout.ms=60000',
    'num.partitions=1',
    'auto.create.topics.enable=false',
    '',
  ].join('\n');
}

function log4jProperties(logFile: string): string {
  return [
    'rootLogger.level=INFO',
    'rootLogger.appenderRef.file.ref=FILE',
    'appender.file.type=File',
    'appender.file.name=FILE',
    `appender.file.fileName=${logFile}`,
    'appender.file.layout.type=PatternLayout',
    'appender.file.layout.pattern=[%d] %p %m (%c)%n',
    '',
  ].join('\n');
}

async function metadataAnswers(brokers: string[]): Promise<boolean> {
  const admin = new Kafka({
    brokers,
    clientId: 'hugot-stream-probe',
    logLevel: logLevel.NOTHING,
    retry: { retries: 0 },
    connectionTimeout: 1_000,
  }).admin();
  try {
    await admin.connect();
    const cluster = await admin.describeCluster();
    return cluster.brokers.length > 0 && cluster.controller !== null;
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

async function main(): Promise<void> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      port: { type: 'string', default: '19092' },
      dir: { type: 'string' },
      'keep-data': { type: 'boolean', default: false },
      'sasl-ssl-port': { type: 'string' },
    },
  });
  const command = positionals[0] ?? 'help';
  const cacheDir = defaultCacheDir();
  const dataDir = values.dir ?? join(cacheDir, 'services', `kafka-${values.port}`);
  if (command === 'install') {
    process.stdout.write(`Kafka ${KAFKA_VERSION} jars in ${installKafka({ cacheDir })}\n`);
  } else if (command === 'start') {
    const started = Date.now();
    const securePort = values['sasl-ssl-port'];
    const secure =
      securePort === undefined
        ? undefined
        : saslSslListener(Number(securePort), certificatesDirFor(dataDir));
    const kafka = await startKafka({
      cacheDir,
      port: Number(values.port),
      dataDir,
      detached: true,
      keepData: values['keep-data'],
      ...(secure !== undefined ? { secure: secure.listener } : {}),
    });
    process.stdout.write(
      `Kafka ${KAFKA_VERSION} ready in ${Date.now() - started} ms (pid ${kafka.pid}, data ${dataDir})\n` +
        `KAFKA_BROKERS=${kafka.brokers.join(',')}\n`,
    );
    if (secure !== undefined) {
      // A local test broker's throwaway credentials: printed so that a developer can connect.
      const user = secure.users[0];
      process.stdout.write(
        `SASL_SSL listener: 127.0.0.1:${securePort} (SCRAM-SHA-512/256, PLAIN, OAUTHBEARER unsecured JWT)\n` +
          `  CA file: ${secure.certificates.caFile}\n` +
          `  user: ${user?.name ?? ''}  password: ${user?.password ?? ''}\n`,
      );
    }
  } else if (command === 'stop') {
    const stopped = await stopFromPidFile(join(dataDir, 'kafka.pid'));
    process.stdout.write(stopped ? 'Kafka stopped\n' : `no Kafka pid file in ${dataDir}\n`);
  } else {
    process.stdout.write(
      'usage: node scripts/services/kafka-local.ts install | start [--port 19092] [--dir D] [--keep-data] [--sasl-ssl-port 19093] | stop [--port 19092] [--dir D]\n',
    );
  }
}

if (import.meta.main) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
