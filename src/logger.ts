// The logging seam. Library code logs through this interface; the CLI passes a real logger, tests
// a silent or recording one. The shape matches pino's, so a pino logger fits as it is.
import { redactFields, redactText } from './redaction.ts';
export interface Logger {
  debug(fields: object, message: string): void;
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
  /** A logger whose lines carry `bindings` too (pino's child); childLogger() covers its absence. */
  child?(bindings: object): Logger;
}

/** A logger whose lines all carry `bindings` (route, partition): pino's child() when it has one. */
export function childLogger(logger: Logger, bindings: object): Logger {
  if (logger.child !== undefined) return logger.child(bindings);
  return {
    debug: (fields, message) => logger.debug({ ...bindings, ...fields }, message),
    info: (fields, message) => logger.info({ ...bindings, ...fields }, message),
    warn: (fields, message) => logger.warn({ ...bindings, ...fields }, message),
    error: (fields, message) => logger.error({ ...bindings, ...fields }, message),
  };
}

export const silentLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

/**
 * Scrubs every line before it reaches `inner`: connection-string credentials, Redis AUTH
 * arguments inside errors, fields and headers named like secrets (src/redaction.ts).
 */
export function redactingLogger(inner: Logger): Logger {
  return {
    debug: (fields, message) => inner.debug(redactFields(fields), redactText(message)),
    info: (fields, message) => inner.info(redactFields(fields), redactText(message)),
    warn: (fields, message) => inner.warn(redactFields(fields), redactText(message)),
    error: (fields, message) => inner.error(redactFields(fields), redactText(message)),
    child: (bindings) => redactingLogger(childLogger(inner, redactFields(bindings))),
  };
}
