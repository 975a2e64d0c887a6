// Settings a worker process takes only when it starts, before any JavaScript runs: bin/hugot-stream.js
// starts itself again with the ones it lacks, and bench:memory starts its children with them.
// What each saves is in docs/performance.md ("What a process starts with").

/**
 * glibc gives each thread that allocates an arena of its own (up to 8 per core), and each arena
 * keeps what was freed in it; Node's, libuv's and the inference threads then hold many.
 */
export const WORKER_ENV = Object.freeze({ MALLOC_ARENA_MAX: '2' });

/**
 * The main isolate's young generation: V8 grows its semi-spaces to 16 MiB under a steady stream of
 * short-lived objects. The inference threads' is capped by their resourceLimits instead
 * (src/shards/shard.ts).
 */
export const WORKER_V8_FLAGS = Object.freeze(['--max-semi-space-size=1']);

/** Set in the environment of the process started again, so that it never starts a third. */
const RESTARTED = 'HUGOT_WORKER_PROCESS';

const flagName = (flag) => flag.split('=')[0].replaceAll('_', '-');

/**
 * The environment and Node arguments to start the process again with, or undefined when it
 * already has every setting (an operator's own value of one counts as having it).
 */
export function restartWith(env, execArgv) {
  if (env[RESTARTED] !== undefined) return undefined;
  const missingEnv = Object.entries(WORKER_ENV).filter(([name]) => env[name] === undefined);
  const given = [...execArgv, ...(env.NODE_OPTIONS ?? '').split(/\s+/)].map(flagName);
  const missingFlags = WORKER_V8_FLAGS.filter((flag) => !given.includes(flagName(flag)));
  if (missingEnv.length === 0 && missingFlags.length === 0) return undefined;
  return {
    env: { ...env, ...Object.fromEntries(missingEnv), [RESTARTED]: '1' },
    execArgv: [...missingFlags, ...execArgv],
  };
}
