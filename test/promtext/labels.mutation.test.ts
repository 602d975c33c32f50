import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

// labels.ts (issue 31): the label-object factories. Each test imports a fresh copy of the module
// (vi.resetModules), so its cache of factories starts empty and code generation starts available.
// A generated factory is a `new Function` ("anonymous"); the keyed fallback is an unnamed arrow.
type LabelsModule = typeof import('../../src/promtext/labels.js');
let m: LabelsModule;

beforeEach(async () => {
  vi.resetModules();
  m = await import('../../src/promtext/labels.js');
});

afterEach(() => {
  vi.unstubAllGlobals();
});

/** What `labels[name] = value` gives an ordinary name: an own, enumerable, writable, configurable data property. */
const plain = (value: string) => ({ value, enumerable: true, writable: true, configurable: true });

describe('labelFactory', () => {
  it('builds an object of the first `count` names with the values by position', () => {
    const { make, compiled } = m.labelFactory(['job', 'instance', 'le'], 2, true);
    expect(compiled).toBe(true);
    const labels = make(['node', 'host:9100', 'ignored']);
    expect(labels).toEqual({ job: 'node', instance: 'host:9100' });
    expect(Object.keys(labels)).toEqual(['job', 'instance']);
  });

  it('generates a factory once per name sequence, then hands out the cached one', () => {
    const first = m.labelFactory(['a', 'b'], 2, true);
    expect(first.compiled).toBe(true);
    expect(first.make.name).toBe('anonymous');
    const second = m.labelFactory(['a', 'b', 'c'], 2, true);
    expect(second.compiled).toBe(false);
    expect(second.make).toBe(first.make);
    // The cached one is handed out even when the caller may not compile any more.
    expect(m.labelFactory(['a', 'b'], 2, false).make).toBe(first.make);
    // Another sequence is another factory.
    const other = m.labelFactory(['b', 'a'], 2, true);
    expect(other.compiled).toBe(true);
    expect(other.make(['1', '2'])).toEqual({ b: '1', a: '2' });
  });

  it('uses keyed stores, not cached, when it may not compile', () => {
    const keyed = m.labelFactory(['x', 'y'], 2, false);
    expect(keyed.compiled).toBe(false);
    expect(keyed.make.name).toBe('');
    expect(keyed.make(['1', '2'])).toEqual({ x: '1', y: '2' });
    expect(keyed.make(['3', '4'])).toEqual({ x: '3', y: '4' });
    // Nothing was cached: allowed to compile now, it generates one.
    const later = m.labelFactory(['x', 'y'], 2, true);
    expect(later.compiled).toBe(true);
    expect(later.make.name).toBe('anonymous');
    expect(later.make(['5', '6'])).toEqual({ x: '5', y: '6' });
  });

  it('gives a label called __proto__ an own property, generated or keyed, and leaves the prototype alone', () => {
    for (const mayCompile of [true, false]) {
      // Another sequence each time: a cached factory would be handed out whatever mayCompile says.
      const last = mayCompile ? 'z' : 'zz';
      const { make } = m.labelFactory(['a', '__proto__', last], 3, mayCompile);
      expect(make.name).toBe(mayCompile ? 'anonymous' : '');
      const labels = make(['1', 'p', '2']);
      expect(Object.keys(labels)).toEqual(['a', '__proto__', last]);
      expect(Object.getOwnPropertyDescriptor(labels, '__proto__')).toEqual(plain('p'));
      expect(Object.getPrototypeOf(labels)).toBe(Object.prototype);
      expect(JSON.stringify(labels)).toBe(`{"a":"1","__proto__":"p","${last}":"2"}`);
    }
  });

  it('keeps at most 4096 factories: the 4097th sequence empties the cache', () => {
    const a = m.labelFactory(['first'], 1, true);
    expect(a.compiled).toBe(true);
    // 4095 more: 4096 held, the first still among them.
    for (let k = 0; k < 4095; k++) expect(m.labelFactory([`n${k}`], 1, true).compiled).toBe(true);
    expect(m.labelFactory(['first'], 1, true)).toEqual({ make: a.make, compiled: false });
    // One more: the cache is emptied before it is stored, so the first is generated again.
    expect(m.labelFactory(['one_more'], 1, true).compiled).toBe(true);
    const again = m.labelFactory(['first'], 1, true);
    expect(again.compiled).toBe(true);
    expect(again.make).not.toBe(a.make);
    expect(again.make(['v'])).toEqual({ first: 'v' });
  });

  it('falls back to keyed stores for good where code generation is disabled', () => {
    // --disallow-code-generation-from-strings makes `new Function(...)` throw an EvalError.
    vi.stubGlobal('Function', function refuse() {
      throw new EvalError('Code generation from strings disallowed for this context');
    });
    const { make, compiled } = m.labelFactory(['p', '__proto__'], 2, true);
    expect(make.name).toBe('');
    expect(compiled).toBe(true);
    const labels = make(['1', '2']);
    expect(Object.keys(labels)).toEqual(['p', '__proto__']);
    expect(Object.getOwnPropertyDescriptor(labels, '__proto__')).toEqual(plain('2'));
    expect(labels.p).toBe('1');
    // It does not try again: even with Function back, new sequences get keyed stores.
    vi.unstubAllGlobals();
    const next = m.labelFactory(['q'], 1, true);
    expect(next.make.name).toBe('');
    expect(next.make(['3'])).toEqual({ q: '3' });
  });
});

describe('setLabel', () => {
  it('sets an ordinary label as a plain property', () => {
    const labels: Record<string, string> = {};
    m.setLabel(labels, 'job', 'api');
    expect(Object.getOwnPropertyDescriptor(labels, 'job')).toEqual(plain('api'));
  });

  it('sets __proto__ as an own, enumerable, writable property, not the prototype', () => {
    const labels: Record<string, string> = {};
    m.setLabel(labels, '__proto__', 'x');
    expect(Object.getOwnPropertyDescriptor(labels, '__proto__')).toEqual(plain('x'));
    expect(Object.getPrototypeOf(labels)).toBe(Object.prototype);
    expect(Object.keys(labels)).toEqual(['__proto__']);
  });
});
