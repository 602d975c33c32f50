import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ConfigError, isLoopbackHost } from '../config.js';
import type { Extension, Runtime } from '../runtime.js';
import { collectedTimezones, costByGroups, COST_GROUPS, type CostGroup } from '../store/tables/usage-buckets.js';
import { MODEL_COST_GROUPS, modelCostByGroups, type ModelCostGroup } from '../store/tables/model-usage.js';
import { financeReport, financeTable } from './finance.js';
import { financeProblem, FINANCE_COLUMNS } from '../insights/finance.js';
import { IANAZone } from 'luxon';
import { ApiError, badParameter, checkRangeDays, dateParam, formatParam, installErrorHandler, listParam, monthParam, parseQuery, sendTable } from './http.js';
import { readOnlyStore } from '../store/client.js';
import { clientKeyer, RouteRegistry } from './routes.js';
import { CostResponse, FinanceResponse, FocusResponse } from './responses.js';
import { focusReport, focusTable } from './focus.js';
import { focusOptions, FocusNoDataError, FOCUS_COLUMNS } from '../insights/focus.js';
import { costChangeRoutes } from './cost-changes-routes.js';
import { loadFinality } from './finality-report.js';
import { budgetRoutes } from './budgets-routes.js';

export const API_PREFIX = '/api/v1';


/** Extra route groups (cost per request, latency, errors, runners, logs) register through this hook. */
export type ApiRoutes = (app: FastifyInstance, registry: RouteRegistry, rt: Runtime) => void;

/** The query API under /api/v1: bearer tokens from API_TOKENS, or loopback only when none are configured. */
export function apiExtension(extraRoutes: ApiRoutes[] = []): Extension {
  return async (rt) => {
    const tokens = rt.config.API_TOKENS ?? [];
    if (tokens.length === 0 && !isLoopbackHost(rt.config.HOST)) {
      throw new ConfigError([
        {
          variable: 'API_TOKENS',
          expected: `at least one token when HOST is not a loopback address: the query API serves cost data and refuses to listen openly without authentication`,
        },
      ]);
    }
    if (tokens.length === 0) rt.logger.info('query API: no API_TOKENS configured, so it answers on loopback only without a token');
    const digests = tokens.map((t) => createHash('sha256').update(t).digest());
    await rt.app.register(
      async (app) => {
        installErrorHandler(app, rt);
        if (digests.length > 0) {
          app.addHook('onRequest', async (request) => {
            // Stryker disable next-line StringLiteral: any fallback text lacks "Bearer <token>" of a configured token, so a missing header is a 401 either way
            const header = request.headers.authorization ?? '';
            const m = /^Bearer\s+(.+)$/i.exec(header);
            const given = m ? createHash('sha256').update(m[1].trim()).digest() : null;
            if (!given || !digests.some((d) => timingSafeEqual(d, given))) {
              throw new ApiError(401, 'authorization_error', 'a valid "Authorization: Bearer <token>" header is required (API_TOKENS)');
            }
          });
        }
        const registry = new RouteRegistry(parseQuery, { maxPerClient: rt.config.API_INTERACTIVE_PER_CLIENT, clientOf: clientKeyer(rt.config) });
        // Routes read through a read-only store with per-query limits, never as the writing user without bounds.
        const reader: Runtime = {
          ...rt,
          store: readOnlyStore(rt.store, {
            maxExecutionSeconds: rt.config.API_QUERY_TIMEOUT_SECONDS,
            maxMemoryBytes: rt.config.API_QUERY_MAX_MEMORY_BYTES,
            maxResultRows: rt.config.API_QUERY_MAX_RESULT_ROWS,
          }),
        };
        costRoutes(app, registry, reader);
        costChangeRoutes(app, registry, reader, checkTimezone);
        budgetRoutes(app, registry, reader, checkTimezone);
        for (const routes of extraRoutes) routes(app, registry, reader);
        // GET /api/v1: where to go from here.
        app.get('/', async () => ({
          service: 'tallyhouse',
          openapi: `${API_PREFIX}/openapi.json`,
          routes: registry.routes.map((r) => ({ path: `${API_PREFIX}${r.path.replace(/:(\w+)/g, '{$1}')}`, operationId: r.operationId, summary: r.summary })),
        }));
        app.get('/openapi.json', async () =>
          registry.openapi(
            API_PREFIX,
            {
              title: 'Tallyhouse query API',
              version: '1',
              description: 'Cost, latency, errors, runners and logs collected from the platform. Money is exact decimal text in the currency of its row; durations are in seconds unless a name says otherwise.',
            },
            serverUrl(rt),
          ),
        );
      },
      { prefix: API_PREFIX },
    );
  };
}

/**
 * The OpenAPI document's server: PUBLIC_URL, else the address the service listens on; never the request's Host,
 * which a rebinding page or a forged header chooses.
 */
function serverUrl(rt: Runtime & { app: FastifyInstance }): string {
  if (rt.config.PUBLIC_URL) return rt.config.PUBLIC_URL;
  const address = rt.app.server.address();
  const port = typeof address === 'object' && address ? address.port : rt.config.PORT;
  return `http://${rt.config.HOST.includes(':') ? `[${rt.config.HOST}]` : rt.config.HOST}:${port}`;
}

/** The timezones a cost question may be asked in: those collected, plus those configured. */
async function knownTimezones(rt: Runtime): Promise<string[]> {
  const collected = (await collectedTimezones(rt.store, {})).map((r) => r.timezone);
  return [...new Set([...rt.config.TIMEZONES, ...collected])].sort();
}

export async function checkTimezone(rt: Runtime, timezone: string): Promise<void> {
  const known = await knownTimezones(rt);
  if (!known.includes(timezone)) {
    throw badParameter('timezone', `expected one of the collected timezones: ${known.join(', ')}`);
  }
}

function checkRange(rt: Runtime, from: string, to: string): void {
  if (to <= from) throw badParameter('to', `expected a date after from (${from}); to is exclusive`);
  checkRangeDays((Date.parse(to) - Date.parse(from)) / 86_400_000, rt.config.API_MAX_RANGE_DAYS, 'API_MAX_RANGE_DAYS');
}

const ALL_GROUPS = [...new Set([...Object.keys(COST_GROUPS), ...Object.keys(MODEL_COST_GROUPS)])] as [string, ...string[]];
// Stryker disable next-line ObjectLiteral,StringLiteral: parseQuery (src/api/http.ts) answers an invalid_value issue with the enum's values, never this message
const groupByParam = listParam().pipe(z.array(z.enum(ALL_GROUPS, { error: `expected a subset of ${ALL_GROUPS.join(', ')}` })));

const CostQuery = z.strictObject({
  from: dateParam('first local day, inclusive'),
  to: dateParam('last local day, exclusive'),
  timezone: z.string().default('UTC').describe('one of the collected timezones'),
  product: z.enum(['serverless', 'model_api']).default('serverless').describe('serverless (machine time of your apps) or model_api (calls to model endpoints)'),
  group_by: groupByParam.describe(
    `comma-separated or repeated; serverless: ${Object.keys(COST_GROUPS).join(', ')}; model_api: ${Object.keys(MODEL_COST_GROUPS).join(', ')}`,
  ),
  app: listParam().describe('serverless: only these apps (exact names; repeatable)'),
  endpoint: listParam().describe('model_api: only these model endpoints (e.g. svc-ai/flux-dev; repeatable)'),
  search: z.string().max(200, 'expected at most 200 characters').default('').describe('case-insensitive substring of the app name (serverless) or endpoint id (model_api)'),
  format: formatParam,
});

const MONEY_COLUMNS = ['machine_seconds', 'surge_machine_seconds', 'subtotal', 'discount', 'cost', 'surge_cost'] as const;
const MODEL_MONEY_COLUMNS = ['quantity', 'subtotal', 'discount', 'cost'] as const;

function costRoutes(app: FastifyInstance, registry: RouteRegistry, rt: Runtime): void {
  registry.get(app, {
    path: '/cost',
    operationId: 'getCost',
    response: CostResponse,
    summary: 'Cost of serverless usage (by app, environment, machine type, surge) or model APIs (by endpoint, API key, unit), per calendar period, in a timezone',
    description:
      'Money is exact decimal text in the currency of its row; rows of different currencies are never summed together. Serverless: per-app totals include surge and non-surge usage; surge_cost is the surge part. model_api: quantity is in the unit of the row (group by unit to keep units apart).',
    query: CostQuery,
    csv: true,
    handler: async (q, request, reply) => {
      checkRange(rt, q.from, q.to);
      await checkTimezone(rt, q.timezone);
      const groupBy = [...new Set(q.group_by)];
      const allowed: Record<string, unknown> = q.product === 'model_api' ? MODEL_COST_GROUPS : COST_GROUPS;
      const wrong = groupBy.filter((g) => !(g in allowed));
      if (wrong.length > 0) throw badParameter('group_by', `${wrong.join(', ')} do not apply to product=${q.product}; expected a subset of ${Object.keys(allowed).join(', ')}`);
      if (q.product === 'model_api' && q.app.length > 0) throw badParameter('app', 'applies to product=serverless; use endpoint for model_api');
      if (q.product === 'serverless' && q.endpoint.length > 0) throw badParameter('endpoint', 'applies to product=model_api; use app for serverless');
      const rows =
        q.product === 'model_api'
          ? await modelCostByGroups(rt.store, { timezone: q.timezone, from: q.from, to: q.to, groupBy: groupBy as ModelCostGroup[], endpoints: q.endpoint, search: q.search })
          : await costByGroups(rt.store, { timezone: q.timezone, from: q.from, to: q.to, groupBy: groupBy as CostGroup[], apps: q.app, search: q.search });
      // Whether each figure can still change (src/insights/finality.ts): per day when grouped by day, else the range's.
      const finality = await loadFinality(rt.store, { product: q.product, timezone: q.timezone, from: q.from, to: q.to, windowHours: rt.config.LATE_BILLING_WINDOW_HOURS, now: rt.now() });
      const finalByDay = new Map(finality.days.map((d) => [d.day, d.final]));
      const columns = [...groupBy, 'currency', ...(q.product === 'model_api' ? MODEL_MONEY_COLUMNS : MONEY_COLUMNS), 'final'];
      const table = {
        columns,
        rows: rows.map((r) => {
          const row = r as Record<string, string | number | boolean>;
          const final = groupBy.includes('day') ? finalByDay.get(String(row.day)) ?? false : finality.final;
          return Object.fromEntries(columns.map((c) => [c, c === 'final' ? final : row[c] ?? null]));
        }),
      };
      return sendTable(reply, request, q.format, table, () => ({
        timezone: q.timezone,
        from: q.from,
        to: q.to,
        product: q.product,
        group_by: groupBy,
        final: finality.final,
        provisional_days: finality.provisional_days,
        rows: table.rows,
      }), 'cost.csv');
    },
  });

  registry.get(app, {
    path: '/reports/finance',
    operationId: 'getFinanceReport',
    errors: { 404: 'Nothing collected for what was asked; `detail` names the command that collects it' },
    heavy: true,
    response: FinanceResponse,
    summary: 'Monthly cost of both product lines in a timezone (serverless per app and machine type, model APIs per endpoint, unit and key), with totals per currency and a reconciliation',
    description:
      'Serverless: one row per app and machine type (machine-seconds, surge machine-seconds, subtotal, discount, total); model APIs: one row per endpoint, unit and API key (quantity, subtotal, discount, total; machine-seconds empty in CSV); `product` says which; a subtotal row per product and currency, a total row per currency, and the platform summary for the month compared with the sum of the daily buckets (flagged when they differ by more than 0.01). month_complete is false while the month is not over. A month with no usage collected in the timezone is a 404 naming the collect command; a month that has not started is a 400.',
    query: z.strictObject({
      month: monthParam('the invoice month'),
      timezone: z.string().default('UTC'),
      format: formatParam,
    }),
    csv: true,
    handler: async (q, request, reply) => {
      if (!IANAZone.isValidZone(q.timezone)) throw badParameter('timezone', 'expected an IANA time zone');
      const report = await financeReport(rt.store, q.month, q.timezone, rt.now(), { windowHours: rt.config.LATE_BILLING_WINDOW_HOURS });
      const problem = financeProblem(report, { configuredTimezones: rt.config.TIMEZONES, now: rt.now() });
      if (problem?.kind === 'future') throw badParameter('month', problem.message);
      if (problem) throw new ApiError(404, 'no_data', problem.message);
      const warnings = rt.config.TIMEZONES.includes(q.timezone)
        ? []
        : [`${q.timezone} is not in TIMEZONES, so scheduled runs do not keep its usage up to date`];
      return sendTable(reply, request, q.format, financeTable(report), () => ({ ...report, warnings }), `finance-${q.month}-${q.timezone.replace(/\//g, '_')}.csv`);
    },
  });

  registry.get(app, {
    path: '/reports/focus',
    operationId: 'getFocusReport',
    errors: { 404: 'Nothing collected for what was asked; `detail` names the command that collects it' },
    heavy: true,
    response: FocusResponse,
    summary: 'The FOCUS 1.2 cost-and-usage file of a month: serverless and model APIs',
    description:
      'One row per UTC day, product, resource (app or model endpoint), SKU price and currency, with the FOCUS 1.2 columns (BilledCost, EffectiveCost, ListCost, ContractedCost, unit prices, quantities and units, charge and billing periods, service and provider) and Tallyhouse columns prefixed x_. Read from the usage collected in UTC; a month without any is a 404 naming the collect commands. CSV by default.',
    query: z.strictObject({
      month: monthParam('the invoice month'),
      format: formatParam,
    }),
    csv: true,
    handler: async (q, request, reply) => {
      let rows;
      try {
        rows = await focusReport(rt.store, q.month, focusOptions(rt.config, rt.now()));
      } catch (err) {
        if (err instanceof FocusNoDataError) throw new ApiError(404, 'no_data', err.message);
        throw err;
      }
      const table = focusTable(rows);
      // Stryker disable next-line StringLiteral: no Accept header and any fallback text without application/json ask for the same (CSV)
      const accept = String(request.headers.accept ?? '');
      const format = q.format ?? (accept.includes('application/json') ? 'json' : 'csv');
      return sendTable(reply, request, format, table, () => ({ month: q.month, columns: [...FOCUS_COLUMNS], rows }), `focus-${q.month}.csv`);
    },
  });
}

export { FINANCE_COLUMNS };
