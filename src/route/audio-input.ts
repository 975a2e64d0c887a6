// A record's audio as bytes, decided in the main thread before the record joins a batch. A string
// is the audio file itself in base64 (a data: URL too), so a record cannot make the worker open a
// file; a binary record (input.format bytes) is the file. Its size is held to
// limits.maxAudioBytes, and its container and duration are read from the headers (WAV) or the
// frame headers (FLAC, MP3, Ogg) against limits.maxAudioSeconds before any thread decodes a sample.
import { InputError } from '../errors.ts';
import { probeAudio } from '../pipelines/audio/audio-format.ts';
import { base64Bytes } from './base64-bytes.ts';

export interface AudioInputOptions {
  maxBytes: number;
  maxSeconds: number;
}

export type AudioRefusal = 'AUDIO_INVALID' | 'AUDIO_TOO_LARGE' | 'AUDIO_TOO_LONG';

/** A refused audio input: `reason` is the dead letter's code. */
export class AudioRefusedError extends InputError {
  override name = 'AudioRefusedError';
  readonly reason: AudioRefusal;
  constructor(reason: AudioRefusal, message: string, field: string) {
    super(message, { field });
    this.reason = reason;
  }
}

export class AudioInputs {
  private readonly options: AudioInputOptions;

  constructor(options: AudioInputOptions) {
    this.options = options;
  }

  /** The audio file's bytes, checked to be audio the worker reads, within the limits. */
  bytesOf(input: unknown, field: string): Uint8Array {
    let bytes: Uint8Array;
    if (input instanceof Uint8Array) bytes = input;
    else if (typeof input === 'string') bytes = decodeBase64(input, field);
    else
      throw new AudioRefusedError(
        'AUDIO_INVALID',
        `${field} must be an audio file's bytes in base64 (a string)`,
        field,
      );
    if (bytes.length > this.options.maxBytes)
      throw new AudioRefusedError(
        'AUDIO_TOO_LARGE',
        `${field} is ${bytes.length} bytes of audio, over limits.maxAudioBytes (${this.options.maxBytes})`,
        field,
      );
    const probe = probeAudio(bytes);
    if ('problem' in probe)
      throw new AudioRefusedError('AUDIO_INVALID', `${field} is ${probe.problem}`, field);
    if (probe.seconds > this.options.maxSeconds)
      throw new AudioRefusedError(
        'AUDIO_TOO_LONG',
        `${field} plays ${probe.seconds.toFixed(1)} s, over limits.maxAudioSeconds (${this.options.maxSeconds})`,
        field,
      );
    return bytes;
  }
}

function decodeBase64(text: string, field: string): Uint8Array {
  const bytes = base64Bytes(text);
  if (bytes === undefined)
    throw new AudioRefusedError(
      'AUDIO_INVALID',
      `${field} must be an audio file's bytes in base64`,
      field,
    );
  return bytes;
}
