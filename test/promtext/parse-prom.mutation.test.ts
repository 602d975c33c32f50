import { describe, expect, it } from 'vitest';
import { ExpositionError, parseExposition, type Sample } from '../../src/promtext/index.js';

// Prometheus text 0.0.4 cases the mutation run (issue 31) found untested in parse.ts. Expected
// values are worked out by hand from the format (promlex.l / promparse.go rules as README.md states
// them): names, characters, whitespace, metadata lines, end of input without a final newline.

const TEXT = 'text/plain; version=0.0.4';
const parse = (text: string): Sample[] => parseExposition(text, TEXT);

function rejection(text: string): ExpositionError {
  try {
    parse(text);
  } catch (e) {
    if (e instanceof ExpositionError) return e;
    throw e;
  }
  throw new Error(`expected ${JSON.stringify(text)} to be rejected`);
}

const brief = (s: Sample) => `${s.name}${JSON.stringify(s.labels)} ${s.value} ${s.timestampMs}`;

describe('0.0.4 names: [a-zA-Z_:][a-zA-Z0-9_:]* for metrics, [a-zA-Z_][a-zA-Z0-9_]* for labels', () => {
  it('accepts every letter class edge, digits 0 and 9, "_" and ":" (recording rules)', () => {
    const samples = parse('A 1\nZ 2\nz 3\n_a09 4\njob:rate5m 5\n:x 6\nm{A="1",Z="2",a09="3",_="4"} 7\n');
    expect(samples.map(brief)).toEqual([
      'A{} 1 null',
      'Z{} 2 null',
      'z{} 3 null',
      '_a09{} 4 null',
      'job:rate5m{} 5 null',
      ':x{} 6 null',
      'm{"A":"1","Z":"2","a09":"3","_":"4"} 7 null',
    ]);
  });

  it('ends a metric name at the characters just outside its classes', () => {
    // "@" is one below "A", "[" one above "Z", "`" one below "a", "/" one below "0".
    expect(rejection('a@ 1\n').reason).toBe('invalid value "@": "a@ 1"');
    expect(rejection('a[ 1\n').reason).toBe('invalid value "[": "a[ 1"');
    expect(rejection('a` 1\n').reason).toBe('invalid value "`": "a` 1"');
    expect(rejection('a/ 1\n').reason).toBe('invalid value "/": "a/ 1"');
  });

  it('does not allow ":" in a label name', () => {
    expect(rejection('m{a:b="1"} 1\n').reason).toBe('expected "=" after label name "a": "m{a:b=\\"1\\"} 1"');
  });
});

describe('0.0.4 comments and metadata lines', () => {
  it('takes only "#", whitespace, then HELP or TYPE and whitespace as metadata; near misses are comments', () => {
    const lines = ['# HELP a right', '# TYPE a gauge'];
    for (const word of ['xELP', 'HxLP', 'HExP', 'HELx', 'xYPE', 'TxPE', 'TYxE', 'TYPx']) lines.push(`# ${word} a wrong`);
    lines.push('#HELP a wrong', '#TYPE a counter', '# HELPa wrong', '# TYPEa counter', '# help a wrong', 'a 1');
    const samples = parse(lines.join('\n'));
    expect(samples).toEqual([expect.objectContaining({ name: 'a', family: 'a', type: 'gauge', help: 'right' })]);
  });

  it('takes a tab after the keyword and between the keyword and the name', () => {
    const samples = parse('# HELP\ta tabbed help\n# TYPE\t\ta counter\na_total 1\n');
    expect(samples).toEqual([expect.objectContaining({ name: 'a_total', family: 'a', type: 'counter', help: 'tabbed help' })]);
  });

  it('takes a HELP text of only spaces and tabs as empty, and keeps inner whitespace', () => {
    const samples = parse('# HELP a  \t \n# HELP b \t\n# HELP c  x \na 1\nb 2\nc 3\n');
    expect(samples.map((s) => s.help)).toEqual(['', '', ' x ']);
  });

  it('reads metadata and comments on a last line without a newline', () => {
    expect(parse('a 1\n# HELP a late')).toEqual([expect.objectContaining({ name: 'a', help: 'late' })]);
    expect(parse('a 1\n# a comment').map(brief)).toEqual(['a{} 1 null']);
    expect(parse('# TYPE a gauge').map(brief)).toEqual([]);
    expect(parse('a 1\n  \t').map(brief)).toEqual(['a{} 1 null']);
  });

  it('names the keyword in a missing or empty name, on the line of the keyword', () => {
    expect(rejection('# HELP 1x y\n')).toMatchObject({ line: 1, reason: 'expected a metric name after HELP: "# HELP 1x y"' });
    expect(rejection('# TYPE 1x gauge\n')).toMatchObject({ line: 1, reason: 'expected a metric name after TYPE: "# TYPE 1x gauge"' });
    expect(rejection('# HELP ""\na 1\n')).toMatchObject({ line: 1, reason: 'empty metric name after HELP: "# HELP \\"\\""' });
    expect(rejection('# TYPE "" gauge\n')).toMatchObject({ line: 1, reason: 'empty metric name after TYPE: "# TYPE \\"\\" gauge"' });
  });

  it('refuses a raw newline inside a quoted name on a metadata line', () => {
    expect(rejection('# HELP "a\nb" x\n')).toMatchObject({ line: 1, reason: 'newline inside a quoted string (escape it as \\n): "# HELP \\"a"' });
  });

  it('lists the 0.0.4 types in the error for an unknown one', () => {
    expect(rejection('# TYPE a info\n').reason).toBe(
      'invalid metric type "info" (0.0.4 knows counter, gauge, histogram, summary, untyped): "# TYPE a info"',
    );
  });
});

describe('0.0.4 whitespace between the parts of a sample line', () => {
  it('takes tabs after the name, inside the braces, after a label name, before and after the timestamp', () => {
    const samples = parse('a\t1\nb\t{x="1"} 2\nc{\tx\t=\t"1"\t,\ty="2"\t} 3\t4\t\nd 5 6');
    expect(samples.map(brief)).toEqual(['a{} 1 null', 'b{"x":"1"} 2 null', 'c{"x":"1","y":"2"} 3 4', 'd{} 5 6']);
  });

  it('ends the value at "{": what follows is no timestamp', () => {
    expect(rejection('a 1{x="y"}\n').reason).toBe('expected an integer timestamp in milliseconds or the end of the line: "a 1{x=\\"y\\"}"');
  });

  it('takes only digits as a timestamp', () => {
    expect(rejection('a 1 :5\n').reason).toBe('expected an integer timestamp in milliseconds or the end of the line: "a 1 :5"');
    expect(rejection('a 1 x\n').reason).toBe('expected an integer timestamp in milliseconds or the end of the line: "a 1 x"');
    expect(rejection('a 1 12x\n').reason).toBe('unexpected text after the timestamp: "a 1 12x"');
    expect(rejection('a 1 12:\n').reason).toBe('unexpected text after the timestamp: "a 1 12:"');
  });
});

describe('0.0.4 quoted label names', () => {
  it('may hold a raw newline, as a label value may (promlex.l)', () => {
    expect(parse('m{"x\ny"="1"} 1\n').map(brief)).toEqual(['m{"x\\ny":"1"} 1 null']);
  });
});

describe('0.0.4 input that ends without a final newline', () => {
  it('parses a complete last line', () => {
    expect(parse('a 1 1395066363000').map(brief)).toEqual(['a{} 1 1395066363000']);
    expect(parse('a{b="c"} 1').map(brief)).toEqual(['a{"b":"c"} 1 null']);
    expect(parse('{"a"} 2').map(brief)).toEqual(['a{} 2 null']);
  });

  it('rejects a line cut inside its label set with the reason for that point', () => {
    expect(rejection('a{b="c"').reason).toBe('unterminated label set (missing "}"): "a{b=\\"c\\""');
    expect(rejection('a{b="c",').reason).toBe('unterminated label set (missing "}"): "a{b=\\"c\\","');
    expect(rejection('a{b').reason).toBe('expected "=" after label name "b": "a{b"');
    expect(rejection('a{b=').reason).toBe('expected a double-quoted value for label "b": "a{b="');
    expect(rejection('a{"b"').reason).toBe('expected "=" after label name "b": "a{\\"b\\""');
    expect(rejection('a{').reason).toBe('unterminated label set (missing "}"): "a{"');
    expect(rejection('a{b="c').reason).toBe('unterminated quoted string: "a{b=\\"c"');
  });
});

describe('0.0.4 le and quantile without a TYPE line', () => {
  it('leaves le and quantile as written before any TYPE line, and for untyped families', () => {
    const samples = parse('x_bucket{le="1"} 1\ny{quantile="0.50"} 2\n# HELP z z\nz{le="1e3",quantile="1"} 3\n');
    expect(samples.map((s) => s.labels)).toEqual([{ le: '1' }, { quantile: '0.50' }, { le: '1e3', quantile: '1' }]);
  });
});

describe('0.0.4 families whose samples come after another family', () => {
  it('finds counter and histogram families by the suffix of the sample name', () => {
    const samples = parse(
      [
        '# TYPE c counter',
        '# TYPE h histogram',
        '# TYPE s summary',
        '# TYPE g gauge',
        'g 0',
        'c_total 1',
        'g 0',
        'h_bucket{le="1"} 2',
        'g 0',
        'h_sum 3',
        'g 0',
        'h_count 4',
        'g 0',
        's_sum 5',
        'g 0',
        's_count 6',
      ].join('\n'),
    );
    expect(samples.filter((s) => s.name !== 'g').map((s) => `${s.name}:${s.family}:${s.type}`)).toEqual([
      'c_total:c:counter',
      'h_bucket:h:histogram',
      'h_sum:h:histogram',
      'h_count:h:histogram',
      's_sum:s:summary',
      's_count:s:summary',
    ]);
    // le normalisation follows the last TYPE line (gauge here), as Prometheus' parser does.
    expect(samples[3]?.labels).toEqual({ le: '1' });
  });
});
