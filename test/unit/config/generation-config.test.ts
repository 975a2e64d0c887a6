// The config of generation routes: the generative block's defaults come from the engine and the
// scheduler, bad values name their field, and output.stream / generation are refused where they
// cannot work (no generative pipeline, exactly-once, a bullmq-result sink, text records).
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load-config.ts';
import { ConfigError } from '../../../src/errors.ts';
import { thrownBy } from '../../helpers/thrown.ts';

function config(pipeline: string, route: string, top = ''): string {
  return `
models:
  lm: { path: models/lm }
pipelines:
  write: { task: textGeneration, model: lm, options: { maxNewTokens: 16 }, ${pipeline} }
routes:
  - source: { type: kafka, topic: prompts, groupId: g }
    pipeline: write
    input: { field: prompt }
    sink: { type: kafka, topic: completions }
    ${route}
connections: { kafka: { brokers: [b:9092] } }
${top}
`;
}

function fails(text: string): ConfigError {
  return thrownBy(ConfigError, () => parseConfigText(text, {}));
}

describe('generation route config', () => {
  it('fills the engine and scheduler defaults and keeps the route settings', () => {
    const parsed = parseConfigText(
      config(
        'generative: {}',
        'output: { mode: result, stream: { everyTokens: 4 } }\n    generation: { timeoutMs: 5000, optionsField: options }',
      ),
      {},
    );
    expect(parsed.pipelines['write']?.generative).toEqual({
      device: 'cpu',
      threads: 1,
      maxPending: 256,
      maxActive: 32,
      maxKvTokens: 16_384,
      stepTokens: 256,
      prefixCache: {
        maxBytes: 128 * 1024 * 1024,
        blockTokens: 16,
        minTokens: 32,
        sharedInput: true,
      },
    });
    expect(parsed.routes[0]?.output).toEqual({
      mode: 'result',
      field: 'result',
      overwrite: false,
      keys: 'python',
      returnFullText: true,
      subjectNaming: 'topic',
      stream: { everyTokens: 4 },
    });
    expect(parsed.routes[0]?.generation).toEqual({ timeoutMs: 5000, optionsField: 'options' });
  });

  it('names the field of a bad generative value', () => {
    expect(fails(config('generative: { threads: 0 }', '')).field).toBe(
      'pipelines.write.generative.threads',
    );
    expect(fails(config('generative: { maxActive: 8, stepTokens: 8 }', '')).field).toBe(
      'pipelines.write.generative.stepTokens',
    );
    expect(fails(config('generative: { maxActiv: 8 }', '')).message).toMatch(/maxActiv/);
    expect(fails(config('generative: { prefixCache: { maxBytes: -1 } }', '')).field).toBe(
      'pipelines.write.generative.prefixCache.maxBytes',
    );
    expect(fails(config('generative: {}', 'output: { stream: { everyTokens: -1 } }')).field).toBe(
      'routes.0.output.stream.everyTokens',
    );
    expect(fails(config('generative: {}', 'generation: { timeoutMs: 0 }')).field).toBe(
      'routes.0.generation.timeoutMs',
    );
  });

  it('checks the pipeline options of a generative pipeline at load', () => {
    const text = config('generative: {}', '').replace('maxNewTokens: 16', 'maxNewTokens: many');
    expect(fails(text).field).toBe('pipelines.write.options.maxNewTokens');
  });

  it('refuses generative on other tasks', () => {
    const text = config('generative: {}', '').replace('task: textGeneration', 'task: fillMask');
    expect(fails(text).message).toMatch(
      /pipelines\.write\.generative: only textGeneration, text2textGeneration, summarization, translation, imageToText, imageTextToText, textToSpeech, textToAudio, automaticSpeechRecognition pipelines/,
    );
  });

  it('refuses output.stream and generation without a generative pipeline', () => {
    const stream = fails(config('', 'output: { stream: { everyTokens: 4 } }'));
    expect(stream.field).toBe('routes.0.output.stream');
    expect(stream.message).toMatch(/add pipelines\.write\.generative/);
    expect(fails(config('', 'generation: { timeoutMs: 10 }')).field).toBe('routes.0.generation');
  });

  it('refuses streamed partials under exactly-once, saying how to fix it', () => {
    const err = fails(
      config(
        'generative: {}',
        'output: { stream: { everyTokens: 4 } }',
        'delivery: { mode: exactly-once }',
      ),
    );
    expect(err.field).toBe('routes.0.output.stream');
    expect(err.message).toMatch(/remove output\.stream .* or use delivery\.mode at-least-once/);
    // Final records only (everyTokens 0, or no stream) are fine under exactly-once.
    expect(() =>
      parseConfigText(
        config(
          'generative: {}',
          'output: { stream: { everyTokens: 0 } }',
          'delivery: { mode: exactly-once }',
        ),
        {},
      ),
    ).not.toThrow();
  });

  it('refuses partials to a bullmq-result sink and record fields of text records', () => {
    const bullmq = config('generative: {}', 'output: { stream: { everyTokens: 2 } }')
      .replace('{ type: kafka, topic: prompts, groupId: g }', '{ type: bullmq, queue: q }')
      .replace('{ type: kafka, topic: completions }', '{ type: bullmq-result }')
      .replace(
        'connections: { kafka: { brokers: [b:9092] } }',
        'connections: { redis: { url: redis://r } }',
      );
    expect(fails(bullmq).field).toBe('routes.0.output.stream');
    const text = config('generative: {}', 'generation: { requestIdField: id }').replace(
      'input: { field: prompt }',
      'input: { format: text }',
    );
    expect(fails(text).field).toBe('routes.0.generation.requestIdField');
  });
});
