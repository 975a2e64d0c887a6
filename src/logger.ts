// The logging seam. Library code logs through this interface; the CLI passes a real logger, tests
// a silent or recording one. The shape matches pino's, so a pino logger fits as it is.
import { redactFields, redactText } from './redaction.ts';
export interface Logger {
  debug(fields: object, message: string): void;
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
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
  };
}
