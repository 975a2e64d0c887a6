import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load-config.ts';
import { ConfigError } from '../../../src/errors.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');

// What a new user wrote in issue 13: four mistakes, each found by a different layer before.
const fourMistakes = `
models:
  minilm: { path: ${join(ROOT, 'models', 'all-MiniLM-L6-v2-int8')} }
pipelines:
  typo:
    task: featureExtractoin
    model: minilm
  embed:
    task: featureExtraction
    model: minilm
    options: { normalise: true, maxLenght: 128 }
batching: { maxBatchSise: 8 }
shards: ['gpu:0']
routes:
  - source: { type: file, path: in.jsonl }
    pipeline: embed
    sink: { type: file, path: out.jsonl }
`;

function problems(text: string): string {
  try {
    parseConfigText(text, {});
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('validate-config reports every problem at once', () => {
  let scratch: string;
  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'hugot-validate-'));
  });
  afterAll(async () => {
    await rm(scratch, { recursive: true, force: true });
  });

  it('exits non-zero naming all four problems with their paths and fixes', async () => {
    const file = join(scratch, 'bad.yaml');
    await writeFile(file, fourMistakes);
    const run = promisify(execFile)(
      process.execPath,
      ['src/cli/main.ts', 'validate-config', file],
      {
        cwd: ROOT,
      },
    );
    const failure = (await run.then(
      () => {
        throw new Error('validate-config accepted a bad config');
      },
      (err: unknown) => err,
    )) as { code: number; stderr: string };
    expect(failure.code).not.toBe(0);
    const { stderr } = failure;
    expect(stderr).toMatch(/is not valid \(5 problems\)/);
    expect(stderr).toMatch(
      /pipelines\.typo\.task: unknown task 'featureExtractoin'; did you mean 'featureExtraction'\?/,
    );
    expect(stderr).toMatch(
      /pipelines\.embed\.options\.normalise: not an option of featureExtraction; did you mean 'normalize'\?/,
    );
    expect(stderr).toMatch(
      /pipelines\.embed\.options\.maxLenght: not an option of featureExtraction; did you mean 'maxLength'\?/,
    );
    expect(stderr).toMatch(/batching\.maxBatchSise: unknown key; did you mean 'maxBatchSize'\?/);
    expect(stderr).toMatch(/shards\.0: 'gpu:0' is not a shard; did you mean 'cuda:0'\?/);
  });

  it("checks each task's options against that task's schema", () => {
    const config = (options: string, task = 'zeroShotClassification'): string =>
      fourMistakes
        .replace('task: featureExtractoin', `task: ${task}`)
        .replace('task: featureExtraction', `task: ${task}`)
        .replace('{ normalise: true, maxLenght: 128 }', options)
        .replace("batching: { maxBatchSise: 8 }\nshards: ['gpu:0']\n", '');
    // Option checks that need no model: found here, not when the model loads.
    expect(problems(config('{ candidateLabels: [] }'))).toMatch(
      /pipelines\.embed\.options\.candidateLabels: .*at least one label/,
    );
    expect(problems(config("{ candidateLabels: 'a,b', hypothesisTemplate: 'no slot' }"))).toMatch(
      /pipelines\.embed\.options\.hypothesisTemplate: .*has no \{\}/,
    );
    // A required option, and Python's snake_case spelling of one.
    expect(problems(config('{}'))).toMatch(/pipelines\.embed\.options\.candidateLabels: /);
    expect(problems(config('{ top_k: 3 }', 'textClassification'))).toMatch(
      /pipelines\.embed\.options\.top_k: not an option of textClassification; did you mean 'topK'\?/,
    );
    expect(problems(config('{ maxNewTokens: 0 }', 'textGeneration'))).toMatch(
      /pipelines\.embed\.options\.maxNewTokens: /,
    );
  });

  it('reports every broken reference at once once the fields are right', () => {
    const text = fourMistakes
      .replace('task: featureExtractoin', 'task: featureExtraction')
      .replace('{ normalise: true, maxLenght: 128 }', '{ normalize: true }')
      .replace("batching: { maxBatchSise: 8 }\nshards: ['gpu:0']\n", '')
      .replace('model: minilm\n  embed', 'model: nowhere\n  embed')
      .replace('pipeline: embed', 'pipeline: ghost');
    const message = problems(text);
    expect(message).toMatch(/\(2 problems\)/);
    expect(message).toMatch(/pipelines\.typo\.model: no model 'nowhere'/);
    expect(message).toMatch(/routes\.0\.pipeline: no pipeline 'ghost'/);
  });

  it('names a missing model or pipeline alongside field problems, in the same run', () => {
    const text = fourMistakes
      .replace('model: minilm\n  embed', 'model: nowhere\n  embed')
      .replace('pipeline: embed', 'pipeline: ghost');
    const message = problems(text);
    expect(message).toMatch(/\(7 problems\)/);
    expect(message).toMatch(/pipelines\.typo\.task: unknown task 'featureExtractoin'/);
    expect(message).toMatch(/batching\.maxBatchSise: unknown key/);
    expect(message).toMatch(/pipelines\.typo\.model: no model 'nowhere' under models/);
    expect(message).toMatch(/routes\.0\.pipeline: no pipeline 'ghost' under pipelines/);
    // A reference the schema already refused (not a string) is reported once, by the schema.
    const once = problems(text.replace('pipeline: ghost', 'pipeline: 42'));
    expect(once.match(/routes\.0\.pipeline/g)).toHaveLength(1);
  });

  it("checks a pipeline's batching merged over the worker's, as the engine compiles it", () => {
    const text = fourMistakes
      .replace('task: featureExtractoin', 'task: featureExtraction')
      .replace('{ normalise: true, maxLenght: 128 }', '{}\n    batching: { maxQueued: 100 }')
      .replace('batching: { maxBatchSise: 8 }', 'batching: { resumeAt: 500 }')
      .replace("shards: ['gpu:0']\n", '');
    expect(problems(text)).toMatch(/pipelines\.embed\.batching\.resumeAt: resumeAt must be below/);
  });
});
