// The source tree reads like the data path only while imports run one way: no file cycles, and
// no folder importing a folder that imports it back. Read from the import statements themselves,
// type-only and side-effect imports included (a type cycle still ties the folders together). The
// scripts, the benchmarks and the tests' own kits are held to the same, at every depth of folders:
// a cycle there is as hard to change as one in src, and the next one would hide behind it.
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, normalize, relative, sep } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const SRC = join(ROOT, 'src');
/** Everything that imports: the library, its scripts, its benchmarks and its tests. */
const TREES = ['src', 'scripts', 'bench', 'test'];
const IMPORT =
  /(?:import|export)\s[^;]*?from\s+['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]|^import\s+['"](\.[^'"]+)['"]/gm;

/** Files under the trees, each with the files it imports (relative specifiers only). */
async function importGraph(): Promise<Map<string, Set<string>>> {
  const graph = new Map<string, Set<string>>();
  for (const tree of TREES) {
    const entries = await readdir(join(ROOT, tree), { recursive: true, withFileTypes: true });
    for (const entry of entries) {
      if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
      const path = join(entry.parentPath, entry.name);
      const text = await readFile(path, 'utf8');
      const deps = new Set<string>();
      for (const match of text.matchAll(IMPORT)) {
        const target = match[1] ?? match[2] ?? match[3];
        if (target !== undefined) deps.add(normalize(join(dirname(path), target)));
      }
      graph.set(path, deps);
    }
  }
  return graph;
}

/**
 * A test file stands above every layer: nothing imports it, and what it imports says nothing of
 * the layers (a unit test of bench/lib is not bench depending on test/).
 */
const isTestFile = (path: string): boolean => path.endsWith('.test.ts');

/** The folder directly under src; files at the top are their own unit (hugot.ts is the API, errors.ts a leaf). */
function unitOf(path: string): string {
  const parts = relative(SRC, path).split(sep);
  return parts.length > 1 ? (parts[0] as string) : (parts[0] as string).replace(/\.ts$/, '');
}

function cycles(graph: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const found: string[][] = [];
  const visit = (node: string): void => {
    state.set(node, 'open');
    path.push(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (state.get(next) === 'open') found.push([...path.slice(path.indexOf(next)), next]);
      else if (state.get(next) === undefined) visit(next);
    }
    path.pop();
    state.set(node, 'done');
  };
  for (const node of graph.keys()) if (state.get(node) === undefined) visit(node);
  return found;
}

/** Every folder that holds a file of the graph, the repository itself included. */
function foldersOf(graph: ReadonlyMap<string, unknown>): string[] {
  const folders = new Set<string>([ROOT]);
  for (const file of graph.keys())
    for (let folder = dirname(file); folder.startsWith(ROOT + sep); folder = dirname(folder))
      folders.add(folder);
  return [...folders];
}

/**
 * What stands directly in `folder` (a file, or a folder with all below it), each with those of
 * them its files import: the graph one level of folders sees. Imports from test files left out.
 */
function siblings(
  graph: ReadonlyMap<string, ReadonlySet<string>>,
  folder: string,
): Map<string, Set<string>> {
  const unit = (path: string): string | undefined =>
    path.startsWith(folder + sep) ? relative(folder, path).split(sep)[0] : undefined;
  const units = new Map<string, Set<string>>();
  for (const [file, deps] of graph) {
    const from = unit(file);
    if (from === undefined) continue;
    const to = units.get(from) ?? new Set<string>();
    units.set(from, to);
    if (isTestFile(file)) continue;
    for (const dep of deps) {
      const target = unit(dep);
      if (target !== undefined && target !== from && graph.has(dep)) to.add(target);
    }
  }
  return units;
}

// The pipelines, bottom first: a unit imports only units on lines below its own. Folders on one
// line are independent of each other; the files on a line are the contract every task builds on
// and may import each other (their cycles are refused above). A new folder or file here takes
// its place in this list.
const PIPELINE_LAYERS: readonly (readonly string[])[] = [
  ['runtime'],
  ['pipeline.ts', 'task-definition.ts', 'base-pipeline.ts', 'python-output.ts', 'row-by-row.ts'],
  ['text', 'vision', 'tabular', 'generation'],
  ['seq2seq'],
  ['audio', 'multimodal'],
  ['task-modules.ts'],
  ['registry.ts'],
];

describe('import layers', () => {
  let all: Map<string, Set<string>>;
  /** src alone. */
  let files: Map<string, Set<string>>;
  beforeAll(async () => {
    all = await importGraph();
    files = new Map([...all].filter(([file]) => file.startsWith(SRC + sep)));
  });

  it('reads the whole tree', () => {
    expect(files.size).toBeGreaterThan(100);
    const imported = [...files.values()].reduce((n, deps) => n + deps.size, 0);
    expect(imported).toBeGreaterThan(files.size);
    for (const tree of TREES)
      expect([...all.keys()].some((file) => file.startsWith(join(ROOT, tree) + sep))).toBe(true);
  });

  it('has no import cycle between files', () => {
    const found = cycles(all).map((c) => c.map((p) => relative(ROOT, p)).join(' > '));
    expect(found).toEqual([]);
  });

  it('has no import running back up between folders', () => {
    const folders = new Map<string, Set<string>>();
    for (const [file, deps] of files) {
      const from = unitOf(file);
      for (const dep of deps) {
        const to = unitOf(dep);
        if (to === from || !files.has(dep)) continue;
        if (!folders.has(from)) folders.set(from, new Set());
        folders.get(from)?.add(to);
      }
    }
    expect(cycles(folders).map((c) => c.join(' > '))).toEqual([]);
    // The bottom of the house stays at the bottom.
    const bottom = ['errors', 'logger', 'redaction'];
    for (const leaf of [...bottom, 'options'])
      expect([...(folders.get(leaf) ?? [])].filter((to) => !bottom.includes(to))).toEqual([]);
    expect(folders.get('pipelines')).not.toContain('connectors');
    expect(folders.get('pipelines')).not.toContain('route');
    expect(folders.get('pipelines')).not.toContain('worker');
  });

  it('has no folder importing one beside it that imports it back, at any depth', () => {
    const found = foldersOf(all).flatMap((folder) =>
      cycles(siblings(all, folder)).map((c) => `${relative(ROOT, folder)}/: ${c.join(' > ')}`),
    );
    expect(found).toEqual([]);
  });

  it('imports no test file, and nothing outside src from the library', () => {
    const imported = [...all.values()].flatMap((deps) => [...deps]);
    expect(imported.filter(isTestFile).map((p) => relative(ROOT, p))).toEqual([]);
    const outside = [...files].flatMap(([file, deps]) =>
      [...deps]
        .filter((dep) => all.has(dep) && !dep.startsWith(SRC + sep))
        .map((dep) => `${relative(ROOT, file)} > ${relative(ROOT, dep)}`),
    );
    expect(outside).toEqual([]);
  });

  it('layers the pipelines: their runtime at the bottom, the registry on top', () => {
    const units = siblings(files, join(SRC, 'pipelines'));
    const line = (unit: string): number => PIPELINE_LAYERS.findIndex((l) => l.includes(unit));
    expect([...units.keys()].filter((unit) => line(unit) < 0)).toEqual([]);
    const bothFiles = (a: string, b: string): boolean => a.endsWith('.ts') && b.endsWith('.ts');
    const upward = [...units].flatMap(([from, deps]) =>
      [...deps]
        .filter((to) => line(to) > line(from) || (line(to) === line(from) && !bothFiles(from, to)))
        .map((to) => `${from} > ${to}`),
    );
    expect(upward).toEqual([]);
  });

  it('would see a cycle', () => {
    const graph = new Map([
      ['a', new Set(['b'])],
      ['b', new Set(['c'])],
      ['c', new Set(['a'])],
    ]);
    expect(cycles(graph)).toEqual([['a', 'b', 'c', 'a']]);
  });

  it('would see folders import each other through different files, but not through a test', () => {
    const [a, b] = [join(ROOT, 'x', 'a'), join(ROOT, 'x', 'b')];
    const toy = new Map([
      [join(a, 'one.ts'), new Set([join(b, 'two.ts')])],
      [join(b, 'two.ts'), new Set<string>()],
      [join(b, 'three.ts'), new Set([join(a, 'four.ts')])],
      [join(a, 'four.ts'), new Set<string>()],
      [join(b, 'five.test.ts'), new Set([join(a, 'one.ts')])],
    ]);
    expect(cycles(toy)).toEqual([]);
    expect(cycles(siblings(toy, join(ROOT, 'x')))).toEqual([['a', 'b', 'a']]);
    toy.delete(join(b, 'three.ts'));
    expect(cycles(siblings(toy, join(ROOT, 'x')))).toEqual([]);
  });
});
