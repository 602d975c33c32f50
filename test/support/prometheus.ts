// wall-clock-file: deadlines for a real Prometheus to be ready, not expectations
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A free loopback port (listen on 0, close, reuse). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

export interface PrometheusServer {
  url: string;
  /** Instant query through the HTTP API; returns the result vector. */
  query(expr: string): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>>;
  /** Polls a query until it returns a non-empty vector that passes `accept`. */
  waitFor(
    expr: string,
    accept?: (r: Array<{ metric: Record<string, string>; value: [number, string] }>) => boolean,
    timeoutMs?: number,
  ): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>>;
  close(): Promise<void>;
}

/** Starts Debian's `prometheus` on loopback with the given scrape configs (YAML list items, already indented). */
export async function startPrometheus(scrapeConfigs: string): Promise<PrometheusServer> {
  const dir = mkdtempSync(join(tmpdir(), 'th-prom-'));
  const port = await freePort();
  const config = `global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\nscrape_configs:\n${scrapeConfigs}`;
  writeFileSync(join(dir, 'prometheus.yml'), config);
  const child: ChildProcess = spawn(
    'prometheus',
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`prometheus exited ${child.exitCode}: ${stderr}`);
    try {
      const r = await fetch(`${url}/-/ready`);
      if (r.status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`prometheus not ready in 30 s: ${stderr}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const query = async (expr: string) => {
    const r = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(expr)}`);
    const body = (await r.json()) as { status: string; data: { result: Array<{ metric: Record<string, string>; value: [number, string] }> } };
    if (body.status !== 'success') throw new Error(`query ${expr} failed: ${JSON.stringify(body)}`);
    return body.data.result;
  };
  return {
    url,
    query,
    async waitFor(expr, accept = (r) => r.length > 0, timeoutMs = 30_000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const r = await query(expr);
        if (r.length > 0 && accept(r)) return r;
        if (Date.now() > until) throw new Error(`timed out waiting for ${expr}: last ${JSON.stringify(r)}; prometheus log: ${stderr.slice(-2000)}`);
        await new Promise((res) => setTimeout(res, 250));
      }
    },
    async close() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
