// Types of bin/worker-process.js, which stays JavaScript: the installed command imports it before
// Node's compile cache is on.
export declare const WORKER_ENV: Readonly<Record<string, string>>;
export declare const WORKER_V8_FLAGS: readonly string[];
export declare function restartWith(
  env: NodeJS.ProcessEnv,
  execArgv: readonly string[],
): { env: NodeJS.ProcessEnv; execArgv: string[] } | undefined;
