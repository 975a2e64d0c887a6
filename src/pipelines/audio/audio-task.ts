// What an audio task tells the registry about its input: an audio file a route reads and checks
// itself (held to limits.maxAudioBytes, its duration to limits.maxAudioSeconds), one batch row
// per clip whatever its length.
import { fileInput } from '../task-definition.ts';

export const audioInput = fileInput('audio', "audio: base64 (a string), or the record's bytes");
