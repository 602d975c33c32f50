import { createHmac } from 'node:crypto';
import { request } from 'undici';
import { startService, type Service } from '../../../src/service.js';
import { createLogger, type Logger } from '../../../src/log.js';
import { createRegistry } from '../../../src/metrics.js';
import { logDrainExtension, type LogDrainOptions } from '../../../src/ingest/drain/extension.js';
import type { Spool } from '../../../src/ingest/drain/spool/spool.js';
import type { SpoolReplayer } from '../../../src/ingest/drain/replay.js';
import type { Extension } from '../../../src/runtime.js';
import { testConfig, queryRows } from '../../support/store.js';
import { expect } from 'vitest';
import type { Runtime } from '../../../src/runtime.js';
import type { DrainBatch } from '../../../src/sim/index.js';

export const SECRET = 's'.repeat(64);
export const TOKEN = 'drain-token-0123456789';

export interface DrainService {
  service: Service;
  url: string;
  drainUrl: string;
  spool: Spool;
  replayer: SpoolReplayer;
  close(): Promise<void>;
}

/** The service with the log drain (and any other extensions) on this process's store. */
export async function startDrainService(
  env: Record<string, string | undefined> = {},
  opts: LogDrainOptions = {},
  extra: Extension[] = [],
  logger?: Logger,
): Promise<DrainService> {
  const config = testConfig({ PORT: '0', LOG_DRAIN_SECRET: SECRET, LOG_DRAIN_TOKEN: TOKEN, JOBS_ENABLED: 'false', ...env });
  let started: { spool: Spool; replayer: SpoolReplayer } | undefined;
  const service = await startService(config, {
    logger: logger ?? createLogger(config.LOG_LEVEL),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [logDrainExtension({ ...opts, onStarted: (d) => (started = d) }), ...extra],
  });
  return {
    service,
    url: service.url,
    drainUrl: `${service.url}/v1/drains/logs${config.LOG_DRAIN_URL_TOKEN ? `/${config.LOG_DRAIN_URL_TOKEN}` : ''}`,
    spool: started!.spool,
    replayer: started!.replayer,
    close: () => service.close(),
  };
}

export function sign(body: Buffer | string, secret = SECRET): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

export interface Posted {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
}

export async function post(url: string, body: Buffer | string, headers: Record<string, string> = {}): Promise<Posted> {
  const res = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-ndjson', ...headers },
    body,
  });
  const text = await res.body.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.statusCode, headers: res.headers, body: parsed };
}

/** Posts with the HMAC signature of the bytes as sent. */
export function postSigned(url: string, body: Buffer | string, headers: Record<string, string> = {}): Promise<Posted> {
  return post(url, body, { 'x-svc-signature': sign(body), ...headers });
}

export function line(fields: Record<string, unknown> = {}): string {
  return JSON.stringify({ timestamp: '2026-11-21T10:00:00.123Z', level: 'INFO', message: 'hello', svc_app_name: 'acme-app', ...fields });
}

const COLUMNS = ['app', 'app_id', 'request_id', 'job_id', 'endpoint', 'node', 'worker', 'source', 'isolate_source'] as const;

/**
 * The platform notes' svc_* keys and the `logs` columns they fill, written out here rather than taken from the
 * drain's own map (an oracle of its own: a swapped column in the drain's map fails these tests).
 */
const NAMED_KEYS: Record<string, (typeof COLUMNS)[number]> = {
  svc_app_name: 'app',
  svc_app_id: 'app_id',
  svc_request_id: 'request_id',
  svc_job_id: 'job_id',
  svc_endpoint: 'endpoint',
  svc_node_id: 'node',
  svc_worker_id: 'worker',
  svc_source: 'source',
  svc_isolate_source: 'isolate_source',
};

/** The simulator's UTC timestamp ("2026-11-21T10:15:02.123Z") as ClickHouse prints DateTime64(3): by its digits. */
function storedTimestamp(iso: string): string {
  expect(iso).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  return `${iso.slice(0, 10)} ${iso.slice(11, 23)}`;
}

/** A line as the store should hold it, from the simulator's text: one canonical string per line. */
function expectedRow(text: string, line: number): string {
  const obj = JSON.parse(text) as Record<string, unknown>;
  const row: Record<string, unknown> = { timestamp: storedTimestamp(obj.timestamp as string), level: obj.level, message: obj.message };
  const attributes: Record<string, string> = {};
  for (const c of COLUMNS) row[c] = '';
  for (const [k, v] of Object.entries(obj)) {
    if (k === 'timestamp' || k === 'level' || k === 'message') continue;
    const column = NAMED_KEYS[k];
    if (column) row[column] = v;
    else attributes[k] = typeof v === 'string' ? v : JSON.stringify(v);
  }
  return canonical({ ...row, attributes, line });
}

function canonical(r: Record<string, unknown>): string {
  const attributes = Object.entries(r.attributes as Record<string, string>).sort(([a], [b]) => a.localeCompare(b));
  return JSON.stringify([r.timestamp, r.level, ...COLUMNS.map((c) => r[c]), r.message, attributes, Number(r.line)]);
}

/** What the simulator sent in acknowledged batches: valid lines as the store should hold them, malformed ones with their kind. */
export function sentLines(batches: DrainBatch[], opts: { requireAcknowledged?: boolean } = {}) {
  const valid: string[] = [];
  const malformed: Array<[string, string]> = [];
  for (const b of batches) {
    if (opts.requireAcknowledged !== false) expect(b.acknowledged, `batch ${b.index}: ${b.status} ${b.error}`).toBe(true);
    if (!b.acknowledged) continue;
    const bad = new Map(b.malformed.map((m) => [m.line, m.reason]));
    b.body.split('\n').filter(Boolean).forEach((text, i) => {
      const reason = bad.get(i);
      if (reason) malformed.push([text, reason]);
      else valid.push(expectedRow(text, i + 1));
    });
  }
  return { valid: valid.sort(), malformed: malformed.map((m) => JSON.stringify(m)).sort() };
}

export async function storedLines(rt: Pick<Runtime, 'store'>, since: string) {
  const rows = await queryRows<Record<string, unknown>>(
    rt,
    `SELECT toString(timestamp) AS timestamp, level, app, app_id, request_id, job_id, endpoint, node, worker, source,
            isolate_source, message, attributes, line
     FROM logs WHERE received_at >= {since:DateTime64(3, 'UTC')}`,
    { since },
  );
  const rejects = await queryRows<{ raw: string; reason: string }>(
    rt,
    "SELECT raw, reason FROM ingest_rejects WHERE source = 'log_drain' AND rejected_at >= {since:DateTime64(3, 'UTC')}",
    { since },
  );
  return {
    valid: rows.map(canonical).sort(),
    // The reason's first word is the kind of problem, named as the simulator names it.
    malformed: rejects.map((r) => JSON.stringify([r.raw, r.reason.split(':')[0]])).sort(),
    reasons: rejects.map((r) => r.reason),
  };
}

