import http from 'node:http';
import type { AddressInfo } from 'node:net';

// A tiny HTTP server for the client tests: every request is recorded and answered by the next scripted
// step (the last step repeats), so a test says exactly what each attempt sees.

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export type Step = (res: http.ServerResponse, req: RecordedRequest) => void;

export interface ScriptedServer {
  baseUrl: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

export async function startScriptedServer(steps: Step[]): Promise<ScriptedServer> {
  const requests: RecordedRequest[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const recorded: RecordedRequest = {
        method: req.method ?? '',
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(recorded);
      const step = steps[Math.min(requests.length, steps.length) - 1];
      step(res, recorded);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function json(status: number, body: unknown, headers: Record<string, string> = {}): Step {
  return (res) => {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(text);
  };
}

export function text(status: number, body: string, headers: Record<string, string> = {}): Step {
  return (res) => {
    res.writeHead(status, headers);
    res.end(body);
  };
}

/** Sends the head and part of the body, then resets the connection. */
export function resetMidBody(): Step {
  return (res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '200' });
    res.write('{"apps": [');
    setTimeout(() => res.socket?.destroy(), 10);
  };
}

/** Never answers (the client's timeout or the test's close ends it). */
export function hang(): Step {
  return () => {};
}

/** Sends the head and one byte of the body, then goes silent. */
export function stallBody(): Step {
  return (res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{');
  };
}
