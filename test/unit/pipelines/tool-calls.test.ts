// Tool calls: tools offered through the chat template (or, for a template that ignores them, a
// system message), Hermes-style <tool_call> blocks parsed out of the output into toolCalls, on
// the pipeline and the generative engine.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InputError } from '../../../src/errors.ts';
import { GenerativeEngine } from '../../../src/generative/generative-engine.ts';
import { ChatTemplate } from '../../../src/pipelines/generation/chat-template.ts';
import { TextGenerationPipeline } from '../../../src/pipelines/generation/text-generation.ts';
import { parseToolCalls } from '../../../src/pipelines/generation/tool-calls.ts';
import { ModelStore } from '../../../src/pipelines/runtime/model-store.ts';
import type { TextTokenizer } from '../../../src/pipelines/runtime/text-tokenizer.ts';

const MODEL = join(import.meta.dirname, '..', '..', 'fixtures', 'models', 'llama-causal-lm');
const weather = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};
const messages = [{ role: 'user', content: 'Weather in Oslo?' }];
// Only this shape can come out (the tiny vocabulary spells it in ~50 tokens): the model picks
// the city.
const callPattern =
  '<tool_call>\\{"name":"get_weather","arguments":\\{"city":"[A-Z][a-z]?"\\}\\}</tool_call>';

describe('parseToolCalls', () => {
  it('reads every block in order, an unclosed last one, and string arguments', () => {
    const text =
      'Sure.<tool_call>\n{"name": "a", "arguments": {"x": 1}}\n</tool_call>' +
      '<tool_call>{"name": "b", "arguments": "{\\"y\\": [2]}"}</tool_call>' +
      '<tool_call>{"name": "c", "parameters": {}}';
    expect(parseToolCalls(text)).toEqual([
      { name: 'a', arguments: { x: 1 } },
      { name: 'b', arguments: { y: [2] } },
      { name: 'c', arguments: {} },
    ]);
  });

  it('leaves out malformed blocks and finds none in plain text', () => {
    expect(parseToolCalls('<tool_call>{"name": </tool_call><tool_call>[1]</tool_call>')).toEqual(
      [],
    );
    expect(parseToolCalls('<tool_call>{"arguments": {}}</tool_call>')).toEqual([]);
    expect(parseToolCalls('no calls here')).toEqual([]);
  });
});

describe('tools in the prompt', () => {
  const fakeTokenizer = (template: string): TextTokenizer =>
    ({
      folder: 'fake',
      config: { chat_template: template },
      special: { bos: '<s>', eos: '</s>' },
    }) as unknown as TextTokenizer;

  it('a template that renders tools gets them as `tools`', () => {
    const template = ChatTemplate.fromTokenizer(
      fakeTokenizer(
        '{% if tools %}TOOLS:{% for t in tools %}{{ t.function.name }};{% endfor %}{% endif %}' +
          '{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}',
      ),
    );
    expect(template?.rendersTools).toBe(true);
    expect(
      template?.render(messages, {
        addGenerationPrompt: true,
        continueFinalMessage: false,
        tools: [weather],
      }),
    ).toBe('TOOLS:get_weather;[user]Weather in Oslo?');
  });

  it('a template that ignores tools gets them in a system message (fixture model)', async () => {
    const store = new ModelStore();
    try {
      const gen = new TextGenerationPipeline(await store.load({ path: MODEL }));
      const prompt = await gen.decode(
        await gen.promptIds({ kind: 'chat', messages, tools: [weather] }, 'Be brief.'),
      );
      expect(prompt).toContain('Be brief.');
      expect(prompt).toContain(`<tools>\n${JSON.stringify(weather)}\n</tools>`);
      expect(prompt).toContain('<tool_call>');
      expect(prompt.indexOf('Be brief.')).toBeLessThan(prompt.indexOf('<tools>'));
      expect(prompt).toContain('Weather in Oslo?');
    } finally {
      await store.close();
    }
  });
});

describe('tool calls from generation', () => {
  const store = new ModelStore();
  let gen: TextGenerationPipeline;
  let engine: GenerativeEngine;
  beforeAll(async () => {
    gen = new TextGenerationPipeline(await store.load({ path: MODEL }), { maxNewTokens: 80 });
    engine = await GenerativeEngine.start({
      model: { path: MODEL },
      generation: { maxNewTokens: 80 },
      intraOpThreads: 1,
    });
  });
  afterAll(async () => {
    await engine.close('abort');
    await store.close();
  });

  it('the pipeline parses the call into toolCalls; without tools there is no field', async () => {
    const options = { responseFormat: { type: 'regex' as const, pattern: callPattern } };
    const result = await gen.generate({ messages, tools: [weather] }, options);
    expect(result.formatError, result.text).toBeUndefined();
    expect(result.toolCalls).toHaveLength(1);
    expect(result.toolCalls?.[0]?.name).toBe('get_weather');
    expect((result.toolCalls?.[0]?.arguments as { city: string }).city).toMatch(/^[A-Z][a-z]?$/);
    const plain = await gen.generate({ messages }, options);
    expect(plain.toolCalls).toBeUndefined();
    const free = await gen.generate({ messages, tools: [weather] }, { maxNewTokens: 8 });
    expect(free.toolCalls).toEqual([]);
  });

  it('the engine does the same, and refuses tools that are not a list', async () => {
    const result = await engine.submit(
      { messages, tools: [weather] },
      { generation: { responseFormat: { type: 'regex', pattern: callPattern } } },
    ).result;
    expect(result.toolCalls?.[0]?.name).toBe('get_weather');
    await expect(engine.submit({ messages, tools: 'all' }).result).rejects.toBeInstanceOf(
      InputError,
    );
  });
});
