// Runs before every integration test file, ahead of its imports: kafkajs' read_committed filter
// must be replaced before anything loads kafkajs, and a vitest worker process keeps the kafkajs it
// loaded first for every later file (src/connectors/kafka/kafkajs-read-committed.ts).
import '../../src/connectors/kafka/kafkajs-read-committed.ts';
