// Formatting only: money arrives as exact decimal text from the API and is shown rounded to cents by string
// arithmetic (BigInt), never through a float. Dates are plain YYYY-MM-DD calendar arithmetic.

const DECIMAL = /^(-?)(\d+)(?:\.(\d+))?$/;

/** The decimal text rounded half away from zero to `places` decimals, digits grouped by thousands. */
export function formatDecimal(text, places = 2) {
  const m = DECIMAL.exec(String(text ?? '').trim());
  if (!m) return String(text ?? '');
  const [, sign, whole, frac = ''] = m;
  const digits = BigInt(whole + frac.padEnd(places, '0').slice(0, places));
  const next = frac.length > places ? Number(frac[places]) : 0;
  const rounded = digits + (next >= 5 ? 1n : 0n);
  const s = rounded.toString().padStart(places + 1, '0');
  const intPart = s.slice(0, s.length - places);
  const fracPart = s.slice(s.length - places);
  const grouped = intPart.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const negative = sign === '-' && rounded !== 0n;
  return `${negative ? '-' : ''}${grouped}${places > 0 ? `.${fracPart}` : ''}`;
}

/** "USD 1,234.57". */
export function formatMoney(text, currency) {
  return currency ? `${currency} ${formatDecimal(text)}` : formatDecimal(text);
}

/** Signed: "+USD 12.00" / "-USD 3.10", for differences. */
export function formatDelta(text, currency) {
  const f = formatDecimal(text);
  return f.startsWith('-') ? `-${currency} ${f.slice(1)}` : `+${currency} ${f}`;
}

const SCALE = 18;
function scaled(text) {
  const m = DECIMAL.exec(String(text ?? '').trim());
  if (!m) return 0n;
  const [, sign, whole, frac = ''] = m;
  const v = BigInt(whole + frac.padEnd(SCALE, '0').slice(0, SCALE));
  return sign === '-' ? -v : v;
}

/** Orders two decimal texts exactly (for sorting: never arithmetic on money). */
export function compareDecimal(a, b) {
  const x = scaled(a);
  const y = scaled(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

export function signOf(text) {
  return compareDecimal(text, '0');
}

/** A decimal text as a number, for drawing a chart's geometry only (never shown as money). */
export function plotValue(text) {
  if (text === null || text === undefined || text === '') return null;
  const n = Number(text);
  return Number.isFinite(n) ? n : null;
}

/** A ratio (0..1) as a percentage. */
export function formatShare(ratio) {
  if (ratio === null || ratio === undefined) return '—';
  return `${(Number(ratio) * 100).toFixed(1)}%`;
}

export function formatNumber(value, places = 2) {
  if (value === null || value === undefined) return '—';
  return typeof value === 'string' ? formatDecimal(value, places) : Number(value).toLocaleString('en-US', { maximumFractionDigits: places });
}

export function formatBytes(bytes) {
  if (bytes === null || bytes === undefined) return '—';
  return `${(Number(bytes) / 2 ** 30).toFixed(1)} GiB`;
}

export function addDays(day, n) {
  return new Date(Date.parse(`${day}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);
}

export function monthStart(day) {
  return `${day.slice(0, 7)}-01`;
}

export function daysBetween(from, to) {
  return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000);
}

/** The first day of the month before `day`'s. */
export function previousMonthStart(day) {
  const y = Number(day.slice(0, 4));
  const m = Number(day.slice(5, 7));
  return m === 1 ? `${y - 1}-12-01` : `${y}-${String(m - 1).padStart(2, '0')}-01`;
}

export function isDay(text) {
  return /^\d{4}-\d{2}-\d{2}$/.test(text ?? '') && !Number.isNaN(Date.parse(`${text}T00:00:00Z`));
}
