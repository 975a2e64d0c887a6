// Each task's module loads on its own (task-modules.ts): a thread that runs one task must not
// import the others, and the registry must be built from the very same definitions.
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/errors.ts';
import { findTask, TASK_NAMES } from '../../../src/pipelines/registry.ts';
import { loadTask } from '../../../src/pipelines/task-modules.ts';
import { compileRuntimeOptions } from '../../../src/runtime/runtime-options.ts';

const ROOT = resolve(import.meta.dirname, '../../..');
const MODEL = resolve(ROOT, 'test/fixtures/models/bert-feature-extraction');
const COMPILED_RUNTIME = compileRuntimeOptions({});

/**
 * The src/pipelines modules, and the packages (as `pkg:name`), a fresh process imports to register
 * one pipeline through Hugot; `compiled`: as a shard's thread does, options compiled already.
 */
function pipelineModulesImportedFor(task: string, compiled = false): string[] {
  const script = `
    import { registerHooks } from 'node:module';
    const seen = new Set();
    registerHooks({
      resolve(specifier, context, next) {
        const resolved = next(specifier, context);
        const at = resolved.url.indexOf('/src/pipelines/');
        if (at >= 0) seen.add(resolved.url.slice(at + '/src/pipelines/'.length));
        return resolved;
      },
      // Packages by what loads, not what resolves: finding onnxruntime-node's library file
      // resolves its package.json without loading the package.
      load(url, context, next) {
        const pkg = new RegExp('/node_modules/((?:@[^/]+/)?[^/]+)/').exec(url);
        if (pkg !== null && !url.endsWith('/package.json')) seen.add('pkg:' + pkg[1]);
        return next(url, context);
      },
    });
    const { createHugot } = await import(${JSON.stringify(resolve(ROOT, 'src/hugot.ts'))});
    const compiled = ${String(compiled)};
    const hugot = createHugot({ optionsCompiled: compiled });
    // What a shard hands its threads: both compiled on the main thread (src/shards/shard.ts).
    const runtime = compiled ? { ...${JSON.stringify(COMPILED_RUNTIME)}, binding: 'native' } : undefined;
    hugot.registerModel('m', { path: ${JSON.stringify(MODEL)}, ...(runtime ? { runtime } : {}) });
    await hugot.registerPipeline('p', {
      task: ${JSON.stringify(task)},
      model: 'm',
      ...(compiled ? { options: { truncation: true } } : {}),
    });
    await hugot.close();
    process.stdout.write(JSON.stringify([...seen]));
  `;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return JSON.parse(out) as string[];
}

describe('task modules', () => {
  it('give the registry its definitions, each under its own name', async () => {
    for (const name of TASK_NAMES) {
      const definition = await loadTask(name);
      expect(definition.task).toBe(name);
      expect(findTask(name)).toBe(definition);
    }
  });

  it('refuse a name no task has, naming the closest task and the field', async () => {
    const refused = await loadTask('featureExtractoin', 'pipelines.p.task').catch(
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(ConfigError);
    expect((refused as ConfigError).message).toContain("did you mean 'featureExtraction'");
    expect((refused as ConfigError).field).toBe('pipelines.p.task');
  });

  it('load only the task a pipeline runs, never the registry', () => {
    const modules = pipelineModulesImportedFor('featureExtraction');
    expect(modules).toContain('text/feature-extraction.ts');
    expect(modules).not.toContain('registry.ts');
    // Modules of other tasks' folders (vision, audio, multimodal, seq2seq, tabular, generation).
    const foreign = modules.filter((m) => /^(vision|audio|multimodal|seq2seq|tabular)\//.test(m));
    expect(foreign).toEqual([]);
    expect(modules).not.toContain('text/text-classification.ts');
  });

  it('load no zod, protobufjs nor onnxruntime-node in a thread handed compiled options', () => {
    // Each costs every isolate that loads it several MiB (docs/performance.md).
    const packages = pipelineModulesImportedFor('featureExtraction', true).filter((m) =>
      m.startsWith('pkg:'),
    );
    expect(packages).toContain('pkg:tokenizers');
    expect(packages).toContain('pkg:koffi');
    for (const heavy of ['pkg:zod', 'pkg:protobufjs', 'pkg:onnxruntime-node'])
      expect(packages).not.toContain(heavy);
    // The library's own callers still get their options checked (and zod).
    expect(pipelineModulesImportedFor('featureExtraction')).toContain('pkg:zod');
  });
});
