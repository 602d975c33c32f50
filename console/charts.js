// Charts: uPlot (vendored, MIT) for time series, small SVG and CSS bars for the rest. A chart's geometry comes
// from the API's decimal text read as numbers; the figures shown beside it are always the text itself.
import { formatDelta, formatMoney, plotValue } from './format.js';

export const COLORS = ['#1f4e79', '#c05621', '#2f855a', '#6b46c1', '#b7791f', '#2c7a7b', '#9b2c2c', '#4a5568'];
const SVG = 'http://www.w3.org/2000/svg';

function el(tag, attrs = {}, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function svgEl(tag, attrs = {}) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}

function legend(items) {
  const div = el('div', { class: 'legend' });
  for (const { label, color } of items) {
    const item = el('span');
    const sw = el('span', { class: 'swatch', 'aria-hidden': 'true' });
    sw.style.background = color;
    item.append(sw, label);
    div.append(item);
  }
  return div;
}

function epoch(day) {
  return Date.parse(day.length === 10 ? `${day}T00:00:00Z` : day) / 1000;
}

/**
 * A time chart: `x` are days (YYYY-MM-DD) or ISO instants, each series `{ label, values, bars?, dash? }` with values
 * as decimal text or numbers; `band` `{ low, high }` (indices of two series) fills between them.
 */
export function timeChart({ title, x, series, band, height = 220 }) {
  const figure = el('figure', { class: 'chart', role: 'img', 'aria-label': title });
  const holder = el('div');
  figure.append(holder, legend(series.filter((s) => !s.hideLegend).map((s, i) => ({ label: s.label, color: s.color ?? COLORS[i % COLORS.length] }))));
  const data = [x.map(epoch), ...series.map((s) => s.values.map((v) => (typeof v === 'number' ? v : plotValue(v))))];
  const draw = () => {
    const uPlot = window.uPlot;
    if (!uPlot || !holder.isConnected) return;
    const width = Math.max(320, Math.min(1200, figure.clientWidth || 640));
    const opts = {
      width,
      height,
      legend: { show: false },
      cursor: { drag: { x: false, y: false }, points: { show: false } },
      scales: { x: { time: true } },
      axes: [{ stroke: '#4a5361', grid: { stroke: '#e5e8ee' } }, { stroke: '#4a5361', size: 64, grid: { stroke: '#e5e8ee' } }],
      series: [
        {},
        ...series.map((s, i) => {
          const color = s.color ?? COLORS[i % COLORS.length];
          return {
            label: s.label,
            stroke: color,
            width: s.bars ? 0 : 2,
            fill: s.bars ? color : undefined,
            dash: s.dash,
            points: { show: Boolean(s.points), size: 6, fill: color },
            paths: s.bars ? uPlot.paths.bars({ size: [0.7, 40] }) : s.points && !s.line ? () => null : undefined,
          };
        }),
      ],
      bands: band ? [{ series: [band.high + 1, band.low + 1], fill: 'rgba(31,78,121,0.15)' }] : [],
    };
    new uPlot(opts, data, holder);
  };
  // Drawn once the figure is in the page (its width is known then).
  queueMicrotask(() => requestAnimationFrame(draw));
  return figure;
}

/**
 * A budget over its month: spend to date from the first day to today, then the forecast to month end with its
 * interval, against the budget's amount. Every point is a figure of the /budgets answer.
 */
export function budgetChart(budget, todayDay) {
  const W = 560;
  const H = 170;
  const pad = { l: 8, r: 150, t: 10, b: 22 };
  const days = budget.days_in_month;
  const top = Math.max(...[budget.amount, budget.spent, budget.forecast, budget.interval.high ?? budget.forecast].map((v) => plotValue(v) ?? 0)) * 1.1 || 1;
  const sx = (d) => pad.l + (d / days) * (W - pad.l - pad.r);
  const sy = (v) => H - pad.b - ((plotValue(v) ?? 0) / top) * (H - pad.t - pad.b);
  const svg = svgEl('svg', { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img' });
  const label = `${budget.scope} ${budget.name}: spent ${formatMoney(budget.spent, budget.currency)} of ${formatMoney(budget.amount, budget.currency)}, forecast ${formatMoney(budget.forecast, budget.currency)}`;
  svg.setAttribute('aria-label', label);
  const title = svgEl('title');
  title.textContent = label;
  svg.append(title);
  svg.append(svgEl('line', { x1: pad.l, x2: sx(days), y1: H - pad.b, y2: H - pad.b, stroke: '#8a94a3' }));
  const today = Math.min(days, Number(todayDay.slice(8, 10)));
  if (budget.interval.high !== null) {
    svg.append(svgEl('polygon', { points: `${sx(today)},${sy(budget.spent)} ${sx(days)},${sy(budget.interval.low)} ${sx(days)},${sy(budget.interval.high)}`, fill: 'rgba(31,78,121,0.18)' }));
  }
  svg.append(svgEl('line', { x1: sx(0), y1: sy('0'), x2: sx(today), y2: sy(budget.spent), stroke: '#1f4e79', 'stroke-width': 3 }));
  svg.append(svgEl('line', { x1: sx(today), y1: sy(budget.spent), x2: sx(days), y2: sy(budget.forecast), stroke: '#1f4e79', 'stroke-width': 2, 'stroke-dasharray': '5 4' }));
  svg.append(svgEl('line', { x1: sx(0), y1: sy(budget.amount), x2: sx(days), y2: sy(budget.amount), stroke: '#a4161a', 'stroke-width': 1.5, 'stroke-dasharray': '2 3' }));
  const text = (x, y, s) => {
    const t = svgEl('text', { x, y });
    t.textContent = s;
    svg.append(t);
  };
  text(sx(days) + 6, sy(budget.amount) + 4, `budget ${formatMoney(budget.amount, budget.currency)}`);
  text(sx(days) + 6, sy(budget.forecast) + 16, `forecast ${formatMoney(budget.forecast, budget.currency)}`);
  text(pad.l, H - 6, `${budget.month}-01`);
  text(sx(today) - 20, H - 6, `today (${today})`);
  text(sx(days) - 20, H - 6, `day ${days}`);
  return svg;
}

/**
 * The change from one period to the other, per currency: baseline, then volume, price, discount, new and gone
 * (which add up to the difference exactly, per the API), then current.
 */
export function waterfall(total) {
  const wrap = el('div', { class: 'waterfall', role: 'group', 'aria-label': `Change in ${total.currency}` });
  const parts = ['volume', 'price', 'discount', 'new', 'gone'];
  let running = plotValue(total.baseline) ?? 0;
  const steps = [{ name: 'baseline', from: 0, to: running, text: formatMoney(total.baseline, total.currency), key: 'baseline', value: total.baseline }];
  for (const p of parts) {
    const v = plotValue(total[p]) ?? 0;
    steps.push({ name: p, from: running, to: running + v, text: formatDelta(total[p], total.currency), key: p, value: total[p], sign: Math.sign(v) });
    running += v;
  }
  steps.push({ name: 'current', from: 0, to: plotValue(total.current) ?? 0, text: formatMoney(total.current, total.currency), key: 'current', value: total.current });
  const max = Math.max(...steps.flatMap((s) => [s.from, s.to]), 1e-9);
  const min = Math.min(0, ...steps.flatMap((s) => [s.from, s.to]));
  const span = max - min;
  for (const s of steps) {
    const row = el('div', { class: 'wf-row' });
    const track = el('div', { class: 'wf-track', 'aria-hidden': 'true' });
    const bar = el('div', { class: `wf-bar${s.sign > 0 ? ' up' : s.sign < 0 ? ' down' : ''}` });
    bar.style.left = `${((Math.min(s.from, s.to) - min) / span) * 100}%`;
    bar.style.width = `${Math.max(0.3, (Math.abs(s.to - s.from) / span) * 100)}%`;
    track.append(bar);
    const value = el('span', { class: 'num money', 'data-value': s.value, 'data-currency': total.currency, 'data-key': s.key, title: `${total.currency} ${s.value}` }, s.text);
    row.append(el('span', {}, s.name), track, value);
    wrap.append(row);
  }
  return wrap;
}
