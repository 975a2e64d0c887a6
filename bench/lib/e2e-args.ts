// bench:e2e's command line: --records N, --rounds R, and either --client platformatic|kafkajs (the
// Kafka client of the worker under test; connections.kafka.client's default when not given) or
// --clients (every client side by side in one run, with a two-worker SIGTERM pass for each);
// --skip-avro leaves out the Avro pass.
import { parseArgs } from 'node:util';
import { kafkaClients } from '../../src/config/connection-schema.ts';

export type KafkaClientName = (typeof kafkaClients)[number];

export interface E2eArgs {
  records: number;
  rounds: number;
  client: KafkaClientName | undefined;
  /** --clients: the clients compared in one run (both), or empty for a one-client run. */
  clients: readonly KafkaClientName[];
  /** The Avro pass (Schema Registry formats); --skip-avro leaves it out. */
  avro: boolean;
}

export function parseE2eArgs(args: string[]): E2eArgs {
  const { values } = parseArgs({
    args,
    options: {
      records: { type: 'string', default: '2000' },
      rounds: { type: 'string', default: '2' },
      client: { type: 'string' },
      clients: { type: 'boolean', default: false },
      'skip-avro': { type: 'boolean', default: false },
    },
  });
  const records = Number(values.records);
  if (!Number.isInteger(records) || records < 1)
    throw new Error(`--records ${values.records}: a whole number of records, at least 1`);
  const rounds = Number(values.rounds);
  if (!Number.isInteger(rounds) || rounds < 1)
    throw new Error(`--rounds ${values.rounds}: a whole number of rounds, at least 1`);
  const client = values.client;
  if (client !== undefined && !(kafkaClients as readonly string[]).includes(client))
    throw new Error(`--client ${client}: one of ${kafkaClients.join(', ')}`);
  if (client !== undefined && values.clients)
    throw new Error(
      `--client ${client} with --clients: --clients already runs ${kafkaClients.join(' and ')}; give one of the two`,
    );
  return {
    records,
    rounds,
    client: client as KafkaClientName | undefined,
    clients: values.clients ? kafkaClients : [],
    avro: !values['skip-avro'],
  };
}
