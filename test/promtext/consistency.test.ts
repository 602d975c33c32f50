import { describe, expect, it } from 'vitest';
import { parseExposition, type Sample } from '../../src/promtext/index.js';
import { mulberry32 } from '../../src/sim/prng.js';

// The parser reuses what the previous line had (names, values, the text of leading labels, label
// object factories). Whatever order lines come in, each sample must read exactly as it reads alone.


const NAMES = ['a', 'a_bucket', 'a_sum', 'b_total', 'c'];
const LABEL_NAMES = ['le', 'x', 'y', 'instance', 'z_long_label_name'];
const VALUES = ['1', '1.0', '0.5', 'GET', 'say \\"hi\\"', 'back\\\\slash', 'two\\nlines', '', 'x,y=z', '{}', '+Inf'];

/** Random sample lines; half of them repeat the previous line's labels but the last, as histograms do. */
function randomLines(rnd: () => number, om: boolean, n: number): string[] {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const ws = (): string => (om ? '' : pick(['', '', '', ' ', '\t']));
  const label = (name: string): string => `${ws()}${name}${ws()}=${ws()}"${pick(VALUES)}"${ws()}`;
  const lines: string[] = [];
  let prev: string[] = [];
  let prevNames: string[] = [];
  for (let k = 0; k < n; k++) {
    let labels: string[];
    if (prev.length > 1 && rnd() < 0.5) {
      // Same leading labels; the last one changes its value, or disappears (_sum after buckets).
      labels = rnd() < 0.8 ? [...prev.slice(0, -1), label(prevNames[prevNames.length - 1] as string)] : prev.slice(0, -1);
    } else {
      const count = Math.floor(rnd() * 5);
      prevNames = [...LABEL_NAMES].sort(() => (rnd() < 0.15 ? -1 : 0)).slice(0, count);
      labels = prevNames.map(label);
    }
    prev = labels;
    const sep = om ? ',' : pick([',', ',', ',', ', ']);
    const trailing = !om && labels.length > 0 && rnd() < 0.1 ? ',' : '';
    const block = labels.length === 0 && rnd() < 0.5 ? '' : `{${labels.join(sep)}${trailing}}`;
    lines.push(`${pick(NAMES)}${block} ${pick(['1', '2.5', 'NaN', '-Inf', '1e3'])}`);
  }
  return lines;
}

function strip(s: Sample): unknown {
  return { name: s.name, labels: s.labels, value: s.value, family: s.family, type: s.type };
}

describe('parsing a whole exposition equals parsing each line alone', () => {
  for (const om of [false, true]) {
    it(om ? 'OpenMetrics' : '0.0.4 text', () => {
      const rnd = mulberry32(om ? 2 : 1);
      const header = '# TYPE a histogram\n';
      const contentType = om ? 'application/openmetrics-text' : 'text/plain';
      const end = om ? '# EOF\n' : '';
      const lines = randomLines(rnd, om, 3000);
      const whole = parseExposition(`${header}${lines.join('\n')}\n${end}`, contentType);
      const alone = lines.map((line) => parseExposition(`${header}${line}\n${end}`, contentType)[0]);
      expect(whole).toHaveLength(lines.length);
      for (let k = 0; k < lines.length; k++) {
        expect([lines[k], strip(whole[k] as Sample)]).toEqual([lines[k], strip(alone[k] as Sample)]);
      }
    });
  }

  it('gives the right labels when every line has new label names (past the generated-factory cap)', () => {
    const lines = Array.from({ length: 1500 }, (_, i) => `m{l${i}="v${i}",__proto__="p",a="b"} ${i}`);
    const samples = parseExposition(`${lines.join('\n')}\n`);
    expect(samples).toHaveLength(1500);
    for (const [i, s] of samples.entries()) {
      expect(Object.entries(s.labels)).toEqual([
        [`l${i}`, `v${i}`],
        ['__proto__', 'p'],
        ['a', 'b'],
      ]);
      expect(Object.getPrototypeOf(s.labels)).toBe(Object.prototype);
    }
  });

  it('re-reads labels after a TYPE line changes how le is normalised', () => {
    const samples = parseExposition('# TYPE x gauge\nx{le="1",a="1"} 1\nx{le="1",a="2"} 1\n# TYPE y histogram\ny_bucket{le="1",a="1"} 1\ny_bucket{le="1",a="2"} 1\n');
    expect(samples.map((s) => s.labels.le)).toEqual(['1', '1', '1.0', '1.0']);
  });

  it('does not take "a=1 " for a separator when the next line puts a comma after the space', () => {
    const samples = parseExposition('m{a="1" b="2"} 1\nm{a="1" ,b="3"} 2\nm{a="1" ,,b="4"} 3\n'.split('\n').slice(0, 2).join('\n'));
    expect(samples.map((s) => s.labels)).toEqual([
      { a: '1', b: '2' },
      { a: '1', b: '3' },
    ]);
  });
});
