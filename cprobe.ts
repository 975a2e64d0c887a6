import { readFileSync } from 'node:fs';
import { startEngine, allAtOnce } from './bench/lib/engine-runs.ts';
import { EMBEDDING } from './bench/lib/contenders.ts';
import { cpuByThreadKind, addCpuSince, cpuPerRecord } from './bench/lib/thread-cpu.ts';
const texts = JSON.parse(readFileSync('.cache/bench/memory/texts-128.json', 'utf8')) as string[];
const engine = await startEngine(process.argv[2]!, EMBEDDING.pipeline, undefined, [{ device: 'cpu', threads: 2, intraOpThreads: 1 }]);
await allAtOnce(engine, texts);
const totals = new Map<string, number>();
for (let r = 0; r < 3; r++) { const b = cpuByThreadKind(); const run = await allAtOnce(engine, texts); addCpuSince(totals, b); console.log(run.recordsPerSecond.toFixed(1), run.stats.batches); }
console.log(cpuPerRecord(totals, texts.length * 3));
await engine.close(); process.exit(0);
