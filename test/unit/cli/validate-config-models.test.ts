// validate-config judges the models too: every folder exists and holds the graphs its entry
// chooses, each pipeline's model fits its task, and no two routes share a name; all found
// without loading a weight, and each problem names the field.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCli } from '../../../src/cli/main.ts';
import { parseConfigText } from '../../../src/config/load-config.ts';
import { ConfigError } from '../../../src/errors.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const MINILM = join(ROOT, 'models', 'all-MiniLM-L6-v2-int8');
const CLASSIFIER = join(ROOT, 'test', 'fixtures', 'models', 'bert-text-classification');

const route = (pipeline: string, name?: string): string => `
  - ${name !== undefined ? `name: ${name}\n    ` : ''}source: { type: file, path: in.jsonl }
    pipeline: ${pipeline}
    sink: { type: file, path: out-${pipeline}.jsonl }`;

function config(models: string, pipelines: string, routes: string): string {
  return `models:\n${models}\npipelines:\n${pipelines}\nroutes:${routes}\n`;
}

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'hugot-validate-models-'));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

async function validate(name: string, text: string): Promise<string> {
  const file = join(scratch, name);
  await writeFile(file, text);
  let printed = '';
  await buildCli((t) => (printed += t)).parseAsync(['validate-config', file], { from: 'user' });
  return printed;
}

async function refusal(name: string, text: string): Promise<ConfigError> {
  const outcome = await validate(name, text).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(outcome).toBeInstanceOf(ConfigError);
  return outcome as ConfigError;
}

describe('validate-config and the models', () => {
  it('passes models that exist and fit their tasks', async () => {
    const printed = await validate(
      'good.yaml',
      config(
        `  minilm: { path: ${MINILM} }\n  classifier: { path: ${CLASSIFIER} }`,
        '  embed: { task: featureExtraction, model: minilm }\n  classify: { task: textClassification, model: classifier }',
        route('embed', 'a') + route('classify', 'b'),
      ),
    );
    expect(printed).toMatch(/is valid: 2 model\(s\), 2 pipeline\(s\), 2 route\(s\)/);
  });

  it('refuses a model folder that does not exist, used or not', async () => {
    const err = await refusal(
      'missing.yaml',
      config(
        `  minilm: { path: ${MINILM} }\n  spare: { path: ${join(scratch, 'nowhere')} }`,
        '  embed: { task: featureExtraction, model: minilm }',
        route('embed'),
      ),
    );
    expect(err.field).toBe('models.spare');
    expect(err.message).toMatch(
      /models\.spare: model 'spare': model folder .*nowhere does not exist or cannot be read/,
    );
  });

  it('refuses two routes with one name, naming both', async () => {
    const err = await refusal(
      'duplicate.yaml',
      config(
        `  minilm: { path: ${MINILM} }`,
        '  embed: { task: featureExtraction, model: minilm }',
        route('embed', 'enrich') + route('embed', 'other') + route('embed', 'enrich'),
      ),
    );
    expect(err.field).toBe('routes.2.name');
    expect(err.message).toMatch(
      /routes\.2\.name: 'enrich' is already the name of routes\.0; give each route its own name/,
    );
  });

  it('refuses a variant the folder does not have, listing those it has', async () => {
    const err = await refusal(
      'variant.yaml',
      config(
        `  minilm: { path: ${MINILM}, variant: q4 }`,
        '  embed: { task: featureExtraction, model: minilm }',
        route('embed'),
      ),
    );
    expect(err.message).toMatch(
      /models\.minilm\.variant: .*has no q4 variant; variants there: fp32/,
    );
  });

  it('refuses a variant name that is not one, and onnxFile with variant', () => {
    const refused = (model: string): string => {
      const text = config(
        model,
        '  embed: { task: featureExtraction, model: minilm }',
        route('embed'),
      );
      try {
        parseConfigText(text, {});
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as Error).message;
      }
      throw new Error('expected a ConfigError');
    };
    expect(refused(`  minilm: { path: ${MINILM}, variant: q8 }`)).toMatch(
      /models\.minilm\.variant: 'q8' is not allowed; did you mean 'q4'\?/,
    );
    expect(
      refused(`  minilm: { path: ${MINILM}, variant: fp16, onnxFile: onnx/model_fp16.onnx }`),
    ).toMatch(/models\.minilm\.variant: onnxFile and variant both choose the graph; keep one/);
  });

  it('exits 2 naming the model, the task and what is missing for a misfit', async () => {
    const file = join(scratch, 'misfit.yaml');
    await writeFile(
      file,
      config(
        `  minilm: { path: ${MINILM} }`,
        '  classify: { task: textClassification, model: minilm }',
        route('classify'),
      ),
    );
    const failure = (await promisify(execFile)(
      process.execPath,
      ['src/cli/main.ts', 'validate-config', file],
      { cwd: ROOT },
    ).then(
      () => {
        throw new Error('validate-config accepted a misfit');
      },
      (err: unknown) => err,
    )) as { code: number; stderr: string };
    expect(failure.code).toBe(2);
    expect(failure.stderr).toContain(
      "pipelines.classify: model 'minilm' does not fit task textClassification: its config.json has no id2label and its outputs have no logits",
    );
    expect(failure.stderr).toContain('outputs: last_hidden_state');
  });
});
