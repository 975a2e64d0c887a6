import { ProtocolError, MultipleErrors } from '@platformatic/kafka';
import { KafkaJSNonRetriableError, KafkaJSProtocolError } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { brokerAnswer } from '../../../../src/connectors/kafka/kafka-sink.ts';

describe("a rejected output's reason", () => {
  it("names the broker's error and code through @platformatic/kafka's wrapper", () => {
    const protocol = new ProtocolError('MESSAGE_TOO_LARGE');
    const wrapped = new MultipleErrors('Producing messages failed.', [protocol]);
    const answer = brokerAnswer(wrapped);
    expect(answer).toMatch(/^MESSAGE_TOO_LARGE \(error code 10\): /);
    expect(answer).toContain(protocol.message);
    expect(answer).not.toContain('Producing messages failed');
  });

  it("names it from kafkajs's protocol error, and keeps its message where kafkajs's wrapper drops the type", () => {
    const message = 'The request included message batch larger than the configured segment size';
    const protocol = new KafkaJSProtocolError(
      Object.assign(new Error(message), { type: 'RECORD_LIST_TOO_LARGE', code: 18 }),
    );
    expect(brokerAnswer(protocol)).toBe(`RECORD_LIST_TOO_LARGE (error code 18): ${message}`);
    expect(brokerAnswer(new KafkaJSNonRetriableError(protocol))).toBe(message);
  });

  it('falls back to the message where no broker error is in the chain', () => {
    expect(brokerAnswer(new Error('socket closed'))).toBe('socket closed');
  });
});
