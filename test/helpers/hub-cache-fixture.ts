// Builds test/fixtures/hub-cache/ (here, not in scripts/, because it serves the test kit's Hub
// server and scripts/ does not import the tests): a Hub cache written by Python's huggingface_hub (the
// reference implementation of the layout) against the test kit's Hub server, so a unit test can
// read a Python-made cache as is. Python is a tool here only; the product never runs it.
//   node test/helpers/hub-cache-fixture.ts [python]   (python: one with huggingface_hub installed;
//   default .venv/models/bin/python, built by scripts/models/venv.sh)
import { execFile } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PY_CACHE_REPO, PY_CACHE_VARIANT, pyCacheRepoFiles } from './hub-fixture-repo.ts';
import { HubServer } from './hub-server.ts';
import { variantFiles } from '../../src/hub/variants.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const CACHE = join(ROOT, 'test', 'fixtures', 'hub-cache');
const python = process.argv[2] ?? join(ROOT, '.venv', 'models', 'bin', 'python');

const hub = await HubServer.start();
try {
  const files = pyCacheRepoFiles();
  hub.addRepo(PY_CACHE_REPO, { files });
  const wanted = variantFiles([...files.keys()], PY_CACHE_VARIANT)?.files ?? [];
  await rm(CACHE, { recursive: true, force: true });
  const { stdout, stderr } = await promisify(execFile)(
    python,
    [join(ROOT, 'scripts', 'models', 'hub_cache_fixture.py'), PY_CACHE_REPO, CACHE, ...wanted],
    {
      env: {
        ...process.env,
        HF_ENDPOINT: hub.endpoint,
        HF_HUB_DISABLE_TELEMETRY: '1',
        HF_HUB_OFFLINE: '0',
      },
    },
  );
  process.stdout.write(stdout);
  process.stderr.write(stderr);
  // Lock files are the writer's, not the cache's.
  await rm(join(CACHE, '.locks'), { recursive: true, force: true });
  process.stdout.write(`wrote ${CACHE} (commit ${hub.commitOf(PY_CACHE_REPO)})\n`);
} finally {
  await hub.close();
}
