// "Did you mean ...?" for names a user types: task names, option keys, enum values. Compared
// without case, '_' or '-', so Python's snake_case (`top_k`) finds its camelCase twin (`topK`).

/** The closest candidate within a few edits, or undefined when none is close enough. */
export function closest(word: string, candidates: Iterable<string>): string | undefined {
  const wanted = fold(word);
  // A short word is easily one edit from anything; demand more of a match there.
  const limit = wanted.length <= 4 ? 1 : Math.max(2, Math.floor(wanted.length / 4));
  let best: string | undefined;
  let bestDistance = limit + 1;
  for (const candidate of candidates) {
    const distance = editDistance(wanted, fold(candidate));
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** `; did you mean 'x'?` when a candidate is close, else nothing. */
export function didYouMean(word: string, candidates: Iterable<string>): string {
  const near = closest(word, candidates);
  return near === undefined ? '' : `; did you mean '${near}'?`;
}

/** `; did you mean 'x'?` when a candidate is close, else `; expected one of a, b, c`. */
export function suggestion(word: string, candidates: readonly string[]): string {
  const hint = didYouMean(word, candidates);
  if (hint !== '') return hint;
  return candidates.length > 0 ? `; expected one of ${candidates.join(', ')}` : '';
}

function fold(word: string): string {
  return word.toLowerCase().replace(/[_-]/g, '');
}

/** Levenshtein distance, one row at a time. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current[j] = Math.min(
        (previous[j] as number) + 1,
        (current[j - 1] as number) + 1,
        substitution,
      );
    }
    previous = current;
  }
  return previous[b.length] as number;
}
