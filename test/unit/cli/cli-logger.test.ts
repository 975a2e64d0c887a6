import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createCliLogger, logFormat, prettyDestination } from '../../../src/cli/logger.ts';

function collect(): { stream: Writable; text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString('utf8'));
      done();
    },
  });
  return { stream, text: () => chunks.join('') };
}

describe('the CLI log format', () => {
  it('is pretty on a terminal, JSON off one, and HUGOT_LOG_FORMAT decides when set', () => {
    expect(logFormat({}, true)).toBe('pretty');
    expect(logFormat({}, false)).toBe('json');
    expect(logFormat({ HUGOT_LOG_FORMAT: 'json' }, true)).toBe('json');
    expect(logFormat({ HUGOT_LOG_FORMAT: 'pretty' }, false)).toBe('pretty');
    expect(logFormat({ HUGOT_LOG_FORMAT: 'yaml' }, false)).toBe('json');
  });

  it('prints named levels, ISO times and the host, with secrets still scrubbed', () => {
    const { stream, text } = collect();
    const logger = createCliLogger('info', prettyDestination(stream, false));
    logger.info({ route: 'demo', password: 'hunter2' }, 'started');
    logger.warn({ url: 'redis://u:hunter2@cache:6379' }, 'outage');
    const out = text();
    expect(out).toMatch(
      /^\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d{4}\] INFO \(on [^)]+\): started\n/,
    );
    expect(out).toContain('route: "demo"');
    expect(out).toMatch(/\] WARN \(on [^)]+\): outage/);
    expect(out).not.toContain('hunter2');
    // No ANSI colours when asked for none (a file or a pipe).
    expect(out).not.toContain('\u001b[');
  });
});
