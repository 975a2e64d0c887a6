// The CLI's logger: pino on standard error, so standard output stays free for data: JSON lines
// (what a log shipper reads) unless standard error is a terminal, where pino-pretty prints
// coloured lines with named levels and local ISO times. HUGOT_LOG_FORMAT=json|pretty decides.
// Every line is scrubbed of secrets twice over: redactingLogger walks the fields (errors
// included) before pino sees them, and pino's own `redact` paths censor the known secret fields
// should anything reach pino another way.
import { pino, type DestinationStream, type Logger as PinoLogger } from 'pino';
import { PinoPretty } from 'pino-pretty';
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

export type LogFormat = 'json' | 'pretty';

/** HUGOT_LOG_FORMAT when it names a format; otherwise pretty on a terminal, JSON off one. */
export function logFormat(
  env: NodeJS.ProcessEnv = process.env,
  terminal = process.stderr.isTTY === true,
): LogFormat {
  const chosen = env['HUGOT_LOG_FORMAT'];
  if (chosen === 'json' || chosen === 'pretty') return chosen;
  return terminal ? 'pretty' : 'json';
}

/**
 * pino-pretty writing to `destination` (standard error by default), synchronously: the summary
 * and the last lines before an exit must not be lost in a buffer.
 */
export function prettyDestination(
  destination: number | DestinationStream = 2,
  colorize = process.stderr.isTTY === true,
): DestinationStream {
  return PinoPretty({
    destination,
    colorize,
    sync: true,
    translateTime: "SYS:yyyy-mm-dd'T'HH:MM:ss.lo",
    ignore: 'pid',
  });
}

export function createCliLogger(
  level = process.env['HUGOT_LOG_LEVEL'] ?? 'info',
  destination: DestinationStream = logFormat() === 'pretty'
    ? prettyDestination()
    : pino.destination(2),
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
