// A regular expression as a minimal DFA over Unicode code points, in flat typed arrays so the
// token-mask walk steps a state without allocating. refa (the finite-automata library behind
// eslint-plugin-regexp) parses the ECMAScript regex and builds and minimizes the automaton; this
// file only lays its transitions out and drops the states that can no longer reach a match.
import { createRequire } from 'node:module';
import type * as Refa from 'refa';
import type { DFA, JS } from 'refa';

// refa weighs ~7.6 MB of heap once loaded, and every inference thread imports this file through
// the task registry; a heap that size makes each of the thread's mark-compacts (ONNX Runtime's
// output buffers set their pace) several times dearer (issue 15). So it loads at the first
// pattern, not with the module.
let refa: typeof Refa | undefined;
function loadRefa(): typeof Refa {
  refa ??= createRequire(import.meta.url)('refa') as typeof Refa;
  return refa;
}

/** A pattern refa refused, or one whose automaton is too large; the message says which. */
export class PatternError extends Error {
  override name = 'PatternError';
}

/** Above this, building the automaton is refused: masks are cached per state. */
export const MAX_DFA_STATES = 20_000;

export class CharDfa {
  readonly initial = 0;
  readonly stateCount: number;
  private readonly accepting: Uint8Array;
  /** Next state for code points below 128, -1 for none: JSON is mostly ASCII. */
  private readonly ascii: Int32Array;
  /** Transitions of state s are lo/hi/to[offsets[s] .. offsets[s + 1]), ascending. */
  private readonly offsets: Int32Array;
  private readonly lo: Int32Array;
  private readonly hi: Int32Array;
  private readonly to: Int32Array;

  private constructor(
    accepting: Uint8Array,
    edges: readonly (readonly [number, number, number])[][],
  ) {
    this.stateCount = accepting.length;
    this.accepting = accepting;
    this.offsets = new Int32Array(this.stateCount + 1);
    const total = edges.reduce((n, e) => n + e.length, 0);
    this.lo = new Int32Array(total);
    this.hi = new Int32Array(total);
    this.to = new Int32Array(total);
    this.ascii = new Int32Array(this.stateCount * 128).fill(-1);
    let k = 0;
    edges.forEach((list, s) => {
      this.offsets[s] = k;
      for (const [lo, hi, to] of list) {
        this.lo[k] = lo;
        this.hi[k] = hi;
        this.to[k] = to;
        k += 1;
        for (let c = lo; c <= Math.min(hi, 127); c += 1) this.ascii[s * 128 + c] = to;
      }
    });
    this.offsets[this.stateCount] = k;
  }

  /**
   * The automaton of every string the pattern matches in full (as if anchored at both ends).
   * A leading `^` and a trailing `$` are allowed and mean just that; other assertions are not.
   */
  static compile(pattern: string): CharDfa {
    const { expression, maxCharacter } = parsePattern(pattern);
    let dfa: DFA;
    try {
      const { DFA, NFA } = loadRefa();
      const nfa = NFA.fromRegex(expression, { maxCharacter }, { assertions: 'throw' });
      dfa = DFA.fromFA(nfa, new DFA.LimitedNodeFactory(MAX_DFA_STATES));
    } catch (err) {
      throw patternError(err);
    }
    dfa.minimize();
    return CharDfa.fromRefa(dfa);
  }

  private static fromRefa(dfa: DFA): CharDfa {
    const nodes = [...dfa.nodes()];
    // Only states from which a match is still reachable are kept: a walk that leaves them fails.
    const into = new Map<DFA.Node, DFA.Node[]>(nodes.map((n) => [n, []]));
    for (const node of nodes) for (const to of node.out.values()) into.get(to)?.push(node);
    const live = new Set<DFA.Node>();
    const queue = nodes.filter((n) => dfa.finals.has(n));
    for (let node = queue.pop(); node !== undefined; node = queue.pop()) {
      if (live.has(node)) continue;
      live.add(node);
      queue.push(...(into.get(node) ?? []));
    }
    if (!live.has(dfa.initial)) throw new PatternError('the pattern matches nothing');
    const kept = [dfa.initial, ...nodes.filter((n) => n !== dfa.initial && live.has(n))];
    const index = new Map(kept.map((n, i) => [n, i]));
    const accepting = new Uint8Array(kept.length);
    const edges = kept.map((node, s) => {
      if (dfa.finals.has(node)) accepting[s] = 1;
      const list: [number, number, number][] = [];
      for (const [range, to] of node.out.entries()) {
        const target = index.get(to);
        if (target !== undefined) list.push([range.min, range.max, target]);
      }
      return list;
    });
    return new CharDfa(accepting, edges);
  }

  accepts(state: number): boolean {
    return this.accepting[state] === 1;
  }

  /** Whether any character leads on from the state. */
  continues(state: number): boolean {
    return (this.offsets[state + 1] as number) > (this.offsets[state] as number);
  }

  /** The state after `cp`, or -1 when the pattern cannot continue with it. */
  next(state: number, cp: number): number {
    if (cp < 128) return this.ascii[state * 128 + cp] as number;
    const end = this.offsets[state + 1] as number;
    for (let k = this.offsets[state] as number; k < end; k += 1) {
      if (cp < (this.lo[k] as number)) return -1;
      if (cp <= (this.hi[k] as number)) return this.to[k] as number;
    }
    return -1;
  }

  /** Whether some code point in [lo, hi] leads on (a UTF-8 character only partly read). */
  anyIn(state: number, lo: number, hi: number): boolean {
    const end = this.offsets[state + 1] as number;
    for (let k = this.offsets[state] as number; k < end; k += 1) {
      if ((this.lo[k] as number) <= hi && (this.hi[k] as number) >= lo) return true;
    }
    return false;
  }

  /** Whether the whole text matches. */
  matches(text: string): boolean {
    let state = this.initial;
    for (const char of text) {
      state = this.next(state, char.codePointAt(0) as number);
      if (state < 0) return false;
    }
    return this.accepts(state);
  }
}

/** The pattern's syntax tree (cheap: no automaton); a PatternError says what is refused. */
export function parsePattern(pattern: string): JS.ParseResult {
  try {
    return loadRefa()
      .JS.Parser.fromLiteral({ source: stripAnchors(pattern), flags: 'u' })
      .parse({
        assertions: 'throw',
        backreferences: 'throw',
      });
  } catch (err) {
    throw patternError(err);
  }
}

function patternError(err: unknown): PatternError {
  if (err instanceof loadRefa().TooManyNodesError)
    return new PatternError(
      `its automaton has more than ${MAX_DFA_STATES} states; bound fewer repetitions (maxLength, maxItems)`,
    );
  const message = err instanceof Error ? err.message : String(err);
  return new PatternError(
    /assertion/i.test(message)
      ? 'assertions (\\b, lookarounds, ^ or $ inside the pattern) are not supported'
      : /backreference/i.test(message)
        ? 'backreferences are not supported'
        : `not a valid pattern: ${message}`,
  );
}

/** Full-match semantics already: a leading ^ and a trailing unescaped $ say nothing more. */
function stripAnchors(pattern: string): string {
  let source = pattern.startsWith('^') ? pattern.slice(1) : pattern;
  if (source.endsWith('$')) {
    let backslashes = 0;
    for (let i = source.length - 2; i >= 0 && source[i] === '\\'; i -= 1) backslashes += 1;
    if (backslashes % 2 === 0) source = source.slice(0, -1);
  }
  return source;
}
