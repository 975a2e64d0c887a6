// Audio in (a file path, an encoded file's bytes, or raw PCM) -> float32 samples per channel at the
// file's own rate, the samples libsndfile gives Python (soundfile, what the model kit reads its
// goldens with). Each format is decoded by a maintained library: wavefile for WAV, and the
// WebAssembly builds of libFLAC, libvorbis and mpg123 (@wasm-audio-decoders, mpg123-decoder), which
// need no browser and run in worker threads. Integer samples are scaled by 2^(bits-1), as
// libsndfile and ffmpeg scale them.
import { readFile } from 'node:fs/promises';
import wavefile from 'wavefile';
import { InputError } from '../../errors.ts';
import { probeAudio, type AudioFormat } from './audio-format.ts';

/** Mono float samples at a known rate, taken as they are (Python's {raw, sampling_rate}). */
export interface PcmAudio {
  pcm: Float32Array;
  samplingRate: number;
}

/** A file path, the bytes of an encoded file (WAV, FLAC, MP3, Ogg Vorbis), or raw PCM. */
export type AudioInput = string | Uint8Array | PcmAudio;

export interface DecodedAudio {
  channels: Float32Array[];
  samplingRate: number;
}

/**
 * Decoding refuses audio longer than this (an hour at 48 kHz is ~700 MB of float32 per channel
 * before mixdown). Stream routes hold records to limits.maxAudioSeconds before this point.
 */
export const MAX_DECODED_SECONDS = 3600;

export async function decodeAudio(input: AudioInput, field: string): Promise<DecodedAudio> {
  if (isPcm(input)) return { channels: [checkPcm(input, field)], samplingRate: input.samplingRate };
  if (typeof input !== 'string' && !(input instanceof Uint8Array))
    throw new InputError(
      `${field} must be an audio file path, encoded audio bytes, or {pcm: Float32Array, samplingRate}`,
      { field },
    );
  let bytes: Uint8Array;
  try {
    bytes = typeof input === 'string' ? new Uint8Array(await readFile(input)) : input;
  } catch (cause) {
    throw new InputError(`${field}: cannot read an audio file at ${String(input)}`, {
      cause,
      field,
    });
  }
  const what = typeof input === 'string' ? input : `${input.length} bytes`;
  const probe = probeAudio(bytes);
  if ('problem' in probe) throw new InputError(`${field} (${what}) is ${probe.problem}`, { field });
  if (probe.seconds > MAX_DECODED_SECONDS)
    throw new InputError(
      `${field} plays ${probe.seconds.toFixed(1)} s, over the ${MAX_DECODED_SECONDS} s the decoder takes`,
      { field },
    );
  let decoded: DecodedAudio;
  try {
    decoded = await DECODERS[probe.format](bytes);
  } catch (cause) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    throw new InputError(
      `${field}: cannot decode ${probe.format.toUpperCase()} (${what}): ${reason}`,
      {
        cause,
        field,
      },
    );
  }
  const frames = decoded.channels[0]?.length ?? 0;
  if (frames === 0 || !(decoded.samplingRate > 0))
    throw new InputError(
      `${field}: the ${probe.format.toUpperCase()} file (${what}) holds no audio`,
      {
        field,
      },
    );
  if (frames / decoded.samplingRate > MAX_DECODED_SECONDS)
    throw new InputError(`${field} decodes to over ${MAX_DECODED_SECONDS} s of audio`, { field });
  return decoded;
}

/** Channels averaged in float32, as numpy's mean over channels gives them (ffmpeg's -ac 1). */
export function mixdown(channels: readonly Float32Array[]): Float32Array {
  const first = channels[0];
  if (first === undefined) return new Float32Array(0);
  if (channels.length === 1) return first;
  const f = Math.fround;
  const out = new Float32Array(first.length);
  for (let i = 0; i < out.length; i += 1) {
    let sum = 0;
    for (const channel of channels) sum = f(sum + (channel[i] ?? 0));
    out[i] = f(sum / channels.length);
  }
  return out;
}

type Decoder = (bytes: Uint8Array) => Promise<DecodedAudio>;

// The WebAssembly decoders (~2.7 MB of heap together) load with the first file of their format:
// every inference thread imports this module through the task registry, and a bigger heap makes
// each of its garbage collections dearer, audio route or not (issue 15).
const DECODERS: Record<AudioFormat, Decoder> = {
  wav: (bytes) => Promise.resolve(decodeWav(bytes)),
  flac: decodeFlac,
  ogg: async (bytes) => {
    const { OggVorbisDecoder } = await import('@wasm-audio-decoders/ogg-vorbis');
    const decoder = new OggVorbisDecoder();
    try {
      await decoder.ready;
      return checked(await decoder.decodeFile(bytes));
    } finally {
      decoder.free();
    }
  },
  mp3: async (bytes) => {
    const { MPEGDecoder } = await import('mpg123-decoder');
    const decoder = new MPEGDecoder();
    try {
      await decoder.ready;
      return checked(decoder.decode(bytes));
    } finally {
      decoder.free();
    }
  },
};

interface LibraryResult {
  channelData: Float32Array[];
  sampleRate: number;
  errors: { message: string }[];
}

/** A frame the library could not decode makes the file corrupt: the record gets the reason. */
function checked(result: LibraryResult): DecodedAudio {
  const [error] = result.errors;
  if (error !== undefined) throw new Error(error.message);
  return { channels: result.channelData, samplingRate: result.sampleRate };
}

async function decodeFlac(bytes: Uint8Array): Promise<DecodedAudio> {
  const { FLACDecoder } = await import('@wasm-audio-decoders/flac');
  const decoder = new FLACDecoder();
  try {
    await decoder.ready;
    const result = await decoder.decodeFile(bytes);
    const decoded = checked(result);
    // libFLAC's wrapper divides by 2^(bits-1) - 1; back to the integer, then by 2^(bits-1).
    const max = 2 ** (result.bitDepth - 1);
    for (const channel of decoded.channels)
      for (let i = 0; i < channel.length; i += 1)
        channel[i] = Math.round((channel[i] as number) * (max - 1)) / max;
    return decoded;
  } finally {
    decoder.free();
  }
}

function decodeWav(bytes: Uint8Array): DecodedAudio {
  const wav = new wavefile.WaveFile(bytes);
  const fmt = wav.fmt as { audioFormat: number; numChannels: number; sampleRate: number };
  const depth = wav.bitDepth;
  const float = depth === '32f' || depth === '64';
  const bits = Number.parseInt(depth, 10);
  // 1: integer PCM, 3: IEEE float, 0xFFFE: WAVE_FORMAT_EXTENSIBLE wrapping either.
  if (![1, 3, 0xfffe].includes(fmt.audioFormat) || !(float || [8, 16, 24, 32].includes(bits)))
    throw new Error(
      `WAV encoding ${fmt.audioFormat} at ${depth} bits is not read; use integer PCM or float`,
    );
  const samples = wav.getSamples(false, Float64Array) as unknown as Float64Array | Float64Array[];
  const planes = Array.isArray(samples) ? samples : [samples];
  const scale = float ? 1 : 2 ** (bits - 1);
  // 8-bit WAV is unsigned around 128.
  const offset = bits === 8 ? 128 : 0;
  return {
    samplingRate: fmt.sampleRate,
    channels: planes.map((plane) => Float32Array.from(plane, (v) => (v - offset) / scale)),
  };
}

function isPcm(input: unknown): input is PcmAudio {
  return (
    input !== null &&
    typeof input === 'object' &&
    !(input instanceof Uint8Array) &&
    'pcm' in input &&
    'samplingRate' in input
  );
}

function checkPcm(audio: PcmAudio, field: string): Float32Array {
  const { pcm, samplingRate } = audio;
  if (
    !(pcm instanceof Float32Array) ||
    pcm.length === 0 ||
    !Number.isInteger(samplingRate) ||
    samplingRate <= 0
  )
    throw new InputError(
      `${field}: raw audio must be {pcm: a non-empty Float32Array of mono samples, samplingRate: a positive integer}`,
      { field },
    );
  if (pcm.length / samplingRate > MAX_DECODED_SECONDS)
    throw new InputError(`${field} is over ${MAX_DECODED_SECONDS} s of audio`, { field });
  return pcm;
}
