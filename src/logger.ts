// The logging seam. Library code logs through this interface; the CLI passes a real logger, tests
// a silent or recording one. The shape matches pino's, so a pino logger fits as it is.
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
