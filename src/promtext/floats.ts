// Number syntax and formatting exactly as Prometheus has them, so that what we accept and how we
// normalise `le`/`quantile` matches what Prometheus stores.

// Powers of ten that are exact doubles: a ≤15-digit mantissa times or divided by one of these is a
// single correctly-rounded IEEE operation (Clinger's fast path), so no string allocation is needed.
const POW10: readonly number[] = [
  1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17,
  1e18, 1e19, 1e20, 1e21, 1e22,
];

const DIGIT_0 = 48;
const DIGIT_9 = 57;
const PLUS = 43;
const MINUS = 45;
const DOT = 46;
const LOWER_E = 101;
const UPPER_E = 69;

/**
 * Go's `strconv.ParseFloat(s, 64)` restricted the way Prometheus restricts it (`textparse.parseFloat`
 * refuses `p`, `P` and `_`): a decimal number, or `inf`/`infinity` with an optional sign, or `nan`,
 * case-insensitively. Returns `undefined` for bad syntax and for magnitudes beyond float64 (Go
 * returns ErrRange there, which fails the scrape).
 */
export function parseGoFloat(s: string, start: number, end: number): number | undefined {
  let i = start;
  if (i >= end) return undefined;
  let c = s.charCodeAt(i);
  let negative = false;
  if (c === PLUS || c === MINUS) {
    negative = c === MINUS;
    i++;
    if (i >= end) return undefined;
  }
  let mantissa = 0;
  let digits = 0;
  let exponent = 0;
  let sawDigit = false;
  let sawDot = false;
  // Stryker disable next-line BooleanLiteral: exact only chooses the fast path; Number() returns the same correctly rounded double
  let exact = true;
  for (; i < end; i++) {
    c = s.charCodeAt(i);
    if (c >= DIGIT_0 && c <= DIGIT_9) {
      sawDigit = true;
      // Stryker disable next-line ConditionalExpression: leading zeros would only use up the fast path's digit budget; the fallback gives the same double
      if (mantissa === 0 && c === DIGIT_0) {
        if (sawDot) exponent--;
      } else if (
        digits < 15
      ) {
        mantissa = mantissa * 10 + (c - DIGIT_0);
        digits++;
        if (sawDot) exponent--;
      } else {
        exact = false;
      }
    } else if (c === DOT) {
      if (sawDot) return undefined;
      sawDot = true;
    } else {
      break;
    }
  }
  if (!sawDigit) return parseSpecial(s, start, end);
  if (i < end) {
    if (c !== LOWER_E && c !== UPPER_E) return undefined;
    i++;
    if (i >= end) return undefined;
    c = s.charCodeAt(i);
    let expNegative = false;
    if (c === PLUS || c === MINUS) {
      expNegative = c === MINUS;
      i++;
    }
    if (i >= end) return undefined;
    let e = 0;
    for (; i < end; i++) {
      c = s.charCodeAt(i);
      if (c < DIGIT_0 || c > DIGIT_9) return undefined;
      // Stryker disable next-line ConditionalExpression,EqualityOperator,ArithmeticOperator: e only decides the fast path (|exponent| <= 22); any larger or wrong e takes the Number() fallback on the same text
      if (e < 100_000) e = e * 10 + (c - DIGIT_0);
    }
    exponent += expNegative ? -e : e;
  }
  // Stryker disable next-line ConditionalExpression,EqualityOperator,UnaryOperator,BlockStatement: leaving the fast path takes the Number() fallback, which gives the same double
  if (exact && exponent >= -22 && exponent <= 22) {
    // Stryker disable next-line EqualityOperator: at exponent 0 dividing and multiplying by 1e0 are the same
    const v = exponent < 0 ? mantissa / POW10[-exponent] : mantissa * POW10[exponent];
    return negative ? -v : v;
  }
  // Syntax is checked above, so what JavaScript's converter accepts beyond Go's ("0x..", spaces)
  // cannot reach it; it rounds correctly for the long mantissas the fast path leaves out.
  const v = Number(s.slice(start, end));
  return Number.isFinite(v) ? v : undefined;
}

function parseSpecial(s: string, start: number, end: number): number | undefined {
  let i = start;
  let sign = 1;
  let signed = false;
  const first = s.charCodeAt(i);
  if (first === PLUS || first === MINUS) {
    sign = first === MINUS ? -1 : 1;
    signed = true;
    i++;
  }
  const word = s.slice(i, end).toLowerCase();
  if (word === 'inf' || word === 'infinity') return sign * Infinity;
  // Go's special() takes a sign only in front of "inf": "+nan" and "-nan" are syntax errors.
  if (word === 'nan' && !signed) return NaN;
  return undefined;
}

/**
 * Prometheus' `labels.FormatOpenMetricsFloat`: Go's shortest `%g`, plus ".0" when the result has
 * neither "." nor "e". Used to normalise `le` and `quantile` label values (`le="1"` → `"1.0"`).
 */
export function formatOpenMetricsFloat(f: number): string {
  // Stryker disable next-line ConditionalExpression: a shortcut; the general path formats 1 as '1.0' too
  if (f === 1) return '1.0';
  // Stryker disable next-line ConditionalExpression: a shortcut; the general path formats 0 and -0 as '0.0' too
  if (f === 0) return '0.0';
  // Stryker disable next-line ConditionalExpression,UnaryOperator: a shortcut; the general path formats -1 as '-1.0' too, and f === 1 returned above
  if (f === -1) return '-1.0';
  if (Number.isNaN(f)) return 'NaN';
  if (f === Infinity) return '+Inf';
  if (f === -Infinity) return '-Inf';
  const s = formatGoShortestG(f);
  return s.includes('.') || s.includes('e') ? s : `${s}.0`;
}

/** Go's `strconv.FormatFloat(f, 'g', -1, 64)` for finite, non-zero f. */
function formatGoShortestG(f: number): string {
  // Stryker disable next-line EqualityOperator: f is never 0 here (returned above)
  const negative = f < 0;
  // toExponential() without an argument gives the shortest round-tripping digits, as Go does.
  const exp = Math.abs(f).toExponential();
  const ePos = exp.indexOf('e');
  const digits = exp.slice(0, ePos).replace('.', '');
  const x = Number(exp.slice(ePos + 1));
  const sign = negative ? '-' : '';
  // Go: with the shortest precision, %e is used when the exponent is < -4 or >= 6 (eprec = 6).
  if (x < -4 || x >= 6) {
    const mant = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const absX = Math.abs(x);
    return `${sign}${mant}e${x < 0 ? '-' : '+'}${absX < 10 ? '0' : ''}${absX}`;
  }
  const decimalPoint = x + 1;
  if (decimalPoint <= 0) return `${sign}0.${'0'.repeat(-decimalPoint)}${digits}`;
  if (decimalPoint >= digits.length) return `${sign}${digits}${'0'.repeat(decimalPoint - digits.length)}`;
  return `${sign}${digits.slice(0, decimalPoint)}.${digits.slice(decimalPoint)}`;
}
