// The source tree reads like the data path only while imports run one way: no file cycles, and
// no folder importing a folder that imports it back. Read from the import statements themselves,
// type-only imports included (a type cycle still ties the folders together).
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, normalize, relative, sep } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';

const SRC = join(import.meta.dirname, '..', '..', 'src');
const IMPORT = /(?:import|export)\s[^;]*?from\s+['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]/g;

/** Files under src, each with the src files it imports (relative specifiers only). */
async function importGraph(): Promise<Map<string, Set<string>>> {
  const graph = new Map<string, Set<string>>();
  const entries = await readdir(SRC, { recursive: true, withFileTypes: true });
  for (const entry of entries) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const path = join(entry.parentPath, entry.name);
    const text = await readFile(path, 'utf8');
    const deps = new Set<string>();
    for (const match of text.matchAll(IMPORT)) {
      const target = match[1] ?? match[2];
      if (target !== undefined) deps.add(normalize(join(dirname(path), target)));
    }
    graph.set(path, deps);
  }
  return graph;
}

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

describe('import layers', () => {
  let files: Map<string, Set<string>>;
  beforeAll(async () => {
    files = await importGraph();
  });

  it('reads the whole tree', () => {
    expect(files.size).toBeGreaterThan(100);
    const imported = [...files.values()].reduce((n, deps) => n + deps.size, 0);
    expect(imported).toBeGreaterThan(files.size);
  });

  it('has no import cycle between files', () => {
    const found = cycles(files).map((c) => c.map((p) => relative(SRC, p)).join(' > '));
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

  it('would see a cycle', () => {
    const graph = new Map([
      ['a', new Set(['b'])],
      ['b', new Set(['c'])],
      ['c', new Set(['a'])],
    ]);
    expect(cycles(graph)).toEqual([['a', 'b', 'c', 'a']]);
  });
});
