/**
 * What the MCP server runs on inside a process that holds the store: the query API's routes asked in process
 * (fastify inject, through the same hooks as a client: token, read-only store, limits), two named queries of its
 * own (sessions mentioning a request, currencies) on the read-only store, and the pipeline's health.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { JOB_NAMES } from '../config.js';
import type { Runtime } from '../runtime.js';
import { readOnlyStore } from '../store/client.js';
import { DateTime } from 'luxon';
import { requestDetails } from '../api/session-routes.js';
import { sessionsMentioningRequest } from '../store/tables/faro-items.js';
import { lastSuccessByJob, recentRuns } from '../store/tables/job-runs.js';
import { collectedCurrencies } from '../store/tables/usage-buckets.js';
import type { ApiGet, McpOptions, PipelineHealth, QueryValue } from './server.js';

const API_PREFIX = '/api/v1';

/** The query API of `app` asked in process, as an allowed client on loopback (the Host its listener answers). */
export function injectApi(app: FastifyInstance, rt: Runtime): ApiGet {
  const token = rt.config.API_TOKENS?.[0];
  return async (path, query = {}) => {
    const address = app.server.listening ? app.server.address() : null;
    const port = typeof address === 'object' && address ? address.port : 80;
    const clean: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(query as Record<string, QueryValue>)) {
      if (v === undefined || (Array.isArray(v) && v.length === 0)) continue;
      clean[k] = Array.isArray(v) ? v : String(v);
    }
    const res = await app.inject({
      method: 'GET',
      url: `${API_PREFIX}${path}`,
      query: clean,
      remoteAddress: '127.0.0.1',
      headers: { host: `127.0.0.1:${port}`, accept: 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    });
    let body: unknown;
    try {
      body = res.json();
    } catch {
      body = { error: { message: res.body.slice(0, 200) } };
    }
    return { status: res.statusCode, body };
  };
}

/** The dashboards shipped next to the code: one folder up from src/ when run from the sources, two from dist/src/. */
function dashboards(): McpOptions['dashboards'] {
  for (const dir of ['../../dashboards/', '../../../dashboards/']) {
    try {
      const url = new URL(dir, import.meta.url);
      return readdirSync(url)
        .filter((f) => f.endsWith('.json'))
        .sort()
        .map((file) => {
          const d = JSON.parse(readFileSync(new URL(file, url), 'utf8')) as { uid?: string; title?: string };
          return { uid: d.uid ?? '', title: d.title ?? file, file: `dashboards/${file}` };
        });
    } catch {
      // not there: the other layout
    }
  }
  return [];
}

const gauge = async (rt: Runtime, name: string): Promise<number | null> => {
  const metric = rt.registry.getSingleMetric(name);
  if (!metric) return null;
  const values = (await metric.get()).values;
  return values.length ? values.reduce((s, v) => s + v.value, 0) : null;
};

export function mcpOptions(app: FastifyInstance, rt: Runtime, version: string): McpOptions {
  const store = readOnlyStore(rt.store, {
    maxExecutionSeconds: rt.config.API_QUERY_TIMEOUT_SECONDS,
    maxMemoryBytes: rt.config.API_QUERY_MAX_MEMORY_BYTES,
    maxResultRows: rt.config.API_QUERY_MAX_RESULT_ROWS,
  });
  const list = dashboards();
  return {
    api: injectApi(app, rt),
    maxRows: rt.config.MCP_MAX_ROWS,
    timezones: rt.config.TIMEZONES,
    dashboards: list,
    version,
    requestDetail: async (requestId, window) => {
      const [detail] = await requestDetails({ ...rt, store }, [requestId], {
        from: DateTime.fromISO(window.from, { zone: 'utc' }).minus({ days: 1 }),
        to: DateTime.fromISO(window.to, { zone: 'utc' }).plus({ days: 1 }),
      });
      return detail;
    },
    sessionsMentioning: async (requestId) => (await sessionsMentioningRequest(store, { request_id: requestId, limit: 10 })).map((r) => r.session_id),
    currencies: async () => [...new Set([...(await collectedCurrencies(store, {})).map((r) => r.currency), rt.config.BUDGET_CURRENCY])].sort(),
    pipelineHealth: async (): Promise<PipelineHealth> => {
      const now = Date.now();
      const successes = new Map((await lastSuccessByJob(store, {})).map((r) => [r.job, r.finished_ms]));
      const jobs = await Promise.all(
        JOB_NAMES.map(async (job) => {
          const [last] = await recentRuns(store, { job, limit: 1 });
          const ok = successes.get(job);
          return {
            job,
            last_run: last ?? null,
            last_success_at: ok ? new Date(ok).toISOString() : null,
            lag_seconds: ok ? Math.round((now - ok) / 1000) : null,
          };
        }),
      );
      const drainLines = await gauge(rt, 'tallyhouse_drain_spool_lines');
      return {
        jobs,
        drain: {
          state: drainLines === null ? 'not running in this process' : drainLines > 0 ? 'draining spool' : 'idle',
          spool_lines: drainLines,
          spool_bytes: await gauge(rt, 'tallyhouse_drain_spool_bytes'),
          faro_spool_bytes: await gauge(rt, 'tallyhouse_faro_spool_bytes'),
        },
      };
    },
  };
}
