// Shaping of streamed generation records with a fake engine: partials every N tokens with
// sequence numbers and deltas that add up to the final's text, request ids from the origin or a
// record field, per-request options and deadline handed to the engine, a revoked record's
// partials stopped, a failed partial write turned into a SinkError that cancels the generation.
import { describe, expect, it } from 'vitest';
import type { RouteConfig } from '../../../src/config/schema.ts';
import { InputError, SinkError } from '../../../src/errors.ts';
import { PartitionLane } from '../../../src/connectors/kafka/partition-lane.ts';
import type { GenerateOptions } from '../../../src/generative/generative-engine.ts';
import type { GenerationEvent } from '../../../src/pipelines/generation/text-generation.ts';
import {
  partialRecord,
  partialSource,
  requestIdOf,
  type FinalValue,
  type PartialValue,
} from '../../../src/route/generation-records.ts';
import type { OutputRecord, SourceRecord } from '../../../src/route/record.ts';
import {
  StreamedGeneration,
  type GenerationSubmitter,
} from '../../../src/route/streamed-generation.ts';

const TOKENS = ['He', 'llo', ' ', 'wor', 'ld', '!', ''];

/** Yields one token event per text (a tick apart), then done; stops when the signal aborts. */
class FakeEngine implements GenerationSubmitter {
  readonly calls: { input: unknown; options: GenerateOptions }[] = [];
  private readonly texts: readonly string[];
  constructor(texts: readonly string[] = TOKENS) {
    this.texts = texts;
  }

  submit(input: unknown, options: GenerateOptions): AsyncIterable<GenerationEvent> {
    this.calls.push({ input, options });
    const texts = this.texts;
    return (async function* () {
      for (const [i, text] of texts.entries()) {
        await new Promise((r) => setTimeout(r, 1));
        if (options.signal?.aborted === true) throw new Error('cancelled');
        yield { type: 'token', tokenId: 100 + i, text };
      }
      yield {
        type: 'done',
        result: {
          text: texts.join(''),
          tokenIds: texts.map((_, i) => 100 + i),
          finishReason: 'length',
          promptTokens: 3,
          generatedTokens: texts.length,
        },
      };
    })();
  }
}

function kafkaRecord(extra: Partial<SourceRecord> = {}): SourceRecord {
  return {
    value: Buffer.from('{}'),
    key: Buffer.from('k1'),
    headers: { trace: 't' },
    origin: { kind: 'kafka', topic: 'prompts', partition: 3, offset: '42' },
    ...extra,
  };
}

function route(everyTokens: number | undefined): { output: RouteConfig['output'] } {
  return {
    output: {
      mode: 'result',
      field: 'result',
      overwrite: false,
      keys: 'python',
      returnFullText: true,
      subjectNaming: 'topic',
      ...(everyTokens !== undefined ? { stream: { everyTokens } } : {}),
    },
  };
}

const values = (written: OutputRecord[]): PartialValue[] =>
  written.map((r) => JSON.parse(r.value.toString('utf8')) as PartialValue);

describe('streamed generation', () => {
  it('writes a partial every N tokens, then resolves with the final', async () => {
    const engine = new FakeEngine();
    const written: OutputRecord[] = [];
    const { output } = route(2);
    const streamed = new StreamedGeneration({
      engine,
      output,
      generation: { timeoutMs: 1234 },
      writePartial: (record) => {
        written.push(record);
        return Promise.resolve();
      },
    });
    const record = kafkaRecord();
    const final: FinalValue = await streamed.run('Hi', { record, parsed: { id: 'mail-7' } });
    const partials = values(written);
    // Each partial names its source record: the key, and the record's own id.
    expect(partials.map((p) => p.source)).toEqual(Array(3).fill({ key: 'k1', id: 'mail-7' }));
    expect(partials.map((p) => [p.sequence, p.delta, p.generatedTokens, p.final])).toEqual([
      [0, 'Hello', 2, false],
      [1, ' wor', 4, false],
      [2, 'ld!', 6, false],
    ]);
    expect(final).toMatchObject({
      requestId: 'prompts-3-42',
      sequence: 3,
      final: true,
      delta: '',
      text: 'Hello world!',
      finishReason: 'length',
      promptTokens: 3,
      generatedTokens: 7,
    });
    expect(partials.map((p) => p.delta).join('') + final.delta).toBe(final.text);
    expect(new Set(partials.map((p) => p.requestId))).toEqual(new Set(['prompts-3-42']));
    for (const r of written) {
      expect(r.key?.toString()).toBe('k1');
      expect(r.headers).toEqual({ trace: 't' });
      expect(r.origin).toBe(record.origin);
    }
    expect(engine.calls[0]?.options.timeoutMs).toBe(1234);
    expect(engine.calls[0]?.input).toBe('Hi');
  });

  it('writes the final only when stream is absent or everyTokens is 0', async () => {
    for (const every of [undefined, 0]) {
      const written: OutputRecord[] = [];
      const streamed = new StreamedGeneration({
        engine: new FakeEngine(),
        output: route(every).output,
        generation: undefined,
        writePartial: (r) => Promise.resolve(void written.push(r)),
      });
      const final = await streamed.run('Hi', { record: kafkaRecord(), parsed: {} });
      expect(written).toEqual([]);
      expect(final).toMatchObject({ sequence: 0, delta: 'Hello world!', text: 'Hello world!' });
    }
  });

  it('takes the request id and options from record fields, refusing bad ones', async () => {
    const engine = new FakeEngine(['a']);
    const streamed = new StreamedGeneration({
      engine,
      output: route(undefined).output,
      generation: { requestIdField: 'meta.id', optionsField: 'options' },
      writePartial: () => Promise.resolve(),
    });
    const record = kafkaRecord();
    const parsed = { meta: { id: 'req-7' }, options: { maxNewTokens: 3, seed: 1 } };
    expect((await streamed.run('x', { record, parsed })).requestId).toBe('req-7');
    expect(engine.calls[0]?.options.generation).toEqual({ maxNewTokens: 3, seed: 1 });
    expect((await streamed.run('x', { record, parsed: { meta: { id: 9 } } })).requestId).toBe('9');
    await expect(streamed.run('x', { record, parsed: {} })).rejects.toThrow(InputError);
    await expect(
      streamed.run('x', { record, parsed: { meta: { id: 'a' }, options: { topP: 2 } } }),
    ).rejects.toThrow(/options\.topP/);
  });

  it('stops writing partials when the record is given up (a revoked partition)', async () => {
    const lane = new PartitionLane({ topic: 'prompts', partition: 0 });
    const written: OutputRecord[] = [];
    const streamed = new StreamedGeneration({
      engine: new FakeEngine(),
      output: route(1).output,
      generation: undefined,
      writePartial: (r) => {
        written.push(r);
        if (written.length === 2) lane.retire();
        return Promise.resolve();
      },
    });
    await expect(
      streamed.run('x', { record: kafkaRecord({ signal: lane.signal }), parsed: {} }),
    ).rejects.toThrow('cancelled');
    expect(lane.retired).toBe(true);
    expect(written).toHaveLength(2);
  });

  it('turns a failed partial write into a SinkError and cancels the generation', async () => {
    const engine = new FakeEngine();
    const streamed = new StreamedGeneration({
      engine,
      output: route(1).output,
      generation: undefined,
      writePartial: () => Promise.reject(new Error('broker down')),
    });
    const failure = streamed.run('x', { record: kafkaRecord(), parsed: {} });
    await expect(failure).rejects.toThrow(SinkError);
    await expect(failure).rejects.toThrow(/broker down/);
    expect(engine.calls[0]?.options.signal?.aborted).toBe(true);
  });
});

describe('generation records', () => {
  it('derives stable request ids from every origin', () => {
    expect(requestIdOf({ kind: 'kafka', topic: 't', partition: 1, offset: '9' })).toBe('t-1-9');
    expect(requestIdOf({ kind: 'bullmq', queue: 'q', jobId: '17' })).toBe('q-17');
    expect(requestIdOf({ kind: 'redis-stream', stream: 's', id: '1-0' })).toBe('s-1-0');
    expect(requestIdOf({ kind: 'file', path: 'in.jsonl', line: 3 })).toBe('in.jsonl:3');
  });

  it("names a partial's source by a key that is not UTF-8 in base64, and without an id when the record has none", () => {
    const record = kafkaRecord({ key: Buffer.from([0xff, 0xfe]) });
    expect(partialSource(record, { id: { nested: true } })).toEqual({ key: '//4=' });
    expect(partialSource({ ...record, key: null }, 'text')).toEqual({ key: null });
    expect(partialSource(record, { id: 12 })).toEqual({ key: '//4=', id: 12 });
  });

  it('puts a partial under output.field in merge mode, alone in result mode', () => {
    const partial: PartialValue = {
      requestId: 'r',
      sequence: 0,
      final: false,
      source: { key: 'k1' },
      delta: 'ab',
      generatedTokens: 2,
    };
    const merged = partialRecord(kafkaRecord(), { mode: 'merge', field: 'gen.out' }, partial);
    expect(JSON.parse(merged.value.toString())).toEqual({ gen: { out: partial } });
    const alone = partialRecord(kafkaRecord(), { mode: 'result', field: 'x' }, partial);
    expect(JSON.parse(alone.value.toString())).toEqual(partial);
    expect(alone.key?.toString()).toBe('k1');
  });
});
