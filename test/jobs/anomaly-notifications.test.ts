import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/runtime.js';
import type { PlatformClient } from '../../src/platform/index.js';
import { Scheduler } from '../../src/jobs/scheduler.js';
import { parseJobArgs } from '../../src/jobs/options.js';
import { anomaliesJob } from '../../jobs/anomalies.js';
import { anomalies, type AnomalyRow } from '../../src/store/tables/anomalies.js';
import { closeRuntime, openTestRuntime } from '../support/store.js';

// Issue 32, acceptance 4: a fake receiver on 127.0.0.1 gets each finding once, signed, through receiver faults
// (5xx, a hang) and restarts of Tallyhouse (the runtime closed and opened again on the same data directory).
const SECRET = 'a-notification-secret-of-32-chars!!';
const now = new Date('2026-11-10T06:00:00Z');

type Reply = 'ok' | 'fail' | 'hang';
interface Received {
  findingId: string;
  signatureValid: boolean;
  text: unknown;
  reply: Reply;
}

let server: Server;
let url: string;
const replies: Reply[] = [];
const received: Received[] = [];
const hung: ServerResponse[] = [];

function receive(req: IncomingMessage, res: ServerResponse) {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    const expected = `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`;
    const parsed = JSON.parse(body) as { finding_id: string; text: unknown };
    const reply = replies.shift() ?? 'ok';
    received.push({ findingId: parsed.finding_id, signatureValid: req.headers['x-tallyhouse-signature'] === expected && req.headers['x-tallyhouse-finding-id'] === parsed.finding_id, text: parsed.text, reply });
    if (reply === 'hang') hung.push(res);
    else if (reply === 'fail') res.writeHead(503).end('busy');
    else res.writeHead(200).end('ok');
  });
}

function finding(id: string, hour: number): AnomalyRow {
  return {
    series_kind: 'app', series_id: `acme/app-${id}`, measure: 'cost', grain: 'day', unit: 'USD', bucket: `2026-11-09 0${hour}:00:00.000`, finding_id: `finding-${id}`,
    expected: 100, expected_low: 70, expected_high: 130, actual: 150, score: 8.3, direction: 'up', summary: `cost of app acme/app-${id} on 2026-11-09: 150 USD, expected 100 (70-130), up, score 8.3`,
    explanation: 'price effect +50 USD on acme/app', version: 1, is_deleted: 0, evaluated_at: '2026-11-10 06:00:00.000',
  };
}

const env = () => ({ NOTIFY_WEBHOOK_URL: url, NOTIFY_WEBHOOK_SECRET: SECRET, NOTIFY_TIMEOUT_MS: '1500', NOTIFY_MAX_ATTEMPTS: '3', NOTIFY_BACKOFF_MS: '10' });

async function runOnce(rt: Runtime) {
  const scheduler = new Scheduler({ runtime: rt, platform: {} as PlatformClient, jobs: [anomaliesJob], now: () => now });
  const result = await scheduler.run('anomalies', 'manual', parseJobArgs(anomaliesJob, {}));
  expect(result.status, JSON.stringify(result)).toBe('ok');
}

beforeAll(async () => {
  server = createServer(receive);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('no address');
  url = `http://127.0.0.1:${address.port}/hooks/anomalies?token=kept-out-of-the-store`;
});

afterAll(async () => {
  for (const res of hung) res.destroy();
  server.closeAllConnections();
  server.close();
});

describe('anomaly notifications', () => {
  it('each finding is delivered once, signed, through a 503, a hang and two restarts', async () => {
    let rt = await openTestRuntime(env());
    const written = rt.writer.insert(anomalies, [finding('a', 1), finding('b', 2), finding('c', 3)]);
    await rt.writer.flush();
    await written;
    // a: 503, hang, ok (delivered on its third attempt); b: 503, hang, 503 (three attempts: the receiver is taken
    // as down, b and c wait for the next run)
    replies.push('fail', 'hang', 'ok', 'fail', 'hang', 'fail');
    await runOnce(rt);
    expect(received.map((r) => [r.findingId, r.reply])).toEqual([
      ['finding-a', 'fail'], ['finding-a', 'hang'], ['finding-a', 'ok'],
      ['finding-b', 'fail'], ['finding-b', 'hang'], ['finding-b', 'fail'],
    ]);
    await closeRuntime(rt);

    // Restart: b and c are still owed, a is not.
    rt = await openTestRuntime(env());
    await runOnce(rt);
    await closeRuntime(rt);
    // Restart again: nothing is owed.
    rt = await openTestRuntime(env());
    await runOnce(rt);
    const stored = await rt.store.client.query({ query: 'SELECT finding_id, target, status FROM anomaly_notifications FINAL ORDER BY finding_id', format: 'JSONEachRow' });
    expect(await stored.json()).toEqual([
      { finding_id: 'finding-a', target: `${url.split('?')[0]}`, status: 200 },
      { finding_id: 'finding-b', target: `${url.split('?')[0]}`, status: 200 },
      { finding_id: 'finding-c', target: `${url.split('?')[0]}`, status: 200 },
    ]);
    await closeRuntime(rt);

    expect(received).toHaveLength(8);
    expect(received.every((r) => r.signatureValid)).toBe(true);
    const acknowledged = received.filter((r) => r.reply === 'ok').map((r) => r.findingId);
    expect(acknowledged).toEqual(['finding-a', 'finding-b', 'finding-c']);
    expect(received[2].text).toBe('Tallyhouse anomaly: cost of app acme/app-a on 2026-11-09: 150 USD, expected 100 (70-130), up, score 8.3\nprice effect +50 USD on acme/app');
  }, 120_000);
});
