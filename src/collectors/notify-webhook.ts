import { createHmac } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import type { Runtime } from '../runtime.js';
import type { Logger } from '../log.js';
import { anomalyNotifications, undeliveredFindings, type StoredFinding } from '../store/tables/anomalies.js';
import { toDateTime64 } from '../values.js';
import { redactUrl } from '../redact.js';
import { retryDelayMs, type RetryPolicy } from '../retry.js';

/** NOTIFY_BACKOFF_MS doubled per retry, at most 30 s, no jitter: one delivery at a time, a receiver's logs read better. */
const notifyRetry = (backoffMs: number): RetryPolicy => ({ baseMs: backoffMs, maxMs: 30_000, growth: 'exponential', jitter: 'none' });

/** The header carrying `sha256=<hex HMAC-SHA256 of the raw body, keyed with NOTIFY_WEBHOOK_SECRET>`. */
export const SIGNATURE_HEADER = 'x-tallyhouse-signature';
/** The finding id, also in the body: a receiver drops a copy it has seen (see `notifyFindings`). */
export const FINDING_ID_HEADER = 'x-tallyhouse-finding-id';

export interface NotifySettings {
  url: string;
  secret: string;
  timeoutMs: number;
  maxAttempts: number;
  /** First retry delay; doubled on each further retry, at most 30 s. */
  backoffMs: number;
  maxAgeHours: number;
}

export function signBody(body: string, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/**
 * The posted body: Slack-compatible (incoming webhooks read `text`; other fields are ignored there) with the finding
 * as structured fields for any other receiver.
 */
export function notificationBody(f: StoredFinding): string {
  const text = `Tallyhouse anomaly: ${f.summary}${f.explanation ? `\n${f.explanation}` : ''}`;
  return JSON.stringify({
    text,
    finding_id: f.finding_id,
    series: { kind: f.series_kind, id: f.series_id, measure: f.measure, grain: f.grain, unit: f.unit },
    bucket: `${f.bucket_utc.replace(' ', 'T')}Z`,
    expected: f.expected,
    expected_low: f.expected_low,
    expected_high: f.expected_high,
    actual: f.actual,
    score: f.score,
    direction: f.direction,
    explanation: f.explanation,
  });
}

/** Where findings are recorded as sent: the URL without credentials, query or fragment (a key in it stays out of the store). */
export function notifyTarget(url: string): string {
  const u = new URL(url);
  return `${u.protocol}//${u.host}${u.pathname}`;
}

/**
 * Posts each current finding of the last `maxAgeHours` not yet recorded as delivered to the target, one at a time,
 * oldest first: signed, retried with backoff (1 s, 2 s, 4 s, ... up to `maxAttempts`) on a network error, a
 * timeout (a receiver that hangs) or a non-2xx; recorded in `anomaly_notifications` only after a 2xx, and that
 * record is committed before the next finding is posted. When a finding fails every attempt, it and the ones after
 * it are left for the next run. At least once: a crash between the receiver's 2xx and the record re-posts that one finding after a restart,
 * with the same `finding_id` in the body and the header, by which the receiver drops the copy.
 */
export async function notifyFindings(
  rt: Pick<Runtime, 'store' | 'writer'>,
  settings: NotifySettings,
  opts: { nowMs: number; log: Logger; signal?: AbortSignal },
): Promise<{ sent: number; failed: number }> {
  const target = notifyTarget(settings.url);
  const pending = await undeliveredFindings(rt.store, {
    from: toDateTime64(new Date(opts.nowMs - settings.maxAgeHours * 3_600_000)),
    to: toDateTime64(new Date(opts.nowMs + 3_600_000)),
    target,
    limit: 1000,
  });
  let sent = 0;
  let failed = 0;
  for (const f of pending) {
    if (opts.signal?.aborted) break;
    const body = notificationBody(f);
    const headers = { 'content-type': 'application/json', [SIGNATURE_HEADER]: signBody(body, settings.secret), [FINDING_ID_HEADER]: f.finding_id };
    let delivered: { status: number; attempts: number } | undefined;
    for (let attempt = 1; attempt <= settings.maxAttempts && !delivered && !opts.signal?.aborted; attempt++) {
      if (attempt > 1) await sleep(retryDelayMs(notifyRetry(settings.backoffMs), attempt - 1), undefined, { signal: opts.signal }).catch(() => undefined);
      try {
        const res = await request(settings.url, {
          method: 'POST',
          body,
          headers,
          headersTimeout: settings.timeoutMs,
          bodyTimeout: settings.timeoutMs,
          signal: AbortSignal.any([AbortSignal.timeout(settings.timeoutMs), ...(opts.signal ? [opts.signal] : [])]),
        });
        await res.body.dump();
        if (res.statusCode >= 200 && res.statusCode < 300) delivered = { status: res.statusCode, attempts: attempt };
        else opts.log.warn({ status: res.statusCode, attempt, finding: f.finding_id }, 'the anomaly webhook refused a notification; retrying');
      } catch (err) {
        opts.log.warn({ err: { name: (err as Error).name, code: (err as { code?: string }).code }, attempt, finding: f.finding_id, target: redactUrl(settings.url) }, 'could not post an anomaly notification; retrying');
      }
    }
    if (!delivered) {
      // The receiver is down or refusing: the rest wait for the next run, so one run's posting is bounded by one
      // finding's attempts, not by every finding's (a job run never overlaps the next).
      failed = pending.length - sent;
      break;
    }
    const recorded = rt.writer.insert(anomalyNotifications, [{ finding_id: f.finding_id, target, status: delivered.status, attempts: delivered.attempts, sent_at: toDateTime64(new Date()) }]);
    await rt.writer.flush(anomalyNotifications);
    const result = await recorded;
    if (result.written !== 1) throw new Error(`the store refused the record of anomaly notification ${f.finding_id}; it will be posted again`);
    sent++;
  }
  if (failed > 0) opts.log.warn({ failed, target: redactUrl(settings.url) }, `${failed} anomaly notification(s) not delivered; the next run tries again`);
  return { sent, failed };
}
