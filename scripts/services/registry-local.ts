// A Confluent-compatible Schema Registry for tests and local runs on machines without Docker:
// Apicurio Registry (its Confluent API under /apis/ccompat/v7), built once from Maven Central
// artifacts with Quarkus's Maven plugin and run as one small JVM with an H2 database in its data
// directory. CLI: node scripts/services/registry-local.ts install|start|stop
import { copyFileSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { defaultCacheDir } from './kafka-local.ts';
import {
  requireTool,
  runToEnd,
  startLogged,
  stopFromPidFile,
  waitOrStop,
} from './process-control.ts';

// Apicurio 3.x modules and the 2.5/2.6 schema utilities are not all served by Maven Central; 2.4.2
// is the newest release whose whole tree resolves there, on the Quarkus it was released with.
export const APICURIO_VERSION = '2.4.2.Final';
const QUARKUS_VERSION = '2.16.4.Final';
// Apicurio 2.4 names the JSON Schema validator by a group that only JitPack serves; its author
// publishes the same library, same packages, on Maven Central under this one.
const EVERIT_JSON_SCHEMA_VERSION = '1.14.2';
const COMPILER_PLUGIN_VERSION = '3.13.0';
const DEPENDENCY_PLUGIN_VERSION = '3.6.1';

/** The path of Apicurio's Confluent-compatible API (v7 of Confluent's REST API). */
export const CCOMPAT_PATH = '/apis/ccompat/v7';

const SHIM_SOURCE = join(
  dirname(fileURLToPath(import.meta.url)),
  'schema-registry',
  'DynamicConfigProperties.java',
);

export interface RegistryInstallOptions {
  cacheDir: string;
}

export interface LocalRegistryOptions extends RegistryInstallOptions {
  port: number;
  dataDir: string;
  /** Detached registries keep running after this process exits (the CLI's `start`). */
  detached?: boolean;
  heapMb?: number;
  startTimeoutMs?: number;
  /**
   * Start on the subjects and schemas (ids included) that a registry stored in `dataDir` before:
   * tests that take the registry down and bring it back. Without it every start is empty.
   */
  keepData?: boolean;
}

export interface LocalRegistry {
  /** The Confluent-compatible base URL, e.g. http://127.0.0.1:18081/apis/ccompat/v7 */
  url: string;
  pid: number;
  dataDir: string;
  stop: () => Promise<void>;
}

function installHome(cacheDir: string): string {
  return join(cacheDir, 'registry', APICURIO_VERSION);
}

function runnerJar(home: string): string {
  return join(home, 'target', `schema-registry-runtime-${APICURIO_VERSION}-runner.jar`);
}

/**
 * Builds the registry once into `<cacheDir>/registry/<version>` (a runner jar and its lib/) and
 * returns the runner jar; later calls are free. The build runs in a folder of its own and is
 * moved into place when complete, so an interrupted or concurrent install never leaves a
 * half-built registry that looks installed.
 */
export async function installRegistry(opts: RegistryInstallOptions): Promise<string> {
  const home = installHome(opts.cacheDir);
  const marker = join(home, '.installed');
  if (existsSync(marker)) return runnerJar(home);
  const purpose = 'to build the local Schema Registry';
  // javac, not only java: the build compiles DynamicConfigProperties.java.
  requireTool(
    'javac',
    '-version',
    purpose,
    'install a JDK 17+ (Debian: apt-get install openjdk-17-jdk-headless)',
  );
  requireTool('mvn', '-v', purpose, 'install Maven (Debian: apt-get install maven)');
  const building = `${home}.building-${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  const shimDir = join(building, 'src', 'main', 'java', 'local', 'hugotstream', 'registry');
  mkdirSync(shimDir, { recursive: true });
  writeFileSync(join(building, 'pom.xml'), buildPom());
  copyFileSync(SHIM_SOURCE, join(shimDir, 'DynamicConfigProperties.java'));
  try {
    await runToEnd('mvn', ['-q', '-B', '-Dstyle.color=never', '-DskipTests', 'package'], {
      cwd: building,
    });
    writeFileSync(join(building, '.installed'), new Date().toISOString());
    rmSync(home, { recursive: true, force: true });
    mkdirSync(dirname(home), { recursive: true });
    renameSync(building, home);
  } catch (err) {
    rmSync(building, { recursive: true, force: true });
    // Another install finished first: its build is as good as ours.
    if (existsSync(marker)) return runnerJar(home);
    throw err;
  }
  return runnerJar(home);
}

function buildPom(): string {
  // The registry's own POM (type pom) brings its dependency tree; its jar is unpacked into this
  // project's classes so that it is the Quarkus application (its application.properties, its
  // beans), not a library beside it. config-index is left out: see DynamicConfigProperties.java.
  return `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.hugot-stream</groupId>
  <artifactId>schema-registry-runtime</artifactId>
  <version>${APICURIO_VERSION}</version>
  <packaging>jar</packaging>
  <properties>
    <maven.compiler.release>17</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencyManagement>
    <dependencies>
      <dependency><groupId>io.quarkus</groupId><artifactId>quarkus-bom</artifactId><version>${QUARKUS_VERSION}</version><type>pom</type><scope>import</scope></dependency>
    </dependencies>
  </dependencyManagement>
  <dependencies>
    <dependency>
      <groupId>io.apicurio</groupId><artifactId>apicurio-registry-app</artifactId><version>${APICURIO_VERSION}</version><type>pom</type>
      <exclusions>
        <exclusion><groupId>com.github.everit-org.json-schema</groupId><artifactId>org.everit.json.schema</artifactId></exclusion>
        <exclusion><groupId>io.apicurio</groupId><artifactId>apicurio-common-app-components-config-index</artifactId></exclusion>
      </exclusions>
    </dependency>
    <dependency><groupId>com.github.erosb</groupId><artifactId>everit-json-schema</artifactId><version>${EVERIT_JSON_SCHEMA_VERSION}</version></dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId><artifactId>maven-compiler-plugin</artifactId><version>${COMPILER_PLUGIN_VERSION}</version>
      </plugin>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId><artifactId>maven-dependency-plugin</artifactId><version>${DEPENDENCY_PLUGIN_VERSION}</version>
        <executions>
          <execution>
            <id>registry-classes</id>
            <phase>process-classes</phase>
            <goals><goal>unpack</goal></goals>
            <configuration>
              <artifactItems>
                <artifactItem><groupId>io.apicurio</groupId><artifactId>apicurio-registry-app</artifactId><version>${APICURIO_VERSION}</version><type>jar</type><outputDirectory>\${project.build.outputDirectory}</outputDirectory></artifactItem>
              </artifactItems>
            </configuration>
          </execution>
        </executions>
      </plugin>
      <plugin>
        <groupId>io.quarkus</groupId><artifactId>quarkus-maven-plugin</artifactId><version>${QUARKUS_VERSION}</version>
        <executions><execution><goals><goal>build</goal></goals></execution></executions>
      </plugin>
    </plugins>
  </build>
</project>
`;
}

export async function startRegistry(opts: LocalRegistryOptions): Promise<LocalRegistry> {
  const jar = await installRegistry(opts);
  const dataDir = resolve(opts.dataDir);
  const pidFile = join(dataDir, 'registry.pid');
  await stopFromPidFile(pidFile);
  const dbDir = join(dataDir, 'db');
  if (opts.keepData !== true) rmSync(dbDir, { recursive: true, force: true });
  mkdirSync(dbDir, { recursive: true });
  const logFile = join(dataDir, 'registry.log');
  const heap = `${opts.heapMb ?? 256}m`;
  const proc = startLogged(
    'java',
    [
      `-Xmx${heap}`,
      // One small heap and a short-lived JVM: the serial collector and the C1 compiler alone
      // start it faster and lighter on a 2-core machine than G1 and the full tiered pipeline.
      '-XX:+UseSerialGC',
      '-XX:TieredStopAtLevel=1',
      '-Dquarkus.http.host=127.0.0.1',
      `-Dquarkus.http.port=${opts.port}`,
      // A file database instead of Apicurio's in-memory default, so that a restart with keepData
      // finds its schemas; the registry's SQL storage is the same for both.
      `-Dquarkus.datasource.jdbc.url=jdbc:h2:file:${join(dbDir, 'registry')}`,
      // The production profile opens 20 connections up front; a test registry needs few.
      '-Dquarkus.datasource.jdbc.min-size=1',
      '-Dquarkus.datasource.jdbc.initial-size=1',
      '-Dquarkus.datasource.jdbc.max-size=8',
      '-jar',
      jar,
    ],
    { logFile, pidFile, cwd: dataDir, detached: opts.detached ?? false },
  );
  const url = `http://127.0.0.1:${opts.port}${CCOMPAT_PATH}`;
  await waitOrStop('Schema Registry', () => registryAnswers(url), {
    timeoutMs: opts.startTimeoutMs ?? 60_000,
    pid: proc.pid,
    logFile,
  });
  return {
    url,
    pid: proc.pid,
    dataDir,
    stop: () => stopFromPidFile(pidFile).then(() => undefined),
  };
}

async function registryAnswers(url: string): Promise<boolean> {
  const response = await fetch(`${url}/subjects`, { signal: AbortSignal.timeout(2_000) });
  return response.ok;
}

async function main(): Promise<void> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      port: { type: 'string', default: '18081' },
      dir: { type: 'string' },
      'keep-data': { type: 'boolean', default: false },
    },
  });
  const command = positionals[0] ?? 'help';
  const cacheDir = defaultCacheDir();
  const dataDir = values.dir ?? join(cacheDir, 'services', `registry-${values.port}`);
  if (command === 'install') {
    const jar = await installRegistry({ cacheDir });
    process.stdout.write(`Apicurio Registry ${APICURIO_VERSION} built: ${jar}\n`);
  } else if (command === 'start') {
    const started = Date.now();
    const registry = await startRegistry({
      cacheDir,
      port: Number(values.port),
      dataDir,
      detached: true,
      keepData: values['keep-data'],
    });
    process.stdout.write(
      `Apicurio Registry ${APICURIO_VERSION} ready in ${Date.now() - started} ms (pid ${registry.pid}, data ${dataDir})\n` +
        `SCHEMA_REGISTRY_URL=${registry.url}\n`,
    );
  } else if (command === 'stop') {
    const stopped = await stopFromPidFile(join(dataDir, 'registry.pid'));
    process.stdout.write(
      stopped ? 'Schema Registry stopped\n' : `no Schema Registry pid file in ${dataDir}\n`,
    );
  } else {
    process.stdout.write(
      'usage: node scripts/services/registry-local.ts install | start [--port 18081] [--dir D] [--keep-data] | stop [--port 18081] [--dir D]\n',
    );
  }
}

if (import.meta.main) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
