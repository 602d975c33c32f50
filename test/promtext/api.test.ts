import { describe, expect, it } from 'vitest';
import { detectFormat, ExpositionError, formatOpenMetricsFloat, parseExposition, sampleToJson } from '../../src/promtext/index.js';
import { parseGoFloat } from '../../src/promtext/floats.js';

describe('detectFormat', () => {
  it('chooses OpenMetrics for application/openmetrics-text in any case and with any parameters', () => {
    expect(detectFormat('application/openmetrics-text; version=1.0.0; charset=utf-8')).toBe('openmetrics-1.0');
    expect(detectFormat('application/openmetrics-text;version=0.0.1')).toBe('openmetrics-1.0');
    expect(detectFormat(' Application/OpenMetrics-Text ')).toBe('openmetrics-1.0');
  });

  it('chooses 0.0.4 text for anything else, a missing content type included', () => {
    expect(detectFormat('text/plain; version=0.0.4; charset=utf-8')).toBe('prometheus-0.0.4');
    expect(detectFormat('text/plain; version=1.0.0; escaping=allow-utf-8')).toBe('prometheus-0.0.4');
    expect(detectFormat('application/json')).toBe('prometheus-0.0.4');
    expect(detectFormat('')).toBe('prometheus-0.0.4');
    expect(detectFormat(null)).toBe('prometheus-0.0.4');
    expect(detectFormat(undefined)).toBe('prometheus-0.0.4');
  });
});

describe('parseExposition', () => {
  it('parses the same text by the rules of the format the content type names', () => {
    const text = '# HELP a x\na 1\n# EOF\n';
    // 0.0.4: "# EOF" is only a comment.
    expect(parseExposition(text).map((s) => s.name)).toEqual(['a']);
    expect(parseExposition(text, 'application/openmetrics-text').map((s) => s.name)).toEqual(['a']);
    const noEof = '# HELP a x\na 1\n';
    expect(parseExposition(noEof, 'text/plain')).toHaveLength(1);
    expect(() => parseExposition(noEof, 'application/openmetrics-text')).toThrow(ExpositionError);
  });

  it('throws an ExpositionError carrying the line and the reason, and "line N: reason" as message', () => {
    let caught: unknown;
    try {
      parseExposition('a 1\nb{c="d"} oops\n');
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(ExpositionError);
    expect(caught).toBeInstanceOf(Error);
    const err = caught as ExpositionError;
    expect(err.name).toBe('ExpositionError');
    expect(err.line).toBe(2);
    expect(err.reason).toBe('invalid value "oops": "b{c=\\"d\\"} oops"');
    expect(err.message).toBe(`line 2: ${err.reason}`);
  });

  it('returns samples whose label objects are independent of each other', () => {
    const [a, b] = parseExposition('m{x="1",y="2"} 1\nm{x="1",y="2"} 2\n');
    expect(a?.labels).toEqual(b?.labels);
    expect(a?.labels).not.toBe(b?.labels);
  });
});

describe('sampleToJson', () => {
  it('gives the NDJSON fields of scrape --dry-run, with non-finite values as strings', () => {
    const samples = parseExposition('# HELP m Help.\n# TYPE m gauge\nm{a="b"} NaN 1700000000000\nm +Inf\nm -Inf\nm 2.5\n');
    expect(samples.map(sampleToJson)).toEqual([
      { name: 'm', labels: { a: 'b' }, value: 'NaN', timestamp_ms: 1700000000000, type: 'gauge', help: 'Help.' },
      { name: 'm', labels: {}, value: '+Inf', timestamp_ms: null, type: 'gauge', help: 'Help.' },
      { name: 'm', labels: {}, value: '-Inf', timestamp_ms: null, type: 'gauge', help: 'Help.' },
      { name: 'm', labels: {}, value: 2.5, timestamp_ms: null, type: 'gauge', help: 'Help.' },
    ]);
    expect(JSON.stringify(sampleToJson(samples[0]!))).toBe(
      '{"name":"m","labels":{"a":"b"},"value":"NaN","timestamp_ms":1700000000000,"type":"gauge","help":"Help."}',
    );
  });
});

describe('formatOpenMetricsFloat (Prometheus labels.FormatOpenMetricsFloat)', () => {
  it('matches Go shortest %g plus ".0" when needed', () => {
    const cases: [number, string][] = [
      [1, '1.0'],
      [0, '0.0'],
      [-0, '0.0'],
      [-1, '-1.0'],
      [0.1, '0.1'],
      [2.5, '2.5'],
      [10, '10.0'],
      [100000, '100000.0'],
      [1e6, '1e+06'],
      [123456789, '1.23456789e+08'],
      [0.0001, '0.0001'],
      [0.00001, '1e-05'],
      [1.5e-5, '1.5e-05'],
      [-2.5e-7, '-2.5e-07'],
      [1e21, '1e+21'],
      [1.7976931348623157e308, '1.7976931348623157e+308'],
      [5e-324, '5e-324'],
      [NaN, 'NaN'],
      [Infinity, '+Inf'],
      [-Infinity, '-Inf'],
    ];
    for (const [f, s] of cases) expect([f, formatOpenMetricsFloat(f)]).toEqual([f, s]);
  });
});

describe('parseGoFloat (strconv.ParseFloat as Prometheus restricts it)', () => {
  const parse = (s: string): number | undefined => parseGoFloat(s, 0, s.length);

  it('reads decimals exactly as JavaScript does, fast path or not', () => {
    for (const s of ['0', '1', '-1', '0.005', '1.7560473e+07', '7.424100000000001e-05', '123456789012345', '1234567890123456789', '1e22', '1e23', '4.9e-324', '.5', '5.', '+.5e-3', '00012']) {
      expect([s, parse(s)]).toEqual([s, Number(s)]);
    }
  });

  it('reads inf/infinity with an optional sign and nan without one, in any case', () => {
    expect(['inf', '+Inf', '-INF', 'Infinity', '-infinity', 'NaN', 'nan', 'NAN'].map(parse)).toEqual([
      Infinity,
      Infinity,
      -Infinity,
      Infinity,
      -Infinity,
      NaN,
      NaN,
      NaN,
    ]);
  });

  it('refuses everything else', () => {
    for (const s of ['', '+', '-', '.', 'e5', '1e', '1e+', '1.2.3', '1_000', '0x10', '0x1p-3', 'infin', '+nan', '-NaN', '1 ', ' 1', 'true', '1e400', '-1e400']) {
      expect([s, parse(s)]).toEqual([s, undefined]);
    }
    // Underflow is not an error in Go: it rounds to zero.
    expect(parse('1e-400')).toBe(0);
  });
});
