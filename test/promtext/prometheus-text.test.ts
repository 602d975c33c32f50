import { describe, expect, it } from 'vitest';
import { ExpositionError, parseExposition, type Sample } from '../../src/promtext/index.js';

const TEXT = 'text/plain; version=0.0.4; charset=utf-8';

function parse(text: string): Sample[] {
  return parseExposition(text, TEXT);
}

/** The ExpositionError thrown by parsing `text` (fails the test when nothing is thrown). */
function rejection(text: string): ExpositionError {
  try {
    parse(text);
  } catch (e) {
    if (e instanceof ExpositionError) return e;
    throw e;
  }
  throw new Error('expected the exposition to be rejected');
}

/** name{labels} value, for compact assertions. */
function brief(s: Sample): string {
  const labels = Object.entries(s.labels)
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(',');
  return `${s.name}{${labels}} ${s.value}`;
}

// The example of https://prometheus.io/docs/instrumenting/exposition_formats/#text-format-example
const DOCS_EXAMPLE_LINES = [
  '# HELP http_requests_total The total number of HTTP requests.',
  '# TYPE http_requests_total counter',
  'http_requests_total{method="post",code="200"} 1027 1395066363000',
  'http_requests_total{method="post",code="400"}    3 1395066363000',
  '',
  '# Escaping in label values:',
  String.raw`msdos_file_access_time_seconds{path="C:\\DIR\\FILE.TXT",error="Cannot find file:\n\"FILE.TXT\""} 1.458255915e9`,
  '',
  '# Minimalistic line:',
  'metric_without_timestamp_and_labels 12.47',
  '',
  '# A weird metric from before the epoch:',
  'something_weird{problem="division by zero"} +Inf -3982045',
  '',
  '# A histogram, which has a pretty complex representation in the text format:',
  '# HELP http_request_duration_seconds A histogram of the request duration.',
  '# TYPE http_request_duration_seconds histogram',
  'http_request_duration_seconds_bucket{le="0.05"} 24054',
  'http_request_duration_seconds_bucket{le="0.1"} 33444',
  'http_request_duration_seconds_bucket{le="0.2"} 100392',
  'http_request_duration_seconds_bucket{le="0.5"} 129389',
  'http_request_duration_seconds_bucket{le="1"} 133988',
  'http_request_duration_seconds_bucket{le="+Inf"} 144320',
  'http_request_duration_seconds_sum 53423',
  'http_request_duration_seconds_count 144320',
  '',
  '# Finally a summary, which has a complex representation, too:',
  '# HELP rpc_duration_seconds A summary of the RPC duration in seconds.',
  '# TYPE rpc_duration_seconds summary',
  'rpc_duration_seconds{quantile="0.01"} 3102',
  'rpc_duration_seconds{quantile="0.05"} 3272',
  'rpc_duration_seconds{quantile="0.5"} 4773',
  'rpc_duration_seconds{quantile="0.9"} 9001',
  'rpc_duration_seconds{quantile="0.99"} 76656',
  'rpc_duration_seconds_sum 1.7560473e+07',
  'rpc_duration_seconds_count 2693',
];

describe('Prometheus text 0.0.4: the documentation example', () => {
  it('is rejected at line 13 as Prometheus rejects it: its timestamp is negative', () => {
    // promlex.l only lexes [0-9]+ as a timestamp, so a Prometheus scrape of the docs example fails.
    const err = rejection(`${DOCS_EXAMPLE_LINES.join('\n')}\n`);
    expect(err.line).toBe(13);
    expect(err.message).toMatch(/^line 13: expected an integer timestamp/);
  });

  it('parses every other sample with its labels, value, timestamp, family, type and help', () => {
    const lines = DOCS_EXAMPLE_LINES.filter((l) => !l.startsWith('something_weird'));
    const samples = parse(`${lines.join('\n')}\n`);
    expect(samples.map(brief)).toEqual([
      'http_requests_total{method="post",code="200"} 1027',
      'http_requests_total{method="post",code="400"} 3',
      String.raw`msdos_file_access_time_seconds{path="C:\\DIR\\FILE.TXT",error="Cannot find file:\n\"FILE.TXT\""} 1458255915`,
      'metric_without_timestamp_and_labels{} 12.47',
      'http_request_duration_seconds_bucket{le="0.05"} 24054',
      'http_request_duration_seconds_bucket{le="0.1"} 33444',
      'http_request_duration_seconds_bucket{le="0.2"} 100392',
      'http_request_duration_seconds_bucket{le="0.5"} 129389',
      // Prometheus 3 rewrites le/quantile of histograms/summaries as OpenMetrics floats.
      'http_request_duration_seconds_bucket{le="1.0"} 133988',
      'http_request_duration_seconds_bucket{le="+Inf"} 144320',
      'http_request_duration_seconds_sum{} 53423',
      'http_request_duration_seconds_count{} 144320',
      'rpc_duration_seconds{quantile="0.01"} 3102',
      'rpc_duration_seconds{quantile="0.05"} 3272',
      'rpc_duration_seconds{quantile="0.5"} 4773',
      'rpc_duration_seconds{quantile="0.9"} 9001',
      'rpc_duration_seconds{quantile="0.99"} 76656',
      'rpc_duration_seconds_sum{} 17560473',
      'rpc_duration_seconds_count{} 2693',
    ]);
    expect(samples[0]).toEqual({
      name: 'http_requests_total',
      labels: { method: 'post', code: '200' },
      value: 1027,
      timestampMs: 1395066363000,
      family: 'http_requests_total',
      type: 'counter',
      help: 'The total number of HTTP requests.',
      unit: null,
      exemplar: null,
    });
    expect(samples[2]?.labels).toEqual({ path: 'C:\\DIR\\FILE.TXT', error: 'Cannot find file:\n"FILE.TXT"' });
    expect(samples[3]).toMatchObject({ family: 'metric_without_timestamp_and_labels', type: 'untyped', help: null, timestampMs: null });
    for (const s of samples.slice(4, 12)) {
      expect(s).toMatchObject({ family: 'http_request_duration_seconds', type: 'histogram', help: 'A histogram of the request duration.' });
    }
    for (const s of samples.slice(12)) {
      expect(s).toMatchObject({ family: 'rpc_duration_seconds', type: 'summary', help: 'A summary of the RPC duration in seconds.' });
    }
  });
});

describe('Prometheus text 0.0.4: whitespace, as promlex.l allows it', () => {
  it('accepts leading whitespace, blank and whitespace-only lines, spaces around labels and before value and timestamp', () => {
    const samples = parse(
      [
        '',
        '   \t',
        '  \tgo_goroutines 33  \t123123   ',
        'a {x="1"} 1',
        'b{ x = "1" , y= "2", } 2',
        'c{}\t3',
        'no_final_newline 4',
      ].join('\n'),
    );
    expect(samples.map(brief)).toEqual(['go_goroutines{} 33', 'a{x="1"} 1', 'b{x="1",y="2"} 2', 'c{} 3', 'no_final_newline{} 4']);
    expect(samples[0]?.timestampMs).toBe(123123);
  });

  it('accepts labels without commas between them, as promparse.go does', () => {
    expect(parse('go_gc_duration_seconds { quantile = "2.0" a = "b" } 8.3835e-05\n').map(brief)).toEqual([
      'go_gc_duration_seconds{quantile="2.0",a="b"} 0.000083835',
    ]);
  });

  it('accepts one trailing comma but not an empty label or two commas', () => {
    expect(parse('a{x="1",} 1\n').map(brief)).toEqual(['a{x="1"} 1']);
    expect(rejection('a{,x="1"} 1\n').reason).toMatch(/expected a label name/);
    expect(rejection('a{x="1",,} 1\n').reason).toMatch(/expected a label name/);
  });

  it('rejects CRLF line endings (the value would end in \\r) and says why', () => {
    const err = rejection('a 1\r\nb 2\r\n');
    expect(err.line).toBe(1);
    expect(err.reason).toMatch(/CRLF/);
  });

  it('treats an empty body as an empty scrape', () => {
    expect(parse('')).toEqual([]);
    expect(parse('\n\n# just a comment\n')).toEqual([]);
  });
});

describe('Prometheus text 0.0.4: comments and metadata', () => {
  it('reads HELP and TYPE with any whitespace after "#" and the keyword; other # lines are comments', () => {
    const samples = parse(
      [
        '#\tHELP   a   Help with   inner spaces  ',
        '#  TYPE a gauge',
        '#HELP not metadata',
        '# Hrandom comment starting with prefix of HELP',
        '#',
        '# UNIT a seconds',
        '# EOF',
        'a 1',
      ].join('\n'),
    );
    // promlex.l: the text starts right after the name and loses its first character only.
    expect(samples).toEqual([
      expect.objectContaining({ name: 'a', family: 'a', type: 'gauge', help: '  Help with   inner spaces  ', unit: null }),
    ]);
  });

  it('takes empty HELP text as empty, with or without trailing whitespace', () => {
    const samples = parse('# HELP nohelp1\n# HELP nohelp2 \nnohelp1 1\nnohelp2 2\n');
    expect(samples.map((s) => s.help)).toEqual(['', '']);
  });

  it('unescapes only \\\\ and \\n in 0.0.4 HELP (promparse.go helpReplacer)', () => {
    const samples = parse(String.raw`# HELP a one\\two\nthree \"quoted\" \t tab` + '\na 1\n');
    expect(samples[0]?.help).toBe('one\\two\nthree \\"quoted\\" \\t tab');
  });

  it('knows counter, gauge, histogram, summary and untyped only', () => {
    expect(parse('# TYPE a untyped\na 1\n')[0]?.type).toBe('untyped');
    expect(rejection('# TYPE a gaugehistogram\na 1\n').reason).toMatch(/invalid metric type "gaugehistogram"/);
    expect(rejection('# TYPE a Counter\n').reason).toMatch(/invalid metric type "Counter"/);
    expect(rejection('# TYPE a counter \n').reason).toMatch(/invalid metric type "counter "/);
    expect(rejection('# TYPE a\n').reason).toMatch(/invalid metric type ""/);
    expect(rejection('# TYPE #\n').reason).toMatch(/expected a metric name after TYPE/);
  });

  it('rejects a TYPE line after samples of its family, and a second TYPE line', () => {
    expect(rejection('a 1\n# TYPE a gauge\n')).toMatchObject({ line: 2 });
    expect(rejection('a 1\n# TYPE a gauge\n').reason).toMatch(/TYPE line for "a" after samples of that family/);
    expect(rejection('x_bucket{le="1"} 1\n# TYPE x histogram\n').reason).toMatch(/after samples of that family \("x_bucket"\)/);
    expect(rejection('c_total 1\n# TYPE c counter\n').reason).toMatch(/after samples of that family \("c_total"\)/);
    expect(rejection('# TYPE a gauge\n# TYPE a gauge\na 1\n').reason).toMatch(/second TYPE line for metric family "a"/);
  });

  it('accepts a second HELP line, as Prometheus does, and gives the whole family the last one', () => {
    const samples = parse('# HELP a x\na 1\n# HELP a y\na{b="c"} 2\n');
    expect(samples.map((s) => s.help)).toEqual(['y', 'y']);
  });

  it('gives samples a HELP line that comes after them (HELP may come anywhere)', () => {
    const samples = parse('# TYPE a gauge\na{x="1"} 1\n# HELP a late help\na{x="2"} 2\n');
    expect(samples.map((s) => s.help)).toEqual(['late help', 'late help']);
  });
});

describe('Prometheus text 0.0.4: values and timestamps', () => {
  it('reads Go float syntax: signs, exponents, NaN and infinities in any case', () => {
    const values = parse(
      ['a 1', 'a -2.5', 'a .5', 'a 5.', 'a +3e2', 'a 1E-3', 'a NaN', 'a nan', 'a +Inf', 'a -Inf', 'a Inf', 'a -infinity', 'a 1.7560473e+07'].join('\n'),
    ).map((s) => s.value);
    expect(values).toEqual([1, -2.5, 0.5, 5, 300, 0.001, NaN, NaN, Infinity, -Infinity, Infinity, -Infinity, 17560473]);
  });

  it('keeps negative zero and long mantissas exact', () => {
    const [zero, long] = parse('a -0\na 7.424100000000001e-05\n');
    expect(Object.is(zero?.value, -0)).toBe(true);
    expect(long?.value).toBe(7.424100000000001e-5);
  });

  it('rejects what Go (or Prometheus on top of it) rejects', () => {
    expect(rejection('foo 1_2\n').reason).toMatch(/hexadecimal floats and "_" are not allowed/);
    expect(rejection('foo 0x1p-3\n').reason).toMatch(/hexadecimal floats/);
    expect(rejection('foo 0x10\n').reason).toMatch(/invalid value "0x10"/);
    expect(rejection('foo true\n').reason).toMatch(/invalid value "true"/);
    expect(rejection('foo +NaN\n').reason).toMatch(/invalid value "\+NaN"/);
    expect(rejection('foo 1e400\n').reason).toMatch(/out of range/);
    expect(rejection('foo\n').reason).toMatch(/expected a value/);
    expect(rejection('a{b="c"}\n').reason).toMatch(/expected a value/);
  });

  it('reads timestamps as integer milliseconds and rejects negative, fractional and out-of-int64 ones', () => {
    expect(parse('a 1 1395066363000\n')[0]?.timestampMs).toBe(1395066363000);
    expect(parse('a 1 0\n')[0]?.timestampMs).toBe(0);
    expect(rejection('a 1 -3982045\n').reason).toMatch(/expected an integer timestamp/);
    expect(rejection('a 1 1.5\n').reason).toMatch(/unexpected text after the timestamp/);
    expect(rejection('a 1 9223372036854775808\n').reason).toMatch(/out of range for int64/);
    expect(rejection('a 1 2 3\n').reason).toMatch(/unexpected text after the timestamp/);
  });

  it('rejects an OpenMetrics exemplar in 0.0.4 text', () => {
    expect(rejection('a_total 1 # {trace_id="x"} 1\n').reason).toMatch(/expected an integer timestamp/);
  });
});

describe('Prometheus text 0.0.4: labels', () => {
  it('unescapes \\\\, \\" and \\n in label values and keeps any other backslash as written', () => {
    const [s] = parse(String.raw`a{x="back\\slash",y="say \"hi\"",z="two\nlines",t="tab\t"} 1` + '\n');
    expect(s?.labels).toEqual({ x: 'back\\slash', y: 'say "hi"', z: 'two\nlines', t: 'tab\\t' });
  });

  it('accepts a raw newline inside a label value, as promlex.l does, and keeps counting lines', () => {
    const err = rejection('a{x="one\ntwo"} 1\nb 1\nc ?\n');
    expect(err.line).toBe(4);
    expect(parse('a{x="one\ntwo"} 1\n')[0]?.labels).toEqual({ x: 'one\ntwo' });
  });

  it('accepts quoted (UTF-8) metric and label names, Prometheus 3 style', () => {
    const samples = parse(
      '# TYPE "my.metric" gauge\n{"my.metric", "label.with.dots"="v", plain="p"} 1\n{"my.metric"} 2\n',
    );
    expect(samples.map(brief)).toEqual(['my.metric{label.with.dots="v",plain="p"} 1', 'my.metric{} 2']);
    expect(samples[0]).toMatchObject({ family: 'my.metric', type: 'gauge' });
  });

  it('rejects duplicate label names and __name__ as a label, as Prometheus fails such a scrape', () => {
    expect(rejection('a{b="c",b="d"} 1\n').reason).toMatch(/duplicate label name "b"/);
    expect(rejection('a{b="c",x="y"} 1\na{b="c",b="d"} 1\n')).toMatchObject({ line: 2 });
    expect(rejection('a{__name__="a"} 1\n').reason).toMatch(/__name__/);
    expect(rejection('a{"b"="c",b="d"} 1\n').reason).toMatch(/duplicate label name "b"/);
    expect(rejection('a{""="c"} 1\n').reason).toMatch(/empty label name/);
  });

  it('rejects malformed label sets', () => {
    expect(rejection("a{b='c'} 1\n").reason).toMatch(/expected a double-quoted value for label "b"/);
    expect(rejection('a{b=\n').reason).toMatch(/expected a double-quoted value/);
    expect(rejection('a{b="c"\n').reason).toMatch(/unterminated label set/);
    expect(rejection('a{b="c} 1\n').reason).toMatch(/unterminated quoted string/);
    expect(rejection('a{b} 1\n').reason).toMatch(/expected "=" after label name "b"/);
    expect(rejection('a{=""} 0\n').reason).toMatch(/expected a label name/);
    expect(rejection('a{1b="c"} 1\n').reason).toMatch(/expected a label name/);
    expect(rejection('{a="ok"} 1\n').reason).toMatch(/metric name not set/);
    expect(rejection('a{"b"} 1\n').reason).toMatch(/metric name set twice/);
    expect(rejection('9abc 1\n').reason).toMatch(/expected a metric name/);
  });

  it('keeps a label called __proto__ as an own property', () => {
    const [s] = parse('a{__proto__="x",constructor="y"} 1\n');
    expect(Object.keys(s?.labels ?? {})).toEqual(['__proto__', 'constructor']);
    expect(Object.getPrototypeOf(s?.labels)).toBe(Object.prototype);
    expect(JSON.stringify(s?.labels)).toBe('{"__proto__":"x","constructor":"y"}');
  });
});

describe('Prometheus text 0.0.4: le and quantile, as Prometheus 3 normalises them', () => {
  it('rewrites le of histograms and quantile of summaries as OpenMetrics floats', () => {
    const samples = parse(
      [
        '# TYPE h histogram',
        'h_bucket{le="1"} 1',
        'h_bucket{le="0.10"} 1',
        'h_bucket{le="1e3"} 1',
        'h_bucket{le="1000000"} 1',
        'h_bucket{le="+inf"} 1',
        'h_bucket{le="not a number"} 1',
        '# TYPE s summary',
        's{quantile="0"} 1',
        's{quantile="1"} 1',
        's{quantile="0.5"} 1',
      ].join('\n'),
    );
    expect(samples.map((s) => s.labels.le ?? s.labels.quantile)).toEqual(['1.0', '0.1', '1000.0', '1e+06', '+Inf', 'not a number', '0.0', '1.0', '0.5']);
  });

  it('leaves le alone outside histograms, e.g. the platform gauge that carries le buckets', () => {
    const samples = parse(
      [
        '# TYPE svc_app_request_latency gauge',
        'svc_app_request_latency{application="a",le="1"} 3',
        '# TYPE c counter',
        'c_total{le="1"} 1',
        '# TYPE s summary',
        's_sum{le="1"} 1',
      ].join('\n'),
    );
    expect(samples.map((s) => s.labels.le)).toEqual(['1', '1', '1']);
    expect(samples[0]).toMatchObject({ family: 'svc_app_request_latency', type: 'gauge' });
  });
});

describe('Prometheus text 0.0.4: families', () => {
  it('puts _bucket/_sum/_count under the histogram, _sum/_count under the summary and _total under the counter', () => {
    const samples = parse(
      [
        '# TYPE h histogram',
        'h_bucket{le="+Inf"} 1',
        'h_sum 1',
        'h_count 1',
        'h_total 1',
        '# TYPE s summary',
        's 1',
        's_sum 1',
        's_count 1',
        's_bucket 1',
        '# TYPE c counter',
        'c_total 1',
        'c 1',
        'c_created 1',
        '# TYPE d_total counter',
        'd_total 1',
      ].join('\n'),
    );
    expect(samples.map((s) => `${s.name}:${s.family}:${s.type}`)).toEqual([
      'h_bucket:h:histogram',
      'h_sum:h:histogram',
      'h_count:h:histogram',
      'h_total:h_total:untyped',
      's:s:summary',
      's_sum:s:summary',
      's_count:s:summary',
      's_bucket:s_bucket:untyped',
      'c_total:c:counter',
      'c:c:counter',
      // In 0.0.4, _created is not part of a counter (client_python exposes it as its own gauge).
      'c_created:c_created:untyped',
      'd_total:d_total:counter',
    ]);
  });

  it('finds the family of a sample whose metadata came earlier, even when families interleave', () => {
    const samples = parse('# HELP a A\n# TYPE a gauge\na 1\n# HELP b B\nb 2\na 3\n');
    expect(samples.map((s) => `${s.name}:${s.type}:${s.help}`)).toEqual(['a:gauge:A', 'b:untyped:B', 'a:gauge:A']);
  });

  it('reports the line of an error far into a large exposition', () => {
    const lines = Array.from({ length: 5000 }, (_, i) => `m{i="${i}"} ${i}`);
    lines[4321] = 'm{i="4321"} x';
    const err = rejection(`${lines.join('\n')}\n`);
    expect(err.line).toBe(4322);
    expect(err.message).toBe('line 4322: invalid value "x": "m{i=\\"4321\\"} x"');
  });
});
