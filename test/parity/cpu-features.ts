// The CPU features that decide which ONNX Runtime (MLAS) kernels run, read from /proc/cpuinfo the
// same way scripts/models/kit/minilm.py records them with its goldens.
import { readFileSync } from 'node:fs';

export const KERNEL_FEATURES = [
  'sse4_1',
  'avx',
  'avx2',
  'fma',
  'f16c',
  'avx512f',
  'avx512bw',
  'avx512_vnni',
  'avx_vnni',
  'amx_int8',
] as const;

/**
 * The kernel-relevant features of this machine's CPU; empty where /proc/cpuinfo is absent.
 * HUGOT_CPU_FEATURES (comma-separated) overrides them: under a user-mode emulator such as
 * `qemu-x86_64 -cpu Haswell`, /proc/cpuinfo still describes the host while ONNX Runtime picks its
 * kernels from the emulated CPUID.
 */
export function cpuKernelFeatures(): string[] {
  const forced = process.env['HUGOT_CPU_FEATURES'];
  if (forced !== undefined) return forced.split(',').filter((f) => f !== '');
  let text = '';
  try {
    text = readFileSync('/proc/cpuinfo', 'utf8');
  } catch {
    return [];
  }
  const line = text.split('\n').find((l) => l.startsWith('flags'));
  const flags = new Set((line?.split(':')[1] ?? '').trim().split(/\s+/));
  return KERNEL_FEATURES.filter((f) => flags.has(f));
}

export function sameFeatures(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((f) => b.includes(f));
}
