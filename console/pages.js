// The pages. Each reads its state from the URL (#page?key=value), asks the API, and formats the answers: it
// never adds, subtracts or divides money (sorting compares decimal text exactly; charts draw it).
import { exportLinks, getJson } from './api.js';
import { budgetChart, timeChart, waterfall } from './charts.js';
import {
  addDays, compareDecimal, daysBetween, formatBytes, formatDecimal, formatDelta, formatMoney, formatNumber, formatShare, isDay, monthStart, previousMonthStart, signOf,
} from './format.js';

export function h(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== undefined && c !== null && c !== false) e.append(c instanceof Node ? c : String(c));
  return e;
}

/** A money figure: the rounded text shown, the API's exact text in data-value and in the tooltip. */
export function money(text, currency, { delta = false } = {}) {
  if (text === null || text === undefined) return h('span', { class: 'muted' }, '—');
  const sign = delta ? signOf(text) : 0;
  return h('span', { class: `money${sign > 0 ? ' up' : sign < 0 ? ' down' : ''}`, 'data-value': text, 'data-currency': currency, title: `${currency} ${text} (exact)` }, delta ? formatDelta(text, currency) : formatMoney(text, currency));
}

/** columns: [{ label, num?, cell(row) }]; rows get data-key from key(row). */
export function table(caption, columns, rows, key) {
  const t = h('table', {}, h('caption', { class: 'sr-only' }, caption));
  t.append(h('thead', {}, h('tr', {}, columns.map((c) => h('th', { scope: 'col', class: c.num ? 'num' : undefined }, c.label)))));
  const body = h('tbody');
  for (const r of rows) body.append(h('tr', { 'data-key': key ? key(r) : undefined }, columns.map((c) => h('td', { class: c.num ? 'num' : undefined, 'data-col': c.id }, c.cell(r)))));
  if (rows.length === 0) body.append(h('tr', {}, h('td', { colspan: columns.length, class: 'muted' }, 'Nothing in this range.')));
  t.append(body);
  return t;
}

function finalBadge(final) {
  return h('span', { class: `badge ${final ? 'final' : 'provisional'}` }, final ? 'final' : 'provisional');
}

/** Warnings when an answer says what it rests on is missing (a `coverage` field, where a route carries one). */
export function coverageNote(answer, what) {
  const c = answer?.coverage;
  if (!c || c.complete === true || c.status === 'complete') return null;
  const gaps = [...(c.missing ?? []), ...(c.partial ?? [])].map((g) => (typeof g === 'string' ? g : `${g.from ?? ''}–${g.to ?? ''}${g.reason ? ` (${g.reason})` : ''}`));
  return h('p', { class: 'warning', role: 'status', 'data-coverage': 'incomplete' }, `${what} rests on incomplete data${gaps.length ? `: missing or partial ${gaps.join(', ')}` : ''}${c.note ? ` (${c.note})` : ''}.`);
}

function filters(state, fields, page) {
  const form = h('form', { class: 'filters', 'aria-label': 'Filters' });
  for (const f of fields) {
    const id = `f-${f.name}`;
    let control;
    if (f.options) {
      control = h('select', { id, name: f.name }, f.options.map(([value, label]) => h('option', { value, selected: String(state[f.name] ?? f.value ?? '') === value }, label)));
    } else {
      control = h('input', { id, name: f.name, type: f.type ?? 'text', value: state[f.name] ?? f.value ?? '', placeholder: f.placeholder, size: f.size });
    }
    form.append(h('label', { for: id }, f.label, control));
  }
  form.append(h('button', { type: 'submit' }, 'Show'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const params = new URLSearchParams();
    for (const [k, v] of new FormData(form)) if (String(v).trim() !== '') params.set(k, String(v).trim());
    location.hash = `${page}?${params}`;
  });
  return form;
}

function panel(title, ...children) {
  return h('section', { class: 'panel', 'aria-label': title }, h('h2', {}, title), ...children);
}

function dayParam(state, name, fallback) {
  const v = state[name];
  if (v === undefined) return fallback;
  if (!isDay(v)) throw new Error(`${name} in the address: expected a date YYYY-MM-DD`);
  return v;
}

function monthParam(state, fallback) {
  const v = state.month;
  if (v === undefined) return fallback;
  if (!/^\d{4}-\d{2}$/.test(v)) throw new Error('month in the address: expected YYYY-MM');
  return v;
}

function byCostDesc(field = 'cost') {
  return (a, b) => compareDecimal(b[field], a[field]);
}

// ---------------------------------------------------------------------------------------------------------------
export async function overview(state, ctx) {
  const month = monthParam(state, ctx.month);
  const from = `${month}-01`;
  const nextMonth = addDays(monthStart(addDays(from, 31)), 0);
  const to = month === ctx.month ? addDays(ctx.today, 1) : nextMonth;
  const range = { from, to, timezone: ctx.timezone };
  const yesterday = addDays(ctx.today, -1);
  // The month's totals are drawn as soon as they arrive; the rest follows (time to first data).
  const totals = Promise.all([getJson('cost', { ...range, product: 'serverless' }), getJson('cost', { ...range, product: 'model_api' })]);
  const rest = Promise.all([
    getJson('cost', { ...range, product: 'serverless', group_by: 'day' }),
    getJson('cost', { ...range, product: 'model_api', group_by: 'day' }),
    getJson('cost', { ...range, product: 'serverless', group_by: 'app' }),
    getJson('cost', { ...range, product: 'model_api', group_by: 'endpoint' }),
    month === ctx.month ? ctx.budgets : getJson('budgets', { month, timezone: ctx.timezone }),
    getJson('anomalies', { from, to, limit: 10 }),
    getJson('efficiency', { from: yesterday, to: ctx.today, timezone: ctx.timezone }),
  ]);
  rest.catch(() => undefined); // awaited below; a refusal is reported there, not as an unhandled rejection
  const [sl, ma] = await totals;
  const out = [h('h1', {}, `Overview — ${month}`), filters(state, [{ name: 'month', label: 'Month (YYYY-MM)', value: month, size: 8 }], 'overview')];

  const kpis = h('div', { class: 'kpis', 'data-figures': 'month-totals' });
  for (const [answer, product] of [[sl, 'Serverless'], [ma, 'Model APIs']]) {
    for (const r of answer.rows) {
      kpis.append(h('div', { class: 'kpi', 'data-product': answer.product, 'data-currency': r.currency },
        h('div', { class: 'label' }, `${product} · ${r.currency} · ${from} to ${addDays(to, -1)}`),
        h('div', { class: 'value' }, money(r.cost, r.currency)),
        h('div', {}, finalBadge(answer.final), answer.provisional_days.length ? h('span', { class: 'muted' }, ` ${answer.provisional_days.length} provisional day(s)`) : '')));
    }
    if (answer.rows.length === 0) kpis.append(h('div', { class: 'kpi' }, h('div', { class: 'label' }, product), h('div', { class: 'muted' }, 'no usage collected')));
  }
  out.push(kpis, exportLinks('cost', { ...range, product: 'serverless' }));
  ctx.draw([...out, h('p', { class: 'muted' }, 'Loading the rest…')]);
  const [slDays, maDays, apps, endpoints, budgets, anomalies, efficiency] = await rest;

  // The daily chart: one series per product line and currency.
  const days = [];
  for (let d = from; d < to; d = addDays(d, 1)) days.push(d);
  const series = [];
  for (const [answer, label] of [[slDays, 'serverless'], [maDays, 'model APIs']]) {
    for (const currency of [...new Set(answer.rows.map((r) => r.currency))].sort()) {
      const byDay = new Map(answer.rows.filter((r) => r.currency === currency).map((r) => [r.day, r.cost]));
      series.push({ label: `${label} ${currency}`, values: days.map((d) => byDay.get(d) ?? null), bars: label === 'serverless' && currency === 'USD' });
    }
  }
  const provisional = new Set([...slDays.provisional_days, ...maDays.provisional_days]);
  const dailyRows = slDays.rows.map((r) => ({ ...r, product: 'serverless' })).concat(maDays.rows.map((r) => ({ ...r, product: 'model_api' })));
  out.push(panel('Daily cost',
    timeChart({ title: `Daily cost ${from} to ${to} (exclusive), per product line and currency`, x: days, series }),
    h('p', { class: 'muted' }, provisional.size ? `Provisional (may still change): ${[...provisional].sort().join(', ')}. Other days are final.` : 'Every day is final.'),
    h('details', {}, h('summary', {}, 'Daily figures'),
      table('Daily cost', [
        { id: 'day', label: 'Day', cell: (r) => r.day },
        { id: 'product', label: 'Product', cell: (r) => r.product },
        { id: 'cost', label: 'Cost', num: true, cell: (r) => money(r.cost, r.currency) },
        { id: 'final', label: 'Status', cell: (r) => finalBadge(r.final) },
      ], dailyRows, (r) => `${r.product}|${r.day}|${r.currency}`)),
    exportLinks('cost', { ...range, product: 'serverless', group_by: 'day' })));

  const top = (answer, field, n = 8) => [...answer.rows].sort(byCostDesc()).slice(0, n).map((r) => ({ ...r, name: r[field] }));
  out.push(h('div', { class: 'grid' },
    panel('Top apps', table('Top apps by cost', [
      { id: 'name', label: 'App', cell: (r) => r.name },
      { id: 'cost', label: 'Cost', num: true, cell: (r) => money(r.cost, r.currency) },
    ], top(apps, 'app'), (r) => `${r.name}|${r.currency}`), exportLinks('cost', { ...range, product: 'serverless', group_by: 'app' })),
    panel('Top model endpoints', table('Top model endpoints by cost', [
      { id: 'name', label: 'Endpoint', cell: (r) => r.name },
      { id: 'cost', label: 'Cost', num: true, cell: (r) => money(r.cost, r.currency) },
    ], top(endpoints, 'endpoint'), (r) => `${r.name}|${r.currency}`), exportLinks('cost', { ...range, product: 'model_api', group_by: 'endpoint' }))));

  out.push(h('div', { class: 'grid' },
    panel('Budgets', budgets.budgets.length === 0 ? h('p', { class: 'muted' }, 'No budgets configured (BUDGETS, BUDGETS_FILE or APP_BUDGETS).') : table('Budgets', [
      { id: 'name', label: 'Budget', cell: (b) => `${b.scope} ${b.name}` },
      { id: 'spent', label: 'Spent', num: true, cell: (b) => money(b.spent, b.currency) },
      { id: 'forecast', label: 'Forecast (90%)', num: true, cell: (b) => h('span', {}, money(b.forecast, b.currency), h('br'), h('span', { class: 'muted' }, b.interval.high === null ? 'interval after 2 complete days' : `${formatDecimal(b.interval.low)} – ${formatDecimal(b.interval.high)}`)) },
      { id: 'amount', label: 'Budget', num: true, cell: (b) => money(b.amount, b.currency) },
      { id: 'status', label: 'Status', cell: (b) => h('span', { class: `badge ${b.status}` }, b.status.replace('_', ' ')) },
    ], budgets.budgets, (b) => `${b.scope}|${b.name}|${b.currency}`), h('p', {}, h('a', { href: `#budgets?month=${month}` }, 'Budgets page'))),
    panel('Anomalies', anomalies.rows.length === 0 ? h('p', { class: 'muted' }, `No anomaly found from ${from} to ${to}.`) : table('Recent anomalies', [
      { id: 'bucket', label: 'When', cell: (r) => r.bucket.slice(0, 16).replace('T', ' ') },
      { id: 'series', label: 'Series', cell: (r) => `${r.series_kind} ${r.series_id}` },
      { id: 'summary', label: 'What', cell: (r) => r.summary },
    ], anomalies.rows, (r) => r.finding_id), h('p', {}, h('a', { href: `#anomalies?from=${from}&to=${to}` }, 'Anomalies page'))),
    panel(`Idle share, ${yesterday}`, coverageNote(efficiency, 'Idle share'), table('Idle cost by app', [
      { id: 'app', label: 'App', cell: (r) => `${r.app} (${r.machine_type})` },
      { id: 'idle_cost', label: 'Idle cost', num: true, cell: (r) => money(r.idle_cost, r.currency) },
      { id: 'idle_share', label: 'Idle share', num: true, cell: (r) => formatShare(r.idle_share) },
    ], [...efficiency.rows].sort(byCostDesc('idle_cost')).slice(0, 6), (r) => `${r.app}|${r.machine_type}|${r.currency}`), h('p', {}, h('a', { href: '#efficiency' }, 'Efficiency page')))));
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
export function changesDefaults(ctx) {
  const from = monthStart(ctx.today);
  const to = addDays(ctx.today, 1);
  const baselineFrom = previousMonthStart(from);
  let baselineTo = addDays(baselineFrom, daysBetween(from, to));
  if (baselineTo > from) baselineTo = from;
  return { from, to, baseline_from: baselineFrom, baseline_to: baselineTo };
}

export async function changes(state, ctx) {
  const d = changesDefaults(ctx);
  const q = {
    from: dayParam(state, 'from', d.from),
    to: dayParam(state, 'to', d.to),
    baseline_from: dayParam(state, 'baseline_from', d.baseline_from),
    baseline_to: dayParam(state, 'baseline_to', d.baseline_to),
    product: state.product ?? 'all',
    group_by: state.group_by ?? 'app,endpoint',
    timezone: ctx.timezone,
    limit: 50,
  };
  const answer = await getJson('cost/changes', q);
  const out = [h('h1', {}, 'Changes'), filters(state, [
    { name: 'from', label: 'From', value: q.from, size: 10 },
    { name: 'to', label: 'To (exclusive)', value: q.to, size: 10 },
    { name: 'baseline_from', label: 'Baseline from', value: q.baseline_from, size: 10 },
    { name: 'baseline_to', label: 'Baseline to (exclusive)', value: q.baseline_to, size: 10 },
    { name: 'product', label: 'Product', value: q.product, options: [['all', 'all'], ['serverless', 'serverless'], ['model_api', 'model APIs']] },
  ], 'changes')];
  out.push(h('p', { class: 'muted' }, `${answer.from} to ${answer.to} (exclusive) against ${answer.baseline_from} to ${answer.baseline_to}; `,
    answer.final.current && answer.final.baseline ? 'both periods final.' : `provisional days: ${answer.final.provisional_days.join(', ') || 'none'}.`), coverageNote(answer, 'This comparison'));
  const totals = h('div', { class: 'grid', 'data-figures': 'totals' });
  for (const t of answer.totals) {
    totals.append(h('section', { class: 'panel', 'aria-label': `Change in ${t.currency}`, 'data-currency': t.currency },
      h('h2', {}, `${t.currency}: `, money(t.difference, t.currency, { delta: true })), waterfall(t)));
  }
  if (answer.totals.length === 0) totals.append(h('p', { class: 'muted' }, 'No cost in either period.'));
  out.push(totals, exportLinks('cost/changes', q));

  const groupName = (g) => Object.values(g.group).join(' / ') || g.product;
  const groupTable = (title, rows) => panel(title, table(title, [
    { id: 'group', label: 'Group (open for items)', cell: (g) => h('details', {}, h('summary', {}, `${groupName(g)} `, h('span', { class: 'badge' }, g.status)),
      table(`Items of ${groupName(g)}`, [
        { id: 'item', label: 'Item', cell: (i) => i.item },
        { id: 'baseline', label: 'Baseline', num: true, cell: (i) => money(i.baseline.cost, g.currency) },
        { id: 'current', label: 'Current', num: true, cell: (i) => money(i.current.cost, g.currency) },
        { id: 'volume', label: 'Volume', num: true, cell: (i) => money(i.volume, g.currency, { delta: true }) },
        { id: 'price', label: 'Price', num: true, cell: (i) => money(i.price, g.currency, { delta: true }) },
        { id: 'difference', label: 'Change', num: true, cell: (i) => money(i.difference, g.currency, { delta: true }) },
      ], g.items, (i) => i.item)) },
    { id: 'product', label: 'Product', cell: (g) => g.product },
    { id: 'baseline', label: 'Baseline', num: true, cell: (g) => money(g.baseline.cost, g.currency) },
    { id: 'current', label: 'Current', num: true, cell: (g) => money(g.current.cost, g.currency) },
    { id: 'difference', label: 'Change', num: true, cell: (g) => money(g.difference, g.currency, { delta: true }) },
  ], rows, (g) => `${g.product}|${groupName(g)}|${g.currency}`));
  const up = answer.groups.filter((g) => signOf(g.difference) > 0).sort((a, b) => compareDecimal(b.difference, a.difference)).slice(0, 10);
  const down = answer.groups.filter((g) => signOf(g.difference) < 0).sort((a, b) => compareDecimal(a.difference, b.difference)).slice(0, 10);
  out.push(h('div', { class: 'grid' }, groupTable('Top increases', up), groupTable('Top decreases', down)));
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
export async function anomalies(state, ctx) {
  const q = {
    from: dayParam(state, 'from', addDays(ctx.today, -28)),
    to: dayParam(state, 'to', addDays(ctx.today, 1)),
    measure: state.measure,
    series_kind: state.series_kind,
    limit: 200,
  };
  const answer = await getJson('anomalies', q);
  const out = [h('h1', {}, 'Anomalies'), filters(state, [
    { name: 'from', label: 'From', value: q.from, size: 10 },
    { name: 'to', label: 'To (exclusive)', value: q.to, size: 10 },
    { name: 'measure', label: 'Measure', value: q.measure ?? '', options: [['', 'any'], ['cost', 'cost'], ['volume', 'volume'], ['error_rate', 'error rate'], ['p95_latency', 'p95 latency']] },
    { name: 'series_kind', label: 'Series', value: q.series_kind ?? '', options: [['', 'any'], ['app', 'app'], ['endpoint', 'endpoint'], ['model_endpoint', 'model endpoint'], ['api_key', 'API key']] },
  ], 'anomalies'), coverageNote(answer, 'Anomaly detection'), exportLinks('anomalies', q)];
  out.push(h('p', { class: 'muted' }, 'Labels (confirming or dismissing a finding) are not offered by this version of the API.'));
  const selected = state.series;
  const seriesKey = (r) => `${r.series_kind}|${r.series_id}|${r.measure}`;
  if (selected) {
    const rows = answer.rows.filter((r) => seriesKey(r) === selected).sort((a, b) => a.bucket.localeCompare(b.bucket));
    if (rows.length > 0) {
      const last = rows[rows.length - 1];
      out.push(panel(`${last.series_kind} ${last.series_id} — ${last.measure} (${last.unit})`,
        timeChart({
          title: `Expected range and actual ${last.measure} of ${last.series_id} at its anomalous buckets`,
          x: rows.map((r) => r.bucket),
          series: [
            { label: 'expected high', values: rows.map((r) => r.expected_high), color: '#8fb3d9', hideLegend: true },
            { label: 'expected low', values: rows.map((r) => r.expected_low), color: '#8fb3d9', hideLegend: true },
            { label: 'expected', values: rows.map((r) => r.expected), color: '#1f4e79', dash: [4, 4] },
            { label: 'actual', values: rows.map((r) => r.actual), color: '#a4161a', points: true },
          ],
          band: { high: 0, low: 1 },
        }),
        h('h3', {}, 'Root cause'), h('p', {}, last.summary), last.explanation ? h('p', {}, last.explanation) : null));
    }
  }
  const params = new URLSearchParams(Object.entries({ ...state }).filter(([k]) => k !== 'series'));
  out.push(panel(`Findings (${answer.rows.length})`, table('Anomaly findings', [
    { id: 'bucket', label: 'Bucket (UTC)', cell: (r) => `${r.bucket.slice(0, 16).replace('T', ' ')} (${r.grain})` },
    { id: 'series', label: 'Series', cell: (r) => h('a', { href: `#anomalies?${new URLSearchParams({ ...Object.fromEntries(params), series: seriesKey(r) })}` }, `${r.series_kind} ${r.series_id}`) },
    { id: 'measure', label: 'Measure', cell: (r) => `${r.measure} (${r.unit})` },
    { id: 'actual', label: 'Actual', num: true, cell: (r) => formatNumber(r.actual, 4) },
    { id: 'expected', label: 'Expected (range)', num: true, cell: (r) => `${formatNumber(r.expected, 4)} (${formatNumber(r.expected_low, 4)} – ${formatNumber(r.expected_high, 4)})` },
    { id: 'score', label: 'Score', num: true, cell: (r) => formatNumber(r.score, 1) },
    { id: 'summary', label: 'Summary', cell: (r) => r.summary },
  ], answer.rows, (r) => r.finding_id)));
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
export async function budgets(state, ctx) {
  const month = monthParam(state, ctx.month);
  const q = { month, timezone: ctx.timezone };
  const answer = await getJson('budgets', q);
  const out = [h('h1', {}, `Budgets — ${answer.month}`), filters(state, [{ name: 'month', label: 'Month (YYYY-MM)', value: month, size: 8 }], 'budgets'),
    h('p', { class: 'muted' }, `Figures as of ${answer.today} (${answer.timezone}); the forecast's interval is 90%.`), coverageNote(answer, 'Budget spend'), exportLinks('budgets', q)];
  if (answer.budgets.length === 0) out.push(h('p', { class: 'muted' }, 'No budgets configured (BUDGETS, BUDGETS_FILE or APP_BUDGETS).'));
  for (const b of answer.budgets) {
    out.push(h('section', { class: 'panel', 'aria-label': `Budget ${b.scope} ${b.name}`, 'data-key': `${b.scope}|${b.name}|${b.currency}` },
      h('h2', {}, `${b.scope} ${b.name} `, h('span', { class: `badge ${b.status}` }, b.status.replace('_', ' '))),
      table(`Budget ${b.name}`, [
        { id: 'amount', label: 'Budget', num: true, cell: () => money(b.amount, b.currency) },
        { id: 'spent', label: 'Spent to date', num: true, cell: () => h('span', {}, money(b.spent, b.currency), ' ', finalBadge(b.spent_final)) },
        { id: 'forecast', label: 'Month-end forecast', num: true, cell: () => money(b.forecast, b.currency) },
        { id: 'low', label: 'Low (90%)', num: true, cell: () => money(b.interval.low, b.currency) },
        { id: 'high', label: 'High (90%)', num: true, cell: () => (b.interval.high === null ? h('span', { class: 'muted' }, 'after 2 complete days') : money(b.interval.high, b.currency)) },
        { id: 'days', label: 'Days', num: true, cell: () => `${b.days_elapsed} of ${b.days_in_month}` },
      ], [b]),
      budgetChart(b, answer.today)));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
export async function efficiency(state, ctx) {
  const q = { from: dayParam(state, 'from', monthStart(ctx.today)), to: dayParam(state, 'to', addDays(ctx.today, 1)), timezone: ctx.timezone };
  const [answer, recs] = await Promise.all([getJson('efficiency', q), getJson('recommendations', { month: q.from.slice(0, 7), timezone: ctx.timezone })]);
  const apps = [...new Set(answer.rows.map((r) => r.app))].sort();
  const topIdle = [...answer.rows].sort(byCostDesc('idle_cost'))[0]?.app;
  const app = state.app && apps.includes(state.app) ? state.app : topIdle ?? apps[0];
  const out = [h('h1', {}, 'Efficiency'), filters({ ...state, app }, [
    { name: 'from', label: 'From', value: q.from, size: 10 },
    { name: 'to', label: 'To (exclusive)', value: q.to, size: 10 },
    { name: 'app', label: 'App', value: app ?? '', options: apps.map((a) => [a, a]) },
  ], 'efficiency'), h('p', { class: 'muted' }, `Split rule: ${answer.split_rule}. Unattributed: cost of days without runner history (its split is unknown, never counted idle); idle share is over attributed cost.`), coverageNote(answer, 'The busy/idle split')];
  const rows = answer.rows.filter((r) => r.app === app).sort((a, b) => a.date.localeCompare(b.date));
  if (app) {
    const days = [...new Set(rows.map((r) => r.date))];
    const pick = (field) => days.map((d) => rows.find((r) => r.date === d)?.[field] ?? null);
    out.push(panel(`${app}: busy, idle, draining and unattributed cost per day`,
      timeChart({ title: `Busy, idle, draining and unattributed cost of ${app} per day`, x: days, series: [
        { label: 'busy', values: pick('busy_cost'), color: '#2f855a' },
        { label: 'idle', values: pick('idle_cost'), color: '#c05621' },
        { label: 'draining', values: pick('draining_cost'), color: '#6b46c1' },
        { label: 'unattributed', values: pick('unattributed_cost'), color: '#4a5568' },
      ] }),
      table(`Efficiency of ${app}`, [
        { id: 'date', label: 'Day', cell: (r) => r.date },
        { id: 'machine_type', label: 'Machine', cell: (r) => r.machine_type },
        { id: 'cost', label: 'Cost', num: true, cell: (r) => money(r.cost, r.currency) },
        { id: 'busy_cost', label: 'Busy', num: true, cell: (r) => money(r.busy_cost, r.currency) },
        { id: 'idle_cost', label: 'Idle', num: true, cell: (r) => money(r.idle_cost, r.currency) },
        { id: 'draining_cost', label: 'Draining', num: true, cell: (r) => money(r.draining_cost, r.currency) },
        { id: 'unattributed_cost', label: 'Unattributed', num: true, cell: (r) => money(r.unattributed_cost, r.currency) },
        { id: 'idle_share', label: 'Idle share', num: true, cell: (r) => formatShare(r.idle_share) },
        { id: 'vram', label: 'VRAM peak / total', num: true, cell: (r) => (r.vram_total_bytes === null ? '—' : `${formatBytes(r.vram_peak_used_bytes)} / ${formatBytes(r.vram_total_bytes)} (${formatShare(r.vram_peak_share)})`) },
      ], rows, (r) => `${r.date}|${r.machine_type}|${r.currency}`),
      exportLinks('efficiency', { ...q, app })));
  } else {
    out.push(h('p', { class: 'muted' }, 'No usage in this range.'));
  }
  const hints = [...recs.hints].sort(byCostDesc('amount'));
  const recColumns = [
    { id: 'kind', label: 'Kind', cell: (r) => r.kind.replace('_', ' ') },
    { id: 'app', label: 'App', cell: (r) => (r.machine_type === null ? r.app : `${r.app} (${r.machine_type}${r.recommended_machine_type ? ` → ${r.recommended_machine_type}` : ''})`) },
    { id: 'amount', label: 'Saving', num: true, cell: (r) => money(r.amount, r.currency) },
    { id: 'evidence', label: 'Evidence', cell: (r) => r.evidence },
  ];
  const key = (r) => `${r.kind}|${r.app}|${r.machine_type}`;
  out.push(panel(`Recommendations for ${recs.month} (${hints.length}, largest saving first)`, table('Recommendations', recColumns, hints.slice(0, 12), key),
    hints.length > 12 ? h('details', {}, h('summary', {}, `${hints.length - 12} more`), table('More recommendations', recColumns, hints.slice(12), key)) : null,
    exportLinks('recommendations', { month: recs.month, timezone: ctx.timezone })));
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
export async function trace(state, ctx) {
  const id = (state.id ?? '').trim();
  const window = { from: `${addDays(ctx.today, -6)}T00:00:00Z`, to: `${addDays(ctx.today, 1)}T00:00:00Z` };
  const out = [h('h1', {}, 'Trace'), filters(state, [{ name: 'id', label: 'Request id or session id', value: id, size: 44 }], 'trace')];
  if (!id) {
    const recent = await getJson('sessions', { ...window, limit: 20 });
    out.push(panel('Recent sessions', table('Recent sessions', [
      { id: 'session', label: 'Session', cell: (s) => h('a', { href: `#trace?id=${encodeURIComponent(s.session_id)}` }, s.session_id) },
      { id: 'app', label: 'App', cell: (s) => s.app },
      { id: 'last_seen', label: 'Last seen', cell: (s) => s.last_seen.replace('T', ' ').slice(0, 19) },
      { id: 'requests', label: 'Requests', num: true, cell: (s) => `${s.requests} (${s.request_errors} failed)` },
      { id: 'cost', label: 'Cost', num: true, cell: (s) => Object.entries(s.cost_by_currency).map(([c, v]) => money(v, c)) },
    ], recent.sessions, (s) => s.session_id)));
    return out;
  }
  // A request id has log lines; only an id without any is looked up as a session (a 404 there means neither).
  const logs = await getJson('logs', { request_id: id, ...window, limit: 200 });
  const session = logs.lines.length === 0 ? await getJson(`sessions/${encodeURIComponent(id)}`, {}, { allow404: true }) : null;
  if (session) {
    out.push(panel(`Session ${session.session_id}`,
      h('p', { class: 'muted' }, `${session.items.length} item(s), ${session.request_ids_total} request(s)${session.truncated.items || session.truncated.requests ? ' (truncated)' : ''}.`),
      table('Requests of the session', [
        { id: 'request', label: 'Request', cell: (r) => h('a', { href: `#trace?id=${encodeURIComponent(r.request_id)}` }, r.request_id) },
        { id: 'endpoint', label: 'Endpoint', cell: (r) => r.endpoint_id ?? (r.found ? '' : 'not collected yet') },
        { id: 'status', label: 'Status', cell: (r) => (r.status_code === null ? '—' : `${r.status_code} ${r.outcome ?? ''}`) },
        { id: 'duration', label: 'Duration (s)', num: true, cell: (r) => formatNumber(r.duration, 3) },
        { id: 'cost', label: 'Cost', num: true, cell: (r) => (r.cost === null ? h('span', { class: 'muted' }, '—') : money(r.cost, r.currency)) },
        { id: 'webhook', label: 'Webhook', cell: (r) => (r.webhook ? `${r.webhook.status || '?'} after ${r.webhook.attempts} deliver${r.webhook.attempts === 1 ? 'y' : 'ies'}${r.webhook.last_error ? `: ${r.webhook.last_error}` : ''}` : h('span', { class: 'muted' }, '—')) },
        { id: 'logs', label: 'Log lines', cell: (r) => r.log_lines.map((l) => `${l.timestamp.slice(11, 19)} ${l.level} ${l.message}`).join('\n') },
      ], session.requests, (r) => r.request_id),
      h('h3', {}, 'Events'),
      table('Session events', [
        { id: 'time', label: 'Time', cell: (i) => i.timestamp.replace('T', ' ').slice(0, 19) },
        { id: 'kind', label: 'Kind', cell: (i) => i.kind },
        { id: 'message', label: 'Message', cell: (i) => i.message },
      ], session.items)));
  }
  out.push(panel(`Log lines of request ${id}`, logs.lines.length === 0 ? h('p', { class: 'muted' }, session ? 'The id is a session: its requests are above.' : `No log line with request id ${id} from ${window.from} to ${window.to}, and no session with this id.`)
    : h('pre', { class: 'log', tabindex: '0', 'aria-label': 'Log lines' }, [...logs.lines].reverse().map((l) => `${l.timestamp} ${l.level.padEnd(5)} ${l.app} ${l.source}: ${l.message}`).join('\n')),
  exportLinks('logs', { request_id: id, ...window, limit: 200 })));
  return out;
}
