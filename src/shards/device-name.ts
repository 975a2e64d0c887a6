// How a device is named wherever one is chosen (a shard, a generative pipeline): 'cpu' or
// 'cuda:<device id>', the names CUDA tools and ONNX Runtime's provider options use.
export type DeviceName = 'cpu' | `cuda:${number}`;

const DEVICE = /^(?:cpu|cuda:(\d+))$/;

export const DEVICE_FORM = "'cpu' or 'cuda:<device id>'";

export function isDeviceName(name: string): name is DeviceName {
  return DEVICE.test(name);
}

/** The CUDA device id of a 'cuda:<id>' name; undefined for 'cpu' or anything else. */
export function cudaDeviceId(name: string): number | undefined {
  const id = DEVICE.exec(name)?.[1];
  return id === undefined ? undefined : Number(id);
}

/** The shards a worker runs when the config names none: one CPU shard sized to the cores. */
export const DEFAULT_SHARDS: readonly ['cpu'] = ['cpu'];
