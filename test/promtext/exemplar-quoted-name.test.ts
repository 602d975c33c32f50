import { describe, expect, it } from 'vitest';
import { ExpositionError, parseExposition } from '../../src/promtext/index.js';

// Prometheus' openmetricslex.l reads a quoted exemplar label name as \"(\\.|[^\\"\n])*\": a raw
// newline inside it is invalid, and the scrape fails, as for an exemplar label value.
describe('OpenMetrics exemplar label names', () => {
  it('rejects a raw newline inside a quoted exemplar label name, on the line where the name opens', () => {
    let caught: unknown;
    try {
      parseExposition('a_total 1 # {"x\ny"="1"} 1\n# EOF\n', 'application/openmetrics-text');
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(ExpositionError);
    expect(caught).toMatchObject({ line: 1, reason: 'newline inside a quoted string (escape it as \\n): "a_total 1 # {\\"x"' });
  });

  it('still reads a quoted exemplar label name with an escaped newline', () => {
    const [s] = parseExposition('a_total 1 # {"x\\ny"="1"} 1\n# EOF\n', 'application/openmetrics-text');
    expect(s?.exemplar?.labels).toEqual({ 'x\ny': '1' });
  });
});
