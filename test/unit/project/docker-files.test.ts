// The images and compose-dev.yaml, read as text: no Docker engine is needed, so this runs on every
// machine. Each example config must run in the images as shipped or say that it needs a mounted
// model; the images must carry one platform's native libraries; the compose worker must wait for
// healthy brokers, come back when it exits and be given time to drain (docs/docker.md).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, posix, relative, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const DOCKERFILES = ['docker/Dockerfile', 'docker/cuda.Dockerfile'];
const MARKER = 'Needs a mounted model';
/** src/config/schema.ts: shutdown.timeoutMs when a config leaves it out. */
const DEFAULT_SHUTDOWN_MS = 30_000;
/**
 * After the drain, `run` lingers up to 2 s with /livez red and gives open handles 2 s more before
 * exiting (src/cli/run-command.ts); a grace period that only covers the drain is cut short there.
 */
const AFTER_DRAIN_MS = 5_000;

const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');
const configFiles = readdirSync(join(ROOT, 'config'))
  .filter((f) => f.endsWith('.yaml'))
  .sort();

// --- Dockerfiles -------------------------------------------------------------------------------

interface Instruction {
  keyword: string;
  args: string;
}
interface Stage {
  name: string | undefined;
  instructions: Instruction[];
}

/** Instructions by stage, continuation lines joined and comments dropped, as Docker reads them. */
function stages(dockerfile: string): Stage[] {
  const logical: string[] = [];
  let pending = '';
  for (const raw of dockerfile.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `;
      continue;
    }
    logical.push(pending + line);
    pending = '';
  }
  const result: Stage[] = [];
  for (const line of logical) {
    const space = line.search(/\s/);
    const keyword = line.slice(0, space).toUpperCase();
    const args = line.slice(space).trim();
    if (keyword === 'FROM')
      result.push({ name: /\sAS\s+(\S+)$/i.exec(args)?.[1], instructions: [] });
    else result.at(-1)?.instructions.push({ keyword, args });
  }
  return result;
}

interface Copy {
  from: string | undefined;
  sources: string[];
  /** Absolute in the image: resolved against the WORKDIR in force. */
  dest: string;
  destIsDir: boolean;
}

function copies(stage: Stage): Copy[] {
  let workdir = '/';
  const result: Copy[] = [];
  for (const { keyword, args } of stage.instructions) {
    if (keyword === 'WORKDIR') workdir = posix.resolve(workdir, args);
    if (keyword !== 'COPY') continue;
    const words = args.startsWith('[')
      ? (JSON.parse(args) as string[])
      : args.split(/\s+/).filter((w) => w !== '');
    const flags = words.filter((w) => w.startsWith('--'));
    const paths = words.filter((w) => !w.startsWith('--'));
    const dest = paths.pop() ?? '';
    result.push({
      from: flags.find((f) => f.startsWith('--from='))?.slice('--from='.length),
      sources: paths.map((p) => posix.normalize(p).replace(/\/$/, '')),
      dest: posix.resolve(workdir, dest),
      destIsDir: dest.endsWith('/') || dest === '.' || paths.length > 1,
    });
  }
  return result;
}

function finalWorkdir(stage: Stage): string {
  let workdir = '/';
  for (const { keyword, args } of stage.instructions)
    if (keyword === 'WORKDIR') workdir = posix.resolve(workdir, args);
  return workdir;
}

/** Where the final stage puts a file of the build context (a repository path), if anywhere. */
function landsAt(stage: Stage, file: string): string[] {
  const places: string[] = [];
  for (const copy of copies(stage)) {
    if (copy.from !== undefined) continue;
    for (const source of copy.sources) {
      if (source === '.') places.push(posix.join(copy.dest, file));
      else if (file === source)
        places.push(copy.destIsDir ? posix.join(copy.dest, posix.basename(file)) : copy.dest);
      else if (file.startsWith(`${source}/`))
        places.push(posix.join(copy.dest, file.slice(source.length + 1)));
    }
  }
  return places;
}

// --- .dockerignore -----------------------------------------------------------------------------

interface IgnoreRule {
  negate: boolean;
  pattern: RegExp;
}

/** The patterns this repository uses: paths, `*` and `**` globs, `!` re-includes; the last match wins. */
function ignoreRules(text: string): IgnoreRule[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((line) => {
      const negate = line.startsWith('!');
      const glob = (negate ? line.slice(1) : line).replace(/^\/+/, '').replace(/\/+$/, '');
      const body = glob
        .split(/(\*\*\/|\*\*|\*|\?)/)
        .map((part) =>
          part === '**/'
            ? '(?:.*/)?'
            : part === '**'
              ? '.*'
              : part === '*'
                ? '[^/]*'
                : part === '?'
                  ? '[^/]'
                  : part.replace(/[.+^${}()|[\]\\]/g, '\\$&'),
        )
        .join('');
      // A pattern that names a folder takes everything under it.
      return { negate, pattern: new RegExp(`^${body}(?:/.*)?$`) };
    });
}

function ignored(rules: IgnoreRule[], file: string): boolean {
  let result = false;
  for (const rule of rules) if (rule.pattern.test(file)) result = !rule.negate;
  return result;
}

// --- example configs ---------------------------------------------------------------------------

interface ExampleConfig {
  models?: Record<string, { path?: string }>;
  routes?: { source?: { type?: string; path?: string } }[];
  connections?: Record<string, unknown>;
  shutdown?: { timeoutMs?: number };
  telemetry?: { port?: number };
}

const readConfig = (path: string): ExampleConfig => parse(read(path)) as ExampleConfig;

/** `${VAR:-default}` as a fresh environment reads it: the default. */
const withDefaults = (value: string): string =>
  value.replace(
    /\$\{[A-Za-z_][A-Za-z0-9_]*(?::?-([^}]*))?\}/g,
    (_, fallback?: string) => fallback ?? '',
  );

/** Every file under a repository folder (or the file itself), as repository paths. */
function filesUnder(path: string): string[] {
  const full = join(ROOT, path);
  if (!existsSync(full)) return [];
  if (statSync(full).isFile()) return [path];
  return readdirSync(full, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(ROOT, join(e.parentPath, e.name)).split(sep).join('/'));
}

/** What keeps a repository path (a folder or a file) out of the image at the same path; [] if nothing. */
function notInImage(path: string, stage: Stage, rules: IgnoreRule[]): string[] {
  if (path.startsWith('/') || path.startsWith('../')) return [`${path}: outside the repository`];
  const files = filesUnder(path);
  if (files.length === 0) return [`${path}: not in the repository (fetched or built?)`];
  const at = posix.join(finalWorkdir(stage), path);
  const problems: string[] = [];
  for (const file of files) {
    if (ignored(rules, file)) problems.push(`${file}: excluded by .dockerignore`);
    else if (!landsAt(stage, file).includes(posix.join(finalWorkdir(stage), file)))
      problems.push(`${file}: no COPY puts it under ${at}`);
  }
  return problems;
}

/** The model folders a config names, as repository paths (they are relative to the config file). */
const modelPaths = (config: ExampleConfig): string[] =>
  Object.values(config.models ?? {}).map((m) =>
    posix.normalize(posix.join('config', withDefaults(m.path ?? ''))),
  );

/** The files the config's file sources read by default, relative to the working directory. */
const inputPaths = (config: ExampleConfig): string[] =>
  (config.routes ?? [])
    .filter((r) => r.source?.type === 'file' && r.source.path !== undefined)
    .map((r) => posix.normalize(withDefaults(r.source?.path ?? '')))
    .filter((p) => p !== '-');

/** The comment block a config opens with: where its marker must stand. */
function header(text: string): string {
  const lines: string[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('#')) break;
    lines.push(line);
  }
  return lines.join('\n');
}

const finalStage = (dockerfile: string): Stage => {
  const all = stages(read(dockerfile));
  const last = all.at(-1);
  if (last === undefined) throw new Error(`${dockerfile} has no FROM`);
  return last;
};
const rules = ignoreRules(read('.dockerignore'));

describe('.dockerignore as read here', () => {
  // So that a matcher that lets everything in (or nothing) cannot pass the checks below.
  it('keeps the tree out and lets the examples in', () => {
    expect(ignored(rules, 'node_modules/yaml/package.json')).toBe(true);
    expect(ignored(rules, '.cache/models/all-MiniLM-L6-v2/model.onnx')).toBe(true);
    expect(ignored(rules, 'test/unit/project/docker-files.test.ts')).toBe(true);
    expect(ignored(rules, 'test/fixtures/models/bert-fill-mask/model.onnx')).toBe(true);
    expect(ignored(rules, 'logs/run.log')).toBe(true);
    expect(ignored(rules, 'test/fixtures/corpus/sample.jsonl')).toBe(false);
    expect(ignored(rules, 'models/all-MiniLM-L6-v2-int8/model.onnx')).toBe(false);
    expect(ignored(rules, 'src/cli/main.ts')).toBe(false);
    expect(ignored(rules, 'bin/hugot-stream.js')).toBe(false);
  });
});

describe.each(DOCKERFILES)('%s', (dockerfile) => {
  const stage = finalStage(dockerfile);

  for (const file of configFiles) {
    it(`config/${file} runs in the image as shipped, or says it needs a mounted model`, () => {
      const text = read(`config/${file}`);
      const config = readConfig(`config/${file}`);
      expect(notInImage(`config/${file}`, stage, rules)).toEqual([]);
      // Inputs have no marker: an example reads a file the image carries or one the user names.
      expect(inputPaths(config).flatMap((p) => notInImage(p, stage, rules))).toEqual([]);
      const missing = modelPaths(config).flatMap((p) => notInImage(p, stage, rules));
      if (header(text).includes(MARKER))
        expect(missing, `marked "${MARKER}", yet its models are all in the image`).not.toEqual([]);
      else expect(missing, `not marked "${MARKER}" at its top`).toEqual([]);
    });
  }

  it("starts the installed command, whose file the image carries, as the package's bin", () => {
    const entry = stage.instructions.filter((i) => i.keyword === 'ENTRYPOINT').at(-1);
    const argv = JSON.parse(entry?.args ?? '[]') as string[];
    const script = argv[argv.indexOf('node') + 1] ?? '';
    const pkg = JSON.parse(read('package.json')) as { bin: Record<string, string> };
    expect(posix.normalize(pkg.bin['hugot-stream'] ?? '')).toBe(script);
    expect(notInImage(script, stage, rules)).toEqual([]);
  });

  it('keeps only linux/<arch> native libraries of onnxruntime-node and tokenizers', () => {
    const all = stages(read(dockerfile));
    const source = copies(stage).find((c) => c.sources.some((s) => s.endsWith('node_modules')));
    const build = all.find((s) => s.name !== undefined && s.name === source?.from);
    expect(build, 'node_modules comes from a build stage').toBeDefined();
    const runs = (build?.instructions ?? []).filter((i) => i.keyword === 'RUN');
    const install = runs.findIndex((r) => /\bnpm ci\b/.test(r.args));
    expect(install, 'the build stage runs npm ci').toBeGreaterThanOrEqual(0);
    // After the install, in the stage the runtime copies node_modules from.
    const prune = runs
      .slice(install)
      .map((r) => r.args)
      .join('\n');
    // Each package named, and what is deleted is everything but its linux/<arch> files.
    expect(prune).toContain('node_modules/onnxruntime-node/bin');
    expect(prune).toMatch(/!\s+-path\s+"[^"]*\/linux\/\$arch"\s+-exec rm -rf/);
    expect(prune).toContain('node_modules/tokenizers');
    expect(prune).toMatch(/!\s+-name\s+"tokenizers\.linux-\$arch-gnu\.node"\s+-delete/);
  });
});

describe('docs/docker.md', () => {
  const docs = read('docs/docker.md').split('\n');
  for (const file of configFiles)
    it(`gives config/${file} the verdict its header gives`, () => {
      const row = docs.find((l) => l.startsWith('|') && l.includes(`\`config/${file}\``));
      expect(row, `a table row naming config/${file}`).toBeDefined();
      const marked = header(read(`config/${file}`)).includes(MARKER);
      expect(row).toMatch(marked ? /needs a mounted model/i : /runs in the image/);
    });
});

// --- compose-dev.yaml --------------------------------------------------------------------------

interface Service {
  image?: string;
  build?: { dockerfile?: string };
  command?: string[];
  depends_on?: string[] | Record<string, { condition?: string }>;
  restart?: string;
  stop_grace_period?: string;
  environment?: Record<string, string | number> | string[];
  healthcheck?: { test?: string | string[]; disable?: boolean };
}

/** A compose duration ("45s", "1m30s", "500ms") in milliseconds. */
function durationMs(value: string): number {
  const units: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1, us: 0.001 };
  if (!/^(?:\d+(?:\.\d+)?(?:h|ms|us|m|s))+$/.test(value))
    throw new Error(`not a compose duration: ${value}`);
  let total = 0;
  for (const [, amount, unit] of value.matchAll(/(\d+(?:\.\d+)?)(h|ms|us|m|s)/g))
    total += Number(amount) * (units[unit ?? ''] ?? Number.NaN);
  return total;
}

function environment(service: Service): Map<string, string> {
  const env = service.environment ?? {};
  const pairs = Array.isArray(env)
    ? env.map((e): [string, string] => [e.split('=')[0] ?? '', e.split('=').slice(1).join('=')])
    : Object.entries(env).map(([k, v]): [string, string] => [k, String(v)]);
  return new Map(pairs);
}

function dependencies(service: Service): [string, string | undefined][] {
  const deps = service.depends_on ?? [];
  return Array.isArray(deps)
    ? deps.map((d): [string, undefined] => [d, undefined])
    : Object.entries(deps).map(([name, d]): [string, string | undefined] => [name, d.condition]);
}

describe('compose-dev.yaml', () => {
  const services = (parse(read('compose-dev.yaml')) as { services: Record<string, Service> })
    .services;
  const workers = Object.entries(services).filter(
    ([, s]) => s.build?.dockerfile === DOCKERFILES[0],
  );

  it('reads compose durations', () => {
    expect(durationMs('45s')).toBe(45_000);
    expect(durationMs('1m30s')).toBe(90_000);
    expect(durationMs('1500ms')).toBe(1_500);
    expect(() => durationMs('45')).toThrow(/not a compose duration/);
  });

  it('builds a worker from docker/Dockerfile', () => {
    expect(workers.map(([name]) => name)).not.toEqual([]);
  });

  for (const [name, worker] of workers) {
    const command = worker.command ?? [];
    const flag = command.findIndex((c) => c === '--config' || c === '-c');
    // The image's working directory is the repository's root, so the path reads the same here.
    const configPath = (flag >= 0 ? command[flag + 1] : undefined) ?? 'config/demo.yaml';
    const config = readConfig(configPath);
    const env = environment(worker);

    it(`${name} starts once what it depends on is healthy`, () => {
      const deps = dependencies(worker);
      for (const [dep, condition] of deps) {
        expect(condition, `${dep}: condition`).toBe('service_healthy');
        const check = services[dep]?.healthcheck;
        expect(check?.test, `${dep}: healthcheck`).toBeDefined();
        expect(check?.disable ?? false).toBe(false);
        expect(check?.test).not.toEqual(['NONE']);
      }
      // The brokers its config connects to are among them.
      for (const kind of Object.keys(config.connections ?? {}))
        expect(
          deps.some(([dep]) => services[dep]?.image?.includes(kind) === true),
          `${configPath} connects to ${kind}: depends on a ${kind} service`,
        ).toBe(true);
    });

    it(`${name} is restarted and given longer than its drain to stop`, () => {
      expect(['always', 'unless-stopped', 'on-failure']).toContain(
        (worker.restart ?? 'no').split(':')[0],
      );
      // An environment override wins over the file, as it does for `run`.
      const fromEnv = env.get('HUGOT__shutdown__timeoutMs');
      const timeoutMs =
        fromEnv !== undefined
          ? Number(fromEnv)
          : (config.shutdown?.timeoutMs ?? DEFAULT_SHUTDOWN_MS);
      expect(worker.stop_grace_period, 'stop_grace_period (docker waits 10 s)').toBeDefined();
      expect(durationMs(worker.stop_grace_period ?? '0s')).toBeGreaterThan(
        timeoutMs + AFTER_DRAIN_MS,
      );
    });

    it(`${name} reports readiness on its telemetry port`, () => {
      // The compose environment over the image's ENV over the config file, as `run` reads them.
      const imageEnv = finalStage(DOCKERFILES[0] ?? '')
        .instructions.filter((i) => i.keyword === 'ENV')
        .map((i) => /\bHUGOT__telemetry__port=(\d+)/.exec(i.args)?.[1])
        .find((p) => p !== undefined);
      const port = env.get('HUGOT__telemetry__port') ?? imageEnv ?? config.telemetry?.port;
      if (port === undefined) return; // no server, nothing to ask
      const test = worker.healthcheck?.test ?? [];
      expect((Array.isArray(test) ? test : [test]).join(' ')).toContain(`:${port}/readyz`);
    });
  }
});
