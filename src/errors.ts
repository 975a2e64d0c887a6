// Every failure the system reports is one of these classes. They carry a stable `code`, say
// whether retrying can help, and survive a worker-thread boundary: a worker serializes, the
// main thread rebuilds the same class.

export type ErrorCode =
  | 'CONFIG_INVALID'
  | 'MODEL_FOLDER_INVALID'
  | 'INPUT_INVALID'
  | 'PIPELINE_UNKNOWN'
  | 'PROVIDER_UNAVAILABLE'
  | 'INFERENCE_FAILED'
  | 'OVERLOADED'
  | 'DEADLINE_EXCEEDED'
  | 'CANCELLED'
  | 'WORKER_CRASHED'
  | 'SINK_FAILED'
  | 'OUTPUT_REJECTED'
  | 'OUTPUT_INVALID'
  | 'CLOSED'
  | 'CONNECTION_REFUSED'
  | 'STARTUP_TIMEOUT'
  | 'HUB_FAILED'
  | 'SCHEMA_UNKNOWN_ID'
  | 'SCHEMA_DECODE'
  | 'SCHEMA_REFUSED'
  | 'REGISTRY_UNAVAILABLE';

export interface HugotErrorOptions {
  cause?: unknown;
  /** Which config field, file or input field the problem is about. */
  field?: string;
}

export class HugotError extends Error {
  override name: string = 'HugotError';
  readonly code: ErrorCode;
  readonly retriable: boolean;
  readonly field: string | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    retriable: boolean,
    options: HugotErrorOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.retriable = retriable;
    this.field = options.field;
  }
}

/** Bad configuration or options: found at start-up, never retried. */
export class ConfigError extends HugotError {
  override name = 'ConfigError';
  constructor(message: string, options?: HugotErrorOptions) {
    super('CONFIG_INVALID', message, false, options);
  }
}

/** A model folder that is missing a file or holds an inconsistent one. */
export class ModelFolderError extends HugotError {
  override name = 'ModelFolderError';
  constructor(message: string, options?: HugotErrorOptions) {
    super('MODEL_FOLDER_INVALID', message, false, options);
  }
}

/** A record or call argument the pipeline cannot process: goes to the dead-letter queue. */
export class InputError extends HugotError {
  override name = 'InputError';
  constructor(message: string, options?: HugotErrorOptions) {
    super('INPUT_INVALID', message, false, options);
  }
}

export class UnknownPipelineError extends HugotError {
  override name = 'UnknownPipelineError';
  constructor(message: string, options?: HugotErrorOptions) {
    super('PIPELINE_UNKNOWN', message, false, options);
  }

  static forAlias(alias: string, known: readonly string[]): UnknownPipelineError {
    const registered = known.length > 0 ? known.join(', ') : '(none)';
    return new UnknownPipelineError(
      `no pipeline is registered as '${alias}'; registered: ${registered}`,
      { field: alias },
    );
  }
}

/** An execution provider (CUDA, TensorRT) was asked for but its library is not there. */
export class ProviderUnavailableError extends HugotError {
  override name = 'ProviderUnavailableError';
  constructor(message: string, options?: HugotErrorOptions) {
    super('PROVIDER_UNAVAILABLE', message, false, options);
  }
}

/** ONNX Runtime failed while running a batch; another worker may succeed. */
export class InferenceError extends HugotError {
  override name = 'InferenceError';
  constructor(message: string, options?: HugotErrorOptions, retriable = true) {
    super('INFERENCE_FAILED', message, retriable, options);
  }
}

/**
 * ONNX Runtime returned an OrtStatus from a C API call (the native binding): its message, and its
 * OrtErrorCode name in `ortCode` (on this side of a thread boundary; the message carries it too).
 */
export class OrtStatusError extends InferenceError {
  override name = 'OrtStatusError';
  readonly ortCode: string | undefined;
  /** The message without the code. */
  readonly detail: string;
  constructor(message: string, options: HugotErrorOptions & { ortCode?: string } = {}) {
    const { ortCode, ...rest } = options;
    super(ortCode === undefined ? message : `${message} [${ortCode}]`, rest);
    this.ortCode = ortCode;
    this.detail = message;
  }

  /** The same failure, its message led by where it happened (the model file). */
  within(context: string): OrtStatusError {
    const options: HugotErrorOptions & { ortCode?: string } = { cause: this };
    if (this.ortCode !== undefined) options.ortCode = this.ortCode;
    return new OrtStatusError(`${context}: ${this.detail}`, options);
  }
}

/**
 * Feeds that do not fit the session: a missing or unknown input, a wrong dtype, rank or fixed
 * dimension. Found before any native call, so retrying cannot help; `field` names the tensor.
 */
export class FeedMismatchError extends InferenceError {
  override name = 'FeedMismatchError';
  constructor(message: string, options?: HugotErrorOptions) {
    super(message, options, false);
  }
}

/** The queue is past its hard limit: the caller should back off and retry. */
export class OverloadedError extends HugotError {
  override name = 'OverloadedError';
  constructor(message: string, options?: HugotErrorOptions) {
    super('OVERLOADED', message, true, options);
  }
}

/** The item's deadline passed before it could run; it never ran. */
export class DeadlineExceededError extends HugotError {
  override name = 'DeadlineExceededError';
  constructor(message: string, options?: HugotErrorOptions) {
    super('DEADLINE_EXCEEDED', message, false, options);
  }
}

export class CancelledError extends HugotError {
  override name = 'CancelledError';
  constructor(message: string, options?: HugotErrorOptions) {
    super('CANCELLED', message, false, options);
  }
}

/** A worker thread died while running the batch (twice, when the retry died too). */
export class WorkerCrashedError extends HugotError {
  override name = 'WorkerCrashedError';
  constructor(message: string, options?: HugotErrorOptions) {
    super('WORKER_CRASHED', message, true, options);
  }
}

/**
 * A sink refused a write made while a record was still being processed (a streamed partial
 * record). The record is not acknowledged, so its source delivers it again; it is never
 * dead-lettered for this, because the record itself is fine.
 */
export class SinkError extends HugotError {
  override name = 'SinkError';
  constructor(message: string, options?: HugotErrorOptions) {
    super('SINK_FAILED', message, true, options);
  }
}

/**
 * The destination refused this one output for what it is (larger than a Kafka topic takes, an
 * invalid record), so writing it again would fail the same way: its record goes to the DLQ.
 */
export class OutputRejectedError extends HugotError {
  override name = 'OutputRejectedError';
  constructor(message: string, options?: HugotErrorOptions) {
    super('OUTPUT_REJECTED', message, false, options);
  }
}

/**
 * A generated output does not have the shape its `responseFormat` asked for (maxNewTokens ran out
 * mid-object, a stop sequence cut it): generating again gives the same tokens, so its record goes
 * to the DLQ with the reason instead of reaching a consumer that would fail to parse it.
 */
export class OutputInvalidError extends HugotError {
  override name = 'OutputInvalidError';
  constructor(message: string, options?: HugotErrorOptions) {
    super('OUTPUT_INVALID', message, false, options);
  }
}

export class ClosedError extends HugotError {
  override name = 'ClosedError';
  constructor(message: string, options?: HugotErrorOptions) {
    super('CLOSED', message, false, options);
  }
}

/**
 * A broker or Redis refused the worker at start-up for a reason that retrying cannot fix: wrong
 * credentials, a certificate that does not verify, TLS spoken to a plain port. The message names
 * the connection and the config field to fix; it never holds the secret.
 */
export class ConnectionError extends HugotError {
  override name = 'ConnectionError';
  constructor(message: string, options?: HugotErrorOptions) {
    super('CONNECTION_REFUSED', message, false, options);
  }
}

/**
 * Start-up waited startup.timeoutMs for a broker, Redis or a topic that never came: not a
 * configuration mistake (exit 2) but a dependency that failed for good (exit 1).
 */
export class StartupTimeoutError extends HugotError {
  override name = 'StartupTimeoutError';
  constructor(message: string, options?: HugotErrorOptions) {
    super('STARTUP_TIMEOUT', message, false, options);
  }
}

/** A record names a schema id the Schema Registry does not know (404): it goes to the DLQ. */
export class SchemaUnknownError extends HugotError {
  override name = 'SchemaUnknownError';
  constructor(message: string, options?: HugotErrorOptions) {
    super('SCHEMA_UNKNOWN_ID', message, false, options);
  }
}

/** A record's bytes are not the Confluent wire format, or do not decode with its writer's schema. */
export class SchemaDecodeError extends HugotError {
  override name = 'SchemaDecodeError';
  constructor(message: string, options?: HugotErrorOptions) {
    super('SCHEMA_DECODE', message, false, options);
  }
}

/**
 * An output its schema refuses: the value does not fit the registered schema, or the registry
 * refused the derived schema (incompatible with the subject's versions, or invalid).
 */
export class SchemaRefusedError extends HugotError {
  override name = 'SchemaRefusedError';
  constructor(message: string, options?: HugotErrorOptions) {
    super('SCHEMA_REFUSED', message, false, options);
  }
}

/**
 * The Schema Registry did not answer (refused connection, timeout, a 5xx, a refused credential
 * mid-run): the records that need it wait and the request is retried with backoff. Never a dead
 * letter: the record is fine.
 */
export class RegistryUnavailableError extends HugotError {
  override name = 'RegistryUnavailableError';
  constructor(message: string, options?: HugotErrorOptions) {
    super('REGISTRY_UNAVAILABLE', message, true, options);
  }
}

export interface SerializedError {
  name: string;
  code: ErrorCode | undefined;
  message: string;
  retriable: boolean;
  field: string | undefined;
  stack: string | undefined;
  cause: SerializedError | undefined;
}

export function serializeError(err: unknown): SerializedError {
  if (err instanceof HugotError) {
    return {
      name: err.name,
      code: err.code,
      message: err.message,
      retriable: err.retriable,
      field: err.field,
      stack: err.stack,
      cause: err.cause === undefined ? undefined : serializeError(err.cause),
    };
  }
  const asError = err instanceof Error ? err : new Error(String(err));
  return {
    name: asError.name,
    code: undefined,
    message: asError.message,
    retriable: false,
    field: undefined,
    stack: asError.stack,
    cause: asError.cause === undefined ? undefined : serializeError(asError.cause),
  };
}

/**
 * The Hugging Face Hub refused or failed a pull: a gated or missing repository, a file whose
 * bytes do not match the Hub's sha256, or the Hub out of reach (retriable).
 */
export class HubError extends HugotError {
  override name = 'HubError';
  constructor(message: string, options?: HugotErrorOptions, retriable = false) {
    super('HUB_FAILED', message, retriable, options);
  }
}

type ErrorClass = new (message: string, options?: HugotErrorOptions) => HugotError;
const errorClasses: Record<string, ErrorClass> = {
  ConfigError,
  ModelFolderError,
  InputError,
  UnknownPipelineError,
  ProviderUnavailableError,
  InferenceError,
  OrtStatusError,
  FeedMismatchError,
  OverloadedError,
  DeadlineExceededError,
  CancelledError,
  WorkerCrashedError,
  SinkError,
  OutputRejectedError,
  OutputInvalidError,
  ClosedError,
  ConnectionError,
  StartupTimeoutError,
  HubError,
  SchemaUnknownError,
  SchemaDecodeError,
  SchemaRefusedError,
  RegistryUnavailableError,
};

export function deserializeError(s: SerializedError): Error {
  const cause = s.cause === undefined ? undefined : deserializeError(s.cause);
  const options: HugotErrorOptions = {};
  if (cause !== undefined) options.cause = cause;
  if (s.field !== undefined) options.field = s.field;
  const ErrorClass = errorClasses[s.name];
  let err: Error;
  if (ErrorClass !== undefined) err = new ErrorClass(s.message, options);
  else if (s.code !== undefined) {
    err = new HugotError(s.code, s.message, s.retriable, options);
    err.name = s.name;
  } else {
    err = new Error(s.message, cause === undefined ? undefined : { cause });
    err.name = s.name;
  }
  if (s.stack !== undefined) err.stack = s.stack;
  return err;
}
