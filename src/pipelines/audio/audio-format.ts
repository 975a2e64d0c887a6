// What an audio file is and how long it plays, read from its container without decoding a sample:
// the route asks before a record joins a batch (limits.maxAudioSeconds), the decoder asks to pick
// its library. WAV's length is in its header; MP3, FLAC and Ogg frames are walked by codec-parser,
// the frame parser the FLAC, Vorbis and MPEG decoders use themselves.
import CodecParser, { type CodecFrame } from 'codec-parser';
import wavefile from 'wavefile';

export type AudioFormat = 'wav' | 'flac' | 'mp3' | 'ogg';

export interface AudioProbe {
  format: AudioFormat;
  /** Seconds of audio the frames or the header declare. */
  seconds: number;
}

const ascii = (bytes: Uint8Array, from: number, length: number): string =>
  String.fromCharCode(...bytes.subarray(from, from + length));

/** The container by its magic bytes; undefined for anything else. */
export function sniffAudioFormat(bytes: Uint8Array): AudioFormat | undefined {
  if (bytes.length < 12) return undefined;
  const head = ascii(bytes, 0, 4);
  if ((head === 'RIFF' || head === 'RIFX' || head === 'RF64') && ascii(bytes, 8, 4) === 'WAVE')
    return 'wav';
  if (head === 'fLaC') return 'flac';
  if (head === 'OggS') return 'ogg';
  // An ID3v2 tag, or an MPEG audio frame sync (11 set bits) with layer bits not 00.
  if (ascii(bytes, 0, 3) === 'ID3') return 'mp3';
  const b0 = bytes[0] as number;
  const b1 = bytes[1] as number;
  if (b0 === 0xff && (b1 & 0xe0) === 0xe0 && (b1 & 0x06) !== 0) return 'mp3';
  return undefined;
}

/** The format and duration, or a reason the bytes are not audio this worker reads. */
export function probeAudio(bytes: Uint8Array): AudioProbe | { problem: string } {
  const format = sniffAudioFormat(bytes);
  if (format === undefined)
    return { problem: 'not audio in a format the worker reads (WAV, FLAC, MP3, Ogg Vorbis)' };
  try {
    const seconds = format === 'wav' ? wavSeconds(bytes) : framedSeconds(format, bytes);
    if (seconds === undefined) return { problem: `no ${format.toUpperCase()} audio frames found` };
    return { format, seconds };
  } catch (err) {
    return {
      problem: `not a readable ${format.toUpperCase()} file: ${err instanceof Error ? err.message : String(err)}`,
    };
  }
}

function wavSeconds(bytes: Uint8Array): number | undefined {
  const wav = new wavefile.WaveFile(bytes);
  const fmt = wav.fmt as { sampleRate?: number; blockAlign?: number };
  const data = wav.data as { samples?: Uint8Array };
  if (!fmt.sampleRate || !fmt.blockAlign || data.samples === undefined) return undefined;
  return data.samples.length / fmt.blockAlign / fmt.sampleRate;
}

const MIME = { flac: 'audio/flac', mp3: 'audio/mpeg', ogg: 'application/ogg' } as const;

function framedSeconds(format: 'flac' | 'mp3' | 'ogg', bytes: Uint8Array): number | undefined {
  const parsed = new CodecParser(MIME[format]).parseAll(bytes);
  let seconds = 0;
  let frames = 0;
  for (const item of parsed) {
    const codecFrames: CodecFrame[] = 'codecFrames' in item ? item.codecFrames : [item];
    for (const frame of codecFrames) {
      const rate = frame.header.sampleRate;
      if (rate > 0) seconds += frame.samples / rate;
      frames += 1;
    }
  }
  return frames === 0 ? undefined : seconds;
}
