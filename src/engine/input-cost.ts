// How much of a batch an input will take, measured on the main thread before it is queued: the
// token length of its longest row and how many rows it makes. With 'tokens' pricing the inference
// thread tokenizes again (docs/batching.md has the measurement that made this the cheaper choice
// on CPU); with 'characters' the length is estimated and only the inference thread tokenizes.
import type { TextTokenizer } from '../pipelines/text-tokenizer.ts';

export interface InputCost {
  tokens: number;
  rows: number;
}

export interface CostContext {
  task: string;
  tokenizer: TextTokenizer | undefined;
  options: Record<string, unknown>;
  pricing?: 'tokens' | 'characters';
}

/**
 * WordPiece and BPE vocabularies average about four characters of English per token; the two
 * special tokens are added. Over-estimating only leaves a batch a little short of its budget.
 */
export function estimateTokens(text: string, pair?: string): number {
  const characters = text.length + (pair?.length ?? 0);
  return Math.ceil(characters / 4) + (pair === undefined ? 2 : 3);
}

export async function inputCost(input: unknown, context: CostContext): Promise<InputCost> {
  const { tokenizer } = context;
  if (tokenizer === undefined) return { tokens: 1, rows: 1 };
  // featureExtraction may truncate below the tokenizer's limit (sentence-transformers' 256); the
  // batch budget must see the length the worker will actually run, or long inputs look twice
  // their size and batches come out half full.
  const truncateAt =
    context.task === 'featureExtraction' && typeof context.options['maxLength'] === 'number'
      ? context.options['maxLength']
      : Number.POSITIVE_INFINITY;
  const max = Math.min(tokenizer.maxLength ?? Number.POSITIVE_INFINITY, truncateAt);
  const length = async (text: string, pair?: string): Promise<number> => {
    if (context.pricing === 'characters') return Math.min(estimateTokens(text, pair), max);
    const [encoded] = await tokenizer.encode([pair === undefined ? text : [text, pair]], {
      truncation: false,
    });
    return Math.min(encoded?.ids.length ?? 1, max);
  };
  if (typeof input === 'string') {
    if (context.task === 'zeroShotClassification') {
      const labels = context.options['candidateLabels'];
      const rows = Array.isArray(labels)
        ? labels.length
        : typeof labels === 'string'
          ? labels.split(',').length
          : 1;
      // The hypothesis adds a handful of tokens to every row.
      return { tokens: Math.min((await length(input)) + 8, max), rows: Math.max(rows, 1) };
    }
    return { tokens: await length(input), rows: 1 };
  }
  if (input === null || typeof input !== 'object') return { tokens: 1, rows: 1 };
  const record = input as Record<string, unknown>;
  if (typeof record['text'] === 'string') {
    const pair =
      typeof record['textPair'] === 'string' && record['textPair'] !== ''
        ? record['textPair']
        : undefined;
    return { tokens: await length(record['text'], pair), rows: 1 };
  }
  if (typeof record['question'] === 'string' && typeof record['context'] === 'string') {
    const [question, passage] = await Promise.all([
      length(record['question']),
      length(record['context']),
    ]);
    const window = Number(context.options['maxSeqLength'] ?? max);
    const room = Math.max(1, window - question - 3);
    const stride = Math.min(Number(context.options['docStride'] ?? 128), Math.floor(window / 2));
    const rows = passage <= room ? 1 : 1 + Math.ceil((passage - room) / Math.max(1, room - stride));
    return { tokens: Math.min(question + passage + 3, window), rows };
  }
  if (typeof record['query'] === 'string' && Array.isArray(record['documents'])) {
    const docs = record['documents'].filter((d): d is string => typeof d === 'string');
    const lengths = await Promise.all(docs.map((d) => length(record['query'] as string, d)));
    return { tokens: Math.max(1, ...lengths), rows: Math.max(1, docs.length) };
  }
  return { tokens: 1, rows: 1 };
}
