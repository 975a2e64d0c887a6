// What validate-config saves by reading a graph's inputs and outputs from its bytes instead of
// opening a session (docs/models.md#task-fit): the median of five of each, per file given.
//   node scripts/models/signature-timing.ts models/all-MiniLM-L6-v2-int8/model.onnx ...
import { readOnnxSignature } from '../../src/models/onnx-signature.ts';
import { compileRuntimeOptions } from '../../src/runtime/runtime-options.ts';
import { SessionFactory } from '../../src/runtime/runtimes.ts';

const RUNS = 5;
const median = (values: number[]): number =>
  values.sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;

async function timed(run: () => Promise<void>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < RUNS; i += 1) {
    const started = performance.now();
    await run();
    times.push(performance.now() - started);
  }
  return median(times);
}

const factory = new SessionFactory();
const options = compileRuntimeOptions({ binding: 'native', intraOpThreads: 1 });
for (const path of process.argv.slice(2)) {
  await readOnnxSignature(path);
  const signature = await timed(async () => {
    await readOnnxSignature(path);
  });
  const session = await timed(async () => {
    await (await factory.open(path, options)).release();
  });
  process.stdout.write(
    `${path}: signature ${signature.toFixed(1)} ms, session ${session.toFixed(0)} ms (median of ${RUNS})\n`,
  );
}
