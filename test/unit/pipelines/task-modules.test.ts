// Each task's module loads on its own (task-modules.ts): a thread that runs one task must not
// import the others, and the registry must be built from the very same definitions.
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/errors.ts';
import { findTask, TASK_NAMES } from '../../../src/pipelines/registry.ts';
import { loadTask } from '../../../src/pipelines/task-modules.ts';

const ROOT = resolve(import.meta.dirname, '../../..');
const MODEL = resolve(ROOT, 'test/fixtures/models/bert-feature-extraction');

/** The src/pipelines modules a fresh process imports to register one pipeline through Hugot. */
function pipelineModulesImportedFor(task: string): string[] {
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
    });
    const { createHugot } = await import(${JSON.stringify(resolve(ROOT, 'src/hugot.ts'))});
    const hugot = createHugot();
    hugot.registerModel('m', { path: ${JSON.stringify(MODEL)} });
    await hugot.registerPipeline('p', { task: ${JSON.stringify(task)}, model: 'm' });
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
});
