// End to end through the command line: `models pull` of a repository holding the committed
// all-MiniLM-L6-v2 (int8) from the test Hub server, then `validate-config` and `run` of a file
// route whose model is `{ hub, revision }`, offline, producing the model's golden embeddings.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { filesOf, HubServer } from '../../helpers/hub-server.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const MODEL = join(ROOT, 'models', 'all-MiniLM-L6-v2-int8');
const REPO = 'hugot-test/all-MiniLM-L6-v2-int8';

interface Golden {
  call: { inputs: string[] };
  output: number[][];
}

async function cli(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return promisify(execFile)(process.execPath, ['src/cli/main.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, HUGOT_LOG_LEVEL: 'warn', ...env },
    maxBuffer: 64 * 1024 * 1024,
  }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (err: { code: number; stdout: string; stderr: string }) => err,
  );
}

const cosine = (a: number[], b: number[]): number =>
  a.reduce((s, x, i) => s + x * (b[i] ?? 0), 0) / (Math.hypot(...a) * Math.hypot(...b));

describe('models pull, then run a Hub model', () => {
  let hub: HubServer;
  let dir: string;
  beforeAll(async () => {
    hub = await HubServer.start();
    hub.addRepo(REPO, { files: await filesOf(MODEL) });
    dir = await mkdtemp(join(tmpdir(), 'hugot-hub-e2e-'));
  });
  afterAll(async () => {
    await hub.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('pulls with JSON progress off a terminal, prints the snapshot and the commit, and runs it offline', async () => {
    const cache = join(dir, 'hub-cache');
    const pulled = await cli(['models', 'pull', REPO], {
      HF_ENDPOINT: hub.endpoint,
      HF_HUB_CACHE: cache,
    });
    expect(pulled.stderr.split('\n').filter((l) => l !== '' && !l.startsWith('{'))).toEqual([]);
    expect(pulled.code).toBe(0);
    const commit = hub.commitOf(REPO);
    const [path, described] = pulled.stdout.split('\n');
    expect(path).toBe(
      join(cache, 'models--hugot-test--all-MiniLM-L6-v2-int8', 'snapshots', commit),
    );
    expect(described).toContain(`is commit ${commit} (fp32: model.onnx)`);
    expect(pulled.stdout).toContain(
      `pin it: model: { hub: ${REPO}, revision: ${commit}, variant: fp32 }`,
    );
    const progress = pulled.stderr
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(progress[0]).toMatchObject({ event: 'pull', state: 'start', commit });
    const done = progress.at(-1);
    expect(done).toMatchObject({ state: 'done', commit, path });
    expect(done?.['doneBytes']).toBe(done?.['totalBytes']);
    expect(done?.['totalBytes']).toBeGreaterThan(
      (await readFile(join(MODEL, 'model.onnx'))).length,
    );

    const golden = (
      JSON.parse(await readFile(join(MODEL, 'goldens.json'), 'utf8')) as { pipeline: Golden[] }
    ).pipeline[0] as Golden;
    const picked = golden.call.inputs
      .map((text, i) => ({ text, i }))
      .filter((r) => r.text.trim() !== '')
      .slice(0, 4);
    await writeFile(
      join(dir, 'in.jsonl'),
      picked.map((r) => JSON.stringify({ id: r.i, text: r.text })).join('\n'),
    );
    const config = join(dir, 'hub.yaml');
    await writeFile(
      config,
      [
        'models:',
        `  minilm: { hub: ${REPO}, revision: ${commit} }`,
        'pipelines:',
        '  embed: { task: featureExtraction, model: minilm, options: { normalize: true } }',
        'routes:',
        '  - name: hub',
        `    source: { type: file, path: ${JSON.stringify(join(dir, 'in.jsonl'))} }`,
        '    pipeline: embed',
        '    input: { field: text }',
        '    output: { mode: merge, field: embedding }',
        `    sink: { type: file, path: ${JSON.stringify(join(dir, 'out.jsonl'))} }`,
        `    dlq: { type: file, path: ${JSON.stringify(join(dir, 'dlq.jsonl'))} }`,
        '',
      ].join('\n'),
    );
    // Offline, with the endpoint pointing nowhere: only the cache can serve the model.
    const offline = { HF_HUB_CACHE: cache, HF_HUB_OFFLINE: '1', HF_ENDPOINT: 'http://127.0.0.1:9' };
    const validated = await cli(['validate-config', config], offline);
    expect(validated.code).toBe(0);
    expect(validated.stdout).toContain(
      `hub model: minilm: ${REPO}@${commit} (fp32) is cached at commit ${commit}`,
    );
    const served = hub.requests.length;
    const ran = await cli(['run', '--config', config], offline);
    expect(ran.code, ran.stderr).toBe(0);
    expect(hub.requests.length).toBe(served);
    const records = (await readFile(join(dir, 'out.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: number; embedding: number[] });
    expect(records.map((r) => r.id)).toEqual(picked.map((r) => r.i));
    for (const r of records)
      expect(cosine(r.embedding, golden.output[r.id] as number[])).toBeGreaterThan(0.9999);
  });

  it('validate-config refuses a Hub model that is not cached in offline mode, with the pull command', async () => {
    const config = join(dir, 'absent.yaml');
    await writeFile(
      config,
      (await readFile(join(ROOT, 'config', 'demo.yaml'), 'utf8')).replace(
        /path: \.\.\/models\/all-MiniLM-L6-v2-int8/,
        `hub: ${REPO}\n    variant: quantized`,
      ),
    );
    const refused = await cli(['validate-config', config], {
      HF_HUB_CACHE: join(dir, 'empty-cache'),
      HF_HUB_OFFLINE: '1',
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      `models.minilm: ${REPO}@main (quantized) is not in the Hub cache`,
    );
    expect(refused.stderr).toContain(
      `run \`hugot-stream models pull ${REPO}@main --variant quantized\``,
    );
  });
});
