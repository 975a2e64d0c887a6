// Options and input checks of the crossEncoder, zeroShotClassification and tokenClassification
// pipelines that the Python goldens do not exercise.
import { describe, expect, it } from 'vitest';
import { ConfigError, InputError } from '../../../src/errors.ts';
import { CrossEncoderPipeline } from '../../../src/pipelines/text/cross-encoder.ts';
import { TokenClassificationPipeline } from '../../../src/pipelines/text/token-classification.ts';
import { pythonFormat } from '../../../src/pipelines/runtime/candidate-labels.ts';
import { ZeroShotClassificationPipeline } from '../../../src/pipelines/text/zero-shot-classification.ts';
import { useModelStore } from '../../parity/store.ts';

const load = useModelStore();

describe('crossEncoder', () => {
  const documents = ['Meeting moved to Thursday at noon.', '', 'Wind up your mates today!'];
  const query = 'when is the meeting';

  it('keeps input order with sort: false, applies threshold and topK after sorting', async () => {
    const model = await load('bert-cross-encoder');
    const [all] = await new CrossEncoderPipeline(model, { sort: false }).run([
      { query, documents },
    ]);
    expect(all?.map((d) => d.index)).toEqual([0, 1, 2]);
    const scores = all?.map((d) => d.score) ?? [];
    const middle = [...scores].sort((a, b) => a - b)[1] as number;
    const [kept] = await new CrossEncoderPipeline(model, { threshold: middle }).run([
      { query, documents },
    ]);
    expect(kept?.map((d) => d.score)).toEqual(
      scores.filter((s) => s >= middle).sort((a, b) => b - a),
    );
    const [top] = await new CrossEncoderPipeline(model, { topK: 1 }).run([{ query, documents }]);
    expect(top?.[0]?.score).toBe(Math.max(...scores));
  });

  it('gives each query the same ranking alone and inside a batch', async () => {
    const pipeline = new CrossEncoderPipeline(await load('bert-cross-encoder'));
    const [alone] = await pipeline.run([{ query, documents }]);
    const batch = await pipeline.run([
      { query: 'x', documents: ['a much longer document than the others in this batch'] },
      { query, documents },
      { query: 'y', documents: [] },
    ]);
    expect(batch[2]).toEqual([]);
    expect(batch[1]?.map((d) => d.index)).toEqual(alone?.map((d) => d.index));
    batch[1]?.forEach((d, i) => expect(d.score).toBeCloseTo(alone?.[i]?.score ?? NaN, 5));
  });

  it('rejects malformed inputs and models with several logits', async () => {
    const pipeline = new CrossEncoderPipeline(await load('bert-cross-encoder'));
    await expect(pipeline.run([{ query, documents: [3] } as never])).rejects.toThrow(InputError);
    await expect(pipeline.run(['text'] as never)).rejects.toThrow(InputError);
    const nli = new CrossEncoderPipeline(await load('bert-zero-shot'));
    await expect(nli.run([{ query, documents }])).rejects.toThrow(/one relevance logit/);
  });
});

describe('zeroShotClassification', () => {
  it('formats the hypothesis as Python str.format with one argument', () => {
    expect(pythonFormat('This example is {}.', 'x')).toBe('This example is x.');
    expect(pythonFormat('{{{0}}}', 'x')).toBe('{x}');
    expect(() => pythonFormat('about {topic}', 'x')).toThrow(ConfigError);
  });

  it('refuses a template without a placeholder and an empty label list', async () => {
    const model = await load('bert-zero-shot');
    expect(
      () =>
        new ZeroShotClassificationPipeline(model, {
          candidateLabels: ['a'],
          hypothesisTemplate: 'no slot',
        }),
    ).toThrow(ConfigError);
    expect(() => new ZeroShotClassificationPipeline(model, { candidateLabels: ' , ' })).toThrow(
      ConfigError,
    );
  });

  it('splits comma-separated labels as Python does', async () => {
    const model = await load('bert-zero-shot');
    const text = 'Meeting moved to Thursday at noon.';
    const [fromString] = await new ZeroShotClassificationPipeline(model, {
      candidateLabels: 'travel, business,,spam ',
    }).run([text]);
    const [fromList] = await new ZeroShotClassificationPipeline(model, {
      candidateLabels: ['travel', 'business', 'spam'],
    }).run([text]);
    expect(fromString).toEqual(fromList);
  });
});

describe('tokenClassification', () => {
  it('rejects non-string inputs and unknown strategies', async () => {
    const model = await load('bert-token-classification');
    await expect(new TokenClassificationPipeline(model).run([42] as never)).rejects.toThrow(
      InputError,
    );
    expect(
      () => new TokenClassificationPipeline(model, { aggregationStrategy: 'mean' as never }),
    ).toThrow(ConfigError);
  });
});
