import { afterAll, describe, expect, inject, it } from 'vitest';
import { Redis } from 'ioredis';
import { uniqueName } from '../helpers/unique-name.ts';

const client = new Redis(inject('redisUrl'));
afterAll(async () => {
  await client.quit();
});

type StreamReply = [stream: string, entries: [id: string, fields: string[]][]][] | null;

describe('Redis Streams consumer group (real Redis)', () => {
  it('XADD -> XREADGROUP -> XACK leaves exactly the unacknowledged entries pending', async () => {
    const stream = uniqueName('smoke-stream');
    const group = 'workers';
    await client.xgroup('CREATE', stream, group, '0', 'MKSTREAM');

    const ids: string[] = [];
    for (let i = 0; i < 6; i += 1) {
      const id = await client.xadd(stream, '*', 'value', JSON.stringify({ id: i }));
      if (id === null) throw new Error('XADD returned no id');
      ids.push(id);
    }

    const reply = (await client.xreadgroup(
      'GROUP',
      group,
      'consumer-a',
      'COUNT',
      10,
      'STREAMS',
      stream,
      '>',
    )) as StreamReply;
    const delivered = reply?.[0]?.[1] ?? [];
    expect(delivered.map(([id]) => id)).toEqual(ids);
    expect(delivered.map(([, fields]) => JSON.parse(fields[1] ?? 'null') as unknown)).toEqual(
      ids.map((_, i) => ({ id: i })),
    );

    const [pendingCount] = (await client.xpending(stream, group)) as [number, ...unknown[]];
    expect(pendingCount).toBe(6);

    const acked = ids.filter((_, i) => i % 2 === 0);
    expect(await client.xack(stream, group, ...acked)).toBe(acked.length);

    const pending = (await client.xpending(stream, group, '-', '+', 10)) as [
      string,
      string,
      number,
      number,
    ][];
    expect(pending.map(([id]) => id)).toEqual(ids.filter((_, i) => i % 2 === 1));
    expect(
      pending.every(([, consumer, , deliveries]) => consumer === 'consumer-a' && deliveries === 1),
    ).toBe(true);

    // Reading the consumer's own history ('0') redelivers only what it has not acknowledged.
    const history = (await client.xreadgroup(
      'GROUP',
      group,
      'consumer-a',
      'STREAMS',
      stream,
      '0',
    )) as StreamReply;
    expect(history?.[0]?.[1].map(([id]) => id)).toEqual(ids.filter((_, i) => i % 2 === 1));
  });
});
