import { describe, expect, it } from 'vitest';
import type { Logger } from '../../../src/logger.ts';
import { DeadLetterLog } from '../../../src/route/dead-letter-log.ts';

function recording(): { logger: Logger; lines: { fields: object; message: string }[] } {
  const lines: { fields: object; message: string }[] = [];
  const logger: Logger = {
    debug: () => undefined,
    info: () => undefined,
    warn: (fields, message) => lines.push({ fields, message: message ?? '' }),
    error: () => undefined,
    child: () => logger,
  };
  return { logger, lines };
}

describe('the dead-letter log', () => {
  it('logs each dead letter with its code and source position, up to the limit per window', () => {
    const { logger, lines } = recording();
    let now = 0;
    const log = new DeadLetterLog({
      logger,
      route: 'mails',
      perWindow: 3,
      windowMs: 1000,
      now: () => now,
    });
    for (let i = 0; i < 5; i += 1)
      log.note({ code: 'INVALID_JSON', message: 'not JSON', origin: `in.jsonl:${i + 1}` });
    expect(lines).toHaveLength(3);
    expect(lines[0]).toEqual({
      fields: { route: 'mails', code: 'INVALID_JSON', origin: 'in.jsonl:1' },
      message: 'dead-lettered: not JSON',
    });
    now = 1500;
    log.note({ code: 'WRONG_TYPE', message: 'text is a number', origin: 'in.jsonl:9' });
    expect(lines).toHaveLength(5);
    expect(lines[3]?.fields).toMatchObject({ route: 'mails', suppressed: 2 });
    expect(lines[3]?.message).toContain('2 more dead letters were not logged one by one');
    expect(lines[4]?.fields).toMatchObject({ code: 'WRONG_TYPE', origin: 'in.jsonl:9' });
  });
});
