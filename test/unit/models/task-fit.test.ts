// Every task's needs against the committed fixtures: each task's own fixture fits it, and the
// misfits the issue names (an embedding model classifying text, a sequence classifier tagging
// tokens, an encoder generating) are refused with the model, the task and what is missing.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/errors.ts';
import { Hugot } from '../../../src/hugot.ts';
import { readModelFacts } from '../../../src/models/model-facts.ts';
import { misfitMessage, misfits } from '../../../src/models/task-fit.ts';
import { checkModelFit, modelFitProblems } from '../../../src/engine/model-fit.ts';
import { findTask, TASK_NAMES } from '../../../src/pipelines/registry.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const fixture = (name: string): string => join(ROOT, 'test', 'fixtures', 'models', name);
const MINILM = join(ROOT, 'models', 'all-MiniLM-L6-v2-int8');

/** A fixture each task runs on in its own tests. */
const FITTING: Record<string, string> = {
  featureExtraction: 'bert-feature-extraction',
  textClassification: 'bert-text-classification',
  tokenClassification: 'bert-token-classification',
  zeroShotClassification: 'bert-zero-shot',
  crossEncoder: 'bert-cross-encoder',
  questionAnswering: 'bert-question-answering',
  fillMask: 'bert-fill-mask',
  textGeneration: 'llama-causal-lm',
  imageClassification: 'vit-image-classification',
  tabular: 'sklearn-decision-tree-iris',
  objectDetection: 'detr-object-detection',
  imageFeatureExtraction: 'vit-image-features',
  depthEstimation: 'glpn-depth-estimation',
  audioClassification: 'wav2vec2-audio-classification',
  imageSegmentation: 'segformer-semantic-segmentation',
  maskGeneration: 'sam-mask-generation',
  backgroundRemoval: 'segformer-background-removal',
  zeroShotImageClassification: 'clip-split-towers',
  zeroShotObjectDetection: 'owlvit-zero-shot-object-detection',
  text2textGeneration: 't5-text2text',
  summarization: 'bart-summarization',
  translation: 't5-text2text',
  visualQuestionAnswering: 'vilt-visual-question-answering',
  documentQuestionAnswering: 'layoutlm-document-question-answering',
  imageToText: 'vit-gpt2-image-to-text',
  imageTextToText: 'llava-image-text-to-text',
  textToSpeech: 'speecht5-text-to-speech',
  textToAudio: 'speecht5-text-to-speech',
  automaticSpeechRecognition: 'whisper-speech-recognition',
  tableQuestionAnswering: 'tapas-table-question-answering',
};

async function missingFor(task: string, folder: string): Promise<string[]> {
  const definition = findTask(task);
  if (definition === undefined) throw new Error(`no task ${task}`);
  return misfits(definition.needs, await readModelFacts(folder));
}

describe('task fit', () => {
  it('names a fitting fixture for every task, and each fits', async () => {
    expect(Object.keys(FITTING).sort()).toEqual([...TASK_NAMES].sort());
    for (const [task, name] of Object.entries(FITTING))
      expect(await missingFor(task, fixture(name)), `${task} on ${name}`).toEqual([]);
  });

  it('refuses the MiniLM embedding model for textClassification, saying why', async () => {
    const missing = await missingFor('textClassification', MINILM);
    expect(misfitMessage('minilm', 'textClassification', missing)).toBe(
      "model 'minilm' does not fit task textClassification: its config.json has no id2label and " +
        'its outputs have no logits (one row of class logits per text [batch, labels]; outputs: last_hidden_state)',
    );
  });

  it('refuses a sequence classifier for tokenClassification: its logits are not per token', async () => {
    const missing = await missingFor('tokenClassification', fixture('bert-text-classification'));
    expect(missing).toEqual([
      'its output logits has rank 2 [batch_size, 4], not 3 (per-token logits [batch, tokens, labels])',
    ]);
  });

  it('refuses a token classifier for fillMask: its logits are not vocabulary-wide', async () => {
    const missing = await missingFor('fillMask', fixture('bert-token-classification'));
    expect(missing).toHaveLength(1);
    expect(missing[0]).toMatch(/logits \[batch_size, sequence_length, 9\] is 9 wide, not config\.json's vocab_size 2000/);
  });

  it('refuses an encoder for the generative tasks', async () => {
    const encoder = fixture('bert-feature-extraction');
    expect(await missingFor('textGeneration', encoder)).toEqual([
      'it is not a decoder with a KV cache (no past_key_values.* inputs; inputs: input_ids, attention_mask, token_type_ids)',
      'its outputs have no logits (a language-model head [batch, tokens, vocab]; outputs: last_hidden_state)',
    ]);
    const [seq2seq] = await missingFor('text2textGeneration', encoder);
    expect(seq2seq).toMatch(/not an encoder–decoder export .* it has model\)/);
  });

  it('refuses a text model for an image task and an image model for a text task', async () => {
    expect(await missingFor('imageClassification', fixture('bert-text-classification'))).toContain(
      'it has no preprocessor_config.json (image processor or feature extractor)',
    );
    expect(await missingFor('textClassification', fixture('vit-image-classification'))).toEqual([
      'it has no tokenizer.json',
      'its inputs have no input_ids (inputs: pixel_values)',
    ]);
  });

  it('checks a whole config: every misfit, and every folder that cannot be read', async () => {
    const problems = await modelFitProblems(
      {
        minilm: { path: MINILM },
        ner: { path: fixture('bert-token-classification') },
        gone: { path: join(ROOT, 'models', 'no-such-model') },
        unused: { path: fixture('bert-fill-mask'), variant: 'q4' },
      },
      {
        classify: { task: 'textClassification', model: 'minilm' },
        tag: { task: 'tokenClassification', model: 'ner' },
        embed: { task: 'featureExtraction', model: 'gone' },
      },
    );
    expect(problems.map((p) => p.field)).toEqual([
      'pipelines.classify',
      'models.gone',
      'models.unused.variant',
    ]);
    expect(problems[1]?.line).toMatch(/model 'gone': model folder .*no-such-model does not exist/);
    expect(problems[2]?.line).toMatch(/has no q4 variant; variants there: fp32/);
    await expect(
      checkModelFit({ minilm: { path: MINILM } }, { c: { task: 'textClassification', model: 'minilm' } }),
    ).rejects.toThrow(ConfigError);
  });

  it('is checked where the library registers a pipeline, before any weight loads', async () => {
    const hugot = new Hugot();
    try {
      hugot.registerModel('minilm', { path: MINILM });
      const refused = hugot.registerPipeline('classify', { task: 'textClassification', model: 'minilm' });
      await expect(refused).rejects.toBeInstanceOf(ConfigError);
      await expect(refused).rejects.toThrow(/model 'minilm' does not fit task textClassification/);
    } finally {
      await hugot.close();
    }
  });
});
