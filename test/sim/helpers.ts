// Test helpers: a small retrying JSON client (retries what a platform client must retry: 429, retryable 5xx,
// network errors, timeouts, truncated bodies) and a pager that follows next_cursor.
export interface JsonReply {
  status: number;
  headers: Headers;
  text: string;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  attempts: number;
}

export interface CallOptions {
  key?: string;
  method?: 'GET' | 'POST';
  body?: unknown;
  timeoutMs?: number;
  maxAttempts?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function call(baseUrl: string, path: string, opts: CallOptions = {}): Promise<JsonReply> {
  const maxAttempts = opts.maxAttempts ?? 1;
  let lastError: unknown;
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    try {
      const res = await fetch(baseUrl + path, {
        method: opts.method ?? 'GET',
        headers: {
          ...(opts.key ? { authorization: `Key ${opts.key}` } : {}),
          ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
        signal: AbortSignal.timeout(opts.timeoutMs ?? 20_000),
      });
      const text = await res.text();
      const retryable = res.status === 429 || (res.status >= 500 && res.headers.get('x-svc-retryable') !== 'false');
      if (retryable && attempt < maxAttempts) {
        const wait = Number(res.headers.get('retry-after') ?? res.headers.get('x-ratelimit-reset') ?? 0) * 1000;
        await sleep(Math.min(wait, 50));
        continue;
      }
      let body: unknown = undefined;
      const type = res.headers.get('content-type') ?? '';
      if (type.includes('json')) {
        try {
          body = JSON.parse(text);
        } catch (err) {
          lastError = err; // truncated JSON: retry
          if (attempt < maxAttempts) continue;
          throw err;
        }
      }
      return { status: res.status, headers: res.headers, text, body, attempts: attempt };
    } catch (err) {
      lastError = err; // reset mid-body, timeout (slow), network error
      if (attempt >= maxAttempts) throw err;
    }
  }
  throw lastError;
}

/** Follows next_cursor until has_more is false; returns every page body. */
export async function pageAll(baseUrl: string, path: string, opts: CallOptions = {}): Promise<any[]> {
  const pages: any[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 10_000; i++) {
    const sep = path.includes('?') ? '&' : '?';
    const r = await call(baseUrl, cursor ? `${path}${sep}cursor=${encodeURIComponent(cursor)}` : path, opts);
    if (r.status !== 200) throw new Error(`HTTP ${r.status} ${r.text}`);
    pages.push(r.body);
    if (!r.body.has_more) return pages;
    cursor = r.body.next_cursor;
    if (!cursor) throw new Error('has_more without next_cursor');
  }
  throw new Error('too many pages');
}

export function qs(params: Record<string, string | number | boolean | string[] | undefined>): string {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined) continue;
    if (Array.isArray(v)) u.set(k, v.join(','));
    else u.set(k, String(v));
  }
  return u.toString();
}
