// Acceptance 5: webhook signatures verify with node:crypto Ed25519 against the served key set; drain
// signatures verify with HMAC-SHA256. Also the delivery rules: retries with backoff, 3xx permanent, at most 31
// retries, repeat deliveries, the drain's 5,000-line batches, malformed lines and disabling after 5 failures.
import { createHash, createHmac, createPublicKey, verify } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { startSim, type Sim } from '../../src/sim/index.js';

interface Received {
  headers: IncomingMessage['headers'];
  raw: Buffer;
}

async function receiver(answer: (r: Received, n: number) => number | Promise<number>): Promise<{ url: string; got: Received[]; server: Server }> {
  const got: Received[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const r = { headers: req.headers, raw: Buffer.concat(chunks) };
    got.push(r);
    const status = await answer(r, got.length);
    res.writeHead(status, status >= 300 && status < 400 ? { location: 'http://127.0.0.1:9/' } : {});
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, got, server };
}

async function jwksKeys(sim: Sim) {
  const res = await fetch(`${sim.url}/.well-known/jwks.json`);
  const body = (await res.json()) as { keys: Array<{ kty: string; crv: string; x: string }> };
  return body.keys.map((k) => createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: k.x }, format: 'jwk' }));
}

/** The receiver side of the interface's "Signature verification" steps 2-5. */
function verifyWebhook(r: Received, keys: ReturnType<typeof createPublicKey>[]): boolean {
  const id = r.headers['x-svc-webhook-request-id'];
  const user = r.headers['x-svc-webhook-user-id'];
  const ts = r.headers['x-svc-webhook-timestamp'];
  const sig = r.headers['x-svc-webhook-signature'];
  if (typeof id !== 'string' || typeof user !== 'string' || typeof ts !== 'string' || typeof sig !== 'string') return false;
  // wall-clock: a receiver checks a signature's timestamp against the machine's clock
  if (Math.abs(Date.now() / 1000 - Number(ts)) > 300) return false;
  const message = Buffer.from([id, user, ts, createHash('sha256').update(r.raw).digest('hex')].join('\n'), 'utf8');
  return keys.some((k) => verify(null, message, k, Buffer.from(sig, 'hex')));
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});
const track = (sim: Sim, ...servers: Server[]) => {
  cleanups.push(async () => {
    await sim.close();
    for (const s of servers) await new Promise((r) => s.close(r));
  });
};

describe('webhooks', () => {
  it('signatures verify against the served Ed25519 key set, also after a key rotation', async () => {
    const rx = await receiver(() => 200);
    const sim = await startSim({ seed: 8, webhookUrl: rx.url, webhookRepeatRate: 0 });
    track(sim, rx.server);
    const keys = await jwksKeys(sim);
    expect(keys).toHaveLength(2);
    const app = sim.world.apps.find((a) => a.ownedByCaller && a.dormancy === 0)!;
    const reqs = sim.truth.requestList({ endpointId: app.endpointId, from: '2026-11-21T00:00:00Z', to: '2026-11-21T12:00:00Z' });
    await sim.webhooks.deliver({ requestId: reqs[0].request_id });
    sim.webhooks.rotate();
    await sim.webhooks.deliver({ requestId: reqs[1].request_id });
    expect(rx.got).toHaveLength(2);
    for (const r of rx.got) expect(verifyWebhook(r, keys)).toBe(true);
    // Each key verifies exactly one of the two deliveries.
    const byKey = keys.map((k) => rx.got.filter((r) => verifyWebhook(r, [k])).length);
    expect(byKey).toEqual([1, 1]);
    // A tampered body fails.
    expect(verifyWebhook({ ...rx.got[0], raw: Buffer.concat([rx.got[0].raw, Buffer.from(' ')]) }, keys)).toBe(false);
    const body = JSON.parse(rx.got[0].raw.toString());
    expect(body.request_id).toBe(reqs[0].request_id);
    expect(body.gateway_request_id).toBe(reqs[0].gateway_request_id);
    expect(['OK', 'ERROR']).toContain(body.status);
    expect(rx.got[0].headers['x-svc-webhook-user-id']).toBe(sim.world.userId);
    expect(rx.got[0].headers['content-type']).toBe('application/json');
  });

  it('retries 5xx and 4xx with increasing backoff, stops at a 2xx; a 3xx is permanent; at most 31 retries', async () => {
    const rx = await receiver((r, n) => {
      const id = r.headers['x-svc-webhook-request-id'];
      if (id === 'retry-me') return n <= 2 ? 500 : n === 3 ? 429 : 200;
      if (id === 'moved') return 301;
      return 404;
    });
    const sim = await startSim({ seed: 8, webhookUrl: rx.url, webhookBackoffBaseMs: 2, webhookMaxBackoffMs: 4, webhookRepeatRate: 0 });
    track(sim, rx.server);
    const ok = await sim.webhooks.deliver({ requestId: 'retry-me', body: { request_id: 'retry-me', gateway_request_id: 'retry-me', status: 'OK', payload: {} } });
    expect(ok.outcome).toBe('delivered');
    expect(ok.attempts.map((a) => a.status)).toEqual([500, 500, 429, 200]);
    const moved = await sim.webhooks.deliver({ requestId: 'moved', body: { request_id: 'moved', status: 'OK', payload: null } });
    expect(moved.outcome).toBe('permanent_failure');
    expect(moved.attempts).toHaveLength(1);
    const never = await sim.webhooks.deliver({ requestId: 'gone', body: '{"request_id":"gone"}' });
    expect(never.outcome).toBe('failed');
    expect(never.attempts).toHaveLength(32); // the first attempt and 31 retries
    expect(sim.truth.webhooksSent().map((d) => d.outcome)).toEqual(['delivered', 'permanent_failure', 'failed']);
  });

  it('retries a network error and a timeout', async () => {
    let n = 0;
    const rx = await receiver(async () => {
      n++;
      if (n === 1) await new Promise((r) => setTimeout(r, 300)); // slower than the delivery timeout
      return 200;
    });
    const sim = await startSim({ seed: 8, webhookUrl: rx.url, webhookBackoffBaseMs: 2, webhookMaxBackoffMs: 4, webhookTimeoutMs: 100, webhookRepeatRate: 0 });
    track(sim, rx.server);
    const d = await sim.webhooks.deliver({ requestId: 'slow', body: { request_id: 'slow' } });
    expect(d.outcome).toBe('delivered');
    expect(d.attempts[0].status).toBeNull();
    expect(d.attempts[0].error).toBeTruthy();
    const dead = await sim.webhooks.deliver({ requestId: 'unreachable', url: 'http://127.0.0.1:9/none', body: { request_id: 'unreachable' } });
    expect(dead.attempts.length).toBe(32);
    expect(dead.attempts.every((a) => a.status === null && a.error)).toBe(true);
  });

  it('delivers the webhook requests that finish as the clock advances, with occasional repeats', async () => {
    const rx = await receiver(() => 200);
    const sim = await startSim({ seed: 12, apps: 20, webhookUrl: rx.url, webhookBackoffBaseMs: 1, webhookRepeatRate: 0.3 });
    track(sim, rx.server);
    const t0 = sim.clock.now().toISOString();
    sim.clock.advance(2 * 3_600_000);
    const t1 = sim.clock.now().toISOString();
    await sim.webhooks.idle();
    const hookApps = sim.truth.apps().filter((a) => a.webhooks && a.owned_by_caller);
    expect(hookApps.length).toBeGreaterThan(0);
    const expected = hookApps.flatMap((a) => sim.truth.requestList({ endpointId: a.endpoint_id, from: t0, to: t1 })).filter((r) => r.ended_at > t0);
    expect(expected.length).toBeGreaterThan(10);
    const sent = sim.truth.webhooksSent();
    const first = sent.filter((d) => !d.repeat);
    expect(new Set(first.map((d) => d.requestId))).toEqual(new Set(expected.map((r) => r.request_id)));
    const repeats = sent.filter((d) => d.repeat);
    expect(repeats.length).toBeGreaterThan(0);
    for (const r of repeats) expect(first.some((d) => d.requestId === r.requestId && d.body === r.body)).toBe(true);
    expect(rx.got.length).toBe(sent.reduce((a, d) => a + d.attempts.length, 0));
    const keys = await jwksKeys(sim);
    for (const r of rx.got) expect(verifyWebhook(r, keys)).toBe(true);
  });
});

describe('log drain', () => {
  it('sends NDJSON batches of at most 5,000 lines signed with HMAC-SHA256, recording malformed lines', async () => {
    const rx = await receiver(() => 200);
    const secret = 'a'.repeat(64);
    const sim = await startSim({ seed: 8, drainUrl: rx.url, drainSecret: secret });
    track(sim, rx.server);
    const result = await sim.drain.push({ lines: 12_000, batchSize: 9_999, malformedRate: 0.01 });
    expect(result.batches.map((b) => b.lines)).toEqual([5000, 5000, 2000]);
    expect(rx.got).toHaveLength(3);
    let malformedSeen = 0;
    rx.got.forEach((r, i) => {
      expect(r.headers['content-type']).toBe('application/x-ndjson');
      expect(r.headers['x-svc-signature']).toBe(createHmac('sha256', secret).update(r.raw).digest('hex'));
      const lines = r.raw.toString().split('\n').filter(Boolean);
      expect(lines).toHaveLength(result.batches[i].lines);
      const bad = new Map(result.batches[i].malformed.map((m) => [m.line, m.reason]));
      lines.forEach((text, j) => {
        const reason = bad.get(j);
        let obj: any;
        try {
          obj = JSON.parse(text);
        } catch {
          expect(reason).toBe('not_json');
          malformedSeen++;
          return;
        }
        if (!reason) {
          expect(typeof obj.timestamp).toBe('string');
          expect(Number.isFinite(Date.parse(obj.timestamp))).toBe(true);
          expect(typeof obj.message).toBe('string');
          expect(['DEBUG', 'INFO', 'WARNING', 'ERROR']).toContain(obj.level);
          expect(obj.svc_app_name).toBeTruthy();
          return;
        }
        malformedSeen++;
        if (reason === 'missing_level') expect(obj).not.toHaveProperty('level');
        if (reason === 'missing_message') expect(obj).not.toHaveProperty('message');
        if (reason === 'missing_timestamp') expect(obj).not.toHaveProperty('timestamp');
        if (reason === 'bad_timestamp') expect(Number.isNaN(Date.parse(obj.timestamp))).toBe(true);
        if (reason === 'not_object') expect(Array.isArray(obj)).toBe(true);
      });
    });
    expect(malformedSeen).toBe(result.malformed.length);
    expect(malformedSeen).toBeGreaterThan(50);
    expect(result.linesAcknowledged).toBe(12_000);
    expect(sim.truth.drainSent().linesAcknowledged).toBe(12_000);
  });

  it('signs the gzip bytes when gzip is on', async () => {
    const rx = await receiver(() => 200);
    const sim = await startSim({ seed: 8, drainUrl: rx.url });
    track(sim, rx.server);
    await sim.drain.push({ lines: 300, gzip: true });
    const r = rx.got[0];
    expect(r.headers['content-encoding']).toBe('gzip');
    expect(r.headers['x-svc-signature']).toBe(createHmac('sha256', sim.drain.secret).update(r.raw).digest('hex'));
    expect(gunzipSync(r.raw).toString().split('\n').filter(Boolean)).toHaveLength(300);
    expect(sim.drain.secret.length).toBeGreaterThanOrEqual(64);
  });

  it('disables itself after 5 consecutive failed deliveries (errors or timeouts) and sends nothing more', async () => {
    let n = 0;
    const rx = await receiver(async () => {
      n++;
      if (n === 2) await new Promise((r) => setTimeout(r, 300));
      return 503;
    });
    const sim = await startSim({ seed: 8, drainUrl: rx.url, drainTimeoutMs: 100 });
    track(sim, rx.server);
    const result = await sim.drain.push({ lines: 70, batchSize: 10 });
    expect(result.batches).toHaveLength(7);
    expect(result.batches.map((b) => b.skipped)).toEqual([false, false, false, false, false, true, true]);
    expect(result.batches[1].status).toBeNull();
    expect(result.batches[1].error).toBeTruthy();
    expect(result.disabled).toBe(true);
    expect(result.linesAcknowledged).toBe(0);
    expect(sim.drain.disabled).toBe(true);
    const again = await sim.drain.push({ lines: 5 });
    expect(again.batches[0].skipped).toBe(true);
    sim.drain.enable();
    expect(sim.drain.disabled).toBe(false);
  });

  it('pushes the new log lines automatically when the clock advances', async () => {
    const rx = await receiver(() => 204);
    const sim = await startSim({ seed: 8, drainUrl: rx.url, apps: 5 });
    track(sim, rx.server);
    const t0 = sim.clock.now().getTime();
    sim.clock.advance(30 * 60_000);
    await sim.drain.idle();
    const lines = rx.got.flatMap((r) => r.raw.toString().split('\n').filter(Boolean).map((l) => JSON.parse(l)));
    expect(lines.length).toBeGreaterThan(20);
    for (const l of lines) {
      const t = Date.parse(l.timestamp);
      expect(t).toBeGreaterThanOrEqual(t0);
      expect(t).toBeLessThan(t0 + 30 * 60_000);
    }
    expect(sim.truth.drainSent().linesAcknowledged).toBe(lines.length);
  });
});
