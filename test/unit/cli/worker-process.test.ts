// What bin/hugot-stream.js starts itself again with (bin/worker-process.js).
import { describe, expect, it } from 'vitest';
import { restartWith, WORKER_ENV, WORKER_V8_FLAGS } from '../../../bin/worker-process.js';

describe('restartWith', () => {
  it('adds every setting a bare process lacks, and marks the new process', () => {
    const restart = restartWith({ PATH: '/bin' }, ['--enable-source-maps']);
    expect(restart?.env).toEqual({ PATH: '/bin', ...WORKER_ENV, HUGOT_WORKER_PROCESS: '1' });
    expect(restart?.execArgv).toEqual([...WORKER_V8_FLAGS, '--enable-source-maps']);
  });

  it("keeps an operator's values, by argument, NODE_OPTIONS or either spelling", () => {
    const env = { MALLOC_ARENA_MAX: '8' };
    expect(restartWith(env, ['--max-semi-space-size=16'])).toBeUndefined();
    expect(restartWith(env, ['--max_semi_space_size=16'])).toBeUndefined();
    expect(restartWith({ ...env, NODE_OPTIONS: '--max-semi-space-size=4' }, [])).toBeUndefined();
    const arenasOnly = restartWith({}, ['--max-semi-space-size=16']);
    expect(arenasOnly?.execArgv).toEqual(['--max-semi-space-size=16']);
    expect(arenasOnly?.env['MALLOC_ARENA_MAX']).toBe(WORKER_ENV['MALLOC_ARENA_MAX']);
  });

  it('never starts a process a third time', () => {
    expect(restartWith({ HUGOT_WORKER_PROCESS: '1' }, [])).toBeUndefined();
  });
});
