import { describe, expect, it } from 'vitest';
import { wheelVersion } from '../../../scripts/gpu/install.ts';
import { formatReport, parseLdd } from '../../../scripts/gpu/library-check.ts';
import { pickWheel, wheelMachine } from '../../../scripts/gpu/pypi-wheel.ts';

/** One file of PyPI's JSON listing; `hashed: false` leaves its sha256 out. */
function listed(filename: string, hashed = true) {
  return {
    filename,
    url: `https://files.example/${filename}`,
    hashes: hashed ? { sha256: `sha-of-${filename}` } : {},
    size: 1234,
  };
}

describe('pickWheel', () => {
  const others = [
    'onnxruntime_gpu-1.30.0-cp311-cp311-win_amd64.whl',
    'onnxruntime_gpu-1.30.0-cp312-cp312-macosx_14_0_arm64.whl',
    'onnxruntime_gpu-1.30.0-cp311-cp311-manylinux_2_28_aarch64.whl',
    'onnxruntime_gpu-1.29.0-cp311-cp311-manylinux_2_28_x86_64.whl',
    'onnxruntime_gpu-1.30.1-cp311-cp311-manylinux_2_28_x86_64.whl',
    'onnxruntime_gpu-1.30.0rc1-cp311-cp311-manylinux_2_28_x86_64.whl',
    'onnxruntime_gpu-1.30.0.tar.gz',
  ].map((name) => listed(name));

  it('takes a CPython manylinux wheel of exactly that version for that machine', () => {
    const wanted =
      'onnxruntime_gpu-1.30.0-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl';
    const wheel = pickWheel([...others, listed(wanted)], '1.30.0', 'x86_64');
    expect(wheel).toEqual({
      filename: wanted,
      url: `https://files.example/${wanted}`,
      sha256: `sha-of-${wanted}`,
      size: 1234,
    });
  });

  it('takes the aarch64 wheel for an arm64 machine', () => {
    expect(pickWheel(others, '1.30.0', wheelMachine('arm64'))?.filename).toBe(
      'onnxruntime_gpu-1.30.0-cp311-cp311-manylinux_2_28_aarch64.whl',
    );
  });

  it('finds nothing when no wheel fits, or the fitting one has no sha256 to check', () => {
    expect(pickWheel(others, '1.30.0', 'x86_64')).toBeUndefined();
    expect(pickWheel([], '1.30.0', 'x86_64')).toBeUndefined();
    const unhashed = listed('onnxruntime_gpu-1.30.0-cp311-cp311-manylinux_2_28_x86_64.whl', false);
    expect(pickWheel([unhashed], '1.30.0', 'x86_64')).toBeUndefined();
  });

  it('does not read the dots of the version as any character', () => {
    const lookalike = listed('onnxruntime_gpu-1x30x0-cp311-cp311-manylinux_2_28_x86_64.whl');
    expect(pickWheel([lookalike], '1.30.0', 'x86_64')).toBeUndefined();
  });
});

describe('wheelVersion', () => {
  it('reads the version from a wheel file name or path', () => {
    expect(wheelVersion('onnxruntime_gpu-1.30.0-cp314-cp314-manylinux_2_28_x86_64.whl')).toBe(
      '1.30.0',
    );
    expect(wheelVersion('/cache/gpu/onnxruntime_gpu-1.29.0-cp311-cp311-win_amd64.whl')).toBe(
      '1.29.0',
    );
    expect(wheelVersion('/cache/gpu/provider.whl')).toBeUndefined();
  });
});

describe('parseLdd', () => {
  const output = [
    '\tlinux-vdso.so.1 (0x00007ffd5a1f2000)',
    '\tlibcublasLt.so.13 => not found',
    '\tlibcudart.so.13 => /opt/cuda/lib64/libcudart.so.13 (0x00007f2523520000)',
    '\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f252301e000)',
    '\t/lib64/ld-linux-x86-64.so.2 (0x00007f2537830000)',
    '',
  ].join('\n');

  it('gives each linked library its resolved path, or none when not found', () => {
    expect(parseLdd(output)).toEqual([
      { name: 'libcublasLt.so.13', path: undefined },
      { name: 'libcudart.so.13', path: '/opt/cuda/lib64/libcudart.so.13' },
      { name: 'libc.so.6', path: '/lib/x86_64-linux-gnu/libc.so.6' },
    ]);
  });
});

describe('formatReport', () => {
  const libraries = [
    { name: 'libcudart.so.13', path: '/opt/cuda/lib64/libcudart.so.13' },
    { name: 'libcurand.so.10', path: undefined },
  ];

  it('marks each library found or missing', () => {
    const text = formatReport({ libraries, missing: ['libcurand.so.10'], suggestions: [] });
    expect(text).toContain('found   libcudart.so.13 (/opt/cuda/lib64/libcudart.so.13)');
    expect(text).toContain('missing libcurand.so.10\n');
    expect(text).toContain('missing: libcurand.so.10');
    expect(text).toContain('install CUDA 13');
    expect(text).not.toContain('export LD_LIBRARY_PATH=');
  });

  it('suggests the folders that hold missing libraries for LD_LIBRARY_PATH', () => {
    const folders = ['/venv/nvidia/curand/lib', '/venv/nvidia/cudnn/lib'];
    const text = formatReport({ libraries, missing: ['libcurand.so.10'], suggestions: folders });
    expect(text).toContain(
      'export LD_LIBRARY_PATH=/venv/nvidia/curand/lib:/venv/nvidia/cudnn/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}',
    );
    expect(text).not.toContain('install CUDA 13');
  });

  it('says so when nothing is missing', () => {
    const found = [libraries[0] as { name: string; path: string }];
    const text = formatReport({ libraries: found, missing: [], suggestions: [] });
    expect(text).toContain('every CUDA and cuDNN library the provider needs is found');
    expect(text).not.toContain('missing');
  });
});
