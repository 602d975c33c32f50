// A single-pass scanner over the exposition string (charCodeAt, no regex, no per-line split). It
// follows Prometheus' own lexers (model/textparse promlex.l / openmetricslex.l) token by token, so
// that it accepts and rejects what a Prometheus scrape accepts and rejects; README.md lists the
// few places where it is deliberately stricter.

import { formatOpenMetricsFloat, parseGoFloat } from './floats.js';
import { labelFactory, setLabel, type LabelFactory } from './labels.js';
import { ExpositionError, type Exemplar, type MetricType, type Sample } from './model.js';

const TAB = 9;
const NL = 10;
const SP = 32;
const QUOTE = 34;
const HASH = 35;
const COMMA = 44;
const DIGIT_0 = 48;
const DIGIT_9 = 57;
const EQUALS = 61;
const BACKSLASH = 92;
const LOWER_N = 110;
const LBRACE = 123;
const RBRACE = 125;

// Character classes for ASCII, as bit flags: metric names are [a-zA-Z_:][a-zA-Z0-9_:]*, label
// names [a-zA-Z_][a-zA-Z0-9_]* (anything else must be quoted, Prometheus 3 UTF-8 style).
const METRIC_START = 1;
const METRIC_CHAR = 2;
const LABEL_START = 4;
const LABEL_CHAR = 8;
const CLASS = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  const letter = (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
  const digit = c >= DIGIT_0 && c <= DIGIT_9;
  if (letter || c === 58) CLASS[c] |= METRIC_START | METRIC_CHAR;
  if (digit) CLASS[c] |= METRIC_CHAR | LABEL_CHAR;
  if (letter) CLASS[c] |= LABEL_START | LABEL_CHAR;
}

const PROM_TYPES: Record<string, MetricType> = {
  counter: 'counter',
  gauge: 'gauge',
  histogram: 'histogram',
  summary: 'summary',
  untyped: 'untyped',
};
const OM_TYPES: Record<string, MetricType> = {
  counter: 'counter',
  gauge: 'gauge',
  histogram: 'histogram',
  gaugehistogram: 'gaugehistogram',
  summary: 'summary',
  info: 'info',
  stateset: 'stateset',
  unknown: 'unknown',
};

// Sample-name suffixes that belong to a family of each type (Prometheus' isSeriesPartOfFamily in
// scrape/scrape.go), plus OpenMetrics' _created for counters, histograms and summaries.
const SUFFIXES_PROM: Partial<Record<MetricType, readonly string[]>> = {
  counter: ['_total'],
  histogram: ['_bucket', '_sum', '_count'],
  // Stryker disable next-line ArrayDeclaration,StringLiteral: 0.0.4 has no gaugehistogram TYPE (PROM_TYPES): never looked up
  gaugehistogram: ['_bucket', '_gsum', '_gcount'],
  summary: ['_sum', '_count'],
  // Stryker disable next-line ArrayDeclaration,StringLiteral: 0.0.4 has no info TYPE (PROM_TYPES): never looked up
  info: ['_info'],
};
const SUFFIXES_OM: Partial<Record<MetricType, readonly string[]>> = {
  counter: ['_total', '_created'],
  histogram: ['_bucket', '_sum', '_count', '_created'],
  gaugehistogram: ['_bucket', '_gsum', '_gcount'],
  summary: ['_sum', '_count', '_created'],
  info: ['_info'],
};
const ALL_SUFFIXES = ['_total', '_created', '_bucket', '_sum', '_count', '_gsum', '_gcount', '_info'];
// Stryker disable next-line ArrayDeclaration: a type without suffixes: a filler entry could match only a sample name ending in the filler text, which holds spaces
const NO_SUFFIXES: readonly string[] = [];

interface Family {
  name: string;
  /** The name samples are built on: the family name without _total (counters) or _info (info). */
  base: string;
  type: MetricType;
  typed: boolean;
  help: string | null;
  unit: string | null;
  hasSamples: boolean;
  /** A HELP or UNIT line came after samples of the family: they all get the last one at the end. */
  lateMeta: boolean;
}

const META_HELP = 1;
const META_TYPE = 2;
const META_UNIT = 3;

/** Label-name sequences whose object factories a parser keeps at hand. */
const RECENT_FACTORIES = 4;
/** Label-object factories one parse may generate; further sequences use keyed stores (labels.ts). */
const MAX_FACTORIES_COMPILED = 500;
/** Sample names whose families a parser keeps at hand (a histogram has _bucket, _sum, _count). */
const RECENT_FAMILIES = 4;

/** le/quantile texts a parser compares directly before its map (a histogram has ~10-20 bounds). */
const RECENT_FLOAT_LABELS = 24;

/** Longest piece of a line quoted in an error message. */
const EXCERPT_CHARS = 160;

// Every Sample is one object literal of this shape. V8 stores a numeric field of such a shape as a
// boxed double (16 bytes more per sample) once it has only seen numbers in it; one object of the
// same shape holding null in `value` and `timestampMs` makes V8 keep them as tagged fields, so
// integer values (counters, bucket counts) sit in the object itself. The samples are unchanged.
// Stryker disable all: a shape hint for V8 only; no parse reads it, so no test can tell its contents
export const SAMPLE_SHAPE_HINT: Sample = {
  name: '',
  labels: {},
  value: null as unknown as number,
  timestampMs: null,
  family: '',
  type: 'untyped',
  help: null,
  unit: null,
  exemplar: null,
};
// Stryker restore all

export class ExpositionParser {
  private readonly text: string;
  private readonly len: number;
  private readonly om: boolean;
  private readonly out: Sample[] = [];
  private readonly families = new Map<string, Family>();
  /** The family of the last HELP/TYPE/UNIT line: samples that follow it belong to it first. */
  private current: Family | null = null;
  /** The type of the last TYPE line, which decides le/quantile normalisation as in Prometheus. */
  private normaliseLe = false;
  private normaliseQuantile = false;
  private readonly normalised = new Map<string, string>();
  /**
   * The first le/quantile texts of this parse and their normalised forms, searched before the map:
   * histograms cycle through the same few bounds, and a short list compared from the entry after
   * the last hit costs less than hashing each fresh value string.
   */
  private readonly recentFloatRaw: string[] = [];
  private readonly recentFloatOut: string[] = [];
  private recentFloatNext = 0;
  private prevName: string | null = null;
  private prevFamily: Family | null = null;
  /** Label names and values of the previous sample by position: an equal one is reused, not copied. */
  // Stryker disable next-line ArrayDeclaration: a cache that starts empty; a filler entry could match only a label name equal to the filler text, which holds spaces
  private readonly prevLabelNames: (string | undefined)[] = [];
  // Stryker disable next-line ArrayDeclaration: a cache of equal strings: reusing an equal string or the new copy gives the same value
  private readonly prevLabelValues: (string | undefined)[] = [];
  /** Label names and values of the current sample line, turned into an object once the line is read. */
  // Stryker disable next-line ArrayDeclaration: written by position before each read (labelCount bounds the reads)
  private readonly labelNames: string[] = [];
  // Stryker disable next-line ArrayDeclaration: written by position before each read (labelCount bounds the reads)
  private readonly labelValues: string[] = [];
  private labelCount = 0;
  /** Where each label name of the current line starts, for error messages. */
  // Stryker disable next-line ArrayDeclaration: written by position before each read (labelCount bounds the reads)
  private readonly labelAt: number[] = [];
  /** Every label name of the current line is the previous one's at that position (same string). */
  // Stryker disable next-line BooleanLiteral: set to true at the start of every sample line before it is read
  private labelNamesReused = true;
  /** How many leading prevLabelNames are known valid and distinct: such lines skip the checks. */
  private verifiedNames = 0;
  /**
   * The raw text of the leading labels of an earlier label block (all but its last, ending right
   * after a comma), and how many labels it holds: consecutive samples mostly repeat it (histogram
   * buckets, summary quantiles, {cpu="0",mode=...}), and one comparison then stands for all of them.
   * labelNames/labelValues still hold those labels, as no line with labels has come since.
   */
  private prefixCount = 0;
  private prefixStart = 0;
  private prefixEnd = 0;
  private prefixText: string | null = null;
  /** Where each label of the current block ends, after its comma; -1 when no comma followed it. */
  // Stryker disable next-line ArrayDeclaration: written by position before each read
  private readonly labelEnds: number[] = [];
  /** The current block held a quoted name: its text is not reused. */
  // Stryker disable next-line BooleanLiteral: reset by reusePrefix at the start of every label block before it is read
  private blockQuoted = false;
  /** Sample names seen since the last metadata line, with their families (a small ring). */
  // Stryker disable next-line ArrayDeclaration: a cache that starts empty; a filler entry could match only a sample named as the filler text, which holds spaces
  private readonly recentNames: string[] = [];
  // Stryker disable next-line ArrayDeclaration: read only where recentNames matched
  private readonly recentFamilies: Family[] = [];
  /** Where recentFamily found (or put) the name, and where it puts the next one. */
  private recentHit = 0;
  private recentNext = 0;
  /** Families without a TYPE line that have samples: only then can a TYPE line come too late. */
  private untypedWithSamples = 0;
  /** Most recently used label-object factories, with the label names each was made for. */
  private readonly recentFactories: { names: string[]; make: LabelFactory }[] = [];
  /** Label-object factories generated during this parse. */
  private factoriesCompiled = 0;
  /** Positions of the next backslash and newline at or after the scan point (-1: none left). */
  private nextBackslash = 0;
  private nextNewline = 0;
  /** A metric name written inside the braces ({"my.metric", a="b"}). */
  private braceName: string | null = null;
  // Stryker disable next-line StringLiteral: written by every scan before it is read
  private scanned = '';
  // Stryker disable next-line BooleanLiteral: applyLateMeta rewrites only the samples of families marked lateMeta: running it for nothing changes nothing
  private anyLateMeta = false;
  private sawEof = false;

  constructor(text: string, openMetrics: boolean) {
    this.text = text;
    this.len = text.length;
    this.om = openMetrics;
  }

  parse(): Sample[] {
    // An empty body is an empty scrape for Prometheus in both formats (scrape.go checks len(b)==0
    // before choosing a parser), so OpenMetrics' "# EOF" is not required there.
    if (this.len === 0) return this.out;
    if (this.om) this.parseOpenMetrics();
    else this.parseProm();
    if (this.anyLateMeta) this.applyLateMeta();
    return this.out;
  }

  // ---------------------------------------------------------------- Prometheus text 0.0.4

  private parseProm(): void {
    const s = this.text;
    const len = this.len;
    let i = 0;
    while (i < len) {
      let c = s.charCodeAt(i);
      // Leading spaces and tabs are allowed, and a line of only whitespace is a blank line.
      while (c === SP || c === TAB) {
        i++;
        if (i >= len) return;
        c = s.charCodeAt(i);
      }
      if (c === NL) {
        i++;
      } else if (c === HASH) {
        i = this.promComment(i);
      } else {
        i = this.promSample(i, c);
      }
    }
  }

  private promComment(hashAt: number): number {
    const s = this.text;
    const len = this.len;
    let j = hashAt + 1;
    let c = j < len ? s.charCodeAt(j) : NL;
    if (c === SP || c === TAB) {
      while (c === SP || c === TAB) c = ++j < len ? s.charCodeAt(j) : NL;
      let kind = 0;
      if (c === 72 && s.charCodeAt(j + 1) === 69 && s.charCodeAt(j + 2) === 76 && s.charCodeAt(j + 3) === 80) kind = META_HELP;
      else if (c === 84 && s.charCodeAt(j + 1) === 89 && s.charCodeAt(j + 2) === 80 && s.charCodeAt(j + 3) === 69) kind = META_TYPE;
      if (kind !== 0) {
        const k = j + 4;
        c = k < len ? s.charCodeAt(k) : NL;
        if (c === SP || c === TAB) return this.promMeta(kind, k);
      }
    }
    // Any other line starting with '#' is a comment ("# UNIT" and "# EOF" included).
    const nl = s.indexOf('\n', hashAt);
    return nl === -1 ? len : nl + 1;
  }

  private promMeta(kind: number, at: number): number {
    const s = this.text;
    const len = this.len;
    const word = kind === META_HELP ? 'HELP' : 'TYPE';
    let i = at;
    let c = s.charCodeAt(i);
    while (c === SP || c === TAB) c = ++i < len ? s.charCodeAt(i) : NL;
    let name: string;
    if (c < 128 && (CLASS[c] & METRIC_START) !== 0) {
      const start = i;
      while (++i < len && (c = s.charCodeAt(i)) < 128 && (CLASS[c] & METRIC_CHAR) !== 0);
      name = s.slice(start, i);
    } else if (c === QUOTE) {
      i = this.scanQuoted(i + 1, false);
      name = this.scanned;
      if (name.length === 0) this.fail(i - 2, `empty metric name after ${word}`);
    } else {
      return this.fail(i, `expected a metric name after ${word}`);
    }
    let eol = s.indexOf('\n', i);
    if (eol === -1) eol = len;
    // promlex.l: the text token starts right after the name and its first character is dropped
    // (normally the separating space); a rest of only whitespace is no text at all.
    let k = i;
    while (k < eol && ((c = s.charCodeAt(k)) === SP || c === TAB)) k++;
    const raw = k === eol ? '' : s.slice(i + 1, eol);
    if (kind === META_HELP) {
      // Stryker disable next-line StringLiteral: includes("") is always true: unescaping a text without a backslash gives it unchanged
      this.onHelp(name, raw.includes('\\') ? unescapeHelp(raw) : raw);
    } else {
      const type = Object.hasOwn(PROM_TYPES, raw) ? PROM_TYPES[raw] : undefined;
      if (type === undefined) {
        return this.fail(at, `invalid metric type "${raw}" (0.0.4 knows counter, gauge, histogram, summary, untyped)`);
      }
      this.onType(name, type, at);
    }
    return eol + 1;
  }

  private promSample(i: number, c: number): number {
    const s = this.text;
    const len = this.len;
    const lineStart = i;
    let name: string | null = null;
    if (c < 128 && (CLASS[c] & METRIC_START) !== 0) {
      i = this.scanMetricName(i);
      name = this.scanned;
      while (i < len && ((c = s.charCodeAt(i)) === SP || c === TAB)) i++;
    } else if (c !== LBRACE) {
      return this.fail(i, 'expected a metric name, "{" or "#" at the start of the line');
    }
    this.labelCount = 0;
    // Stryker disable next-line BooleanLiteral: false only makes checkLabelNames check names it could skip: same result
    this.labelNamesReused = true;
    this.braceName = null;
    if (i < len && s.charCodeAt(i) === LBRACE) {
      i = this.promLabels(i + 1, name !== null);
      while (i < len && ((c = s.charCodeAt(i)) === SP || c === TAB)) i++;
    }
    if (name === null) {
      name = this.braceName;
      if (name === null) return this.fail(lineStart, 'metric name not set (neither before nor inside the braces)');
    }
    // The value: promlex.l's [^{ \t\n]+ .
    const valueStart = i;
    while (i < len && (c = s.charCodeAt(i)) !== SP && c !== TAB && c !== NL && c !== LBRACE) i++;
    if (i === valueStart) return this.fail(i, 'expected a value after the metric name and labels');
    const value = parseGoFloat(s, valueStart, i);
    if (value === undefined) return this.failValue(valueStart, i, 'value');
    while (i < len && ((c = s.charCodeAt(i)) === SP || c === TAB)) i++;
    let timestampMs: number | null = null;
    if (i < len && c !== NL) {
      if (c < DIGIT_0 || c > DIGIT_9) {
        return this.fail(i, 'expected an integer timestamp in milliseconds or the end of the line');
      }
      const tsStart = i;
      while (++i < len && (c = s.charCodeAt(i)) >= DIGIT_0 && c <= DIGIT_9);
      timestampMs = this.integerTimestamp(tsStart, i);
      while (i < len && ((c = s.charCodeAt(i)) === SP || c === TAB)) i++;
      if (i < len && c !== NL) return this.fail(i, 'unexpected text after the timestamp');
    }
    if (this.labelCount !== 0) this.checkLabelNames();
    this.emit(name, this.buildLabels(), value, timestampMs, null);
    return i + 1;
  }

  private promLabels(at: number, hasName: boolean): number {
    const s = this.text;
    const len = this.len;
    const reused = this.reusePrefix(at);
    let i = reused === 0 ? at : this.prefixEnd;
    let c = 0;
    for (;;) {
      while (i < len && ((c = s.charCodeAt(i)) === SP || c === TAB)) i++;
      if (i >= len || c === NL) return this.fail(i, 'unterminated label set (missing "}")');
      if (c === RBRACE) {
        this.endLabelBlock(at, reused);
        return i + 1;
      }
      const nameAt = i;
      let quoted = false;
      if (c < 128 && (CLASS[c] & LABEL_START) !== 0) {
        i = this.scanLabelName(i);
      } else if (c === QUOTE) {
        i = this.scanQuoted(i + 1, true);
        quoted = true;
      } else {
        return this.fail(i, 'expected a label name');
      }
      const labelName = this.scanned;
      while (i < len && ((c = s.charCodeAt(i)) === SP || c === TAB)) i++;
      if (quoted && (c === COMMA || c === RBRACE) && i < len) {
        // A quoted string alone is the metric name ({"my.metric", a="b"}).
        this.setBraceName(labelName, hasName, nameAt);
        i++;
        if (c === RBRACE) {
          this.endLabelBlock(at, reused);
          return i;
        }
        continue;
      }
      if (i >= len || c !== EQUALS) return this.fail(i, `expected "=" after label name "${labelName}"`);
      i++;
      while (i < len && ((c = s.charCodeAt(i)) === SP || c === TAB)) i++;
      if (i >= len || c !== QUOTE) return this.fail(i, `expected a double-quoted value for label "${labelName}"`);
      // 0.0.4 label values may hold a raw newline: promlex.l's \"(\\.|[^\\"])*\" allows it.
      i = this.scanLabelValue(i + 1, true);
      this.addLabel(labelName, this.scanned, nameAt, quoted);
      while (i < len && ((c = s.charCodeAt(i)) === SP || c === TAB)) i++;
      // Commas are optional between 0.0.4 labels (promparse.go accepts {a="1" b="2"}), and one may
      // trail the last label.
      if (c === COMMA && i < len) {
        i++;
        this.labelEnds[this.labelCount - 1] = i;
      } else {
        this.labelEnds[this.labelCount - 1] = -1;
      }
    }
  }

  // ---------------------------------------------------------------- OpenMetrics 1.0

  private parseOpenMetrics(): void {
    const s = this.text;
    const len = this.len;
    let i = 0;
    while (!this.sawEof) {
      if (i >= len) this.fail(len, 'the exposition does not end with "# EOF"');
      const c = s.charCodeAt(i);
      if (c === HASH) {
        i = this.omComment(i);
      } else if (
        (c < 128 && (CLASS[c] & METRIC_START) !== 0) || c === LBRACE
      ) {
        i = this.omSample(i, c);
      } else {
        this.fail(i, 'expected a metric name, "{" or "#" at the start of the line (OpenMetrics allows no blank lines or leading whitespace)');
      }
    }
  }

  private omComment(hashAt: number): number {
    const s = this.text;
    const len = this.len;
    const j = hashAt + 2;
    if (hashAt + 1 >= len || s.charCodeAt(hashAt + 1) !== SP) {
      return this.fail(hashAt, 'OpenMetrics allows only "# HELP", "# TYPE", "# UNIT" and "# EOF" lines starting with "#"');
    }
    if (s.startsWith('EOF', j)) {
      let k = j + 3;
      if (k < len && s.charCodeAt(k) === NL) k++;
      if (k !== len) return this.fail(k, 'unexpected data after "# EOF"');
      this.sawEof = true;
      return len;
    }
    let kind = 0;
    if (s.startsWith('HELP ', j)) kind = META_HELP;
    else if (s.startsWith('TYPE ', j)) kind = META_TYPE;
    else if (s.startsWith('UNIT ', j)) kind = META_UNIT;
    else return this.fail(hashAt, 'OpenMetrics allows only "# HELP", "# TYPE", "# UNIT" and "# EOF" lines starting with "#"');
    const word = kind === META_HELP ? 'HELP' : kind === META_TYPE ? 'TYPE' : 'UNIT';
    let i = j + 5;
    let c = i < len ? s.charCodeAt(i) : NL;
    let name: string;
    if (c < 128 && (CLASS[c] & METRIC_START) !== 0) {
      const start = i;
      while (++i < len && (c = s.charCodeAt(i)) < 128 && (CLASS[c] & METRIC_CHAR) !== 0);
      name = s.slice(start, i);
    } else if (c === QUOTE) {
      i = this.scanQuoted(i + 1, false);
      name = this.scanned;
      if (name.length === 0) this.fail(i - 2, `empty metric name after ${word}`);
    } else {
      return this.fail(i, `expected a metric name after ${word}`);
    }
    if (i >= len || s.charCodeAt(i) !== SP) return this.fail(i, `expected a space and text after the metric name in ${word}`);
    const eol = s.indexOf('\n', i);
    if (eol === -1) return this.fail(len, `${word} line not terminated by a newline`);
    const raw = s.slice(i + 1, eol);
    if (kind === META_HELP) {
      // OpenMetrics escapes HELP like label values (\\, \" and \n).
      // Stryker disable next-line StringLiteral: includes("") is always true: unescaping a text without a backslash gives it unchanged
      this.onHelp(name, raw.includes('\\') ? unescapeLabelValue(raw, 0, raw.length) : raw);
    } else if (kind === META_TYPE) {
      const type = Object.hasOwn(OM_TYPES, raw) ? OM_TYPES[raw] : undefined;
      if (type === undefined) {
        return this.fail(hashAt, `invalid metric type "${raw}" (OpenMetrics knows counter, gauge, histogram, gaugehistogram, summary, info, stateset, unknown)`);
      }
      this.onType(name, type, hashAt);
    } else {
      if (raw.length > 0 && !(name.length > raw.length + 1 && name.endsWith(raw) && name.charCodeAt(name.length - raw.length - 1) === 95)) {
        return this.fail(hashAt, `unit "${raw}" is not a suffix of metric "${name}" (expected "${name}" to end in "_${raw}")`);
      }
      this.onUnit(name, raw);
    }
    return eol + 1;
  }

  private omSample(i: number, c: number): number {
    const s = this.text;
    const len = this.len;
    const lineStart = i;
    let name: string | null = null;
    if (c !== LBRACE) {
      i = this.scanMetricName(i);
      name = this.scanned;
    }
    this.labelCount = 0;
    // Stryker disable next-line BooleanLiteral: false only makes checkLabelNames check names it could skip: same result
    this.labelNamesReused = true;
    this.braceName = null;
    if (i < len && s.charCodeAt(i) === LBRACE) i = this.omLabels(i + 1, name !== null);
    if (name === null) {
      name = this.braceName;
      if (name === null) return this.fail(lineStart, 'metric name not set (neither before nor inside the braces)');
    }
    if (i >= len || s.charCodeAt(i) !== SP) {
      return this.fail(i, 'expected a single space and the value after the metric name and labels');
    }
    const valueStart = ++i;
    while (i < len && (c = s.charCodeAt(i)) !== SP && c !== NL) i++;
    if (i === valueStart) return this.fail(i, 'expected a value after the metric name and labels');
    const value = parseGoFloat(s, valueStart, i);
    if (value === undefined) return this.failValue(valueStart, i, 'value');
    if (this.labelCount !== 0) this.checkLabelNames();
    const labels = this.buildLabels();
    let timestampMs: number | null = null;
    let exemplar: Exemplar | null = null;
    if (i >= len) return this.fail(len, 'the exposition does not end with "# EOF"');
    if (c === SP) {
      i++;
      if (this.isExemplarStart(i)) {
        exemplar = this.omExemplar(i + 3);
        i = this.exemplarEnd;
      } else {
        const tsStart = i;
        while (i < len && (c = s.charCodeAt(i)) !== SP && c !== NL) i++;
        timestampMs = this.secondsTimestamp(tsStart, i, 'timestamp');
        if (i >= len) return this.fail(len, 'the exposition does not end with "# EOF"');
        if (c === SP) {
          if (!this.isExemplarStart(i + 1)) return this.fail(i, 'expected the end of the line or " # {" (an exemplar) after the timestamp');
          exemplar = this.omExemplar(i + 4);
          i = this.exemplarEnd;
        }
      }
    }
    this.emit(name, labels, value, timestampMs, exemplar);
    return i + 1;
  }

  private isExemplarStart(i: number): boolean {
    const s = this.text;
    return i + 2 < this.len && s.charCodeAt(i) === HASH && s.charCodeAt(i + 1) === SP && s.charCodeAt(i + 2) === LBRACE;
  }

  /** Where the exemplar's line ends (its newline), set by omExemplar. */
  private exemplarEnd = 0;

  private omExemplar(at: number): Exemplar {
    const s = this.text;
    const len = this.len;
    const labels: Record<string, string> = {};
    let i = at;
    let c = 0;
    // Exemplar labels: as sample labels, but no metric name. Prometheus does not fail a scrape over
    // exemplar labels (exemplar storage errors are only logged), so a duplicate is not an error
    // here: the last one wins.
    for (;;) {
      if (i >= len) return this.fail(i, 'unterminated exemplar label set (missing "}")');
      c = s.charCodeAt(i);
      if (c === RBRACE) {
        i++;
        break;
      }
      const nameAt = i;
      if (c < 128 && (CLASS[c] & LABEL_START) !== 0) {
        while (++i < len && (c = s.charCodeAt(i)) < 128 && (CLASS[c] & LABEL_CHAR) !== 0);
        this.scanned = s.slice(nameAt, i);
      } else if (c === QUOTE) {
        // openmetricslex.l: a quoted exemplar label name holds no raw newline (\"(\\.|[^\\"\n])*\").
        i = this.scanQuoted(i + 1, false);
      } else {
        return this.fail(i, 'expected an exemplar label name');
      }
      const labelName = this.scanned;
      if (labelName.length === 0) this.fail(nameAt, 'empty label name');
      if (i >= len || s.charCodeAt(i) !== EQUALS) return this.fail(i, `expected "=" after exemplar label name "${labelName}"`);
      i++;
      if (i >= len || s.charCodeAt(i) !== QUOTE) return this.fail(i, `expected a double-quoted value for exemplar label "${labelName}"`);
      i = this.scanQuoted(i + 1, false);
      setLabel(labels, labelName, this.scanned);
      c = i < len ? s.charCodeAt(i) : NL;
      if (c === COMMA) i++;
      else if (c !== RBRACE) return this.fail(i, 'expected "," or "}" after an exemplar label value');
    }
    if (i >= len || s.charCodeAt(i) !== SP) return this.fail(i, 'expected a space and the exemplar value after its labels');
    const valueStart = ++i;
    while (i < len && (c = s.charCodeAt(i)) !== SP && c !== NL) i++;
    if (i === valueStart) return this.fail(i, 'expected the exemplar value after its labels');
    const value = parseGoFloat(s, valueStart, i);
    if (value === undefined) return this.failValue(valueStart, i, 'exemplar value');
    let timestampMs: number | null = null;
    if (i < len && c === SP) {
      const tsStart = ++i;
      while (i < len && (c = s.charCodeAt(i)) !== SP && c !== NL) i++;
      timestampMs = this.secondsTimestamp(tsStart, i, 'exemplar timestamp');
      if (i < len && c !== NL) return this.fail(i, 'unexpected text after the exemplar timestamp');
    }
    if (i >= len) return this.fail(len, 'the exposition does not end with "# EOF"');
    this.exemplarEnd = i;
    return { labels, value, timestampMs };
  }

  private omLabels(at: number, hasName: boolean): number {
    const s = this.text;
    const len = this.len;
    const reused = this.reusePrefix(at);
    let i = reused === 0 ? at : this.prefixEnd;
    let c = 0;
    // OpenMetrics: no whitespace anywhere inside the braces; one trailing comma is tolerated as
    // Prometheus' openmetricsparse.go tolerates it.
    for (;;) {
      if (i >= len) return this.fail(i, 'unterminated label set (missing "}")');
      c = s.charCodeAt(i);
      if (c === RBRACE) {
        this.endLabelBlock(at, reused);
        return i + 1;
      }
      const nameAt = i;
      let quoted = false;
      if (c < 128 && (CLASS[c] & LABEL_START) !== 0) {
        i = this.scanLabelName(i);
      } else if (c === QUOTE) {
        i = this.scanQuoted(i + 1, true);
        quoted = true;
      } else {
        return this.fail(i, 'expected a label name');
      }
      const labelName = this.scanned;
      c = i < len ? s.charCodeAt(i) : NL;
      if (quoted && (c === COMMA || c === RBRACE)) {
        this.setBraceName(labelName, hasName, nameAt);
        i++;
        if (c === RBRACE) {
          this.endLabelBlock(at, reused);
          return i;
        }
        continue;
      }
      if (c !== EQUALS) return this.fail(i, `expected "=" after label name "${labelName}"`);
      i++;
      if (i >= len || s.charCodeAt(i) !== QUOTE) return this.fail(i, `expected a double-quoted value for label "${labelName}"`);
      i = this.scanLabelValue(i + 1, false);
      this.addLabel(labelName, this.scanned, nameAt, quoted);
      c = i < len ? s.charCodeAt(i) : NL;
      if (c === COMMA) {
        i++;
        this.labelEnds[this.labelCount - 1] = i;
      } else /* Stryker disable next-line BlockStatement: without this block the loop comes back to the same "}" and ends the block there (the last label's end is never read, see below) */ if (c === RBRACE) {
        // Stryker disable next-line ArithmeticOperator,UnaryOperator: the last label's end is never read: endLabelBlock reads the end of the label before the last, and a later block writes its own
        this.labelEnds[this.labelCount - 1] = -1;
        this.endLabelBlock(at, reused);
        return i + 1;
      } else {
        return this.fail(i, 'expected "," or "}" after a label value');
      }
    }
  }

  /**
   * When the label block at `at` starts with the remembered prefix text, takes its labels as they
   * are (same text, same parse) and returns how many; 0 otherwise.
   */
  private reusePrefix(at: number): number {
    // Stryker disable next-line BooleanLiteral: the leading-label reuse is a shortcut: when it is not taken (or a prefix that can never match is kept) the labels are read from the text, the same labels
    this.blockQuoted = false;
    const m = this.prefixCount;
    // Stryker disable next-line ConditionalExpression,EqualityOperator: the leading-label reuse is a shortcut: when it is not taken (or a prefix that can never match is kept) the labels are read from the text, the same labels; with m = 0 the rest returns 0 too
    if (m === 0) return 0;
    const start = this.prefixStart;
    const length = this.prefixEnd - start;
    let text = this.prefixText;
    // Stryker disable next-line ConditionalExpression,EqualityOperator,MethodExpression,ArithmeticOperator: the leading-label reuse is a shortcut: when it is not taken (or a prefix that can never match is kept) the labels are read from the text, the same labels (the text recomputed is the same; a wrong one never matches)
    if (text === null) this.prefixText = text = this.text.slice(start, start + length);
    // Stryker disable next-line ConditionalExpression,MethodExpression,ArithmeticOperator: the leading-label reuse is a shortcut: when it is not taken (or a prefix that can never match is kept) the labels are read from the text, the same labels (the variant that always reuses is killed)
    if (this.text.slice(at, at + length) !== text) return 0;
    // Their end positions are not needed again: a block that reuses the prefix either keeps it or
    // sets a longer one, which ends at a label read from this block.
    // Stryker disable next-line ConditionalExpression,EqualityOperator: labelAt of a reused label is never read: those names passed the check on an earlier line, and an error names the later label
    for (let k = 0; k < m; k++) this.labelAt[k] = at;
    this.prefixStart = at;
    this.prefixEnd = at + length;
    this.labelCount = m;
    return m;
  }

  /** Remembers the leading labels of the block just read for the next one. */
  // Stryker disable next-line BlockStatement: the leading-label reuse is a shortcut: when it is not taken (or a prefix that can never match is kept) the labels are read from the text, the same labels
  private endLabelBlock(at: number, reused: number): void {
    const n = this.labelCount;
    // A block that used the prefix and added at most one label keeps it: the _sum/_count lines
    // after histogram buckets carry the same leading labels as the buckets.
    // Stryker disable next-line ConditionalExpression: the leading-label reuse is a shortcut: when it is not taken (or a prefix that can never match is kept) the labels are read from the text, the same labels (keeping a prefix across a block that did not use it is killed)
    if (reused !== 0 && n <= reused + 1) return;
    // Stryker disable next-line ConditionalExpression,EqualityOperator: the leading-label reuse is a shortcut: when it is not taken (or a prefix that can never match is kept) the labels are read from the text, the same labels (the variants that give a one-label block a prefix are killed)
    const end = n >= 2 ? (this.labelEnds[n - 2] as number) : -1;
    // Stryker disable next-line EqualityOperator,UnaryOperator: end === -1 (no comma after the label before the last; or no such label) then keeps a prefix ending at -1, whose text (sliced to an end of -1 + ...) never equals a later block's: no reuse, as when the prefix is dropped
    if (this.blockQuoted || end === -1) {
      this.prefixCount = 0;
      return;
    }
    this.prefixCount = n - 1;
    this.prefixStart = at;
    this.prefixEnd = end;
    this.prefixText = null;
  }

  // ---------------------------------------------------------------- shared pieces

  /**
   * A metric name [a-zA-Z_:][a-zA-Z0-9_:]* starting at `at` (its first character already checked)
   * into `scanned`. Consecutive samples mostly share a name: compare with the previous one first
   * (slice and === measure faster than startsWith(prev, at) in V8).
   */
  private scanMetricName(at: number): number {
    const s = this.text;
    const len = this.len;
    const prev = this.prevName;
    let c = 0;
    // Stryker disable next-line BlockStatement: the previous-name shortcut: without it the scan below reads the same name
    if (prev !== null) {
      // Stryker disable next-line ArithmeticOperator: the previous-name shortcut: when it is not taken the scan below reads the same name (the variants that take it wrongly are killed)
      const end = at + prev.length;
      // Stryker disable next-line MethodExpression,BlockStatement: the previous-name shortcut: not taking it (the whole text never equals a name of an earlier line of it) leaves the scan below, which reads the same name
      if (end <= len && (end === len || (c = s.charCodeAt(end)) >= 128 || (CLASS[c] & METRIC_CHAR) === 0) && s.slice(at, end) === prev) {
        this.scanned = prev;
        return end;
      }
    }
    let i = at;
    while (++i < len && (c = s.charCodeAt(i)) < 128 && (CLASS[c] & METRIC_CHAR) !== 0);
    this.scanned = s.slice(at, i);
    return i;
  }

  /**
   * A label name [a-zA-Z_][a-zA-Z0-9_]* into `scanned`. The previous sample's name at this position
   * is tried first, and reused: one string per name keeps the factory lookup to pointer comparisons.
   */
  private scanLabelName(at: number): number {
    const s = this.text;
    const len = this.len;
    const k = this.labelCount;
    const prev = this.prevLabelNames[k];
    let c = 0;
    // Stryker disable next-line BlockStatement: the previous-label-name shortcut: without it the scan below reads the same name (and keeps prev when equal)
    if (prev !== undefined) {
      // Stryker disable next-line ArithmeticOperator: the previous-label-name shortcut: when it is not taken the scan below reads the same name (the variants that take it wrongly are killed)
      const end = at + prev.length;
      if (
        // Stryker disable next-line EqualityOperator: the shortcut at end === len (or only there) gives what the scan below gives: the same name, ending at len
        end < len &&
        // Stryker disable next-line LogicalOperator: with && the shortcut is taken only before a non-ASCII character; elsewhere the scan below reads the same name
        ((c = s.charCodeAt(end)) >= 128 || (CLASS[c] & LABEL_CHAR) === 0) &&
        // Stryker disable next-line MethodExpression: the previous-label-name shortcut: when it is not taken the scan below reads the same name (the variants that take it wrongly are killed)
        s.slice(at, end) === prev
      ) /* Stryker disable next-line BlockStatement: the shortcut skipped, the scan below reads the same name and keeps prev */ {
        this.scanned = prev;
        return end;
      }
    }
    let i = at;
    while (++i < len && (c = s.charCodeAt(i)) < 128 && (CLASS[c] & LABEL_CHAR) !== 0);
    const name = s.slice(at, i);
    // Stryker disable next-line ConditionalExpression: the else branch stores an equal string and makes the names be checked again: same result
    if (prev === name) {
      this.scanned = prev;
    } else {
      this.prevLabelNames[k] = name;
      this.scanned = name;
      // Stryker disable next-line BooleanLiteral: either this or the other half of the pair (labelNamesReused = false / verifiedNames lowered) makes checkLabelNames check the line: one alone changes nothing
      this.labelNamesReused = false;
      // Stryker disable next-line ConditionalExpression,EqualityOperator: either this or the other half of the pair (labelNamesReused = false / verifiedNames lowered) makes checkLabelNames check the line: one alone changes nothing
      if (this.verifiedNames > k) this.verifiedNames = k;
    }
    return i;
  }

  /**
   * A label value from just after its opening quote into `scanned`, unescaped; returns the index
   * after the closing quote. The closing quote is found with indexOf, and the string is scanned
   * character by character only when a backslash lies before it.
   */
  private scanLabelValue(at: number, allowNewline: boolean): number {
    const s = this.text;
    const close = s.indexOf('"', at);
    if (close === -1) return this.fail(at - 1, 'unterminated quoted string');
    // Scanning only moves forward, so each tracker is refreshed only once passed.
    let backslash = this.nextBackslash;
    // Stryker disable next-line ConditionalExpression,EqualityOperator,LogicalOperator,UnaryOperator,StringLiteral: the backslash tracker only chooses the fast path: a stale or recomputed position sends the value to scanQuoted, which reads the same value (the variant that skips scanQuoted wrongly is killed)
    if (backslash !== -1 && backslash < at) this.nextBackslash = backslash = s.indexOf('\\', at);
    // Stryker disable next-line ConditionalExpression,EqualityOperator,LogicalOperator,UnaryOperator: the backslash tracker only chooses the fast path: a stale or recomputed position sends the value to scanQuoted, which reads the same value (the variant that skips scanQuoted wrongly is killed)
    if (backslash !== -1 && backslash < close) return this.scanQuoted(at, allowNewline);
    if (!allowNewline) {
      let newline = this.nextNewline;
      // Stryker disable next-line ConditionalExpression,EqualityOperator,LogicalOperator,UnaryOperator: the newline tracker: a recomputed position is the same; 1 is never a newline position before a label value
      if (newline !== -1 && newline < at) this.nextNewline = newline = s.indexOf('\n', at);
      // Stryker disable next-line EqualityOperator,UnaryOperator: a newline is never at the closing quote, and 1 is never a newline position before a label value (the variants that fail without a newline are killed)
      if (newline !== -1 && newline < close) return this.fail(newline, 'newline inside a quoted string (escape it as \\n)');
    }
    // An equal value of the previous sample is kept instead of the new copy: label objects that
    // share their strings are cheaper to hold on to.
    const k = this.labelCount;
    const prev = this.prevLabelValues[k];
    // Stryker disable next-line ArithmeticOperator: an unused local
    const length = close - at;
    const value = s.slice(at, close);
    if (prev === value) {
      this.scanned = prev;
    } else {
      this.prevLabelValues[k] = value;
      this.scanned = value;
    }
    return close + 1;
  }

  /** Scans a double-quoted string from just after its opening quote; leaves it unescaped in `scanned`. */
  private scanQuoted(at: number, allowNewline: boolean): number {
    const s = this.text;
    const len = this.len;
    let i = at;
    // Stryker disable next-line BooleanLiteral: unescaping a string without a backslash gives it unchanged
    let escaped = false;
    for (;;) {
      if (i >= len) return this.fail(at - 1, 'unterminated quoted string');
      const c = s.charCodeAt(i);
      if (c === QUOTE) break;
      if (c === BACKSLASH) {
        escaped = true;
        i++;
        if (i >= len || s.charCodeAt(i) === NL) return this.fail(i, 'a backslash must escape a character on the same line');
      } else if (c === NL && !allowNewline) {
        return this.fail(i, 'newline inside a quoted string (escape it as \\n)');
      }
      i++;
    }
    this.scanned = escaped ? unescapeLabelValue(s, at, i) : s.slice(at, i);
    return i + 1;
  }

  private setBraceName(name: string, hasName: boolean, at: number): void {
    this.blockQuoted = true;
    if (hasName || this.braceName !== null) this.fail(at, 'metric name set twice (before and inside the braces)');
    if (name.length === 0) this.fail(at, 'empty metric name');
    this.braceName = name;
  }

  private addLabel(name: string, value: string, at: number, quoted: boolean): void {
    const n = this.labelCount;
    if (quoted) {
      // Quoted names bypass scanLabelName, and must not be matched as bare names there.
      // Stryker disable next-line BooleanLiteral: leading labels are reused only when their text is the same, which reads as the same labels, quoted names included
      this.blockQuoted = true;
      this.prevLabelNames[n] = undefined;
      // Stryker disable next-line BooleanLiteral: either this or the other half of the pair (labelNamesReused = false / verifiedNames lowered) makes checkLabelNames check the line: one alone changes nothing
      this.labelNamesReused = false;
      // Stryker disable next-line ConditionalExpression,EqualityOperator: either this or the other half of the pair (labelNamesReused = false / verifiedNames lowered) makes checkLabelNames check the line: one alone changes nothing
      if (this.verifiedNames > n) this.verifiedNames = n;
    }
    if ((this.normaliseLe && name === 'le') || (this.normaliseQuantile && name === 'quantile')) {
      value = this.normaliseFloatLabel(value);
    }
    this.labelNames[n] = name;
    this.labelValues[n] = value;
    this.labelAt[n] = at;
    this.labelCount = n + 1;
  }

  /**
   * Label names must be non-empty and distinct, and none may be __name__ (it would duplicate the
   * metric name): Prometheus fails the scrape otherwise (tsdb: label name is not unique). A line
   * whose names are exactly those of an already checked line skips the check.
   */
  private checkLabelNames(): void {
    const n = this.labelCount;
    if (this.labelNamesReused && n <= this.verifiedNames) return;
    const names = this.labelNames;
    for (let k = 0; k < n; k++) {
      const name = names[k] as string;
      const at = this.labelAt[k] as number;
      if (name.length === 0) this.fail(at, 'empty label name');
      if (name === '__name__') this.fail(at, 'label "__name__" duplicates the metric name');
      for (let j = 0; j < k; j++) {
        if (names[j] === name) this.fail(at, `duplicate label name "${name}"`);
      }
    }
    this.verifiedNames = n;
  }

  /** The current line's labels as an object, from the factory for its sequence of label names. */
  private buildLabels(): Record<string, string> {
    const n = this.labelCount;
    // Stryker disable next-line ConditionalExpression: the factory for no names builds {} too
    if (n === 0) return {};
    const names = this.labelNames;
    const recent = this.recentFactories;
    // Stryker disable next-line ConditionalExpression,EqualityOperator,BlockStatement: the recent-factory list only saves a lookup: a miss asks labelFactory, whose factory builds the same object
    for (let r = 0; r < recent.length; r++) {
      const entry = recent[r] as { names: string[]; make: LabelFactory };
      const known = entry.names;
      if (known.length !== n) continue;
      let k = 0;
      // Stryker disable next-line ConditionalExpression,EqualityOperator: the recent-factory list only saves a lookup: a miss asks labelFactory, whose factory builds the same object
      while (k < n && known[k] === names[k]) k++;
      // Stryker disable next-line ConditionalExpression: the recent-factory list only saves a lookup: a miss asks labelFactory, whose factory builds the same object
      if (k === n) return entry.make(this.labelValues);
    }
    // Histograms alternate between two sequences (with and without le), summaries likewise.
    // Stryker disable next-line ConditionalExpression,EqualityOperator: the cap only chooses a generated or a keyed factory, which build the same object (labels.mutation.test.ts)
    const { make, compiled } = labelFactory(names, n, this.factoriesCompiled < MAX_FACTORIES_COMPILED);
    // Stryker disable next-line ConditionalExpression,UpdateOperator: the count only feeds the cap on generated factories, which build the same objects as keyed ones
    if (compiled) this.factoriesCompiled++;
    // Stryker disable next-line ConditionalExpression,EqualityOperator: the recent-factory list only saves a lookup: a miss asks labelFactory, whose factory builds the same object
    if (recent.length >= RECENT_FACTORIES) recent.pop();
    recent.unshift({ names: names.slice(0, n), make });
    return make(this.labelValues);
  }

  /** Prometheus (model/textparse normalizeFloatsInLabelValues) rewrites le/quantile as OpenMetrics floats. */
  private normaliseFloatLabel(value: string): string {
    const raw = this.recentFloatRaw;
    const n = raw.length;
    let k = this.recentFloatNext;
    // Stryker disable next-line ConditionalExpression,EqualityOperator,BlockStatement: the recent le/quantile list only saves a map lookup: a miss (or a longer or unbounded list) gives the same normalised text from the map or from parseGoFloat
    for (let tries = 0; tries < n; tries++) {
      // Stryker disable next-line ConditionalExpression,EqualityOperator: the recent le/quantile list only saves a map lookup: a miss (or a longer or unbounded list) gives the same normalised text from the map or from parseGoFloat
      if (k >= n) k = 0;
      // Stryker disable next-line BlockStatement: the recent le/quantile list only saves a map lookup: a miss gives the same normalised text from the map or from parseGoFloat
      if (raw[k] === value) {
        // Stryker disable next-line ArithmeticOperator: the recent le/quantile list only saves a map lookup: a miss (or a longer or unbounded list) gives the same normalised text from the map or from parseGoFloat
        this.recentFloatNext = k + 1;
        return this.recentFloatOut[k] as string;
      }
      // Stryker disable next-line UpdateOperator: the recent le/quantile list only saves a map lookup: a miss (or a longer or unbounded list) gives the same normalised text from the map or from parseGoFloat
      k++;
    }
    let out = this.normalised.get(value);
    if (out === undefined) {
      const f = parseGoFloat(value, 0, value.length);
      out = f === undefined ? value : formatOpenMetricsFloat(f);
      // Stryker disable next-line ConditionalExpression,EqualityOperator: the map only caches parseGoFloat + formatOpenMetricsFloat: emptied sooner, later or never, the text is the same
      if (this.normalised.size >= 4096) this.normalised.clear();
      this.normalised.set(value, out);
    }
    // Stryker disable next-line ConditionalExpression,EqualityOperator,BlockStatement: the recent le/quantile list only saves a map lookup: a miss (or a longer or unbounded list) gives the same normalised text from the map or from parseGoFloat
    if (n < RECENT_FLOAT_LABELS) {
      raw.push(value);
      this.recentFloatOut.push(out);
      // Stryker disable next-line ArithmeticOperator: the recent le/quantile list only saves a map lookup: a miss (or a longer or unbounded list) gives the same normalised text from the map or from parseGoFloat
      this.recentFloatNext = n + 1;
    }
    return out;
  }

  private integerTimestamp(start: number, end: number): number {
    const s = this.text;
    let first = start;
    // Stryker disable next-line ArithmeticOperator: first < end + 1 also skips the last zero of an all-zero timestamp: no digits left sum to 0, as the one zero kept does
    while (first < end - 1 && s.charCodeAt(first) === DIGIT_0) first++;
    const digits = end - first;
    // Stryker disable next-line BlockStatement: up to 15 digits Number() of the text gives the same integer as the loop (exact below 2^53)
    if (digits <= 15) {
      let v = 0;
      for (let i = first; i < end; i++) v = v * 10 + (s.charCodeAt(i) - DIGIT_0);
      return v;
    }
    // Go's strconv.ParseInt(s, 10, 64): beyond int64 is an error.
    const text = s.slice(first, end);
    if (digits > 19 || (digits === 19 && text > '9223372036854775807')) {
      return this.fail(start, `timestamp ${text} is out of range for int64 milliseconds`);
    }
    return Number(text);
  }

  private secondsTimestamp(start: number, end: number, what: string): number {
    if (end === start) return this.fail(start, `expected a ${what}`);
    const seconds = parseGoFloat(this.text, start, end);
    if (seconds === undefined) return this.failValue(start, end, what);
    if (!Number.isFinite(seconds)) return this.fail(start, `invalid ${what} ${this.text.slice(start, end)} (must be finite)`);
    // openmetricsparse.go: int64(ts * 1000), which truncates toward zero.
    return Math.trunc(seconds * 1000);
  }

  private emit(
    name: string,
    labels: Record<string, string>,
    value: number,
    timestampMs: number | null,
    exemplar: Exemplar | null,
  ): void {
    let family: Family;
    // Stryker disable next-line ConditionalExpression,EqualityOperator: prevFamily is null only with prevName null; without the shortcut recentFamily finds the same family
    if (name === this.prevName && this.prevFamily !== null) {
      family = this.prevFamily;
    } else {
      family = this.recentFamily(name);
      // The name as first seen: one string per name, not one per histogram series.
      name = this.recentNames[this.recentHit] as string;
      this.prevName = name;
      this.prevFamily = family;
    }
    // Stryker disable next-line ConditionalExpression: untypedWithSamples is only ever compared with 0: counting a family again changes nothing
    if (!family.hasSamples) {
      family.hasSamples = true;
      // Stryker disable next-line ConditionalExpression: untypedWithSamples only decides whether onType looks for untyped samples, and that search fails only on untyped families with samples
      if (!family.typed) this.untypedWithSamples++;
    }
    this.out.push({
      name,
      labels,
      value,
      timestampMs,
      family: family.name,
      type: family.type,
      help: family.help,
      unit: family.unit,
      exemplar,
    });
  }

  /** Histograms and summaries cycle through a few sample names: remember their families. */
  private recentFamily(name: string): Family {
    const names = this.recentNames;
    // Stryker disable next-line ConditionalExpression,EqualityOperator,BlockStatement: the recent-name ring only saves familyOf, which finds the same family for the name
    for (let r = 0; r < names.length; r++) {
      // Stryker disable next-line ConditionalExpression,BlockStatement: the recent-name ring only saves familyOf, which finds the same family for the name
      if (names[r] === name) {
        this.recentHit = r;
        return this.recentFamilies[r] as Family;
      }
    }
    const family = this.familyOf(name);
    const slot = this.recentNext;
    names[slot] = name;
    this.recentFamilies[slot] = family;
    this.recentHit = slot;
    // Stryker disable next-line ArithmeticOperator: the slot only decides which ring entry is replaced; a lost or an extra entry only costs a familyOf call
    this.recentNext = (slot + 1) % RECENT_FAMILIES;
    return family;
  }

  private familyOf(name: string): Family {
    const current = this.current;
    if (current !== null && this.belongsTo(name, current)) return current;
    const exact = this.families.get(name);
    if (exact !== undefined && this.belongsTo(name, exact)) return exact;
    for (const suffix of ALL_SUFFIXES) {
      // Stryker disable next-line ConditionalExpression,EqualityOperator,LogicalOperator: a name no longer than the suffix leaves an empty base (no family has one), and belongsTo checks the suffix again
      if (name.length > suffix.length && name.endsWith(suffix)) {
        const f = this.families.get(name.slice(0, name.length - suffix.length));
        if (f !== undefined && f.typed && this.belongsTo(name, f)) return f;
      }
    }
    // No metadata: the family is the sample's own name, untyped (0.0.4) or unknown (OpenMetrics).
    const implicit = newFamily(name, this.om ? 'unknown' : 'untyped');
    this.families.set(name, implicit);
    return implicit;
  }

  private belongsTo(name: string, family: Family): boolean {
    const base = family.base;
    const extra = name.length - base.length;
    if (extra === 0) return name === base;
    // Stryker disable next-line ConditionalExpression,EqualityOperator: no suffix has a negative length, so the loop returns false as well
    if (extra < 0) return false;
    // Lengths first: startsWith/endsWith are the slow part.
    for (const suffix of this.suffixesOf(family.type)) {
      if (suffix.length === extra && name.endsWith(suffix) && name.startsWith(base)) return true;
    }
    return false;
  }

  private suffixesOf(type: MetricType): readonly string[] {
    return (this.om ? SUFFIXES_OM[type] : SUFFIXES_PROM[type]) ?? NO_SUFFIXES;
  }

  private familyFor(name: string): Family {
    let f = this.families.get(name);
    if (f === undefined) {
      f = newFamily(name, this.om ? 'unknown' : 'untyped');
      this.families.set(name, f);
    }
    return f;
  }

  private onType(name: string, type: MetricType, at: number): void {
    const existing = this.families.get(name);
    if (existing !== undefined) {
      if (existing.typed) this.fail(at, `second TYPE line for metric family "${name}"`);
      if (existing.hasSamples) this.fail(at, `TYPE line for "${name}" after samples of that family`);
    }
    // Samples already seen under a name this type gives to the family (e.g. foo_bucket before
    // "# TYPE foo histogram") were reported before their TYPE line: the format forbids it. Such
    // samples have an untyped family of their own, and most expositions have none.
    const base = familyBase(name, type);
    // Stryker disable next-line ConditionalExpression,EqualityOperator: the search finds nothing when no untyped family has samples
    if (this.untypedWithSamples > 0) {
      for (const suffix of ['', ...this.suffixesOf(type)]) {
        const sampleName = base + suffix;
        // Stryker disable next-line ConditionalExpression: the family itself was checked just above (existing.hasSamples): not skipped, it never has samples here
        if (sampleName === name) continue;
        const seen = this.families.get(sampleName);
        if (seen !== undefined && seen.hasSamples && !seen.typed) {
          this.fail(at, `TYPE line for "${name}" after samples of that family ("${sampleName}")`);
        }
      }
    }
    const f = existing ?? this.familyFor(name);
    f.type = type;
    f.typed = true;
    f.base = base;
    this.current = f;
    this.forgetRecentFamilies();
    this.normaliseLe = type === 'histogram';
    this.normaliseQuantile = type === 'summary';
  }

  // A second HELP or UNIT line replaces the first for the whole family: Prometheus accepts it
  // (its metadata cache keeps the last), so rejecting it would fail scrapes Prometheus takes.
  private onHelp(name: string, help: string): void {
    const f = this.familyFor(name);
    f.help = help;
    // Stryker disable next-line ConditionalExpression: marking a family without samples late only rewrites its samples later with the same last HELP
    if (f.hasSamples) {
      f.lateMeta = true;
      this.anyLateMeta = true;
    }
    this.current = f;
    this.forgetRecentFamilies();
  }

  private onUnit(name: string, unit: string): void {
    const f = this.familyFor(name);
    f.unit = unit;
    // Stryker disable next-line ConditionalExpression: marking a family without samples late only rewrites its samples later with the same last UNIT
    if (f.hasSamples) {
      f.lateMeta = true;
      this.anyLateMeta = true;
    }
    this.current = f;
    this.forgetRecentFamilies();
  }

  /** A metadata line can change which family a name belongs to, and how le/quantile read. */
  private forgetRecentFamilies(): void {
    // le/quantile normalisation may change with a TYPE line: re-read labels from now on.
    this.prefixCount = 0;
    this.prevName = null;
    this.prevFamily = null;
    this.recentNames.length = 0;
    this.recentFamilies.length = 0;
    this.recentNext = 0;
  }

  private applyLateMeta(): void {
    for (const sample of this.out) {
      const f = this.families.get(sample.family);
      // Stryker disable next-line ConditionalExpression,LogicalOperator: every sample has its family in the map, and a sample of a family never marked late already holds its last HELP and UNIT
      if (f !== undefined && f.lateMeta) {
        sample.help = f.help;
        sample.unit = f.unit;
      }
    }
  }

  private failValue(start: number, end: number, what: string): never {
    const text = this.text.slice(start, end);
    const reason = text.endsWith('\r')
      ? `invalid ${what} "${text}" (CRLF line endings are not allowed: lines end in \\n)`
      : /^[+-]?0[xX]/.test(text) || /^[+-]?[\d._]*_[\d._]*([eE][+-]?\d+)?$/.test(text)
      ? `invalid ${what} "${text}" (hexadecimal floats and "_" are not allowed)`
      : /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text)
        ? `${what} "${text}" is out of range for a float64`
        : `invalid ${what} "${text}"`;
    return this.fail(start, reason);
  }

  /** Throws: the whole exposition is rejected, with the line of `pos`. */
  private fail(pos: number, reason: string): never {
    const s = this.text;
    const at = Math.min(pos, this.len);
    let line = 1;
    for (let k = s.indexOf('\n'); k !== -1 && k < at; k = s.indexOf('\n', k + 1)) line++;
    const lineStart = at === 0 ? 0 : s.lastIndexOf('\n', at - 1) + 1;
    let lineEnd = s.indexOf('\n', lineStart);
    if (lineEnd === -1) lineEnd = this.len;
    let excerpt = s.slice(lineStart, Math.min(lineEnd, lineStart + EXCERPT_CHARS));
    if (lineEnd - lineStart > EXCERPT_CHARS) excerpt += '…';
    throw new ExpositionError(line, excerpt.length > 0 ? `${reason}: ${JSON.stringify(excerpt)}` : reason);
  }
}

function newFamily(name: string, type: MetricType): Family {
  return {
    name,
    base: name,
    type,
    typed: false,
    help: null,
    unit: null,
    hasSamples: false,
    // Stryker disable next-line BooleanLiteral: a family marked late only has its samples rewritten with its last HELP and UNIT, which they already hold
    lateMeta: false,
  };
}

/** Counters may be declared with _total and info families with _info; samples are built on the rest. */
function familyBase(name: string, type: MetricType): string {
  if (type === 'counter' && name.endsWith('_total')) return name.slice(0, -6);
  if (type === 'info' && name.endsWith('_info')) return name.slice(0, -5);
  return name;
}

/**
 * Label values (both formats) and OpenMetrics HELP: \\ → \, \" → ", \n → newline; any other
 * backslash is kept with the character after it, as Prometheus' strings.Replacer does.
 */
function unescapeLabelValue(s: string, start: number, end: number): string {
  let out = '';
  let run = start;
  for (let i = start; i < end; i++) {
    if (s.charCodeAt(i) !== BACKSLASH) continue;
    const next = s.charCodeAt(i + 1);
    const replacement = next === BACKSLASH ? '\\' : next === QUOTE ? '"' : next === LOWER_N ? '\n' : null;
    if (replacement !== null) {
      out += s.slice(run, i) + replacement;
      run = i + 2;
    }
    i++;
  }
  return out + s.slice(run, end);
}

/** 0.0.4 HELP: only \\ and \n are escapes (promparse.go helpReplacer); \" stays as written. */
function unescapeHelp(s: string): string {
  let out = '';
  let run = 0;
  for (let i = 0; i < s.length; i++) {
    if (s.charCodeAt(i) !== BACKSLASH) continue;
    const next = s.charCodeAt(i + 1);
    const replacement = next === BACKSLASH ? '\\' : next === LOWER_N ? '\n' : null;
    if (replacement !== null) {
      out += s.slice(run, i) + replacement;
      run = i + 2;
      i++;
    }
  }
  return out + s.slice(run);
}
