import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Registry } from 'prom-client';
import type { Store } from '../store/client.js';
import { pendingMigrations } from '../store/migrate.js';
import { describeStoreError } from '../store/errors.js';
import { sendProblem } from './problem.js';

export interface HealthOptions {
  store: Store;
  registry: Registry;
  /** When set, /metrics answers only `Authorization: Bearer <token>` (it carries per-app cost). */
  metricsToken?: string;
}

/** Conditions an extension adds to /readyz (e.g. the drain's disk pressure), per server: each says why not ready, or undefined. */
const readinessConditions = new WeakMap<object, Set<() => string | undefined>>();

/** Adds a reason /readyz may answer 503 for; returns how to remove it (on the extension's stop). */
export function addReadinessCondition(server: object, condition: () => string | undefined): () => void {
  let set = readinessConditions.get(server);
  if (!set) readinessConditions.set(server, (set = new Set()));
  set.add(condition);
  return () => set.delete(condition);
}

/** A 503 of /readyz: a problem whose `reason` (as before) says why not ready. */
const notReady = (reply: FastifyReply, reason: string) => sendProblem(reply, 503, reason, { code: 'not_ready', extensions: { reason } });

/** /healthz (the process answers), /readyz (the store answers and is migrated), /metrics (Prometheus). */
export async function healthRoutes(app: FastifyInstance, opts: HealthOptions): Promise<void> {
  app.get('/healthz', { logLevel: 'warn' }, async () => ({ status: 'ok' }));

  app.get('/readyz', { logLevel: 'warn' }, async (_req, reply) => {
    const ping = await opts.store.client.ping();
    if (!ping.success) {
      return notReady(reply, `store ${opts.store.location} does not answer: ${describeStoreError(ping.error)}`);
    }
    try {
      const pending = await pendingMigrations(opts.store);
      if (pending.length > 0) {
        return notReady(reply, `migrations not applied: ${pending.join(', ')}`);
      }
    } catch (err) {
      return notReady(reply, `cannot read schema_migrations: ${describeStoreError(err)}`);
    }
    for (const condition of readinessConditions.get(app.server) ?? []) {
      const reason = condition();
      if (reason) return notReady(reply, reason);
    }
    return { status: 'ready' };
  });

  const expected = opts.metricsToken ? createHash('sha256').update(opts.metricsToken).digest() : null;
  app.get('/metrics', { logLevel: 'warn' }, async (req, reply) => {
    if (expected) {
      const m = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '');
      const given = m ? createHash('sha256').update(m[1].trim()).digest() : null;
      if (!given || !timingSafeEqual(given, expected)) {
        return sendProblem(reply, 401, 'GET /metrics needs "Authorization: Bearer <METRICS_TOKEN>"', { code: 'authorization_error' });
      }
    }
    const body = await opts.registry.metrics();
    return reply.type(opts.registry.contentType).send(body);
  });
}
