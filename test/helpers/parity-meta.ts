// What a parity test tells the parity report (parity-reporter.ts) through vitest's task meta. The
// report and the tests that set it (test/parity/parity-case.ts) both read it from here, so that
// the report needs nothing from the parity tests.
declare module 'vitest' {
  interface TaskMeta {
    maxAbsDiff?: number;
    /**
     * golden: compares our output with a Python reference output. rerun: compares with a golden
     * another test already checks (the same input again inside a batch). tokenizer: a tokenizer
     * golden. Absent: a behaviour case (no Python reference).
     */
    parity?: 'golden' | 'rerun' | 'tokenizer';
    /** The pipeline (task) the test belongs to; absent for the tokenizer and the engine loop. */
    pipeline?: string;
    /**
     * The Python reference the test compares with (test/parity/reference.ts): tests with the same
     * reference count as one golden or tokenizer case. Absent: the test is its own reference.
     */
    reference?: string;
    /** For a tokenizer case: the tokenizer it checks (a hash of its tokenizer file). */
    tokenizer?: string;
  }
}

export {};
