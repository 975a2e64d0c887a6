import { describe, expect, it } from 'vitest';
import { nestsDeeperThan, SpliceRefused, spliceField } from '../../../src/route/json-text.ts';

const nested = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);

describe('JSON depth scan', () => {
  it('measures nesting without recursing, 10,000 levels included', () => {
    expect(nestsDeeperThan(`{"a":${nested(3)}}`, 4)).toBe(false);
    expect(nestsDeeperThan(`{"a":${nested(4)}}`, 4)).toBe(true);
    expect(nestsDeeperThan(`{"x":${nested(10_000)}}`, 64)).toBe(true);
    expect(nestsDeeperThan('{"a":{"b":{"c":{"d":1}}}}', 4)).toBe(false);
    expect(nestsDeeperThan('{"a":{"b":{"c":{"d":{}}}}}', 4)).toBe(true);
  });

  it('does not count brackets inside strings, escaped quotes included', () => {
    expect(nestsDeeperThan(JSON.stringify({ t: '[[[[[[{{{{{{' }), 1)).toBe(false);
    expect(nestsDeeperThan(JSON.stringify({ t: 'say \\"[[[[" and \\\\' }), 1)).toBe(false);
  });
});

describe('splicing a result into the record text', () => {
  const result = '{"label":"ok"}';

  it('keeps every byte outside the field: 64-bit ids, 1e400, spacing, escapes, key order', () => {
    const text = '{ "id": 9007199254740993, "big": 1e400, "t": "caf\\u00e9 \\"x\\"", "n": -0.10 }';
    const out = spliceField(text, 'result', result, false);
    expect(out).toBe(
      '{ "id": 9007199254740993, "big": 1e400, "t": "caf\\u00e9 \\"x\\"", "n": -0.10,"result":{"label":"ok"} }',
    );
    expect((JSON.parse(out) as { result: unknown }).result).toEqual({ label: 'ok' });
  });

  it('creates the missing objects of a dotted path, and enters existing ones', () => {
    expect(spliceField('{}', 'a.b.c', '1', false)).toBe('{"a":{"b":{"c":1}}}');
    expect(spliceField('{"a":{"x":[1,{"y":"}"}]},"z":2}', 'a.b', '1', false)).toBe(
      '{"a":{"x":[1,{"y":"}"}],"b":1},"z":2}',
    );
    expect(spliceField(' \n{ }', 'r', '[]', false)).toBe(' \n{"r":[] }');
  });

  it('refuses to replace an existing field unless asked, and then replaces only its value', () => {
    const text = '{"id":1,"result":"old","tail":true}';
    expect(() => spliceField(text, 'result', result, false)).toThrow(SpliceRefused);
    expect(() => spliceField(text, 'result', result, false)).toThrow(/output.overwrite/);
    expect(spliceField(text, 'result', result, true)).toBe(
      '{"id":1,"result":{"label":"ok"},"tail":true}',
    );
    // A path through a value that is not an object.
    expect(() => spliceField('{"a":5}', 'a.b', '1', false)).toThrow(/not an object/);
    expect(spliceField('{"a":5}', 'a.b', '1', true)).toBe('{"a":{"b":1}}');
    // Of duplicate keys, JSON.parse keeps the last: so does the splice.
    expect(spliceField('{"a":{"x":1},"a":{"y":2}}', 'a.r', '0', false)).toBe(
      '{"a":{"x":1},"a":{"y":2,"r":0}}',
    );
  });

  it('refuses a record that is not an object', () => {
    for (const text of ['[1,2]', '"text"', '12', 'null']) {
      try {
        spliceField(text, 'result', result, true);
        expect.unreachable();
      } catch (err) {
        expect(err).toBeInstanceOf(SpliceRefused);
        expect((err as SpliceRefused).reason).toBe('not-an-object');
      }
    }
  });
});
