// Which pipelines of the registry a parity project proved with at least one golden case, counted
// by implementation (an alias proves its task's pipeline). When every file of the project ran with
// no name filter, a pipeline with none is a failure: both the parity line (parity-reporter.ts) and
// the summary line (summary-reporter.ts) count it, so that the plain line says "failed" whenever
// the run fails on it.
import { globSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import type { TestModule } from 'vitest/node';
import type {} from './parity-meta.ts';
import { TASK_ALIASES, TASK_NAMES } from '../../src/pipelines/registry.ts';

/** The parity projects of vitest.config.ts and the binding each runs on. */
export const PARITY_PROJECTS: Readonly<Record<string, string>> = {
  parity: 'native',
  'parity-onnxruntime-node': 'onnxruntime-node',
};

/** The pipelines a parity run must prove: the registry's, or a fake one in the reporters' tests. */
export interface PipelineRegistry {
  tasks: readonly string[];
  /** alias -> the task whose pipeline it is. */
  aliases: Readonly<Record<string, string>>;
}

export const REGISTRY: PipelineRegistry = { tasks: TASK_NAMES, aliases: TASK_ALIASES };

export const implementationOf = (registry: PipelineRegistry, task: string): string =>
  registry.aliases[task] ?? task;

/**
 * Whether every file of the project ran with no name filter: only then does a pipeline without
 * a golden case mean one is missing, rather than that its file was not asked for.
 */
function ranWholeProject(modules: readonly TestModule[]): boolean {
  const first = modules[0];
  if (first === undefined) return false;
  const config = first.project.config;
  if (config.testNamePattern !== undefined) return false;
  const ran = new Set(modules.map((m) => relative(config.root, m.moduleId)));
  const files = globSync(config.include, { cwd: config.root, exclude: config.exclude });
  return files.every((file) => ran.has(relative(config.root, resolve(config.root, file))));
}

/** The project's pipelines (implementations) with no golden case that ran; [] unless it all ran. */
export function withoutGolden(
  testModules: readonly TestModule[],
  project: string,
  registry: PipelineRegistry,
): string[] {
  const modules = testModules.filter((m) => m.project.name === project);
  if (!ranWholeProject(modules)) return [];
  const proven = new Set<string>();
  for (const testModule of modules)
    for (const test of testModule.children.allTests()) {
      const state = test.result().state;
      const { parity, pipeline } = test.meta();
      if ((state === 'passed' || state === 'failed') && parity === 'golden' && pipeline)
        proven.add(implementationOf(registry, pipeline));
    }
  const implementations = [...new Set(registry.tasks.map((t) => implementationOf(registry, t)))];
  return implementations.filter((implementation) => !proven.has(implementation));
}
