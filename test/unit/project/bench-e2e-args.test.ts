// bench:e2e's arguments (the benchmark itself is not run here): --client picks the worker's Kafka
// client and is refused when it names none; --clients compares both in one run and excludes --client.
import { describe, expect, it } from 'vitest';
import { parseE2eArgs } from '../../../bench/lib/e2e-args.ts';

describe('bench:e2e arguments', () => {
  it('defaults: 2000 records, 2 rounds, the config default client, one client', () => {
    expect(parseE2eArgs([])).toEqual({
      records: 2000,
      rounds: 2,
      client: undefined,
      clients: [],
      avro: true,
    });
    expect(parseE2eArgs(['--skip-avro']).avro).toBe(false);
  });

  it('--client platformatic|kafkajs', () => {
    expect(parseE2eArgs(['--client', 'platformatic']).client).toBe('platformatic');
    expect(parseE2eArgs(['--client=kafkajs', '--records', '10']).client).toBe('kafkajs');
    expect(() => parseE2eArgs(['--client', 'rdkafka'])).toThrow(
      /--client rdkafka: one of platformatic, kafkajs/,
    );
    expect(() => parseE2eArgs(['--records', 'many'])).toThrow(/--records many/);
  });

  it('--clients: both clients, in the order the rounds start with', () => {
    expect(parseE2eArgs(['--clients', '--records', '300', '--rounds', '1'])).toEqual({
      records: 300,
      rounds: 1,
      client: undefined,
      clients: ['platformatic', 'kafkajs'],
      avro: true,
    });
  });

  it('--clients with --client is refused, naming both', () => {
    expect(() => parseE2eArgs(['--clients', '--client', 'kafkajs'])).toThrow(
      /--client kafkajs with --clients/,
    );
  });

  it('--rounds must be a whole number of at least 1', () => {
    expect(() => parseE2eArgs(['--rounds', '0'])).toThrow(/--rounds 0/);
    expect(() => parseE2eArgs(['--rounds', 'x'])).toThrow(/--rounds x/);
  });

  it('a value given to the --clients switch is refused', () => {
    expect(() => parseE2eArgs(['--clients=both'])).toThrow();
  });
});
