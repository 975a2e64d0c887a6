import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  HugotError,
  InferenceError,
  InputError,
  UnknownPipelineError,
  deserializeError,
  serializeError,
} from '../../../src/errors.ts';

/** What a worker thread does: structured-clone the serialized form across the boundary. */
function acrossThreads(err: unknown): Error {
  return deserializeError(structuredClone(serializeError(err)));
}

describe('errors across a thread boundary', () => {
  it('keep their class, code, retriable flag, field and message', () => {
    const rebuilt = acrossThreads(new InputError('text too long', { field: 'inputs[3]' }));
    expect(rebuilt).toBeInstanceOf(InputError);
    expect(rebuilt).toMatchObject({
      name: 'InputError',
      code: 'INPUT_INVALID',
      retriable: false,
      field: 'inputs[3]',
      message: 'text too long',
    });
    expect(acrossThreads(new InferenceError('ort failed'))).toMatchObject({
      name: 'InferenceError',
      retriable: true,
    });
    expect(acrossThreads(UnknownPipelineError.forAlias('x', ['a']))).toBeInstanceOf(
      UnknownPipelineError,
    );
  });

  it('keep their cause chain', () => {
    const rebuilt = acrossThreads(new ConfigError('bad', { cause: new TypeError('inner') }));
    expect(rebuilt).toBeInstanceOf(ConfigError);
    expect(rebuilt.cause).toBeInstanceOf(Error);
    expect((rebuilt.cause as Error).name).toBe('TypeError');
    expect((rebuilt.cause as Error).message).toBe('inner');
  });

  it('turn foreign errors and non-errors into plain errors with their name and message', () => {
    const rebuilt = acrossThreads(new RangeError('out of range'));
    expect(rebuilt).not.toBeInstanceOf(HugotError);
    expect(rebuilt).toMatchObject({ name: 'RangeError', message: 'out of range' });
    expect(acrossThreads('a string')).toMatchObject({ message: 'a string' });
  });
});
