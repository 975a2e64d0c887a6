// The CLI's logger: pino, JSON lines on standard error, so standard output stays free for data.
import { pino } from 'pino';
import type { Logger } from '../logger.ts';

export function createCliLogger(level = process.env['HUGOT_LOG_LEVEL'] ?? 'info'): Logger {
  const logger = pino({ level, base: { pid: process.pid } }, pino.destination(2));
  return {
    debug: (fields, message) => logger.debug(fields, message),
    info: (fields, message) => logger.info(fields, message),
    warn: (fields, message) => logger.warn(fields, message),
    error: (fields, message) => logger.error(fields, message),
  };
}
