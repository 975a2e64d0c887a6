import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, InputError } from '../../../src/errors.ts';
import { FillMaskPipeline } from '../../../src/pipelines/text/fill-mask.ts';
import { ModelStore } from '../../../src/pipelines/runtime/model-store.ts';
import { modelPath } from '../../parity/goldens.ts';

const store = new ModelStore();
afterAll(() => store.close());
const pipeline = async (options = {}) =>
  new FillMaskPipeline(await store.load({ path: modelPath('bert-fill-mask') }), options);

describe('fillMask', () => {
  it('refuses a text without a mask, naming it', async () => {
    const fill = await pipeline();
    await expect(fill.run(['Hello [MASK].', 'no mask here'])).rejects.toMatchObject({
      name: 'InputError',
      field: 'inputs[1]',
    });
    await expect(fill.run([42 as unknown as string])).rejects.toBeInstanceOf(InputError);
  });

  it('refuses a text over the model limit unless truncation is on', async () => {
    const long = `[MASK] ${'word '.repeat(100)}`;
    await expect((await pipeline()).run([long])).rejects.toBeInstanceOf(InputError);
    const [result] = await (await pipeline({ truncation: true, topK: 1 })).run([long]);
    expect(result).toHaveLength(1);
  });

  it('uses the first token of a target outside the vocabulary, and says so', async () => {
    const fill = await pipeline({ targets: ['Mon', 'the', 'the'] });
    const targets = await fill.resolvedTargets();
    // 'Mon' is not a vocabulary entry (the vocabulary is lower-case): Python encodes it and keeps
    // its first token; 'the' is one, and the duplicate collapses.
    const tokenizer = fill.model.tokenizer;
    const [mon] = (await tokenizer?.encode(['Mon'], { addSpecialTokens: false })) ?? [];
    expect(tokenizer?.tokenId('Mon')).toBeUndefined();
    expect(targets?.ids).toEqual([mon?.ids[0], tokenizer?.tokenId('the')]);
    expect(targets?.warnings).toHaveLength(1);
    const [result] = await fill.run(['The meeting is on [MASK] at noon.']);
    expect(result).toHaveLength(2);
  });

  it('refuses targets that map to no token', async () => {
    const fill = await pipeline({ targets: [''] });
    await expect(fill.run(['[MASK].'])).rejects.toBeInstanceOf(ConfigError);
  });
});
