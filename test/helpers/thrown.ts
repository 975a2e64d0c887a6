import { expect } from 'vitest';

/** The error `run` throws, which must be a `kind`; a run that throws nothing fails the test. */
export function thrownBy<E extends Error>(
  kind: abstract new (...args: never[]) => E,
  run: () => unknown,
): E {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(kind);
    return err as E;
  }
  throw new Error(`expected a ${kind.name}, and nothing was thrown`);
}
