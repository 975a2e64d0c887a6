// The CLI's logger: pino, JSON lines on standard error, so standard output stays free for data.
// Every line is scrubbed of secrets twice over: redactingLogger walks the fields (errors
// included) before pino sees them, and pino's own `redact` paths censor the known secret fields
// should anything reach pino another way.
import { pino, type DestinationStream, type Logger as PinoLogger } from 'pino';
import { redactingLogger, type Logger } from '../logger.ts';
import { REDACTED, redactValue } from '../redaction.ts';

/** Fields that hold secrets in the shapes this project and its clients log. */
export const REDACT_PATHS = [
  'password',
  '*.password',
  '*.*.password',
  'sasl.password',
  '*.sasl.password',
  'token',
  '*.token',
  'err.command.args',
  'error.command.args',
  '*.command.args',
  'headers.authorization',
  'headers.cookie',
  '*.headers.authorization',
  '*.headers.cookie',
  'options.password',
  '*.options.password',
];

export function createCliLogger(
  level = process.env['HUGOT_LOG_LEVEL'] ?? 'info',
  destination: DestinationStream = pino.destination(2),
): Logger {
  const logger = pino(
    {
      level,
      // pino's default base: pid and hostname (which pod or host wrote the line).
      redact: { paths: REDACT_PATHS, censor: REDACTED },
      serializers: { err: (err: unknown) => redactValue(err) },
    },
    destination,
  );
  return redactingLogger(seam(logger));
}

function seam(logger: PinoLogger): Logger {
  return {
    debug: (fields, message) => logger.debug(fields, message),
    info: (fields, message) => logger.info(fields, message),
    warn: (fields, message) => logger.warn(fields, message),
    error: (fields, message) => logger.error(fields, message),
    child: (bindings) => seam(logger.child(bindings)),
  };
}
