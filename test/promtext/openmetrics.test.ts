import { describe, expect, it } from 'vitest';
import { ExpositionError, parseExposition, type Sample } from '../../src/promtext/index.js';

const OM = 'application/openmetrics-text; version=1.0.0; charset=utf-8';

function parse(text: string): Sample[] {
  return parseExposition(text, OM);
}

function rejection(text: string): ExpositionError {
  try {
    parse(text);
  } catch (e) {
    if (e instanceof ExpositionError) return e;
    throw e;
  }
  throw new Error('expected the exposition to be rejected');
}

function brief(s: Sample): string {
  const labels = Object.entries(s.labels)
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(',');
  return `${s.name}{${labels}} ${s.value}`;
}

describe('OpenMetrics 1.0: examples of the specification', () => {
  it('reads the overall example: summary with _created, gauge, counter with _total, UNIT and HELP', () => {
    const samples = parse(
      [
        '# TYPE acme_http_router_request_seconds summary',
        '# UNIT acme_http_router_request_seconds seconds',
        "# HELP acme_http_router_request_seconds Latency though all of ACME's HTTP request router.",
        'acme_http_router_request_seconds_sum{path="/api/v1",method="GET"} 9036.32',
        'acme_http_router_request_seconds_count{path="/api/v1",method="GET"} 807283.0',
        'acme_http_router_request_seconds_created{path="/api/v1",method="GET"} 1605281325.0',
        'acme_http_router_request_seconds_sum{path="/api/v2",method="POST"} 479.3',
        'acme_http_router_request_seconds_count{path="/api/v2",method="POST"} 34.0',
        'acme_http_router_request_seconds_created{path="/api/v2",method="POST"} 1605281325.0',
        '# TYPE go_goroutines gauge',
        '# HELP go_goroutines Number of goroutines that currently exist.',
        'go_goroutines 69',
        '# TYPE process_cpu_seconds counter',
        '# UNIT process_cpu_seconds seconds',
        '# HELP process_cpu_seconds Total user and system CPU time spent in seconds.',
        'process_cpu_seconds_total 4.20072246e+06',
        '# EOF',
      ].join('\n'),
    );
    // _created lines are samples too: Prometheus ingests (and counts) them unless the
    // created-timestamp feature flag is on.
    expect(samples).toHaveLength(8);
    expect(samples[0]).toEqual({
      name: 'acme_http_router_request_seconds_sum',
      labels: { path: '/api/v1', method: 'GET' },
      value: 9036.32,
      timestampMs: null,
      family: 'acme_http_router_request_seconds',
      type: 'summary',
      help: "Latency though all of ACME's HTTP request router.",
      unit: 'seconds',
      exemplar: null,
    });
    expect(samples[2]).toMatchObject({ name: 'acme_http_router_request_seconds_created', value: 1605281325, family: 'acme_http_router_request_seconds', type: 'summary' });
    expect(samples[6]).toMatchObject({ name: 'go_goroutines', value: 69, family: 'go_goroutines', type: 'gauge', unit: null });
    expect(samples[7]).toMatchObject({
      name: 'process_cpu_seconds_total',
      value: 4200722.46,
      family: 'process_cpu_seconds',
      type: 'counter',
      unit: 'seconds',
      help: 'Total user and system CPU time spent in seconds.',
    });
  });

  it('reads a histogram with exemplars, with and without exemplar timestamps', () => {
    const samples = parse(
      [
        '# TYPE foo histogram',
        'foo_bucket{le="0.01"} 0',
        'foo_bucket{le="0.1"} 8 # {} 0.054',
        'foo_bucket{le="1"} 11 # {trace_id="KOO5S4vxi0o"} 0.67',
        'foo_bucket{le="10"} 17 # {trace_id="oHg5SJYRHA0"} 9.8 1520879607.789',
        'foo_bucket{le="+Inf"} 17',
        'foo_count 17',
        'foo_sum 324789.3',
        'foo_created 1520430000.123',
        '# EOF',
        '',
      ].join('\n'),
    );
    expect(samples.map(brief)).toEqual([
      'foo_bucket{le="0.01"} 0',
      'foo_bucket{le="0.1"} 8',
      'foo_bucket{le="1.0"} 11',
      'foo_bucket{le="10.0"} 17',
      'foo_bucket{le="+Inf"} 17',
      'foo_count{} 17',
      'foo_sum{} 324789.3',
      'foo_created{} 1520430000.123',
    ]);
    expect(samples.every((s) => s.family === 'foo' && s.type === 'histogram')).toBe(true);
    expect(samples[0]?.exemplar).toBeNull();
    expect(samples[1]?.exemplar).toEqual({ labels: {}, value: 0.054, timestampMs: null });
    expect(samples[2]?.exemplar).toEqual({ labels: { trace_id: 'KOO5S4vxi0o' }, value: 0.67, timestampMs: null });
    expect(samples[3]?.exemplar).toEqual({ labels: { trace_id: 'oHg5SJYRHA0' }, value: 9.8, timestampMs: 1520879607789 });
  });

  it('reads a counter with a timestamp (seconds) and an exemplar after it', () => {
    const samples = parse('# TYPE foo counter\nfoo_total 17.0 1520879607.789 # {trace_id="KOO5S4vxi0o"} 0.67\nfoo_created 1520430000.123\n# EOF\n');
    expect(samples[0]).toMatchObject({
      name: 'foo_total',
      value: 17,
      timestampMs: 1520879607789,
      family: 'foo',
      type: 'counter',
      exemplar: { labels: { trace_id: 'KOO5S4vxi0o' }, value: 0.67, timestampMs: null },
    });
    expect(samples[1]).toMatchObject({ name: 'foo_created', family: 'foo', type: 'counter', value: 1520430000.123 });
  });

  it('reads gaugehistogram (le left as written), info and stateset families', () => {
    const samples = parse(
      [
        '# TYPE gh gaugehistogram',
        'gh_bucket{le="0.01"} 20.0',
        'gh_bucket{le="1"} 34.0',
        'gh_bucket{le="+Inf"} 42.0',
        'gh_gcount 42.0',
        'gh_gsum 3289.3',
        '# TYPE build info',
        'build_info{name="pretty name",version="8.2.7"} 1',
        '# TYPE state stateset',
        'state{entity="controller",state="a"} 1.0',
        'state{entity="controller",state="bb"} 0.0',
        '# EOF',
      ].join('\n'),
    );
    expect(samples.map((s) => `${brief(s)} ${s.family}:${s.type}`)).toEqual([
      'gh_bucket{le="0.01"} 20 gh:gaugehistogram',
      'gh_bucket{le="1"} 34 gh:gaugehistogram',
      'gh_bucket{le="+Inf"} 42 gh:gaugehistogram',
      'gh_gcount{} 42 gh:gaugehistogram',
      'gh_gsum{} 3289.3 gh:gaugehistogram',
      'build_info{name="pretty name",version="8.2.7"} 1 build:info',
      'state{entity="controller",state="a"} 1 state:stateset',
      'state{entity="controller",state="bb"} 0 state:stateset',
    ]);
  });
});

describe('OpenMetrics 1.0: # EOF', () => {
  it('requires # EOF at the end and accepts it with or without a final newline', () => {
    expect(parse('a 1\n# EOF').map(brief)).toEqual(['a{} 1']);
    expect(parse('# EOF\n')).toEqual([]);
    expect(rejection('a 1\n')).toMatchObject({ line: 2 });
    expect(rejection('a 1\n').reason).toMatch(/does not end with "# EOF"/);
    expect(rejection('a 1').reason).toMatch(/does not end with "# EOF"/);
  });

  it('rejects anything after # EOF, even an empty line', () => {
    expect(rejection('a 1\n# EOF\n\n')).toMatchObject({ line: 3 });
    expect(rejection('# EOF\na 1\n').reason).toMatch(/unexpected data after "# EOF"/);
    expect(rejection('# EOFa 1').reason).toMatch(/unexpected data after "# EOF"/);
    expect(rejection('# EOF \n').reason).toMatch(/unexpected data after "# EOF"/);
  });

  it('treats an empty body as an empty scrape, as Prometheus does before choosing a parser', () => {
    expect(parse('')).toEqual([]);
  });
});

describe('OpenMetrics 1.0: strict layout', () => {
  it('rejects blank lines, leading whitespace and comments other than HELP/TYPE/UNIT/EOF', () => {
    expect(rejection('a 1\n\n# EOF\n')).toMatchObject({ line: 2 });
    expect(rejection(' a 1\n# EOF\n').reason).toMatch(/no blank lines or leading whitespace/);
    expect(rejection('# a comment\n# EOF\n').reason).toMatch(/OpenMetrics allows only/);
    expect(rejection('#  TYPE c counter\n# EOF\n').reason).toMatch(/OpenMetrics allows only/);
    expect(rejection('#\tTYPE c counter\n# EOF\n').reason).toMatch(/OpenMetrics allows only/);
  });

  it('rejects any whitespace but the single spaces that separate name, value, timestamp and exemplar', () => {
    expect(rejection('a  1\n# EOF\n').reason).toMatch(/expected a value/);
    expect(rejection('a\t1\n# EOF\n').reason).toMatch(/expected a single space/);
    expect(rejection('a 1 \n# EOF\n').reason).toMatch(/expected a timestamp/);
    expect(rejection('a 1 2 \n# EOF\n').reason).toMatch(/expected the end of the line or " # {"/);
    expect(rejection('a {b="c"} 1\n# EOF\n').reason).toMatch(/invalid value "{b="c"}"/);
    expect(rejection('a{b="c", d="e"} 1\n# EOF\n').reason).toMatch(/expected a label name/);
    expect(rejection('a{b="c"d="e"} 1\n# EOF\n').reason).toMatch(/expected "," or "}"/);
    expect(rejection('a 1 1 1\n# EOF\n').reason).toMatch(/expected the end of the line or " # {"/);
  });

  it('tolerates one trailing comma in a label set, as openmetricsparse.go does', () => {
    expect(parse('a{b="c",} 1\n# EOF\n').map(brief)).toEqual(['a{b="c"} 1']);
    expect(rejection('a{b="c",,d="e"} 1\n# EOF\n').reason).toMatch(/expected a label name/);
  });

  it('rejects a raw newline inside a label value', () => {
    expect(rejection('a{b="c\nd"} 1\n# EOF\n').reason).toMatch(/newline inside a quoted string/);
  });
});

describe('OpenMetrics 1.0: metadata', () => {
  it('unescapes \\\\, \\" and \\n in HELP, as label values', () => {
    const [s] = parse(String.raw`# HELP help2 escape \ \n \\ \" \x chars` + '\nhelp2 1\n# EOF\n');
    expect(s?.help).toBe('escape \\ \n \\ " \\x chars');
  });

  it('requires a space and text after the metric name, and takes "# HELP m " as empty help', () => {
    expect(parse('# HELP m \nm 1\n# EOF\n')[0]?.help).toBe('');
    expect(rejection('# HELP m\n# EOF\n').reason).toMatch(/expected a space and text/);
    expect(rejection('# TYPE m\n# EOF\n').reason).toMatch(/expected a space and text/);
    expect(rejection('# HELP \n# EOF\n').reason).toMatch(/expected a metric name after HELP/);
  });

  it('knows the OpenMetrics types, and not untyped', () => {
    expect(parse('# TYPE u unknown\nu 1\n# EOF\n')[0]?.type).toBe('unknown');
    expect(parse('u 1\n# EOF\n')[0]?.type).toBe('unknown');
    expect(rejection('# TYPE u untyped\n# EOF\n').reason).toMatch(/invalid metric type "untyped"/);
    expect(rejection('# TYPE c counter \n# EOF\n').reason).toMatch(/invalid metric type "counter "/);
    expect(rejection('# TYPE c  counter\n# EOF\n').reason).toMatch(/invalid metric type " counter"/);
  });

  it('requires the unit to be the suffix of the metric name after an underscore', () => {
    expect(parse('# UNIT nounit \nnounit 1\n# EOF\n')[0]?.unit).toBe('');
    expect(rejection('# UNIT metric suffix\n# EOF\n').reason).toMatch(/unit "suffix" is not a suffix of metric "metric"/);
    expect(rejection('# UNIT metricsuffix suffix\n# EOF\n').reason).toMatch(/not a suffix/);
    expect(rejection('# UNIT suffix suffix\n# EOF\n').reason).toMatch(/not a suffix/);
  });

  it('rejects a TYPE line after samples of its family', () => {
    expect(rejection('foo_total 1\n# TYPE foo counter\n# EOF\n').reason).toMatch(/after samples of that family \("foo_total"\)/);
    expect(rejection('foo_created 1\n# TYPE foo histogram\n# EOF\n').reason).toMatch(/after samples of that family \("foo_created"\)/);
  });

  it('keeps a gauge named *_created a family of its own', () => {
    const samples = parse('# HELP fizz_created Gauge which shouldn\'t be parsed as CT\n# TYPE fizz_created gauge\nfizz_created 17.0\n# EOF\n');
    expect(samples[0]).toMatchObject({ name: 'fizz_created', family: 'fizz_created', type: 'gauge' });
  });
});

describe('OpenMetrics 1.0: values, timestamps and exemplars', () => {
  it('reads timestamps as float seconds, truncated to milliseconds as Prometheus does', () => {
    const samples = parse('a 1 123.123\na 1 1520879607.789\na 1 -1.5\na 1 1e3\n# EOF\n');
    expect(samples.map((s) => s.timestampMs)).toEqual([123123, 1520879607789, -1500, 1000000]);
  });

  it('rejects non-finite or malformed timestamps', () => {
    expect(rejection('a 1 NaN\n# EOF\n').reason).toMatch(/invalid timestamp NaN \(must be finite\)/);
    expect(rejection('a 1 +Inf\n# EOF\n').reason).toMatch(/must be finite/);
    expect(rejection('a 1 1z\n# EOF\n').reason).toMatch(/invalid timestamp "1z"/);
    expect(rejection('foo 0 1_2\n# EOF\n').reason).toMatch(/"_" are not allowed/);
  });

  it('reads special values', () => {
    const samples = parse('a NaN\na +Inf\na -Inf\na 1.5e-3\n# EOF\n');
    expect(samples.map((s) => s.value)).toEqual([NaN, Infinity, -Infinity, 0.0015]);
  });

  it('rejects malformed exemplars', () => {
    expect(rejection('m_total 1 # {aa=bb}\n# EOF\n').reason).toMatch(/expected a double-quoted value for exemplar label "aa"/);
    expect(rejection('m_total 1 # {aa="bb"}\n# EOF\n').reason).toMatch(/expected a space and the exemplar value/);
    expect(rejection('m_total 1 # {bb}\n# EOF\n').reason).toMatch(/expected "=" after exemplar label name "bb"/);
    expect(rejection('m_total 1 # {aa="bb"} true\n# EOF\n').reason).toMatch(/invalid exemplar value "true"/);
    expect(rejection('m_total 1 # {aa="bb"} 1 NaN\n# EOF\n').reason).toMatch(/invalid exemplar timestamp NaN/);
    expect(rejection('m_total 1 # {aa="bb"} 1 2 3\n# EOF\n').reason).toMatch(/unexpected text after the exemplar timestamp/);
    expect(rejection('m_total 1 # {"quoted"} 1\n# EOF\n').reason).toMatch(/expected "=" after exemplar label name "quoted"/);
  });

  it('accepts quoted exemplar label names, and does not fail on a duplicate one (Prometheus only logs it)', () => {
    const [s] = parse('m_count 1 # {"id.thing"="a",other="b",other="c"} 4\n# EOF\n');
    expect(s?.exemplar).toEqual({ labels: { 'id.thing': 'a', other: 'c' }, value: 4, timestampMs: null });
  });

  it('rejects duplicate sample label names', () => {
    expect(rejection('a{b="1",b="2"} 1\n# EOF\n').reason).toMatch(/duplicate label name "b"/);
  });

  it('accepts quoted (UTF-8) metric names inside the braces', () => {
    const samples = parse('# TYPE "go.gc_duration_seconds" summary\n{"go.gc_duration_seconds",quantile="0"} 4.9351e-05\n{"go.gc_duration_seconds_sum"} 0.004304266\n# EOF\n');
    expect(samples.map((s) => `${brief(s)} ${s.family}`)).toEqual([
      'go.gc_duration_seconds{quantile="0.0"} 0.000049351 go.gc_duration_seconds',
      'go.gc_duration_seconds_sum{} 0.004304266 go.gc_duration_seconds',
    ]);
  });
});
