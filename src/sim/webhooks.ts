// Webhook deliveries as the platform makes them: the four X-Svc-Webhook-* headers, an Ed25519 signature over
// "request_id\nuser_id\ntimestamp\nsha256hex(body)", retries with increasing backoff on timeout, network
// error, 4xx and 5xx (at most 31), a 3xx as a permanent failure (redirects are not followed), and occasional
// repeat deliveries of an already delivered request.
import { createHash, createPrivateKey, createPublicKey, sign, type KeyObject } from 'node:crypto';
import { request } from 'undici';
import type { SimModel } from './model.js';
import type { Req } from './requests.js';
import { HOUR_MS } from './time.js';
import { hashString, unit, mix } from './prng.js';

export interface WebhookAttempt {
  /** Wall-clock time of the attempt (ISO). */
  at: string;
  /** X-Svc-Webhook-Timestamp sent (Unix seconds). */
  timestamp: number;
  signature: string;
  keyId: string;
  status: number | null;
  error: string | null;
}

export interface WebhookDelivery {
  requestId: string;
  gatewayRequestId: string;
  url: string;
  /** The raw body sent (what the signature covers). */
  body: string;
  status: 'OK' | 'ERROR';
  repeat: boolean;
  attempts: WebhookAttempt[];
  outcome: 'pending' | 'delivered' | 'failed' | 'permanent_failure' | 'cancelled';
}

export interface WebhookOptions {
  url?: string;
  /** First retry waits this long, each further retry twice as long (capped by maxBackoffMs). */
  backoffBaseMs?: number;
  maxBackoffMs?: number;
  firstTimeoutMs?: number;
  retryTimeoutMs?: number;
  maxRetries?: number;
  /** Share of delivered requests that are delivered a second time. */
  repeatRate?: number;
  /** `real` (default): the timestamp header is wall-clock time, as receivers check it against their clock. */
  timestampClock?: 'real' | 'virtual';
}

// PKCS#8 DER prefix of an Ed25519 private key; the 32-byte seed follows.
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

interface SigningKey {
  kid: string;
  privateKey: KeyObject;
  x: string;
}

function deriveKey(seed: number, n: number): SigningKey {
  const raw = createHash('sha256').update(`tallyhouse-sim-webhook-key:${seed}:${n}`).digest();
  const privateKey = createPrivateKey({ key: Buffer.concat([ED25519_PKCS8_PREFIX, raw]), format: 'der', type: 'pkcs8' });
  const jwk = createPublicKey(privateKey).export({ format: 'jwk' }) as { x: string };
  return { kid: `sim-${seed}-${n}`, privateKey, x: jwk.x };
}

export class Webhooks {
  private readonly keys: SigningKey[];
  private signingKey = 0;
  private readonly deliveries: WebhookDelivery[] = [];
  private readonly inflight = new Set<Promise<unknown>>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private closed = false;
  private readonly opts: Required<Omit<WebhookOptions, 'url'>> & { url?: string };

  constructor(private readonly model: SimModel, opts: WebhookOptions = {}) {
    this.keys = [deriveKey(model.world.seed, 0), deriveKey(model.world.seed, 1)];
    this.opts = {
      url: opts.url,
      backoffBaseMs: opts.backoffBaseMs ?? 1000,
      maxBackoffMs: opts.maxBackoffMs ?? 600_000,
      firstTimeoutMs: opts.firstTimeoutMs ?? 15_000,
      retryTimeoutMs: opts.retryTimeoutMs ?? 120_000,
      maxRetries: opts.maxRetries ?? 31,
      repeatRate: opts.repeatRate ?? 0.05,
      timestampClock: opts.timestampClock ?? 'real',
    };
  }

  get url(): string | undefined {
    return this.opts.url;
  }

  /** Where clock-driven deliveries go from now on. */
  setUrl(url: string | undefined): void {
    this.opts.url = url;
  }

  /** The served key set: both keys, so a receiver keeps verifying across a rotation. */
  jwks(): { keys: Array<{ kty: 'OKP'; crv: 'Ed25519'; x: string; kid: string; use: 'sig'; alg: 'EdDSA' }> } {
    return { keys: this.keys.map((k) => ({ kty: 'OKP', crv: 'Ed25519', x: k.x, kid: k.kid, use: 'sig', alg: 'EdDSA' })) };
  }

  /** Sign further deliveries with the other key (exercises key rotation on the receiver). */
  rotate(): void {
    this.signingKey = (this.signingKey + 1) % this.keys.length;
  }

  sent(): WebhookDelivery[] {
    return this.deliveries.map((d) => ({ ...d, attempts: d.attempts.map((a) => ({ ...a })) }));
  }

  /** Resolves when every delivery started so far (including retries and repeats) has settled. */
  async idle(): Promise<void> {
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }

  /** The delivery body of a finished request, as the queue would send it. */
  bodyFor(r: Req): { status: 'OK' | 'ERROR'; body: string } {
    const h = hashString(r.id, this.model.world.seed);
    const ok = r.statusClass === 'success';
    const obj: Record<string, unknown> = { request_id: r.id, gateway_request_id: r.gatewayId, status: ok ? 'OK' : 'ERROR' };
    if (unit(mix(h, 7)) < 0.02) {
      obj.payload = null;
      obj.payload_error = 'Response payload is not JSON serializable';
    } else if (ok) {
      obj.payload = {
        images: [{ url: `https://cdn.svc.example/files/${r.id}.png`, width: 1024, height: 1024, content_type: 'image/png' }],
        seed: h % 1_000_000,
        timings: { inference: r.durationMs / 1000 },
      };
    } else {
      obj.payload = { detail: [{ loc: ['body'], msg: `Request failed${r.errorType ? `: ${r.errorType}` : ''}`, type: r.errorType ?? 'internal_server_error' }] };
    }
    if (!ok) obj.error = `Request failed with status code ${r.statusCode}`;
    return { status: ok ? 'OK' : 'ERROR', body: JSON.stringify(obj) };
  }

  /**
   * Delivers one webhook (with retries) and resolves with its record. Give `requestId` to send the body of a
   * simulated request, or `body` (object or raw string) with `requestId` for a custom one.
   */
  deliver(opts: { requestId: string; url?: string; body?: unknown; gatewayRequestId?: string; repeat?: boolean }): Promise<WebhookDelivery> {
    const url = opts.url ?? this.opts.url;
    if (!url) return Promise.reject(new Error('webhooks: no url (set webhookUrl or pass url)'));
    let body: string;
    let status: 'OK' | 'ERROR' = 'OK';
    let gatewayRequestId = opts.gatewayRequestId ?? opts.requestId;
    if (opts.body !== undefined) {
      body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
      try {
        if ((JSON.parse(body) as { status?: unknown }).status === 'ERROR') status = 'ERROR';
      } catch {
        // a custom non-JSON body: keep OK
      }
    } else {
      const r = this.model.requests.byId(opts.requestId);
      if (!r) return Promise.reject(new Error(`webhooks: no simulated request ${opts.requestId}`));
      ({ status, body } = this.bodyFor(r));
      gatewayRequestId = r.gatewayId;
    }
    const d: WebhookDelivery = { requestId: opts.requestId, gatewayRequestId, url, body, status, repeat: opts.repeat ?? false, attempts: [], outcome: 'pending' };
    this.deliveries.push(d);
    const p = this.run(d).then(() => d);
    this.track(p);
    return p;
  }

  /** Automatic deliveries: requests of webhook-enabled apps that finished in (fromMs, toMs]. */
  onClock(fromMs: number, toMs: number, maxDeliveries = 5000): void {
    if (!this.opts.url || toMs <= fromMs || this.closed) return;
    let n = 0;
    for (const app of this.model.world.apps) {
      if (!app.webhooks || !app.ownedByCaller) continue;
      for (const ep of app.endpoints) {
        for (let h = Math.floor(fromMs / HOUR_MS); h * HOUR_MS <= toMs; h++) {
          for (const r of this.model.requests.hour(ep, h)) {
            if (r.endedMs <= fromMs || r.endedMs > toMs) continue;
            if (n++ >= maxDeliveries) return;
            this.deliver({ requestId: r.id }).catch(() => undefined);
          }
        }
      }
    }
  }

  close(): void {
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const d of this.deliveries) if (d.outcome === 'pending') d.outcome = 'cancelled';
  }

  private track(p: Promise<unknown>): void {
    this.inflight.add(p);
    p.finally(() => this.inflight.delete(p)).catch(() => undefined);
  }

  private sleep(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      if (this.closed) return resolve(false);
      const t = setTimeout(() => {
        this.timers.delete(t);
        resolve(!this.closed);
      }, ms);
      this.timers.add(t);
    });
  }

  private async run(d: WebhookDelivery): Promise<void> {
    const userId = this.model.world.userId;
    const bodyHash = createHash('sha256').update(d.body).digest('hex');
    for (let attempt = 0; attempt <= this.opts.maxRetries; attempt++) {
      if (this.closed) {
        d.outcome = 'cancelled';
        return;
      }
      const key = this.keys[this.signingKey];
      const timestamp = Math.floor((this.opts.timestampClock === 'real' ? Date.now() : this.model.clock.nowMs()) / 1000);
      const message = `${d.requestId}\n${userId}\n${timestamp}\n${bodyHash}`;
      const signature = sign(null, Buffer.from(message, 'utf8'), key.privateKey).toString('hex');
      const rec: WebhookAttempt = { at: new Date().toISOString(), timestamp, signature, keyId: key.kid, status: null, error: null };
      d.attempts.push(rec);
      const timeoutMs = attempt === 0 ? this.opts.firstTimeoutMs : this.opts.retryTimeoutMs;
      try {
        const res = await request(d.url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-svc-webhook-request-id': d.requestId,
            'x-svc-webhook-user-id': userId,
            'x-svc-webhook-timestamp': String(timestamp),
            'x-svc-webhook-signature': signature,
          },
          body: d.body,
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
          signal: AbortSignal.timeout(timeoutMs),
        });
        rec.status = res.statusCode;
        await res.body.dump();
        if (res.statusCode >= 200 && res.statusCode < 300) {
          d.outcome = 'delivered';
          if (!d.repeat && unit(hashString(d.requestId, this.model.world.seed ^ 0x7e9)) < this.opts.repeatRate) {
            this.track((async () => {
              if (await this.sleep(this.opts.backoffBaseMs)) await this.deliver({ requestId: d.requestId, url: d.url, body: d.body, gatewayRequestId: d.gatewayRequestId, repeat: true });
            })());
          }
          return;
        }
        if (res.statusCode >= 300 && res.statusCode < 400) {
          d.outcome = 'permanent_failure';
          return;
        }
      } catch (err) {
        rec.error = err instanceof Error ? err.name + ': ' + err.message : String(err);
      }
      if (attempt === this.opts.maxRetries) break;
      const delay = Math.min(this.opts.maxBackoffMs, this.opts.backoffBaseMs * 2 ** attempt);
      if (!(await this.sleep(delay))) {
        d.outcome = 'cancelled';
        return;
      }
    }
    d.outcome = 'failed';
  }
}
