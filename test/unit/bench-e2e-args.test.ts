// bench:e2e's arguments (the benchmark itself is not run here): --client picks the worker's Kafka
// client and is refused when it names none.
import { describe, expect, it } from 'vitest';
import { parseE2eArgs } from '../../bench/lib/e2e-args.ts';

describe('bench:e2e arguments', () => {
  it('defaults: 2000 records, 2 rounds, the config default client', () => {
    expect(parseE2eArgs([])).toEqual({ records: 2000, rounds: 2, client: undefined });
  });

  it('--client platformatic|kafkajs', () => {
    expect(parseE2eArgs(['--client', 'platformatic']).client).toBe('platformatic');
    expect(parseE2eArgs(['--client=kafkajs', '--records', '10']).client).toBe('kafkajs');
    expect(() => parseE2eArgs(['--client', 'rdkafka'])).toThrow(
      /--client rdkafka: one of platformatic, kafkajs/,
    );
    expect(() => parseE2eArgs(['--records', 'many'])).toThrow(/--records many/);
  });
});
