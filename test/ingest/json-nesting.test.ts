// Nesting helpers for the push endpoints: measured and written without recursion, at any depth. The oracle for
// shallow values is JSON.stringify itself (a recursive implementation, written differently on purpose).
import { describe, expect, it } from 'vitest';
import { boundedJson, nestingDepth, valueDepth } from '../../src/json-nesting.js';

const samples: unknown[] = [
  null,
  0,
  -1.5e-7,
  'plain',
  'quote " backslash \\ newline \n é 漢字 🚀 \u0000',
  true,
  [],
  {},
  [1, 'two', null, [3, [4, {}]], { five: 5 }],
  { a: 1, 'key "quoted"': { b: [true, false], c: { d: { e: 'deep' } } }, f: [] },
];

describe('boundedJson', () => {
  it('writes what JSON.stringify writes, for scalars, arrays and objects', () => {
    for (const v of samples) expect(boundedJson(v, Number.MAX_SAFE_INTEGER), JSON.stringify(v)).toBe(JSON.stringify(v));
  });

  it('skips undefined and function members as JSON.stringify does (null inside arrays)', () => {
    const v = { a: undefined, b: [undefined, () => 1, 2], c: () => 1, d: 'kept' };
    expect(boundedJson(v, 1000)).toBe(JSON.stringify(v));
    expect(boundedJson(v, 1000)).toBe('{"b":[null,null,2],"d":"kept"}');
  });

  it('stops at maxChars: the prefix of the full text', () => {
    const v = samples[9];
    const full = JSON.stringify(v);
    for (const n of [0, 1, 5, 17, full.length - 1, full.length]) expect(boundedJson(v, n)).toBe(full.slice(0, n));
  });

  it('writes a value nested 200,000 deep (JSON.stringify overflows the stack), cut at the bound', () => {
    const text = `{"x":${'['.repeat(200_000)}${']'.repeat(200_000)}}`;
    const v = JSON.parse(text) as unknown;
    expect(() => JSON.stringify(v)).toThrow(RangeError);
    expect(boundedJson(v, 10)).toBe('{"x":[[[[[');
    expect(boundedJson(v, Number.MAX_SAFE_INTEGER)).toBe(text);
  });
});

describe('depth', () => {
  it('of a text and of its parsed value agree: objects and arrays count, strings do not', () => {
    const cases: Array<[string, number]> = [
      ['1', 0],
      ['"[{[{"', 0],
      ['[]', 1],
      ['{"a":[{"b":"]]]"}]}', 3],
      ['[[1],[[2]],[]]', 3],
      [`{"x":${'['.repeat(100_000)}${']'.repeat(100_000)}}`, 100_001],
    ];
    for (const [text, depth] of cases) {
      expect(nestingDepth(text), text.slice(0, 20)).toBe(depth);
      expect(valueDepth(JSON.parse(text)), text.slice(0, 20)).toBe(depth);
    }
  });
});
