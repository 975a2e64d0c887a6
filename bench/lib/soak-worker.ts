// One thread of bench:soak: takes a share of the pool's native session and runs it `runs` times,
// a tenth of them through an IO binding and a tenth on libuv's pool (runsPerThread's path),
// reporting its count every `every` runs.
import { parentPort, workerData } from 'node:worker_threads';
import { createNativeSession } from '../../src/runtime/native/open-session.ts';
import { SharedSessions } from '../../src/runtime/native/shared-sessions.ts';
import { compileRuntimeOptions } from '../../src/runtime/runtime-options.ts';
import { Tensor } from '../../src/runtime/tensor.ts';

interface Setup {
  onnxPath: string;
  table: SharedArrayBuffer;
  runs: number;
  every: number;
  seed: number;
}

const setup = workerData as Setup;
const port = parentPort;
if (port === null) throw new Error('soak-worker must run as a worker thread');
const session = createNativeSession(setup.onnxPath, compileRuntimeOptions({ binding: 'native' }), {
  shared: new SharedSessions(setup.table),
  runsOffThread: true,
});

function feeds(length: number, salt: number): Record<string, Tensor> {
  const out: Record<string, Tensor> = {};
  for (const name of session.inputNames) {
    const values = new BigInt64Array(length);
    for (let i = 0; i < length; i += 1)
      values[i] =
        name === 'input_ids'
          ? BigInt(100 + ((salt * 31 + i * 7) % 1800))
          : name === 'attention_mask'
            ? 1n
            : 0n;
    out[name] = new Tensor('int64', values, [1, length]);
  }
  return out;
}

for (let run = 1; run <= setup.runs; run += 1) {
  // Lengths 2..17 so that the arena and the memory patterns see a spread of shapes.
  const input = feeds(2 + ((run + setup.seed) % 16), run);
  if (run % 10 === 0) {
    const binding = session.ioBinding();
    for (const [name, tensor] of Object.entries(input)) binding.bindInput(name, tensor);
    for (const name of session.outputNames) binding.bindOutputToCpu(name);
    binding.run();
    binding.outputs();
    binding.release();
  } else if (run % 10 === 5) {
    await session.run(input);
  } else {
    session.runSync(input);
  }
  if (run % setup.every === 0) {
    // A full collection first: the sample is then what is held, not garbage yet to be collected.
    (globalThis as { gc?: () => void }).gc?.();
    port.postMessage(setup.every);
  }
}
await session.release();
port.postMessage('done');
