import http from 'node:http';
import zlib from 'node:zlib';
import { randomUUID } from 'node:crypto';
import type { AddressInfo, Socket } from 'node:net';
import { Session, version, type RawInsertFormat } from 'chdb';
import { TupleParam } from '@clickhouse/client';
import { inlineSettings, statementSettings } from '../../src/store/embedded.js';

/**
 * A ClickHouse HTTP endpoint for tests: the part of ClickHouse's HTTP interface that @clickhouse/client uses,
 * served by one chDB session in this process, with a ClickHouse server's defaults. It is a test double:
 * - one session, so requests run one at a time, and `database=` is applied with `USE` when it changes
 *   (tests use one database per process; a `USE` sent as a query would go unnoticed);
 * - settings are inlined into the statement (inlineSettings): with the data in the body, `query=` must be a
 *   whole statement, and `INSERT ... VALUES` or `SYSTEM`/`SET`/`USE` do not take a SETTINGS clause; an insert of a
 *   line format into a table of the current database goes to chDB's raw insert instead (RAW_INSERT), settings
 *   passed with it;
 * - no HTTP sessions (`session_id` is ignored), no `readonly` for GET, no `compress=1`/`decompress=1`;
 * - insert data must be text (JSON*, CSV, TSV...); `written_rows` counts its non-empty lines.
 */
export interface ClickHouseHttpOptions { dataDir: string; port?: number; username?: string; password?: string }
export interface RecordedRequest { method: string; query: string; settings: Record<string, string>; database: string | null }
export interface ClickHouseHttp {
  url: string; // http://127.0.0.1:<port>, stable across stop()/start()
  stop(): Promise<void>; // closes the listener and destroys open sockets: clients now get ECONNREFUSED
  start(): Promise<void>; // listens again on the same port
  failNext(n: number, status?: number): void; // the next n requests answer `status` (default 503) with a ClickHouse error
  /** The next n inserts run, and then answer 503 as if the answer were lost on the way back. */
  loseNextInsertAnswers(n: number): void;
  /** From now on every insert fails with 503 before it runs ('down'), or waits `ms` first ('slow'); null: normal. */
  faultInserts(fault: { kind: 'down' } | { kind: 'slow'; ms: number } | null): void;
  requests(): RecordedRequest[];
  close(): Promise<void>; // stop, then close chDB
}

// URL parameters ClickHouse's HTTP handler consumes itself; every other one (but param_*) is a setting.
const NOT_SETTINGS = new Set(['query', 'database', 'query_id', 'user', 'password', 'quota_key', 'session_id',
  'session_timeout', 'session_check', 'close_session', 'compress', 'decompress', 'buffer_size', 'role', 'stacktrace',
  'client_protocol_version']);

// Where chDB (clickhouse-local) defaults differ from a ClickHouse server. A server-mode client must send what it
// relies on per request (src/store/client.ts does, with SESSION_SETTINGS), so tests catch a missing setting.
const SERVER_DEFAULTS = "SET date_time_input_format = 'basic', async_insert = 0, output_format_json_quote_64bit_integers = 1";

// HTTP status by exception code, as ClickHouse's exceptionCodeToHTTPStatus.cpp; any other code is a 500.
const STATUS_BY_CODE = new Map<number, number>([
  ...[194].map((c) => [c, 401] as const),
  ...[192, 193, 497, 512, 516].map((c) => [c, 403] as const),
  ...[6, 8, 15, 25, 26, 27, 36, 37, 38, 41, 44, 53, 62, 72, 117, 123, 167, 168, 223, 321, 376, 427, 441, 675, 676]
    .map((c) => [c, 400] as const),
  ...[46, 47, 50, 56, 60, 63, 73, 78, 81, 115, 152, 336, 511].map((c) => [c, 404] as const),
  [229, 413], [48, 501], [209, 503], [76, 503], [439, 503], [381, 411], [159, 408], [779, 415],
]);

const CODECS: Record<string, { encode: (b: Buffer) => Buffer; decode: (b: Buffer) => Buffer }> = {
  gzip: { encode: (b) => zlib.gzipSync(b), decode: (b) => zlib.gunzipSync(b) },
  deflate: { encode: (b) => zlib.deflateSync(b), decode: (b) => zlib.inflateSync(b) },
  br: { encode: (b) => zlib.brotliCompressSync(b), decode: (b) => zlib.brotliDecompressSync(b) },
};

const VERSION = `${version().libchdb} (chDB test endpoint)`;

class ClickHouseException extends Error {
  constructor(readonly code: number, readonly type: string, message: string) {
    super(`Code: ${code}. DB::Exception: ${message}. (${type})`);
  }
}

/** The exception code and the body ClickHouse would send for `err`. */
function describeError(err: unknown): { code: number; body: string } {
  const e = err as { message?: string; name?: string; clickhouseCode?: number };
  let message = String(e?.message ?? err);
  if (!/^Code: \d+\./.test(message)) {
    const [code, type] = e?.name === 'ChdbBindError' ? [457, 'BAD_QUERY_PARAMETER'] : [1001, 'STD_EXCEPTION'];
    message = new ClickHouseException(code, type, message).message;
  }
  const code = e?.clickhouseCode ?? Number(/^Code: (\d+)/.exec(message)?.[1]);
  return { code, body: `${message}${message.includes('(version ') ? '' : ` (version ${VERSION})`}\n` };
}

const ESCAPES: Record<string, string> = { a: '\x07', b: '\b', e: '\x1b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v', 0: '\0' };
/** Reads ClickHouse's Escaped text form (`\t`, `\'`, `\\`, `\xHH`, any other `\c` is `c`). */
const unescapeText = (s: string): string =>
  s.replace(/\\(x[0-9a-fA-F]{2}|[\s\S])/g, (_, c: string) =>
    c.length === 3 ? String.fromCharCode(parseInt(c.slice(1), 16)) : (ESCAPES[c] ?? c));

/** Parses a composite literal as the client writes it (`['a\'b',NULL]`, `(1,'x')`, `{'k':1}`) into JS values. */
function parseLiteral(text: string): unknown {
  let i = 0;
  const fail = (): never => {
    throw new ClickHouseException(457, 'BAD_QUERY_PARAMETER', `Cannot parse query parameter value ${text}`);
  };
  const skip = () => { while (/\s/.test(text[i] ?? '')) i++; };
  const expect = (c: string) => { skip(); if (text[i++] !== c) fail(); };
  const sequence = <T>(close: string, item: () => T): T[] => {
    const items: T[] = [];
    for (i++, skip(); text[i] !== close; skip()) {
      items.push(item());
      skip();
      if (text[i] === ',') i++;
      else if (text[i] !== close) fail();
    }
    i++;
    return items;
  };
  const value = (): unknown => {
    skip();
    const rest = text.slice(i);
    if (rest[0] === '[') return sequence(']', value);
    if (rest[0] === '(') return new TupleParam(sequence(')', value));
    if (rest[0] === '{') return new Map(sequence('}', () => { const k = value(); expect(':'); return [k, value()] as const; }));
    const quoted = /^'((?:[^'\\]|\\[\s\S])*)'/.exec(rest);
    const token = quoted ?? /^[^\s,:\])}]+/.exec(rest) ?? fail();
    i += token[0].length;
    if (quoted) return unescapeText(quoted[1]);
    if (/^null$/i.test(token[0])) return null;
    if (/^(true|false)$/i.test(token[0])) return token[0].toLowerCase() === 'true';
    return /^-?\d+$/.test(token[0]) && !Number.isSafeInteger(Number(token[0])) ? BigInt(token[0]) : Number(token[0]);
  };
  const result = value();
  skip();
  return i === text.length ? result : fail();
}

/**
 * The client sends each `param_*` as text in ClickHouse's Escaped form, which is what the server parses. chDB's
 * queryBindAsync escapes a JS string once more, so it gets the unescaped scalar; a composite is passed through
 * as text, unless its quoted strings hold escapes (chDB would double them): then it is parsed into JS values.
 */
function bindValue(text: string, type: string | undefined): unknown {
  if (text === '\\N') return null;
  if (!/^(Nullable\()?(Array|Map|Tuple|Nested)\(/.test(type ?? '')) return unescapeText(text);
  return text.includes('\\') ? parseLiteral(text) : text;
}

/** ClickHouse's HTTP interface runs one statement per request; chDB would run them all. */
function assertSingleStatement(sql: string): void {
  const code = sql.replace(/'(?:[^'\\]|\\[\s\S])*'|"(?:[^"\\]|\\[\s\S])*"|`(?:[^`\\]|\\[\s\S])*`|--[^\n]*|#[^\n]*|\/\*[\s\S]*?\*\//g, ' ');
  const extra = /;\s*(\S[\s\S]*)$/.exec(code);
  if (extra) throw new ClickHouseException(62, 'SYNTAX_ERROR', `Syntax error (Multi-statements are not allowed): ${extra[1].slice(0, 40)}`);
}

function multipartFields(body: string, contentType: string): Map<string, string> {
  const boundary = /boundary=("?)([^";]+)\1/.exec(contentType)?.[2] ?? '';
  const fields = new Map<string, string>();
  for (const part of body.split(`--${boundary}`)) {
    const m = /^\r\nContent-Disposition: form-data; name="([^"]+)"\r\n(?:[^\r\n]+\r\n)*\r\n([\s\S]*)\r\n$/i.exec(part);
    if (m) fields.set(m[1], m[2]);
  }
  return fields;
}

function credentials(req: http.IncomingMessage, url: URL): [user: string, password: string] {
  const basic = /^Basic\s+(\S+)$/i.exec(req.headers.authorization ?? '');
  if (basic) {
    const decoded = Buffer.from(basic[1], 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon < 0 ? [decoded, ''] : [decoded.slice(0, colon), decoded.slice(colon + 1)];
  }
  const header = (name: string) => req.headers[name] as string | undefined;
  return [header('x-clickhouse-user') ?? url.searchParams.get('user') ?? 'default',
    header('x-clickhouse-key') ?? url.searchParams.get('password') ?? ''];
}

async function readBody(req: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks);
  const encoding = req.headers['content-encoding'];
  if (!encoding || encoding === 'identity') return raw;
  const codec = CODECS[encoding];
  if (!codec) throw new ClickHouseException(36, 'BAD_ARGUMENTS', `Unknown Content-Encoding ${encoding}`);
  return codec.decode(raw);
}

interface ParsedRequest { sql: string; data: Buffer; settings: Record<string, string>; params: Map<string, string> }

const NO_DATA = Buffer.alloc(0);

/** Where the statement, its data, its settings and its parameters are, as ClickHouse's HTTP handler reads them. */
function parseRequest(url: URL, contentType: string, body: Buffer): ParsedRequest {
  const settings: Record<string, string> = {};
  const params = new Map<string, string>();
  for (const [key, value] of url.searchParams) {
    if (key.startsWith('param_')) params.set(key.slice('param_'.length), value);
    else if (!NOT_SETTINGS.has(key)) settings[key] = value;
  }
  const query = url.searchParams.get('query') ?? '';
  if (/^multipart\/form-data/i.test(contentType)) {
    const fields = multipartFields(body.toString('utf8'), contentType);
    for (const [key, value] of fields) if (key.startsWith('param_')) params.set(key.slice('param_'.length), value);
    return { sql: fields.get('query') ?? query, data: NO_DATA, settings, params };
  }
  // With `query=` in the URL the body is the statement's data (an insert's rows); otherwise it is the statement.
  return query ? { sql: query, data: body, settings, params } : { sql: body.toString('utf8'), data: NO_DATA, settings, params };
}

/**
 * An insert of a line format into a table of the current database, which chDB takes as bytes (its raw insert): the
 * statement path decodes the rows into a JS string, which chDB encodes back, and splits them to count the lines,
 * about 2 us a row of this process's event loop (bench collect). The rows and the outcome are the same.
 */
const RAW_INSERT = /^\s*INSERT\s+INTO\s+([A-Za-z_]\w*)(?:\s*\(\s*([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*\))?\s+FORMAT\s+(JSONEachRow|JSONCompactEachRow|TabSeparated|TSV)\s*$/;

/**
 * Whether `data` is only white space as JavaScript's trim() knows it (an insert without rows: a no-op on the
 * server). Rows start at once with a character that is not, so this reads one byte of a real batch.
 */
function blank(data: Buffer): boolean {
  for (const byte of data) {
    if (byte >= 0x80) return data.toString('utf8').trim() === ''; // a non-ASCII space (NBSP, BOM, ...) or text
    if (byte !== 0x20 && (byte < 0x09 || byte > 0x0d)) return false;
  }
  return true;
}

export async function startClickHouseHttp(opts: ClickHouseHttpOptions): Promise<ClickHouseHttp> {
  const session = new Session(opts.dataDir);
  await session.queryAsync(SERVER_DEFAULTS);
  let currentDatabase = 'default';
  let failures: { left: number; status: number } = { left: 0, status: 503 };
  let lostInsertAnswers = 0;
  let insertFault: { kind: 'down' } | { kind: 'slow'; ms: number } | null = null;
  const recorded: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  let tail: Promise<unknown> = Promise.resolve();
  const exclusive = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = tail.then(fn, fn);
    tail = run.catch(() => undefined);
    return run;
  };

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const queryId = url.searchParams.get('query_id') || randomUUID();
    const send = (status: number, headers: Record<string, string>, body: string | Buffer) => {
      if (!res.destroyed) res.writeHead(status, { 'X-ClickHouse-Query-Id': queryId, ...headers }).end(body);
    };
    try {
      const { sql, data, settings, params } = parseRequest(url, req.headers['content-type'] ?? '', await readBody(req));
      const ping = url.pathname === '/ping' || (req.method === 'GET' && !sql);
      recorded.push({ method: req.method ?? 'GET', query: ping ? '' : sql, settings, database: url.searchParams.get('database') });

      if (failures.left > 0) {
        failures.left--;
        const [code, type] = failures.status === 503 ? [439, 'CANNOT_SCHEDULE_TASK'] : [202, 'TOO_MANY_SIMULTANEOUS_QUERIES'];
        const error = describeError(new ClickHouseException(code, type, 'Injected failure (failNext)'));
        return send(failures.status, { 'X-ClickHouse-Exception-Code': String(code), 'Content-Type': 'text/plain; charset=UTF-8' }, error.body);
      }
      if (ping) return send(200, { 'Content-Type': 'text/plain; charset=UTF-8' }, 'Ok.\n');
      const [user, password] = credentials(req, url);
      if ((opts.username !== undefined || opts.password !== undefined)
        && (user !== (opts.username ?? 'default') || password !== (opts.password ?? ''))) {
        throw new ClickHouseException(516, 'AUTHENTICATION_FAILED',
          `${user}: Authentication failed: password is incorrect, or there is no user with such name`);
      }

      assertSingleStatement(sql);
      const isInsert = /^\s*INSERT\b/i.test(sql);
      if (isInsert && insertFault?.kind === 'down') {
        throw new ClickHouseException(439, 'CANNOT_SCHEDULE_TASK', 'Injected failure (faultInserts down)');
      }
      const slow = insertFault?.kind === 'slow' ? insertFault.ms : 0;
      if (isInsert && slow > 0) await new Promise((resolve) => setTimeout(resolve, slow));
      const insertFormat = isInsert ? /\bFORMAT\s+(\w+)\s*$/i.exec(sql)?.[1] : undefined;
      const format = (!isInsert && /\bFORMAT\s+(\w+)\s*;?\s*$/i.exec(sql)?.[1]) || settings.default_format || 'TabSeparated';
      const database = url.searchParams.get('database') || 'default';
      const raw = isInsert && params.size === 0 ? RAW_INSERT.exec(sql) : null;
      // An insert without rows is a no-op on the server; chDB would say NO_DATA_TO_INSERT.
      const noRows = insertFormat !== undefined && blank(data);
      let rows = 0;
      let run: () => Promise<{ rowsRead?: number; bytesRead?: number; elapsed?: number; bytes(): Uint8Array } | undefined>;
      if (raw && !noRows) {
        const [, table, columns, rawFormat] = raw;
        run = async () => {
          const r = await session.insert({
            table,
            columns: columns?.split(',').map((c) => c.trim()),
            values: data,
            format: rawFormat as RawInsertFormat,
            settings: Object.fromEntries(statementSettings(settings)) as Record<string, string>,
          });
          rows = r.rowsSent ?? 0;
          return { elapsed: r.elapsed, bytes: () => new Uint8Array(0) };
        };
      } else {
        const text = data.toString('utf8');
        rows = insertFormat ? text.split('\n').filter((line) => line.trim() !== '').length : 0;
        const statement = inlineSettings(sql, settings) + (text ? `\n${text}` : '');
        const types = new Map([...sql.matchAll(/\{\s*(\w+)\s*:\s*([^{}]+?)\s*\}/g)].map((m) => [m[1], m[2]] as const));
        const bound = Object.fromEntries([...params].map(([name, value]) => [name, bindValue(value, types.get(name))]));
        run = async () => {
          if (noRows) return undefined;
          return params.size > 0 ? session.queryBindAsync(statement, bound, { format }) : session.queryAsync(statement, { format });
        };
      }

      const result = await exclusive(async () => {
        if (database !== currentDatabase) {
          await session.queryAsync(`USE \`${database.replace(/[`\\]/g, '\\$&')}\``);
          currentDatabase = database;
        }
        return run();
      });

      if (isInsert && lostInsertAnswers > 0) {
        lostInsertAnswers--;
        const error = describeError(new ClickHouseException(439, 'CANNOT_SCHEDULE_TASK', 'Injected lost answer (the insert ran)'));
        return send(503, { 'X-ClickHouse-Exception-Code': '439', 'Content-Type': 'text/plain; charset=UTF-8' }, error.body);
      }
      const summary = {
        read_rows: String(result?.rowsRead ?? 0), read_bytes: String(result?.bytesRead ?? 0),
        written_rows: String(rows), written_bytes: String(isInsert ? data.length : 0),
        total_rows_to_read: '0', result_rows: String(result?.rowsRead ?? 0), result_bytes: String(result?.bytesRead ?? 0),
        elapsed_ns: String(Math.round((result?.elapsed ?? 0) * 1e9)),
      };
      const headers: Record<string, string> = {
        'Content-Type': `${format.startsWith('JSON') ? 'application/json' : 'text/plain'}; charset=UTF-8`,
        'X-ClickHouse-Format': format,
        'X-ClickHouse-Summary': JSON.stringify(summary),
      };
      let out: Buffer = result ? Buffer.from(result.bytes()) : Buffer.alloc(0);
      const accepted = String(req.headers['accept-encoding'] ?? '').split(',').map((s) => s.trim().split(';')[0]);
      const encoding = settings.enable_http_compression === '1' ? accepted.find((e) => e in CODECS) : undefined;
      if (encoding) {
        out = CODECS[encoding].encode(out);
        headers['Content-Encoding'] = encoding;
      }
      send(200, headers, out);
    } catch (err) {
      const { code, body } = describeError(err);
      send(STATUS_BY_CODE.get(code) ?? 500, {
        'X-ClickHouse-Exception-Code': String(code),
        'Content-Type': 'text/plain; charset=UTF-8',
      }, body);
    }
  }

  const server = http.createServer((req, res) => void handle(req, res));
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  let port = opts.port ?? 0;
  const start = () => new Promise<void>((resolve, reject) => {
    if (server.listening) return resolve();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      port = (server.address() as AddressInfo).port;
      resolve();
    });
  });
  const stop = async () => {
    if (!server.listening) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    // A reset (not a FIN) makes a client in this process drop its pooled keep-alive socket on its next read,
    // so its next request opens a new connection and gets ECONNREFUSED rather than a hang-up on a dead socket.
    for (const socket of sockets) socket.resetAndDestroy();
    await closed;
    for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => setImmediate(resolve));
  };
  await start();

  return {
    url: `http://127.0.0.1:${port}`,
    start,
    stop,
    failNext(n, status = 503) {
      failures = { left: n, status };
    },
    loseNextInsertAnswers(n) {
      lostInsertAnswers = n;
    },
    faultInserts(fault) {
      insertFault = fault;
    },
    requests: () => recorded.map((r) => ({ ...r, settings: { ...r.settings } })),
    async close() {
      await stop();
      await tail;
      session.close();
    },
  };
}
