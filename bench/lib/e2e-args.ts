// bench:e2e's command line: --records N, --rounds R, --client platformatic|kafkajs (the Kafka
// client of the worker under test; connections.kafka.client's default when not given).
import { parseArgs } from 'node:util';
import { kafkaClients } from '../../src/config/connection-schema.ts';

export interface E2eArgs {
  records: number;
  rounds: number;
  client: (typeof kafkaClients)[number] | undefined;
}

export function parseE2eArgs(args: string[]): E2eArgs {
  const { values } = parseArgs({
    args,
    options: {
      records: { type: 'string', default: '2000' },
      rounds: { type: 'string', default: '2' },
      client: { type: 'string' },
    },
  });
  const records = Number(values.records);
  if (!Number.isInteger(records) || records < 1)
    throw new Error(`--records ${values.records}: a whole number of records, at least 1`);
  const client = values.client;
  if (client !== undefined && !(kafkaClients as readonly string[]).includes(client))
    throw new Error(`--client ${client}: one of ${kafkaClients.join(', ')}`);
  return {
    records,
    rounds: Math.max(1, Number(values.rounds)),
    client: client as E2eArgs['client'],
  };
}
