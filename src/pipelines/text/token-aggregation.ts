// Turning per-token label scores into entities, rule for rule as transformers'
// TokenClassificationPipeline does it (aggregate, aggregate_words, group_entities): tokens of one
// word are forced to agree (first / average / max), then adjacent tokens or words with the same
// tag are merged unless the next one opens a new entity with a B- tag.

export type AggregationStrategy = 'none' | 'simple' | 'first' | 'average' | 'max';

/** One token of the input with its label probabilities, before any aggregation. */
export interface PreEntity {
  /** The token as the vocabulary spells it, or the original text for an unknown token. */
  word: string;
  scores: readonly number[];
  /** Code-point offsets into the original text. */
  start: number;
  end: number;
  /** Position of the token in the encoded sequence (special tokens included). */
  index: number;
  isSubword: boolean;
}

/** An entity per token (aggregation 'none'). */
export interface TokenEntity {
  entity: string;
  score: number;
  index: number;
  word: string;
  start: number;
  end: number;
}

/** Adjacent tokens or words merged into one entity (every other aggregation). */
export interface EntityGroup {
  entityGroup: string;
  score: number;
  word: string;
  start: number;
  end: number;
}

export type Entity = TokenEntity | EntityGroup;

/** What aggregation needs from the model: its label names and its decoder. */
export interface AggregationContext {
  labelOf(index: number): string;
  /** Python's `tokenizer.convert_tokens_to_string`. */
  tokensToString(tokens: readonly string[]): string;
}

interface WordEntity {
  entity: string;
  score: number;
  word: string;
  start: number;
  end: number;
}

export function aggregate(
  preEntities: readonly PreEntity[],
  strategy: AggregationStrategy,
  context: AggregationContext,
): Entity[] {
  if (strategy === 'none' || strategy === 'simple') {
    const entities: TokenEntity[] = preEntities.map((pre) => {
      const best = argmax(pre.scores);
      return {
        entity: context.labelOf(best),
        score: pre.scores[best] ?? 0,
        index: pre.index,
        word: pre.word,
        start: pre.start,
        end: pre.end,
      };
    });
    return strategy === 'none' ? entities : groupEntities(entities, context);
  }
  return groupEntities(aggregateWords(preEntities, strategy, context), context);
}

/** Filters out entities whose label (or group) is ignored, as Python does after aggregation. */
export function withoutIgnored(entities: readonly Entity[], ignore: readonly string[]): Entity[] {
  return entities.filter((e) =>
    'entityGroup' in e ? !ignore.includes(e.entityGroup) : !ignore.includes(e.entity),
  );
}

function aggregateWords(
  preEntities: readonly PreEntity[],
  strategy: 'first' | 'average' | 'max',
  context: AggregationContext,
): WordEntity[] {
  const words: WordEntity[] = [];
  let group: PreEntity[] = [];
  for (const pre of preEntities) {
    // The first token always opens a word, even when it looks like a continuation.
    if (group.length > 0 && !pre.isSubword) {
      words.push(aggregateWord(group, strategy, context));
      group = [];
    }
    group.push(pre);
  }
  if (group.length > 0) words.push(aggregateWord(group, strategy, context));
  return words;
}

function aggregateWord(
  tokens: readonly PreEntity[],
  strategy: 'first' | 'average' | 'max',
  context: AggregationContext,
): WordEntity {
  let scores: readonly number[];
  if (strategy === 'first') scores = (tokens[0] as PreEntity).scores;
  else if (strategy === 'max') {
    // Python's max() keeps the first token among equals.
    let best = tokens[0] as PreEntity;
    for (const token of tokens) if (maxOf(token.scores) > maxOf(best.scores)) best = token;
    scores = best.scores;
  } else {
    const width = (tokens[0] as PreEntity).scores.length;
    scores = Array.from({ length: width }, (_, label) =>
      nanMean(tokens.map((t) => t.scores[label] ?? Number.NaN)),
    );
  }
  const best = argmax(scores);
  return {
    entity: context.labelOf(best),
    score: scores[best] ?? 0,
    word: context.tokensToString(tokens.map((t) => t.word)),
    start: (tokens[0] as PreEntity).start,
    end: (tokens.at(-1) as PreEntity).end,
  };
}

function groupEntities(
  entities: readonly WordEntity[],
  context: AggregationContext,
): EntityGroup[] {
  const groups: EntityGroup[] = [];
  let pending: WordEntity[] = [];
  for (const entity of entities) {
    const last = pending.at(-1);
    if (last !== undefined) {
      const [bi, tag] = bioTag(entity.entity);
      const [, lastTag] = bioTag(last.entity);
      if (!(tag === lastTag && bi !== 'B')) {
        groups.push(groupOf(pending, context));
        pending = [];
      }
    }
    pending.push(entity);
  }
  if (pending.length > 0) groups.push(groupOf(pending, context));
  return groups;
}

function groupOf(entities: readonly WordEntity[], context: AggregationContext): EntityGroup {
  const first = entities[0] as WordEntity;
  // Python names the group with split('-', 1)[-1], which differs from bioTag for labels such as
  // 'PER-X' (group 'X'); kept as Python has it.
  const dash = first.entity.indexOf('-');
  return {
    entityGroup: dash === -1 ? first.entity : first.entity.slice(dash + 1),
    score: nanMean(entities.map((e) => e.score)),
    word: context.tokensToString(entities.map((e) => e.word)),
    start: first.start,
    end: (entities.at(-1) as WordEntity).end,
  };
}

/** Labels without a B-/I- prefix count as continuations (I) of their own tag. */
function bioTag(label: string): ['B' | 'I', string] {
  if (label.startsWith('B-')) return ['B', label.slice(2)];
  if (label.startsWith('I-')) return ['I', label.slice(2)];
  return ['I', label];
}

/** numpy's argmax: the first index of the largest value. */
function argmax(values: readonly number[]): number {
  let best = 0;
  for (let i = 1; i < values.length; i += 1) {
    if ((values[i] as number) > (values[best] as number)) best = i;
  }
  return best;
}

function maxOf(values: readonly number[]): number {
  return values.reduce((a, b) => Math.max(a, b), -Infinity);
}

function nanMean(values: readonly number[]): number {
  const kept = values.filter((v) => !Number.isNaN(v));
  return kept.length === 0 ? Number.NaN : kept.reduce((a, b) => a + b, 0) / kept.length;
}
