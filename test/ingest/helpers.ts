import { createHmac } from 'node:crypto';
import { request } from 'undici';
import { startService, type Service } from '../../src/service.js';
import { createLogger, type Logger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { logDrainExtension, type LogDrainOptions } from '../../src/ingest/drain.js';
import type { Spool } from '../../src/ingest/spool.js';
import type { SpoolReplayer } from '../../src/ingest/replayer.js';
import type { Extension } from '../../src/extensions.js';
import { testConfig } from '../support/store.js';

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
    drainUrl: `${service.url}/v1/drains/logs`,
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
