// What an audio task tells the registry about its input: an audio file a route reads and checks
// itself (src/route/audio-input.ts, held to limits.maxAudioBytes and its duration to
// limits.maxAudioSeconds, not to the text limits), one batch row per clip whatever its length.
import { UNIT_COST, type TaskDefinition } from '../task-definition.ts';

export const audioInput = {
  inputSchema(input, check) {
    if (typeof input !== 'string' && !(input instanceof Uint8Array))
      check.fail("audio: base64 (a string), or the record's bytes");
  },
  inputKind: 'audio',
  cost: () => Promise.resolve(UNIT_COST),
} satisfies Pick<TaskDefinition, 'inputSchema' | 'inputKind' | 'cost'>;
