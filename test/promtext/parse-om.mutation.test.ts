import { describe, expect, it } from 'vitest';
import { ExpositionError, parseExposition, type Sample } from '../../src/promtext/index.js';

// OpenMetrics 1.0 cases, and the label scanning both formats share, that the mutation run
// (issue 31) found untested in parse.ts. Expected values and reasons are worked out by hand from
// the OpenMetrics 1.0 text format (ABNF: "# " HELP/TYPE/UNIT/EOF, single spaces, no whitespace in
// braces, exemplars " # {labels} value [timestamp]") and Prometheus' text 0.0.4 rules.

const TEXT = 'text/plain; version=0.0.4';
const OM = 'application/openmetrics-text; version=1.0.0';
const om = (text: string): Sample[] => parseExposition(text, OM);

function rejection(text: string, contentType = OM): ExpositionError {
  try {
    parseExposition(text, contentType);
  } catch (e) {
    if (e instanceof ExpositionError) return e;
    throw e;
  }
  throw new Error(`expected ${JSON.stringify(text)} to be rejected`);
}

const brief = (s: Sample) => `${s.name}${JSON.stringify(Object.entries(s.labels))} ${s.value} ${s.timestampMs}`;
const ONLY = 'OpenMetrics allows only "# HELP", "# TYPE", "# UNIT" and "# EOF" lines starting with "#"';

describe('OpenMetrics "#" lines', () => {
  it('refuses a "#" alone, and HELP/TYPE/UNIT not followed by a space', () => {
    expect(rejection('#')).toMatchObject({ line: 1, reason: `${ONLY}: "#"` });
    expect(rejection('#\n# EOF\n')).toMatchObject({ line: 1, reason: `${ONLY}: "#"` });
    expect(rejection('# HELPa x\n# EOF\n').reason).toBe(`${ONLY}: "# HELPa x"`);
    expect(rejection('# TYPEa gauge\n# EOF\n').reason).toBe(`${ONLY}: "# TYPEa gauge"`);
    expect(rejection('# UNITa_s s\n# EOF\n').reason).toBe(`${ONLY}: "# UNITa_s s"`);
  });

  it('takes "# EOF" only as the whole last line', () => {
    expect(rejection('a 1\n# EOF ')).toMatchObject({ line: 2, reason: 'unexpected data after "# EOF": "# EOF "' });
    expect(rejection('# EOFx')).toMatchObject({ line: 1, reason: 'unexpected data after "# EOF": "# EOFx"' });
    expect(om('a 1\n# EOF').map(brief)).toEqual(['a[] 1 null']);
  });

  it('names the keyword in metadata errors', () => {
    expect(rejection('# UNIT 1 s\n# EOF\n').reason).toBe('expected a metric name after UNIT: "# UNIT 1 s"');
    expect(rejection('# HELP 1 s\n# EOF\n').reason).toBe('expected a metric name after HELP: "# HELP 1 s"');
    expect(rejection('# TYPE 1 s\n# EOF\n').reason).toBe('expected a metric name after TYPE: "# TYPE 1 s"');
    expect(rejection('# UNIT "" s\n# EOF\n')).toMatchObject({ line: 1, reason: 'empty metric name after UNIT: "# UNIT \\"\\" s"' });
    expect(rejection('# HELP ""\n# EOF\n')).toMatchObject({ line: 1, reason: 'empty metric name after HELP: "# HELP \\"\\""' });
    expect(rejection('# UNIT a_s\n# EOF\n').reason).toBe('expected a space and text after the metric name in UNIT: "# UNIT a_s"');
    expect(rejection('# TYPE a\n# EOF\n').reason).toBe('expected a space and text after the metric name in TYPE: "# TYPE a"');
    expect(rejection('# HELP a x')).toMatchObject({ line: 1, reason: 'HELP line not terminated by a newline: "# HELP a x"' });
    expect(rejection('# TYPE a gauge')).toMatchObject({ line: 1, reason: 'TYPE line not terminated by a newline: "# TYPE a gauge"' });
  });

  it('reads quoted names on metadata lines, and refuses a raw newline in them', () => {
    const samples = om('# TYPE "my.metric" gauge\n# HELP "my.metric" Help.\n# UNIT "my.metric_s" s\n{"my.metric"} 1\n{"my.metric_s"} 2\n# EOF\n');
    expect(samples.map((s) => [s.name, s.family, s.type, s.help, s.unit])).toEqual([
      ['my.metric', 'my.metric', 'gauge', 'Help.', null],
      ['my.metric_s', 'my.metric_s', 'unknown', null, 's'],
    ]);
    expect(rejection('# HELP "a\nb" x\n# EOF\n').reason).toBe('newline inside a quoted string (escape it as \\n): "# HELP \\"a"');
  });

  it('reports a bad TYPE line at that line, and lists the OpenMetrics types', () => {
    expect(rejection('a 1\n# TYPE b untyped\n# EOF\n')).toMatchObject({
      line: 2,
      reason:
        'invalid metric type "untyped" (OpenMetrics knows counter, gauge, histogram, gaugehistogram, summary, info, stateset, unknown): "# TYPE b untyped"',
    });
    expect(rejection('a_total 1\n# TYPE a counter\n# EOF\n')).toMatchObject({ line: 2, reason: 'TYPE line for "a" after samples of that family ("a_total"): "# TYPE a counter"' });
  });

  it('takes a unit only as the name\'s suffix after an underscore, with something before it', () => {
    expect(om('# UNIT a_s s\na_s 1\n# EOF\n')[0]?.unit).toBe('s');
    expect(om('# UNIT ab_c_d c_d\nab_c_d 1\n# EOF\n')[0]?.unit).toBe('c_d');
    expect(rejection('# UNIT _s s\n# EOF\n')).toMatchObject({ line: 1, reason: 'unit "s" is not a suffix of metric "_s" (expected "_s" to end in "_s"): "# UNIT _s s"' });
    expect(rejection('# UNIT a_sx s\n# EOF\n').reason).toMatch(/^unit "s" is not a suffix of metric "a_sx"/);
    expect(rejection('# UNIT ab s\n# EOF\n').reason).toMatch(/^unit "s" is not a suffix of metric "ab"/);
    expect(rejection('# UNIT ab_x s\n# EOF\n').reason).toMatch(/^unit "s" is not a suffix of metric "ab_x"/);
  });
});

describe('OpenMetrics sample lines', () => {
  it('knows every OpenMetrics type', () => {
    const types = ['counter', 'gauge', 'histogram', 'gaugehistogram', 'summary', 'info', 'stateset', 'unknown'];
    const text = `${types.map((t, k) => `# TYPE f${k} ${t}\nf${k}${t === 'counter' ? '_total' : t === 'info' ? '_info' : ''} 1`).join('\n')}\n# EOF\n`;
    expect(om(text).map((s) => s.type)).toEqual(types);
  });

  it('needs a single space after the name and labels, and # EOF after the last value', () => {
    expect(rejection('a\n# EOF\n').reason).toBe('expected a single space and the value after the metric name and labels: "a"');
    expect(rejection('a{b="c"}\n# EOF\n').reason).toBe('expected a single space and the value after the metric name and labels: "a{b=\\"c\\"}"');
    expect(rejection('a')).toMatchObject({ line: 1, reason: 'expected a single space and the value after the metric name and labels: "a"' });
    expect(rejection('a 1')).toMatchObject({ line: 1, reason: 'the exposition does not end with "# EOF": "a 1"' });
    expect(rejection('a 1 2')).toMatchObject({ line: 1, reason: 'the exposition does not end with "# EOF": "a 1 2"' });
    expect(rejection('{a="b"} 1\n# EOF\n').reason).toBe('metric name not set (neither before nor inside the braces): "{a=\\"b\\"} 1"');
  });

  it('reads the quoted metric name inside the braces, before or after labels', () => {
    expect(om('{"a.b"} 1\n{x="1","a.b"} 2\n{"a.b",x="2"} 3\n# EOF\n').map(brief)).toEqual([
      'a.b[] 1 null',
      'a.b[["x","1"]] 2 null',
      'a.b[["x","2"]] 3 null',
    ]);
    expect(rejection('{"a","b"} 1\n# EOF\n').reason).toBe('metric name set twice (before and inside the braces): "{\\"a\\",\\"b\\"} 1"');
    expect(rejection('a{"b"} 1\n# EOF\n').reason).toBe('metric name set twice (before and inside the braces): "a{\\"b\\"} 1"');
    expect(rejection('{""} 1\n# EOF\n').reason).toBe('empty metric name: "{\\"\\"} 1"');
    expect(rejection('{"",a="b"} 1\n# EOF\n', TEXT).reason).toBe('empty metric name: "{\\"\\",a=\\"b\\"} 1"');
  });

  it('reads quoted label names, with escapes', () => {
    expect(om('a{"x.y"="1","q\\"q"="2"} 1\n# EOF\n').map(brief)).toEqual(['a[["x.y","1"],["q\\"q","2"]] 1 null']);
  });
});

describe('OpenMetrics summaries and quoted label names', () => {
  it('puts _sum, _count and _created under the summary', () => {
    const got = om('# TYPE s summary\ns{quantile="0.5"} 1\ns_sum 2\ns_count 3\ns_created 4\n# EOF\n').map((x) => `${x.name}:${x.family}:${x.type}`);
    expect(got).toEqual(['s:s:summary', 's_sum:s:summary', 's_count:s:summary', 's_created:s:summary']);
  });

  it('takes a raw newline inside a quoted label name, as openmetricslex.l does (\\"(\\\\.|[^\\\\"])*\\" in sLabels)', () => {
    expect(om('a{"x\ny"="1"} 1\n# EOF\n').map(brief)).toEqual(['a[["x\\ny","1"]] 1 null']);
  });
});

describe('OpenMetrics exemplars', () => {
  it('reads exemplar labels, value and timestamp (seconds, truncated to ms)', () => {
    const samples = om(
      [
        'a_total 1 # {} 2',
        'a_total 1 # {x="1",y="a\\"b"} 2.5 1520879607.7899',
        'a_total 1 1000 # {"q.x"="z"} -1 -0.0015',
        'a_total 1 # {x=""} NaN',
        '# EOF',
      ].join('\n'),
    );
    expect(samples.map((s) => [s.timestampMs, s.exemplar])).toEqual([
      [null, { labels: {}, value: 2, timestampMs: null }],
      [null, { labels: { x: '1', y: 'a"b' }, value: 2.5, timestampMs: 1520879607789 }],
      [1000000, { labels: { 'q.x': 'z' }, value: -1, timestampMs: -1 }],
      [null, { labels: { x: '' }, value: NaN, timestampMs: null }],
    ]);
  });

  it('keeps an exemplar label called __proto__ as an own property', () => {
    const [s] = om('a_total 1 # {__proto__="x"} 1\n# EOF\n');
    expect(Object.keys(s?.exemplar?.labels ?? {})).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(s?.exemplar?.labels)).toBe(Object.prototype);
  });

  it('says what is wrong with a malformed exemplar', () => {
    const r = (line: string) => rejection(`${line}\n# EOF\n`).reason;
    expect(r('a_total 1 # {')).toBe('expected an exemplar label name: "a_total 1 # {"');
    expect(r('a_total 1 # {,x="1"} 1')).toBe('expected an exemplar label name: "a_total 1 # {,x=\\"1\\"} 1"');
    expect(r('a_total 1 # {""="1"} 1')).toBe('empty label name: "a_total 1 # {\\"\\"=\\"1\\"} 1"');
    expect(r('a_total 1 # {x="1" y="2"} 1')).toBe('expected "," or "}" after an exemplar label value: "a_total 1 # {x=\\"1\\" y=\\"2\\"} 1"');
    expect(r('a_total 1 # {x="1"}')).toBe('expected a space and the exemplar value after its labels: "a_total 1 # {x=\\"1\\"}"');
    expect(r('a_total 1 # {x="1"} ')).toBe('expected the exemplar value after its labels: "a_total 1 # {x=\\"1\\"} "');
    expect(r('a_total 1 # {x="1"} 1 ')).toBe('expected a exemplar timestamp: "a_total 1 # {x=\\"1\\"} 1 "');
    expect(r('a_total 1 # {x="a\nb"} 1')).toBe('newline inside a quoted string (escape it as \\n): "a_total 1 # {x=\\"a"');
    expect(r('a_total 1 2 # x')).toBe('expected the end of the line or " # {" (an exemplar) after the timestamp: "a_total 1 2 # x"');
    // " {" after a timestamp is no exemplar start: the "#" is missing.
    expect(r('a_total 1 5 {x="1"} 2')).toBe('expected the end of the line or " # {" (an exemplar) after the timestamp: "a_total 1 5 {x=\\"1\\"} 2"');
    expect(r('a_total 1 2 #')).toBe('expected the end of the line or " # {" (an exemplar) after the timestamp: "a_total 1 2 #"');
    expect(rejection('a_total 1 # {x="1"')).toMatchObject({ line: 1, reason: 'expected "," or "}" after an exemplar label value: "a_total 1 # {x=\\"1\\""' });
    expect(rejection('a_total 1 # {x')).toMatchObject({ line: 1, reason: 'expected "=" after exemplar label name "x": "a_total 1 # {x"' });
    expect(rejection('a_total 1 # {x=')).toMatchObject({ line: 1, reason: 'expected a double-quoted value for exemplar label "x": "a_total 1 # {x="' });
    expect(rejection('a_total 1 # {x="1",')).toMatchObject({ line: 1, reason: 'unterminated exemplar label set (missing "}"): "a_total 1 # {x=\\"1\\","' });
    expect(rejection('a_total 1 # {x="1"} 2')).toMatchObject({ line: 1, reason: 'the exposition does not end with "# EOF": "a_total 1 # {x=\\"1\\"} 2"' });
    expect(rejection('a_total 1 # {x="1"} 2 3')).toMatchObject({ line: 1, reason: 'the exposition does not end with "# EOF": "a_total 1 # {x=\\"1\\"} 2 3"' });
  });

  it('takes "# {" only as a whole after the value', () => {
    expect(rejection('a_total 1 #{x="1"} 1\n# EOF\n').reason).toBe('invalid timestamp "#{x="1"}": "a_total 1 #{x=\\"1\\"} 1"');
    expect(rejection('a_total 1 # x\n# EOF\n').reason).toBe('invalid timestamp "#": "a_total 1 # x"');
    expect(rejection('a_total 1 #x{y="1"} 1\n# EOF\n').reason).toBe('invalid timestamp "#x{y="1"}": "a_total 1 #x{y=\\"1\\"} 1"');
    expect(rejection('a_total 1 2 #x{y="1"} 1\n# EOF\n').reason).toBe('expected the end of the line or " # {" (an exemplar) after the timestamp: "a_total 1 2 #x{y=\\"1\\"} 1"');
    expect(rejection('a_total 1 # \n# EOF\n').reason).toBe('invalid timestamp "#": "a_total 1 # "');
  });
});

describe('OpenMetrics label sets', () => {
  it('says what is wrong, with no whitespace allowed', () => {
    const r = (line: string) => rejection(`${line}\n# EOF\n`).reason;
    expect(r('a{b,c="1"} 1')).toBe('expected "=" after label name "b": "a{b,c=\\"1\\"} 1"');
    expect(r('a{b} 1')).toBe('expected "=" after label name "b": "a{b} 1"');
    expect(r('a{b="1" } 1')).toBe('expected "," or "}" after a label value: "a{b=\\"1\\" } 1"');
    expect(r('a{b ="1"} 1')).toBe('expected "=" after label name "b": "a{b =\\"1\\"} 1"');
    expect(r('a{b= "1"} 1')).toBe('expected a double-quoted value for label "b": "a{b= \\"1\\"} 1"');
    expect(r('a{"b" ="1"} 1')).toBe('expected "=" after label name "b": "a{\\"b\\" =\\"1\\"} 1"');
    expect(rejection('a{b="1"')).toMatchObject({ line: 1, reason: 'expected "," or "}" after a label value: "a{b=\\"1\\""' });
    expect(rejection('a{b="1",')).toMatchObject({ line: 1, reason: 'unterminated label set (missing "}"): "a{b=\\"1\\","' });
    expect(rejection('a{b')).toMatchObject({ line: 1, reason: 'expected "=" after label name "b": "a{b"' });
    expect(rejection('a{"b"')).toMatchObject({ line: 1, reason: 'expected "=" after label name "b": "a{\\"b\\""' });
    expect(rejection('a{b=')).toMatchObject({ line: 1, reason: 'expected a double-quoted value for label "b": "a{b="' });
  });

  it('refuses a backslash that escapes nothing on its line, in both formats', () => {
    expect(rejection('a{b="x\\\ny"} 1\n# EOF\n')).toMatchObject({ line: 1, reason: 'a backslash must escape a character on the same line: "a{b=\\"x\\\\"' });
    expect(rejection('a{b="x\\', TEXT)).toMatchObject({ line: 1, reason: 'unterminated quoted string: "a{b=\\"x\\\\"' });
    expect(rejection('a{"x\\', TEXT)).toMatchObject({ line: 1, reason: 'a backslash must escape a character on the same line: "a{\\"x\\\\"' });
    expect(rejection('a{b="x\\\ny"} 1\n', TEXT).line).toBe(1);
  });

  it('refuses a raw newline in a value even after earlier lines moved past other newlines', () => {
    expect(rejection('a{b="1"} 1\na{b="2"} 2\na{b="3\n"} 3\n# EOF\n')).toMatchObject({ line: 3 });
    expect(rejection('a{b="1\\n"} 1\na{b="2"} 2\na{b="3\n"} 3\n# EOF\n')).toMatchObject({ line: 3 });
  });

  it('unescapes values on later lines once an earlier line had a backslash or none', () => {
    const samples = om('a{b="1"} 1\na{b="x\\\\y"} 2\na{b="plain"} 3\na{b="q\\"q"} 4\na{b="plain"} 5\n# EOF\n');
    expect(samples.map((s) => s.labels.b)).toEqual(['1', 'x\\y', 'plain', 'q"q', 'plain']);
    const prom = parseExposition('a{b="1"} 1\na{b="x\\\\y"} 2\na{b="plain"} 3\na{b="q\\"q"} 4\n', TEXT);
    expect(prom.map((s) => s.labels.b)).toEqual(['1', 'x\\y', 'plain', 'q"q']);
  });
});

describe('consecutive lines that share leading labels', () => {
  const check = (text: string, contentType: string, expected: string[]) =>
    expect(parseExposition(text, contentType).map(brief)).toEqual(expected);

  it('reads each line\'s own labels when the leading text repeats, changes or grows', () => {
    const lines = [
      'h_bucket{a="1",b="2",le="1"} 1',
      'h_bucket{a="1",b="2",le="2"} 2',
      'h_sum{a="1",b="2"} 3',
      'h_count{a="1",b="2"} 4',
      'h_bucket{a="1",b="3",le="1"} 5',
      'h_bucket{a="1",b="3",c="4",le="1"} 6',
      'h_bucket{a="1",b="3",c="4",le="2"} 7',
      'h_bucket{a="1",b="3",c="5",le="2"} 8',
      'h_bucket{a="1",le="2"} 9',
      'h_bucket{a="1","b"="2",le="3"} 10',
      'h_bucket{a="1","b"="2",le="4"} 11',
      'h_bucket{a="1",b="2",le="5"} 12',
      'h_bucket{a="1",b="2"} 13',
      'h_bucket{a="1",b="2",le="6"} 14',
    ];
    const expected = [
      'h_bucket[["a","1"],["b","2"],["le","1"]] 1 null',
      'h_bucket[["a","1"],["b","2"],["le","2"]] 2 null',
      'h_sum[["a","1"],["b","2"]] 3 null',
      'h_count[["a","1"],["b","2"]] 4 null',
      'h_bucket[["a","1"],["b","3"],["le","1"]] 5 null',
      'h_bucket[["a","1"],["b","3"],["c","4"],["le","1"]] 6 null',
      'h_bucket[["a","1"],["b","3"],["c","4"],["le","2"]] 7 null',
      'h_bucket[["a","1"],["b","3"],["c","5"],["le","2"]] 8 null',
      'h_bucket[["a","1"],["le","2"]] 9 null',
      'h_bucket[["a","1"],["b","2"],["le","3"]] 10 null',
      'h_bucket[["a","1"],["b","2"],["le","4"]] 11 null',
      'h_bucket[["a","1"],["b","2"],["le","5"]] 12 null',
      'h_bucket[["a","1"],["b","2"]] 13 null',
      'h_bucket[["a","1"],["b","2"],["le","6"]] 14 null',
    ];
    check(`${lines.join('\n')}\n# EOF\n`, OM, expected);
    check(`${lines.join('\n')}\n`, TEXT, expected);
    // 0.0.4 with spaces and without commas: the same labels.
    check('m{a="1", b="2" c="3"} 1\nm{a="1", b="2" c="4"} 2\nm{a="1", b="9"} 3\n', TEXT, [
      'm[["a","1"],["b","2"],["c","3"]] 1 null',
      'm[["a","1"],["b","2"],["c","4"]] 2 null',
      'm[["a","1"],["b","9"]] 3 null',
    ]);
  });

  it('reads blocks that hold a quoted metric name, no labels, or labels without commas, and what follows them', () => {
    const quoted = '{"a.b",x="1",le="1"} 1\n{"a.b",x="1",le="2"} 2\n{"a.b",x="1"} 3\n';
    const quotedExpected = ['a.b[["x","1"],["le","1"]] 1 null', 'a.b[["x","1"],["le","2"]] 2 null', 'a.b[["x","1"]] 3 null'];
    check(`${quoted}# EOF\n`, OM, quotedExpected);
    check(quoted, TEXT, quotedExpected);
    const empty = 'm{} 1\nm{a="1",b="2"} 2\nm{} 3\nm{a="1",b="2"} 4\n';
    const emptyExpected = ['m[] 1 null', 'm[["a","1"],["b","2"]] 2 null', 'm[] 3 null', 'm[["a","1"],["b","2"]] 4 null'];
    check(`${empty}# EOF\n`, OM, emptyExpected);
    check(empty, TEXT, emptyExpected);
    check('m{a="1" b="2" c="3"} 1\nm{a="1" b="2" c="4"} 2\nm{a="1" b="2"} 3\n', TEXT, [
      'm[["a","1"],["b","2"],["c","3"]] 1 null',
      'm[["a","1"],["b","2"],["c","4"]] 2 null',
      'm[["a","1"],["b","2"]] 3 null',
    ]);
  });

  it('does not reuse leading labels across a line with other labels in between', () => {
    const text = 'm{a="1",b="2",c="3"} 1\nm{x="9"} 2\nm{a="1",b="2",c="4"} 3\nm{y="8",z="7"} 4\nm{a="1",b="2",c="5"} 5\n';
    const expected = [
      'm[["a","1"],["b","2"],["c","3"]] 1 null',
      'm[["x","9"]] 2 null',
      'm[["a","1"],["b","2"],["c","4"]] 3 null',
      'm[["y","8"],["z","7"]] 4 null',
      'm[["a","1"],["b","2"],["c","5"]] 5 null',
    ];
    check(`${text}# EOF\n`, OM, expected);
    check(text, TEXT, expected);
  });

  it('normalises le after a TYPE line even when the leading labels repeat across it', () => {
    const text = 'x_bucket{a="1",le="1"} 1\n# TYPE h histogram\nh_bucket{a="1",le="1"} 2\nh_bucket{a="1",le="1"} 3\n';
    expect(parseExposition(text, TEXT).map((s) => s.labels.le)).toEqual(['1', '1.0', '1.0']);
  });

  it('still rejects a duplicate of a repeated leading label, on its own line', () => {
    expect(rejection('m{a="1",b="2",c="3"} 1\nm{a="1",b="2",a="9"} 2\n# EOF\n')).toMatchObject({
      line: 2,
      reason: 'duplicate label name "a": "m{a=\\"1\\",b=\\"2\\",a=\\"9\\"} 2"',
    });
    expect(rejection('m{a="1",b="2",c="3"} 1\nm{a="1",b="2",b="9"} 2\n', TEXT).line).toBe(2);
  });
});

describe('names that start like the previous line\'s', () => {
  it('reads the whole metric name, not the previous one it starts with', () => {
    const text = 'ab 1\nabc 2\nab 3\nab:c 4\nab_ 5\nab9 6\nab 7\n';
    const names = ['ab', 'abc', 'ab', 'ab:c', 'ab_', 'ab9', 'ab'];
    expect(parseExposition(text, TEXT).map((s) => s.name)).toEqual(names);
    expect(om(`${text}# EOF\n`).map((s) => s.name)).toEqual(names);
    expect(rejection('ab 1\nab')).toMatchObject({ line: 2, reason: 'expected a single space and the value after the metric name and labels: "ab"' });
  });

  it('reads the whole label name, not the previous one it starts with', () => {
    const text = 'm{ab="1"} 1\nm{abc="2"} 2\nm{ab9="3"} 3\nm{ab_="4"} 4\nm{ab="5"} 5\n';
    const names = ['ab', 'abc', 'ab9', 'ab_', 'ab'];
    expect(parseExposition(text, TEXT).map((s) => Object.keys(s.labels)[0])).toEqual(names);
    expect(om(`${text}# EOF\n`).map((s) => Object.keys(s.labels)[0])).toEqual(names);
    expect(rejection('m{ab="1"} 1\nm{ab')).toMatchObject({ line: 2, reason: 'expected "=" after label name "ab": "m{ab"' });
    expect(rejection('m{ab="1"} 1\nm{ab', TEXT)).toMatchObject({ line: 2, reason: 'expected "=" after label name "ab": "m{ab"' });
  });

  it('checks the names again when a quoted name takes the place of a bare one', () => {
    expect(rejection('m{a="1",b="2"} 1\nm{"b"="1",b="2"} 2\n', TEXT)).toMatchObject({ line: 2, reason: 'duplicate label name "b": "m{\\"b\\"=\\"1\\",b=\\"2\\"} 2"' });
    expect(rejection('m{a="1",b="2"} 1\nm{"b"="1",b="2"} 2\n# EOF\n')).toMatchObject({ line: 2 });
  });

  it('reports an unterminated quoted name or value on the line where it opens', () => {
    expect(rejection('a{"abc', TEXT)).toMatchObject({ line: 1, reason: 'unterminated quoted string: "a{\\"abc"' });
    expect(rejection('a{"\nabc', TEXT)).toMatchObject({ line: 1, reason: 'unterminated quoted string: "a{\\""' });
    expect(rejection('a{b="\nabc', TEXT)).toMatchObject({ line: 1, reason: 'unterminated quoted string: "a{b=\\""' });
    expect(rejection('# HELP "abc')).toMatchObject({ line: 1, reason: 'unterminated quoted string: "# HELP \\"abc"' });
  });

  it('does not take a quoted label name for the bare one at its position', () => {
    const text = 'm{a="1",b="2"} 1\nm{"a"="3",b="4"} 2\nm{a="5",b="6"} 3\nm{"a"="1",a="2"} 4\n';
    expect(rejection(text, TEXT)).toMatchObject({ line: 4, reason: 'duplicate label name "a": "m{\\"a\\"=\\"1\\",a=\\"2\\"} 4"' });
    expect(parseExposition(text.split('\n').slice(0, 3).join('\n'), TEXT).map(brief)).toEqual([
      'm[["a","1"],["b","2"]] 1 null',
      'm[["a","3"],["b","4"]] 2 null',
      'm[["a","5"],["b","6"]] 3 null',
    ]);
  });
});
