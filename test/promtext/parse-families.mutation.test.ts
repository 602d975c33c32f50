import { describe, expect, it } from 'vitest';
import { ExpositionError, parseExposition, type Sample } from '../../src/promtext/index.js';

// Families, label objects, le/quantile normalisation, timestamps and error messages: cases the
// mutation run (issue 31) found untested in parse.ts. Expected values are worked out by hand from
// the formats' rules (Prometheus text 0.0.4, OpenMetrics 1.0) and Go's number syntax.

const TEXT = 'text/plain; version=0.0.4';
const OM = 'application/openmetrics-text; version=1.0.0';

function rejection(text: string, contentType = TEXT): ExpositionError {
  try {
    parseExposition(text, contentType);
  } catch (e) {
    if (e instanceof ExpositionError) return e;
    throw e;
  }
  throw new Error(`expected ${JSON.stringify(text)} to be rejected`);
}

/** Keys in order and values: toEqual alone would let an extra key holding undefined through. */
const labelText = (s: Sample) => JSON.stringify(Object.entries(s.labels));

describe('label objects', () => {
  it('gives each sample exactly its own label names, whatever sequences came before', () => {
    const lines = [
      'm{a="1",b="2"} 1',
      'm{a="3"} 2',
      'm{a="4",b="5",c="6"} 3',
      'm{b="7",a="8"} 4',
      'm{a="9",b="10"} 5',
      'm{c="11"} 6',
      'm{d="12"} 7',
      'm{a="13"} 8',
      'm{e="14"} 9',
      'm{a="15",b="16"} 10',
      'm 11',
    ];
    const samples = parseExposition(`${lines.join('\n')}\n`, TEXT);
    expect(samples.map(labelText)).toEqual([
      '[["a","1"],["b","2"]]',
      '[["a","3"]]',
      '[["a","4"],["b","5"],["c","6"]]',
      '[["b","7"],["a","8"]]',
      '[["a","9"],["b","10"]]',
      '[["c","11"]]',
      '[["d","12"]]',
      '[["a","13"]]',
      '[["e","14"]]',
      '[["a","15"],["b","16"]]',
      '[]',
    ]);
  });

  it('checks the names of a line whose names differ from the previous line only in their order of first sight', () => {
    // The second line repeats the first's names at positions 0 and 1, then repeats "a".
    expect(rejection('m{a="1",b="2"} 1\nm{a="1",b="2",a="3"} 1\n')).toMatchObject({ line: 2, reason: 'duplicate label name "a": "m{a=\\"1\\",b=\\"2\\",a=\\"3\\"} 1"' });
    expect(rejection('m{a="1"} 1\nm{a="1",__name__="x"} 1\n').line).toBe(2);
    expect(rejection('m{x="1",y="2"} 1\nm{y="1",y="2"} 1\n').line).toBe(2);
  });
});

describe('le and quantile normalisation over many bounds', () => {
  it('normalises more distinct bounds than the parser keeps at hand, in every series', () => {
    // Integers k are Go %g "k" plus ".0"; "k5e-1" is k + 0.5.
    const bounds = Array.from({ length: 30 }, (_, k) => (k % 2 === 0 ? `${k + 1}` : `${k}5e-1`));
    const expected = Array.from({ length: 30 }, (_, k) => (k % 2 === 0 ? `${k + 1}.0` : `${k / 10 + 0.5}`.replace(/^0\./, '0.')));
    // k5e-1 = k*10+5 tenths: 15e-1 = 1.5, 35e-1 = 3.5, ...
    for (let k = 1; k < 30; k += 2) expected[k] = `${(k * 10 + 5) / 10}`;
    const lines = ['# TYPE h histogram'];
    for (const series of ['a', 'b']) for (const le of bounds) lines.push(`h_bucket{s="${series}",le="${le}"} 1`);
    lines.push('h_bucket{s="c",le="+Inf"} 1', 'h_bucket{s="c",le="1"} 1', 'h_bucket{s="c",le="27"} 1');
    const les = parseExposition(`${lines.join('\n')}\n`, TEXT).map((s) => s.labels.le);
    expect(les).toEqual([...expected, ...expected, '+Inf', '1.0', '27.0']);
    expect(expected.slice(0, 4)).toEqual(['1.0', '1.5', '3.0', '3.5']);
  });

  it('keeps normalising correctly past 4096 distinct bounds', () => {
    const lines = ['# TYPE h histogram'];
    for (let k = 0; k < 4200; k++) lines.push(`h_bucket{le="${k}.000"} 1`);
    lines.push('h_bucket{le="5.000"} 1', 'h_bucket{le="4150.000"} 1');
    const les = parseExposition(`${lines.join('\n')}\n`, TEXT).map((s) => s.labels.le);
    expect(les.slice(0, 3)).toEqual(['0.0', '1.0', '2.0']);
    expect(les[4199]).toBe('4199.0');
    expect(les.slice(-2)).toEqual(['5.0', '4150.0']);
    expect(les.every((le, k) => le === `${k < 4200 ? k : k === 4200 ? 5 : 4150}.0`)).toBe(true);
  });
});

describe('families when many interleave', () => {
  it('keeps each sample with its own family across more families than the parser keeps at hand', () => {
    const lines = ['# TYPE c1 counter', '# TYPE c2 counter', '# TYPE h histogram', '# TYPE s summary', '# TYPE g gauge'];
    const order = ['c1_total', 'c2_total', 'h_bucket{le="1"}', 'h_sum', 'h_count', 's_sum', 's_count', 'g', 'x'];
    for (let round = 0; round < 3; round++) for (const n of order) lines.push(`${n} 1`);
    const got = parseExposition(`${lines.join('\n')}\n`, TEXT).map((s) => `${s.name}:${s.family}:${s.type}`);
    const one = ['c1_total:c1:counter', 'c2_total:c2:counter', 'h_bucket:h:histogram', 'h_sum:h:histogram', 'h_count:h:histogram', 's_sum:s:summary', 's_count:s:summary', 'g:g:gauge', 'x:x:untyped'];
    expect(got).toEqual([...one, ...one, ...one]);
  });

  it('does not take a sample whose name merely ends like a suffix of an untyped family', () => {
    const got = parseExposition('a 1\nb_total 2\nb 3\na_count 4\n', TEXT).map((s) => `${s.name}:${s.family}:${s.type}`);
    expect(got).toEqual(['a:a:untyped', 'b_total:b_total:untyped', 'b:b:untyped', 'a_count:a_count:untyped']);
  });

  it('builds info and counter families on the name without _info / _total (OpenMetrics)', () => {
    const text = '# TYPE build_info info\nbuild_info{v="1"} 1\n# TYPE requests_total counter\nrequests_total 5\nrequests_created 1.5\n# EOF\n';
    expect(parseExposition(text, OM).map((s) => `${s.name}:${s.family}:${s.type}`)).toEqual([
      'build_info:build_info:info',
      'requests_total:requests_total:counter',
      'requests_created:requests_total:counter',
    ]);
    const plain = '# TYPE build info\nbuild_info{v="1"} 1\n# TYPE other gauge\nother 1\nbuild_info{v="2"} 1\n# EOF\n';
    expect(parseExposition(plain, OM).map((s) => `${s.name}:${s.family}:${s.type}`)).toEqual([
      'build_info:build:info',
      'other:other:gauge',
      'build_info:build:info',
    ]);
  });

  it('finds OpenMetrics gaugehistogram, _created and info samples by suffix after another family', () => {
    const text = [
      '# TYPE gh gaugehistogram',
      '# TYPE c counter',
      '# TYPE i info',
      '# TYPE g gauge',
      'g 0',
      'gh_bucket{le="1"} 1',
      'g 0',
      'gh_gsum 2',
      'g 0',
      'gh_gcount 3',
      'g 0',
      'c_created 4',
      'g 0',
      'i_info 5',
      '# EOF',
    ].join('\n');
    expect(parseExposition(`${text}\n`, OM).filter((s) => s.name !== 'g').map((s) => `${s.name}:${s.family}:${s.type}`)).toEqual([
      'gh_bucket:gh:gaugehistogram',
      'gh_gsum:gh:gaugehistogram',
      'gh_gcount:gh:gaugehistogram',
      'c_created:c:counter',
      'i_info:i:info',
    ]);
  });

  it('rejects a TYPE line after untyped samples of any of its sample names, and not for other names', () => {
    expect(rejection('h_sum 1\n# TYPE h histogram\n').reason).toBe('TYPE line for "h" after samples of that family ("h_sum"): "# TYPE h histogram"');
    expect(rejection('s_count 1\n# TYPE s summary\n').reason).toBe('TYPE line for "s" after samples of that family ("s_count"): "# TYPE s summary"');
    expect(rejection('x 1\n# TYPE x_total counter\n').reason).toBe('TYPE line for "x_total" after samples of that family ("x"): "# TYPE x_total counter"');
    // Other names, or typed families, are no reason.
    const ok = parseExposition('h_total 1\n# TYPE h histogram\nh_count 2\n# TYPE g gauge\ng 1\n# TYPE g_sum gauge\ng_sum 1\n', TEXT);
    expect(ok.map((s) => `${s.name}:${s.family}:${s.type}`)).toEqual(['h_total:h_total:untyped', 'h_count:h:histogram', 'g:g:gauge', 'g_sum:g_sum:gauge']);
  });

  it('gives a family its last HELP and UNIT everywhere, and leaves other families alone', () => {
    const text = '# UNIT a_seconds seconds\na_seconds 1\nb 2\n# HELP a_seconds late\n# UNIT a_seconds \na_seconds 3\n# EOF\n';
    const samples = parseExposition(text, OM);
    expect(samples.map((s) => [s.name, s.help, s.unit])).toEqual([
      ['a_seconds', 'late', ''],
      ['b', null, null],
      ['a_seconds', 'late', ''],
    ]);
    const unitOnly = parseExposition('a_bytes 1\n# UNIT a_bytes bytes\n# EOF\n', OM);
    expect(unitOnly.map((s) => [s.help, s.unit])).toEqual([[null, 'bytes']]);
  });
});

describe('0.0.4 integer timestamps', () => {
  it('reads leading zeros, 16 to 19 digits, and int64 max', () => {
    const ts = parseExposition('a 1 0001\na 1 000\na 1 1234567890123456\na 1 00000000000000000000001\na 1 9223372036854775807\na 1 999999999999999\n', TEXT).map(
      (s) => s.timestampMs,
    );
    expect(ts).toEqual([1, 0, 1234567890123456, 1, 9223372036854775807, 999999999999999]);
  });

  it('names a timestamp beyond int64 without its leading zeros', () => {
    expect(rejection('a 1 10000000000000000000\n').reason).toBe('timestamp 10000000000000000000 is out of range for int64 milliseconds: "a 1 10000000000000000000"');
    expect(rejection('a 1 009223372036854775808\n').reason).toBe('timestamp 9223372036854775808 is out of range for int64 milliseconds: "a 1 009223372036854775808"');
  });
});

describe('error reasons for values', () => {
  it('says why a value is refused', () => {
    const reason = (v: string) => rejection(`a ${v}\n`).reason;
    expect(reason('1\r')).toBe('invalid value "1\r" (CRLF line endings are not allowed: lines end in \\n): "a 1\\r"');
    expect(reason('0X1p3')).toBe('invalid value "0X1p3" (hexadecimal floats and "_" are not allowed): "a 0X1p3"');
    expect(reason('-0x1')).toBe('invalid value "-0x1" (hexadecimal floats and "_" are not allowed): "a -0x1"');
    expect(reason('+1_000')).toBe('invalid value "+1_000" (hexadecimal floats and "_" are not allowed): "a +1_000"');
    expect(reason('1_0e5')).toBe('invalid value "1_0e5" (hexadecimal floats and "_" are not allowed): "a 1_0e5"');
    expect(reason('1e999')).toBe('value "1e999" is out of range for a float64: "a 1e999"');
    expect(reason('-.5E+400')).toBe('value "-.5E+400" is out of range for a float64: "a -.5E+400"');
    expect(reason('1.e400')).toBe('value "1.e400" is out of range for a float64: "a 1.e400"');
    expect(reason('1e')).toBe('invalid value "1e": "a 1e"');
    expect(reason('x1e999')).toBe('invalid value "x1e999": "a x1e999"');
    expect(reason('1e999x')).toBe('invalid value "1e999x": "a 1e999x"');
    expect(reason('a0x1')).toBe('invalid value "a0x1": "a a0x1"');
  });
});

describe('error messages', () => {
  it('quotes at most 160 characters of the line, with an ellipsis when cut', () => {
    const long = `m{a="${'x'.repeat(200)}"} y`;
    const err = rejection(`ok 1\n${long}\nok 2\n`);
    expect(err.line).toBe(2);
    expect(err.reason).toBe(`invalid value "y": ${JSON.stringify(`${long.slice(0, 160)}…`)}`);
    const exact = `v ${'9'.repeat(155)}x`;
    expect(exact.length).toBe(158);
    const line160 = `${exact}yy`;
    expect(rejection(`${line160}\n`).reason).toBe(`invalid value "${'9'.repeat(155)}xyy": ${JSON.stringify(line160)}`);
  });

  it('gives the reason alone for an empty line, with its number', () => {
    const err = rejection('a 1\n\n# EOF\n', OM);
    expect(err.line).toBe(2);
    expect(err.reason).toBe('expected a metric name, "{" or "#" at the start of the line (OpenMetrics allows no blank lines or leading whitespace)');
    expect(err.message).toBe(`line 2: ${err.reason}`);
  });

  it('counts the line of an error at the very start and at the very end', () => {
    expect(rejection('?\n')).toMatchObject({ line: 1, reason: 'expected a metric name, "{" or "#" at the start of the line: "?"' });
    expect(rejection('a 1\nb 2', OM)).toMatchObject({ line: 2, reason: 'the exposition does not end with "# EOF": "b 2"' });
    expect(rejection('a 1\nb 2\n', OM)).toMatchObject({ line: 3, reason: 'the exposition does not end with "# EOF"' });
  });
});

describe('escapes', () => {
  it('unescapes label values: \\\\ \\" \\n, keeps other backslashes, and handles escapes back to back and at the ends', () => {
    const [s] = parseExposition(String.raw`m{a="\\\"\n",b="\\",c="x\\",d="\ty\\z",e="\\\\"} 1` + '\n', TEXT);
    expect(s?.labels).toEqual({ a: '\\"\n', b: '\\', c: 'x\\', d: '\\ty\\z', e: '\\\\' });
  });

  it('unescapes 0.0.4 HELP: \\\\ and \\n only, back to back and at the end', () => {
    const [s] = parseExposition(String.raw`# HELP m \\\n\\x\"\t\\` + '\nm 1\n', TEXT);
    expect(s?.help).toBe('\\\n\\x\\"\\t\\');
  });

  it('keeps a backslash before a character that is no escape, then reads the next escape (OpenMetrics HELP)', () => {
    const [s] = parseExposition(String.raw`# HELP m \q\n\\` + '\nm 1\n# EOF\n', OM);
    expect(s?.help).toBe('\\q\n\\');
  });
});

describe('label names checked again when an older line\'s names come back', () => {
  it('finds a duplicate among names that all stand where earlier lines had them', () => {
    // Line 3 has, at each position, the name an earlier line had there, but line 2 was shorter.
    expect(rejection('m{a="1",b="2",c="3"} 1\nm{c="1"} 2\nm{c="1",b="2",c="3"} 3\n')).toMatchObject({
      line: 3,
      reason: 'duplicate label name "c": "m{c=\\"1\\",b=\\"2\\",c=\\"3\\"} 3"',
    });
    expect(rejection('m{a="1",b="2",c="3"} 1\nm{c="1"} 2\nm{c="1",b="2",c="3"} 3\n# EOF\n', OM).line).toBe(3);
  });

  it('says why __name__ is refused', () => {
    expect(rejection('a{__name__="a"} 1\n').reason).toBe('label "__name__" duplicates the metric name: "a{__name__=\\"a\\"} 1"');
  });
});

describe('le and quantile normalisation touches only those labels of their own types', () => {
  it('leaves other numeric labels of a histogram or summary alone, and quantile of other types', () => {
    const text = '# TYPE h histogram\nh_bucket{code="200",le="1"} 1\n# TYPE s summary\ns{code="1e3",quantile="0.50"} 1\n# TYPE g gauge\ng{quantile="0.50",le="1"} 1\n';
    expect(parseExposition(text, TEXT).map((s) => s.labels)).toEqual([
      { code: '200', le: '1.0' },
      { code: '1e3', quantile: '0.5' },
      { quantile: '0.50', le: '1' },
    ]);
  });

  it('re-reads a leading le after a TYPE line instead of reusing the text read before it', () => {
    const text = 'x{le="1",b="2"} 1\n# TYPE h histogram\nh_bucket{le="1",b="3"} 2\nh_bucket{le="1",b="4"} 3\n';
    expect(parseExposition(text, TEXT).map((s) => s.labels.le)).toEqual(['1', '1.0', '1.0']);
  });
});

describe('16 to 18 digit timestamps', () => {
  it('are below int64 whatever their digits', () => {
    const ts = parseExposition('a 1 9999999999999999\na 1 999999999999999999\n', TEXT).map((s) => s.timestampMs);
    expect(ts).toEqual([9999999999999999, 999999999999999999]);
  });
});

describe('family names that end like a suffix', () => {
  it('keeps a gauge whose TYPE name ends in _total or _info its own family', () => {
    for (const [ct, end] of [[TEXT, ''], [OM, '# EOF\n']] as const) {
      const got = parseExposition(`# TYPE x_total gauge\nx_total 1\n# TYPE y_info gauge\ny_info 2\n${end}`, ct).map((s) => `${s.name}:${s.family}:${s.type}`);
      expect(got).toEqual(['x_total:x_total:gauge', 'y_info:y_info:gauge']);
    }
  });

  it('builds an info family named *_info on the name without _info, as isSeriesPartOfFamily trims it', () => {
    const got = parseExposition('# TYPE foo_info info\nfoo_info 1\nfoo_info_info 2\n# EOF\n', OM).map((s) => `${s.name}:${s.family}:${s.type}`);
    expect(got).toEqual(['foo_info:foo_info:info', 'foo_info_info:foo_info_info:unknown']);
  });

  it('does not take a sample whose suffix follows more than the family name', () => {
    const got = parseExposition('# TYPE h histogram\nh_x_sum 1\nh_sum 2\n', TEXT).map((s) => `${s.name}:${s.family}:${s.type}`);
    expect(got).toEqual(['h_x_sum:h_x_sum:untyped', 'h_sum:h:histogram']);
  });
});

describe('the reasons for values that look almost like numbers', () => {
  it('classifies "_" forms, exponents and out-of-range decimals exactly', () => {
    const reason = (v: string) => rejection(`a ${v}\n`).reason.replace(/: "a .*"$/, '');
    const underscore = (v: string) => `invalid value "${v}" (hexadecimal floats and "_" are not allowed)`;
    expect(reason('x1_0')).toBe('invalid value "x1_0"');
    expect(reason('1_0x')).toBe('invalid value "1_0x"');
    expect(reason('1_0e10')).toBe(underscore('1_0e10'));
    expect(reason('1_0e+5')).toBe(underscore('1_0e+5'));
    expect(reason('12_3')).toBe(underscore('12_3'));
    expect(reason('.55e999')).toBe('value ".55e999" is out of range for a float64');
    expect(reason('12.5e999')).toBe('value "12.5e999" is out of range for a float64');
    const huge = `1${'0'.repeat(400)}`;
    expect(reason(huge)).toBe(`value "${huge}" is out of range for a float64`);
  });
});

describe('an error at the very start of the text', () => {
  it('quotes nothing for an empty first line', () => {
    expect(rejection('\na 1\n# EOF\n', OM)).toMatchObject({
      line: 1,
      reason: 'expected a metric name, "{" or "#" at the start of the line (OpenMetrics allows no blank lines or leading whitespace)',
    });
  });
});
