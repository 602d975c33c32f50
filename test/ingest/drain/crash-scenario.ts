// The crash test's scenario (crash.test.ts and crash-seed-14.test.ts each run it: two sequences of kills in
// two processes, each with its own store endpoint, so the suite's workers run them side by side).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startClickHouseHttp, type ClickHouseHttp } from '../../support/clickhouse-http.js';
import { processDataDir, tempDataDir } from '../../support/store.js';
import { line, sign, SECRET } from './helpers.js';
import { mulberry32 } from '../../../src/sim/prng.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

type KillPoint = 'spill' | 'append' | 'group-commit' | 'after-commit' | 'replay-insert' | 'cleanup';
type StoreMode = 'up' | 'slow' | 'down';
const ALL_POINTS: KillPoint[] = ['spill', 'append', 'group-commit', 'after-commit', 'replay-insert', 'cleanup'];
// With the store down no insert succeeds: the replay points are never passed.
const POINTS: Record<StoreMode, KillPoint[]> = { up: ALL_POINTS, slow: ALL_POINTS, down: ['spill', 'append', 'group-commit', 'after-commit'] };
/** Rounds 0-11 of every 20 with the store up, 12-14 slow, 15-19 down (five restarts in a row without replay). */
const modeOf = (round: number): StoreMode => (round % 20 < 12 ? 'up' : round % 20 < 15 ? 'slow' : 'down');

export interface CrashScenario {
  /** Kill points to reach (the child killed at its point; kills by the 3 s timer do not count). */
  kills: number;
  /** The seed of the kill points and counts, so a failing run can be repeated. */
  seed: number;
}

export function crashScenario({ kills: KILLS, seed: SEED }: CrashScenario): void {
  // Inside node_modules so the bundle's bare imports (fastify, ...) resolve from the repository's node_modules;
  // one bundle per seed, as the files that share this scenario run at once.
  const BUNDLE = `${ROOT}node_modules/.cache/tallyhouse-test/drain-child-${SEED}.mjs`;

  let ch: ClickHouseHttp;
  const children = new Set<ChildProcess>();

  beforeAll(async () => {
    mkdirSync(`${ROOT}node_modules/.cache/tallyhouse-test`, { recursive: true });
    await build({
      entryPoints: [fileURLToPath(new URL('./fixtures/drain-child.ts', import.meta.url))],
      outfile: BUNDLE,
      bundle: true,
      platform: 'node',
      format: 'esm',
      packages: 'external',
      // The one import.meta.url use on the child's path resolves ../../sql/ (migrations) from src/store/.
      define: { 'import.meta.url': JSON.stringify(pathToFileURL(`${ROOT}src/store/migrate.ts`).href) },
      logLevel: 'warning',
    });
    ch = await startClickHouseHttp({ dataDir: processDataDir() });
  });
  afterAll(async () => {
    for (const c of children) c.kill('SIGKILL');
    await ch?.close();
  });

  interface Child {
    child: ChildProcess;
    url: string;
    exited: Promise<NodeJS.Signals | null>;
    output: () => string;
  }

  async function startChild(dataDir: string, killAt: string): Promise<Child> {
    const child = spawn(process.execPath, [BUNDLE], {
      cwd: ROOT,
      env: {
        ...process.env,
        NODE_ENV: 'test',
        LOG_LEVEL: 'info',
        HOST: '127.0.0.1',
        PORT: '0',
        DATA_DIR: dataDir,
        CLICKHOUSE_URL: ch.url,
        LOG_DRAIN_SECRET: SECRET,
        SVC_API_KEY: 'not-used-by-the-drain-0123',
        WRITER_FLUSH_INTERVAL_MS: '20',
        TALLYHOUSE_TEST_KILL_AT: killAt,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    let out = '';
    const keep = (c: Buffer) => (out = (out + c.toString()).slice(-20_000));
    child.stderr!.on('data', keep);
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => {
      children.delete(child);
      resolve(signal);
    }));
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout!.on('data', (c: Buffer) => {
        keep(c);
        const m = /"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(out);
        if (m) resolve(m[1]);
      });
      void exited.then((signal) => reject(new Error(`the drain child ended (${signal}) before listening:\n${out}`)));
    });
    return { child, url, exited, output: () => out };
  }

  async function metric(url: string, name: string): Promise<number> {
    const res = await request(`${url}/metrics`);
    const text = await res.body.text();
    const value = new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1];
    if (value === undefined) throw new Error(`${name} missing from /metrics`);
    return Number(value);
  }

  async function query<T>(sql: string): Promise<T[]> {
    const res = await request(`${ch.url}/?database=tallyhouse&default_format=JSONEachRow`, { method: 'POST', body: sql });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(text);
    return text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as T);
  }

  interface Body {
    tag: string;
    text: string;
    lines: number;
    answer?: 'stored' | 'duplicate';
  }

  describe('the log drain under SIGKILL', () => {
    it(`keeps every acknowledged body exactly once through ${KILLS} kill points, the store up, slow and down`, async () => {
      const rand = mulberry32(SEED) // a seeded generator, so a failing run can be repeated with its seed;
      const dataDir = tempDataDir();
      const bodies: Body[] = [];
      const redeliver: Body[] = [];
      const newBody = (): Body => {
        const tag = `crash-${bodies.length}`;
        // Every tenth body (~100 KiB) is over the child's staging memory (8 KiB; rows are counted in 64 KiB
        // parts), so its rows spill to a file.
        const lines = bodies.length % 10 === 0 ? 400 : 12;
        const text = Array.from({ length: lines }, (_, i) => line({ message: `${tag} line ${i} ${'x'.repeat(160)}`, svc_request_id: tag })).join('\n');
        const body = { tag, text, lines };
        bodies.push(body);
        return body;
      };
      /** Sends until the child is gone (or `stop`): redeliveries first, as the platform retries; then new bodies. */
      const send = async (url: string, stop: { stop: boolean }, onlyRedeliveries = false) => {
        while (!stop.stop) {
          const body = redeliver.shift() ?? (onlyRedeliveries ? undefined : newBody());
          if (!body) return;
          try {
            const res = await request(`${url}/v1/drains/logs`, {
              method: 'POST',
              headers: { 'content-type': 'application/x-ndjson', 'x-svc-signature': sign(body.text) },
              body: body.text,
            });
            const answer = (await res.body.json()) as { duplicate?: boolean };
            if (res.statusCode === 200) body.answer = answer.duplicate ? 'duplicate' : 'stored';
            else redeliver.push(body); // e.g. 503 while the spool is full: the platform tries again
          } catch {
            redeliver.push(body); // killed under this request: no answer, so it is delivered again
            return;
          }
        }
      };

      const kills: Record<KillPoint | 'timer', number> = { spill: 0, append: 0, 'group-commit': 0, 'after-commit': 0, 'replay-insert': 0, cleanup: 0, timer: 0 };
      /** Rounds in a row that started with records waiting in the spool and had the store down throughout. */
      let downStreak = 0;
      let longestDownStreak = 0;
      let round = 0;
      const pointKills = () => ALL_POINTS.reduce((n, p) => n + kills[p], 0);
      while (pointKills() < KILLS && round < KILLS * 3) {
        const mode = modeOf(round);
        ch.faultInserts(mode === 'up' ? null : mode === 'down' ? { kind: 'down' } : { kind: 'slow', ms: 150 });
        const points = POINTS[mode];
        const point = points[Math.floor(rand() * points.length)];
        const n = 1 + Math.floor(rand() * 4);
        const c = await startChild(dataDir, `${point}:${n}`);
        const waiting = await metric(c.url, 'tallyhouse_drain_spool_bytes').catch(() => 0);
        downStreak = mode === 'down' && waiting > 0 ? downStreak + 1 : 0;
        longestDownStreak = Math.max(longestDownStreak, downStreak);
        const stop = { stop: false };
        const senders = [send(c.url, stop), send(c.url, stop), send(c.url, stop)];
        // The child SIGKILLs itself at its point (kill-points.ts); this kill means the point was not reached.
        let killedHere = false;
        const timer = setTimeout(() => {
          killedHere = true;
          c.child.kill('SIGKILL');
        }, 3_000);
        const signal = await c.exited;
        clearTimeout(timer);
        stop.stop = true;
        await Promise.all(senders);
        expect(signal, c.output()).toBe('SIGKILL');
        kills[killedHere ? 'timer' : point]++;
        round++;
      }

      // The last run: the store up, redeliver what never got an answer, and let the replayer empty the spool.
      ch.faultInserts(null);
      const last = await startChild(dataDir, '');
      for (let pass = 0; pass < 100 && bodies.some((b) => !b.answer); pass++) {
        redeliver.splice(0, redeliver.length, ...bodies.filter((b) => !b.answer));
        await Promise.all([0, 1, 2].map(() => send(last.url, { stop: false }, true)));
      }
      await expect.poll(() => metric(last.url, 'tallyhouse_drain_spool_bytes'), { timeout: 120_000, interval: 100 }).toBe(0);
      last.child.kill('SIGTERM');
      await last.exited;

      const stored = await query<{ tag: string; lines: string; distinct: string }>(
        "SELECT request_id AS tag, count() AS lines, uniqExact(message) AS distinct FROM logs WHERE startsWith(request_id, 'crash-') GROUP BY tag",
      );
      const byTag = new Map(stored.map((r) => [r.tag, r]));
      console.log(JSON.stringify({ seed: SEED, rounds: round, bodies: bodies.length, kills, longestDownStreak, duplicates: bodies.filter((b) => b.answer === 'duplicate').length }));

      // Every body, acknowledged during the kills or after redelivery, is stored once: its lines each once.
      const wrong = bodies.filter((b) => {
        const r = byTag.get(b.tag);
        return !r || Number(r.lines) !== b.lines || Number(r.distinct) !== b.lines;
      });
      expect(wrong.map((b) => `${b.tag} (${b.answer}): ${JSON.stringify(byTag.get(b.tag) ?? 'absent')}`)).toEqual([]);
      expect(stored.length).toBe(bodies.length);
      // The run was what it claims: every kill point hit, restarts in a row with the store down.
      expect(pointKills()).toBeGreaterThanOrEqual(KILLS);
      for (const p of ALL_POINTS) expect(kills[p], `kills at ${p}`).toBeGreaterThan(0);
      expect(longestDownStreak).toBeGreaterThanOrEqual(2);
      expect(bodies.length).toBeGreaterThan(KILLS);
    }, 30 * 60_000);
  });
}
