import { describe, expect, it } from 'vitest';
import { formatOpenMetricsFloat, parseGoFloat } from '../../src/promtext/floats.js';

// Cases the mutation run (issue 31) found untested in floats.ts. Expected values are Go's
// strconv.ParseFloat / FormatFloat(f, 'g', -1, 64) results worked out by hand: a correctly rounded
// double (a JavaScript number literal is rounded the same way), or Go's %g text.

describe('parseGoFloat reads only its range', () => {
  it('stops at `end` even where a digit follows', () => {
    expect(parseGoFloat('123', 0, 2)).toBe(12);
    expect(parseGoFloat('x1.5y', 1, 4)).toBe(1.5);
    expect(parseGoFloat('7e12', 0, 3)).toBe(7e1);
  });
});

describe('parseGoFloat exponents', () => {
  it('refuses an exponent holding a character just outside 0-9', () => {
    // "/" is one below "0" and ":" one above "9": read as digits they would give 1e-1 and 1e10.
    expect(parseGoFloat('1e/', 0, 3)).toBeUndefined();
    expect(parseGoFloat('1e:', 0, 3)).toBeUndefined();
    expect(parseGoFloat('1e5x', 0, 4)).toBeUndefined();
  });
});

describe('parseGoFloat with 16 significant digits', () => {
  it('rounds once, correctly (a 16-digit mantissa is not exact in a double)', () => {
    // 9108973851080103 > 2^53: building it in a double and then dividing by 1e20 rounds twice and
    // gives ...104; the correctly rounded value of the decimal is ...102.
    expect(parseGoFloat('9.108973851080103e-5', 0, 20)).toBe(0.00009108973851080102);
  });
});

describe('formatOpenMetricsFloat exponents', () => {
  it('pads the exponent to two digits only below 10 (Go %g)', () => {
    expect(formatOpenMetricsFloat(1e10)).toBe('1e+10');
    expect(formatOpenMetricsFloat(1e-10)).toBe('1e-10');
    expect(formatOpenMetricsFloat(2.5e9)).toBe('2.5e+09');
  });
});
