import { describe, expect, it } from 'vitest';
import { Backoff } from '../../../src/connectors/backoff.ts';
import { ConnectionError, StartupTimeoutError } from '../../../src/errors.ts';
import type { Logger } from '../../../src/logger.ts';
import { waitForDependencies, type Dependency } from '../../../src/worker/startup-wait.ts';

function recording(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const push = (_: object, message: string): void => void lines.push(message);
  return { logger: { debug: push, info: push, warn: push, error: push }, lines };
}

/** A dependency whose answers are scripted, one per ask; the last repeats. */
function scripted(name: string, answers: (string[] | Error)[]): Dependency {
  let asked = 0;
  return {
    name,
    missing: () => {
      const answer = answers[Math.min(asked++, answers.length - 1)] as string[] | Error;
      return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
    },
  };
}

const quick = (): Backoff => new Backoff({ initialMs: 1, maxMs: 2, random: () => 0 });

describe('start-up wait', () => {
  it('logs each change of what is missing once, says it to /readyz, and ends when all answer', async () => {
    const { logger, lines } = recording();
    const waiting: string[][] = [];
    const result = await waitForDependencies(
      [
        scripted('kafka', [new Error('ECONNREFUSED'), ['topic a'], ['topic a'], []]),
        scripted('redis', [[]]),
      ],
      {
        logger,
        timeoutMs: 60_000,
        signal: new AbortController().signal,
        onWaiting: (missing) => waiting.push(missing),
        backoff: quick(),
      },
    );
    expect(result).toBe('ready');
    expect(lines).toEqual([
      'start-up: waiting for kafka does not answer: ECONNREFUSED',
      'start-up: waiting for topic a',
      'start-up: everything needed answers',
    ]);
    expect(waiting.at(-1)).toEqual([]);
    expect(waiting).toHaveLength(4);
  });

  it('gives up after startup.timeoutMs with what is still missing', async () => {
    let now = 0;
    const wait = waitForDependencies([scripted('kafka', [['topic a']])], {
      logger: recording().logger,
      timeoutMs: 1000,
      signal: new AbortController().signal,
      backoff: quick(),
      now: () => (now += 400),
    });
    await expect(wait).rejects.toBeInstanceOf(StartupTimeoutError);
    await expect(wait).rejects.toThrow(/startup\.timeoutMs 1000.*topic a/);
  });

  it('stops at once on the signal, and refuses at once what no wait can cure', async () => {
    const stop = new AbortController();
    const stopped = waitForDependencies([scripted('redis', [['not yet']])], {
      logger: recording().logger,
      timeoutMs: 600_000,
      signal: stop.signal,
      backoff: new Backoff({ initialMs: 60_000, maxMs: 60_000 }),
    });
    setTimeout(() => stop.abort(), 10);
    expect(await stopped).toBe('stopped');
    const refused = new ConnectionError('connections.redis: wrong password');
    await expect(
      waitForDependencies([scripted('redis', [refused])], {
        logger: recording().logger,
        timeoutMs: 600_000,
        signal: new AbortController().signal,
        backoff: quick(),
      }),
    ).rejects.toBe(refused);
  });
});
