// A client of GET /api/v1/logs/stream (Server-Sent Events) for tests: the events it got so far, and a wait for one.
import { expect } from 'vitest';

export interface LogStreamListener {
  events: Array<Record<string, unknown>>;
  raw: () => string;
  next(pred: (e: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  close(): void;
}

/** Opens the stream at `baseUrl` (the service's URL) with `query` ('' or '?app=...'). */
export async function listenLogStream(baseUrl: string, query = '', headers: Record<string, string> = {}): Promise<LogStreamListener> {
  const controller = new AbortController();
  const res = await fetch(`${baseUrl}/api/v1/logs/stream${query}`, { signal: controller.signal, headers });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('text/event-stream');
  const events: Array<Record<string, unknown>> = [];
  let raw = '';
  const waiters: Array<() => void> = [];
  void (async () => {
    try {
      for await (const chunk of res.body!.pipeThrough(new TextDecoderStream())) {
        raw += chunk;
        let at: number;
        while ((at = raw.indexOf('\n\n')) >= 0) {
          const event = raw.slice(0, at);
          raw = raw.slice(at + 2);
          for (const l of event.split('\n')) if (l.startsWith('data: ')) events.push(JSON.parse(l.slice(6)));
        }
        for (const w of waiters.splice(0)) w();
      }
    } catch {
      // aborted by close()
    }
  })();
  return {
    events,
    raw: () => raw,
    async next(pred) {
      for (;;) {
        const found = events.find(pred);
        if (found) return found;
        await new Promise<void>((r) => waiters.push(r));
      }
    },
    close: () => controller.abort(),
  };
}
