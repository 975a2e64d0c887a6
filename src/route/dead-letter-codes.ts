// Every code a dead letter can carry in hugot.error.code, once: a consumer of a DLQ branches on
// these, so they are a contract like the headers themselves. docs/configuration.md lists the same
// rows, and test/unit/route/dead-letter-codes.test.ts fails when the two disagree.
import { HugotError, type ErrorCode } from '../errors.ts';

/** Where a record was refused: 'output' is shaping the output record, 'sink' writing it. */
export type Stage = 'decode' | 'validate' | 'inference' | 'output' | 'sink';

export interface DeadLetterCodeInfo {
  /** The hugot.error.stage the code is given at; 'any' for a failure wherever it happened. */
  stage: Stage | 'any';
  /** The failure was the worker's or a dependency's, not the record's: the record may pass again. */
  retriable: boolean;
  /** One sentence for the docs. */
  meaning: string;
}

/**
 * An error class's code that reaches a dead letter as it is: every HugotError code but a sink that
 * failed and a worker that is closing (the record is fine, it is left unacknowledged) and the
 * start-up failures. The table below must hold a row for each.
 */
type ErrorDeadLetterCode = Exclude<
  ErrorCode,
  | 'SINK_FAILED'
  | 'CLOSED'
  | 'CONNECTION_REFUSED'
  | 'STARTUP_TIMEOUT'
  | 'HUB_FAILED'
  | 'REGISTRY_UNAVAILABLE'
>;

export const DEAD_LETTER_CODES = {
  TOMBSTONE: {
    stage: 'decode',
    retriable: false,
    meaning:
      'A Kafka record with a null value (a deletion on a compacted topic); its dead letter is a tombstone too, `"value": null` in a file DLQ.',
  },
  VALUE_FIELD_MISSING: {
    stage: 'decode',
    retriable: false,
    meaning: 'A Redis Streams entry without a `value` field.',
  },
  MAX_DELIVERIES: {
    stage: 'decode',
    retriable: false,
    meaning:
      'A Redis Streams entry delivered more than `maxDeliveries` times; it does not run again.',
  },
  INVALID_UTF8: {
    stage: 'decode',
    retriable: false,
    meaning: 'The record is not valid UTF-8 (`input.format` `text` or `json`).',
  },
  JSON_TOO_DEEP: {
    stage: 'decode',
    retriable: false,
    meaning: 'The record nests deeper than `limits.maxJsonDepth`, found before it is parsed.',
  },
  INVALID_JSON: {
    stage: 'decode',
    retriable: false,
    meaning: 'The record is not JSON (`input.format: json`).',
  },
  SCHEMA_UNKNOWN_ID: {
    stage: 'decode',
    retriable: false,
    meaning:
      'The record (value or key) names a schema id the Schema Registry does not know (`input.format` or `input.keyFormat` `avro`, `protobuf`, `json-schema`).',
  },
  SCHEMA_DECODE: {
    stage: 'decode',
    retriable: false,
    meaning:
      "The record is not in the Confluent wire format (magic byte 0, schema id), or its bytes do not decode with the writer's schema.",
  },
  RECORD_TOO_LARGE: {
    stage: 'validate',
    retriable: false,
    meaning: 'The record is over `limits.maxRecordBytes`.',
  },
  FIELD_MISSING: {
    stage: 'validate',
    retriable: false,
    meaning: 'The record has no `input.field`.',
  },
  WRONG_TYPE: {
    stage: 'validate',
    retriable: false,
    meaning: 'The input is not of a shape the task takes.',
  },
  TOO_LARGE: {
    stage: 'validate',
    retriable: false,
    meaning: 'A text or list over `maxTextLength`, `maxListItems` or `maxStopSequences`.',
  },
  IMAGE_INVALID: {
    stage: 'validate',
    retriable: false,
    meaning:
      'The image is not base64 (or, with `input.images.from: path`, a readable file under the root) of a format the worker reads.',
  },
  IMAGE_TOO_LARGE: {
    stage: 'validate',
    retriable: false,
    meaning: 'The image is over `limits.maxImagePixels`, or its file over `limits.maxImageBytes`.',
  },
  AUDIO_INVALID: {
    stage: 'validate',
    retriable: false,
    meaning: 'The audio is not base64 (or bytes) of a container the worker reads.',
  },
  AUDIO_TOO_LARGE: {
    stage: 'validate',
    retriable: false,
    meaning: 'The audio is over `limits.maxAudioBytes`.',
  },
  AUDIO_TOO_LONG: {
    stage: 'validate',
    retriable: false,
    meaning: 'The audio plays longer than `limits.maxAudioSeconds`.',
  },
  INPUT_INVALID: {
    stage: 'inference',
    retriable: false,
    meaning: 'The pipeline refused the input.',
  },
  CONFIG_INVALID: {
    stage: 'inference',
    retriable: false,
    meaning:
      "The pipeline cannot run the record's options (e.g. a `responseFormat` on a model without an EOS token).",
  },
  MODEL_FOLDER_INVALID: {
    stage: 'inference',
    retriable: false,
    meaning: 'A file the pipeline read for the record is missing from the model folder or wrong.',
  },
  PIPELINE_UNKNOWN: {
    stage: 'inference',
    retriable: false,
    meaning: "The route's pipeline is not registered.",
  },
  PROVIDER_UNAVAILABLE: {
    stage: 'inference',
    retriable: false,
    meaning: "An execution provider's library was not there when the pipeline needed it.",
  },
  DEADLINE_EXCEEDED: {
    stage: 'inference',
    retriable: false,
    meaning:
      "The record's deadline passed in the queue, or a generation ran past `generation.timeoutMs`.",
  },
  CANCELLED: {
    stage: 'inference',
    retriable: false,
    meaning: 'The inference request was cancelled before it finished.',
  },
  INFERENCE_FAILED: {
    stage: 'inference',
    retriable: true,
    meaning:
      'ONNX Runtime failed on the batch, after `delivery.retries` retries (at once for feeds that do not fit the model).',
  },
  WORKER_CRASHED: {
    stage: 'inference',
    retriable: true,
    meaning: 'An inference thread died running the batch, after `delivery.retries` retries.',
  },
  OVERLOADED: {
    stage: 'inference',
    retriable: true,
    meaning: 'The pipeline queue stayed past its hard limit, after `delivery.retries` retries.',
  },
  RETRIES_EXHAUSTED: {
    stage: 'inference',
    retriable: true,
    meaning: 'A retriable failure without a code of its own, after `delivery.retries` retries.',
  },
  OUTPUT_INVALID: {
    stage: 'output',
    retriable: false,
    meaning:
      'A generated output misses its `responseFormat` (e.g. `maxNewTokens` reached mid-object).',
  },
  NOT_AN_OBJECT: {
    stage: 'output',
    retriable: false,
    meaning: '`output.mode: merge` on a record that is not a JSON object.',
  },
  OUTPUT_FIELD_EXISTS: {
    stage: 'output',
    retriable: false,
    meaning: '`output.mode: merge` into a field the record has, without `output.overwrite`.',
  },
  VECTOR_TOO_SHORT: {
    stage: 'output',
    retriable: false,
    meaning:
      "The pipeline's vector has fewer values than `output.vectors.dimensions` (a model whose `config.json` does not give its size).",
  },
  SCHEMA_REFUSED: {
    stage: 'output',
    retriable: false,
    meaning:
      "The output does not fit `output.schema`, or the registry refused the derived schema (incompatible with the subject's versions); the message says which.",
  },
  OUTPUT_TOO_LARGE: {
    stage: 'sink',
    retriable: false,
    meaning: "The output is over the sink's limit (`maxMessageBytes`).",
  },
  OUTPUT_REJECTED: {
    stage: 'sink',
    retriable: false,
    meaning:
      "The broker refused the output; the message names the broker's error and code, e.g. `MESSAGE_TOO_LARGE (error code 10)`.",
  },
  MAX_ATTEMPTS: {
    stage: 'sink',
    retriable: false,
    meaning:
      "The record's write failed `delivery.maxAttempts` times on Kafka; the message holds the last error.",
  },
  ATTEMPTS_EXHAUSTED: {
    stage: 'sink',
    retriable: true,
    meaning:
      'A BullMQ job failed its last attempt without a code of its own (a failed write, a stalled job).',
  },
  INTERNAL: {
    stage: 'any',
    retriable: false,
    meaning:
      'An unforeseen failure while handling the record, at the stage where it happened (not `sink`).',
  },
} as const satisfies Record<ErrorDeadLetterCode, DeadLetterCodeInfo> &
  Record<string, DeadLetterCodeInfo>;

export type DeadLetterCode = keyof typeof DEAD_LETTER_CODES;

/**
 * The stages a code may be minted at: its own, or any for a code whose stage is where it happened.
 * A code only known at run time (an error's) may go with any stage.
 */
export type StageOf<C extends DeadLetterCode> = {
  [K in C]: (typeof DEAD_LETTER_CODES)[K]['stage'] extends Stage
    ? (typeof DEAD_LETTER_CODES)[K]['stage']
    : Stage;
}[C];

export function isDeadLetterCode(code: string): code is DeadLetterCode {
  return Object.hasOwn(DEAD_LETTER_CODES, code);
}

/** The code a failure's dead letter carries: its error class's, else `otherwise`. */
export function deadLetterCodeOf(
  err: unknown,
  otherwise: DeadLetterCode = 'INTERNAL',
): DeadLetterCode {
  return err instanceof HugotError && isDeadLetterCode(err.code) ? err.code : otherwise;
}
