// The route's default output: Python's keys and nesting per task, our own behind output.keys.
import { describe, expect, it } from 'vitest';
import type { RouteConfig } from '../../../src/config/schema.ts';
import { outputShaper } from '../../../src/route/output-keys.ts';

type Output = Pick<RouteConfig['output'], 'keys' | 'returnFullText' | 'stream'>;
const python: Output = { keys: 'python', returnFullText: true };
const shape = (task: string, result: unknown, input: unknown = 'x', output: Output = python) =>
  outputShaper(task, output, {})(result, input);

describe('output keys', () => {
  it("names grouped entities entity_group, as Python's token-classification pipeline", () => {
    const grouped = { entityGroup: 'PER', score: 0.9, word: 'jo', start: 0, end: 2 };
    const token = { entity: 'B-PER', score: 0.9, index: 1, word: 'jo', start: 0, end: 2 };
    expect(shape('tokenClassification', [grouped, token])).toEqual([
      { entity_group: 'PER', score: 0.9, word: 'jo', start: 0, end: 2 },
      token,
    ]);
  });

  it('gives generation as [{generated_text}]: the prompt and the new text, the chat with the answer, or the new text alone', () => {
    const result = { text: ' world', tokenIds: [1], finishReason: 'eos', promptTokens: 1 };
    expect(shape('textGeneration', result, 'hello')).toEqual([{ generated_text: 'hello world' }]);
    const chat = [{ role: 'user', content: 'hi' }];
    expect(shape('textGeneration', result, { messages: chat })).toEqual([
      { generated_text: [...chat, { role: 'assistant', content: ' world' }] },
    ]);
    expect(
      shape('textGeneration', { ...result, json: { a: 1 } }, 'p', {
        keys: 'python',
        returnFullText: false,
      }),
    ).toEqual([{ generated_text: ' world', json: { a: 1 } }]);
  });

  it("uses each text-to-text task's Python key, from the pipeline's result or the engine's text", () => {
    expect(shape('summarization', { summaryText: 's' })).toEqual([{ summary_text: 's' }]);
    expect(shape('translation', { text: 't', tokenIds: [2], requestId: 'r' })).toEqual([
      { translation_text: 't' },
    ]);
    expect(shape('text2textGeneration', { generatedText: 'g' })).toEqual([{ generated_text: 'g' }]);
    expect(shape('imageToText', { generatedText: 'a cat' })).toEqual([{ generated_text: 'a cat' }]);
    expect(
      shape(
        'imageTextToText',
        { generatedText: ' red', tokenIds: [3] },
        { image: 'b64', text: 'USER: <image> colour?' },
        { keys: 'python', returnFullText: false },
      ),
    ).toEqual([{ input_text: 'USER: <image> colour?', generated_text: ' red' }]);
  });

  it("answers a question with the answer itself when one is kept, as transformers' pipeline", () => {
    const answer = { score: 0.9, start: 0, end: 4, answer: 'Acme' };
    expect(shape('questionAnswering', [answer])).toEqual(answer);
    expect(shape('questionAnswering', [answer, answer])).toEqual([answer, answer]);
  });

  it('shapes ranking, depth, speech and embeddings as their Python libraries do', () => {
    expect(
      shape('crossEncoder', [{ index: 1, document: 'b', score: 0.8 }], {
        query: 'q',
        documents: [],
      }),
    ).toEqual([{ corpus_id: 1, score: 0.8, text: 'b' }]);
    const data = new Float32Array([1, 2, 3, 4, 5, 6]);
    const depth = new Uint8Array([9]);
    const rows = shape('depthEstimation', {
      depth,
      predictedDepth: { data, width: 3, height: 2 },
    }) as { predicted_depth: Float32Array[]; depth: Uint8Array };
    expect(rows.predicted_depth.map((r) => Array.from(r))).toEqual([
      [1, 2, 3],
      [4, 5, 6],
    ]);
    expect(shape('depthEstimation', { depth })).toEqual({ depth });
    const audio = new Uint8Array([1, 2]);
    expect(shape('textToSpeech', { audio, samplingRate: 16000 })).toEqual({
      audio,
      sampling_rate: 16000,
    });
    expect(
      shape('automaticSpeechRecognition', { text: 'hi', tokenIds: [1], finishReason: 'eos' }),
    ).toEqual({ text: 'hi' });
    const vector = new Float32Array([0.1]);
    expect(shape('featureExtraction', vector)).toBe(vector);
    expect(shape('featureExtraction', [vector, vector])).toEqual([[vector, vector]]);
    expect(shape('imageFeatureExtraction', vector)).toEqual([vector]);
  });

  it("keeps our own keys with output.keys hugot, on streamed routes, and for tasks already Python's", () => {
    const grouped = [{ entityGroup: 'PER', score: 1, word: 'a', start: 0, end: 1 }];
    expect(
      shape('tokenClassification', grouped, 'a', { keys: 'hugot', returnFullText: true }),
    ).toBe(grouped);
    const final = { requestId: 'r', sequence: 2, final: true, delta: '', text: 'x' };
    const streamed = outputShaper(
      'textGeneration',
      { ...python, stream: { everyTokens: 1 } },
      {},
    )(final, 'p');
    expect(streamed).toBe(final);
    const labels = [{ label: 'a', score: 1 }];
    expect(shape('textClassification', labels)).toBe(labels);
  });
});
