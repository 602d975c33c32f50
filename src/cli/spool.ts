// `tallyhouse spool salvage FILE`: the log lines still legible in a damaged drain spool file, stored once (issue
// 44.5). When SQLite cannot read the spool file, the drain moves it aside (`spool.sqlite.corrupt-<time>`, with its
// -wal), replays what SQLite can still read of it and counts the rest lost; the lines of a lost record may still be
// legible as text in the copy. This command reads both (the records SQLite reads: salvage.ts; rows legible as text:
// salvage-text.ts) and stores the lines the store lacks, compared by the record's identity as history fills are
// (src/collectors/logs.ts), so it can be run again, or on a file already replayed, without storing a line twice.
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { getConfig } from '../config.js';
import { commandIO } from '../http/command-host.js';
import { withCommandRuntime } from '../service.js';
import { describeArgsError, didYouMean } from '../suggest.js';
import { salvageSpool } from '../ingest/drain/spool/salvage.js';
import { isLogRow, legibleLogRows } from '../ingest/drain/spool/salvage-text.js';
import { LOG_ROW_COLUMNS, unescapeTsvField } from '../collectors/log-line.js';
import { recordKey } from '../collectors/logs.js';
import { dropCopiesOfDrainLines, insertLogRows, storedLogKeys } from '../store/tables/logs.js';

const USAGE = 'tallyhouse spool salvage FILE\n';
const SUBCOMMANDS = ['salvage'];

export function spoolHelp(sub: string | undefined): number {
  const io = commandIO();
  if (sub !== undefined && !SUBCOMMANDS.includes(sub)) {
    io.err(`tallyhouse spool: unknown subcommand ${JSON.stringify(sub)}${didYouMean(sub, SUBCOMMANDS)}\nUsage: ${USAGE}`);
    return 2;
  }
  io.out(
    `Usage: ${USAGE}\n` +
      'Stores the log lines still legible in a damaged drain spool file that the drain set aside\n' +
      '(DATA_DIR/spool/<name>/spool.sqlite.corrupt-<time>; its log line names it): the records SQLite can read and the\n' +
      'lines legible as text on pages it cannot. Only lines the store lacks are stored (as drain lines), so running it\n' +
      'again stores nothing more. Rejected lines the file held are not replayed.\n' +
      'Exit codes: 0 done (the counts on stderr), 1 no line legible in the file, 2 a usage error (no such file).\n',
  );
  return 0;
}

/** `spool salvage FILE` handed to a running service: the file named by its absolute path (the service's folder differs). */
export function handOffArgs(argv: string[]): string[] {
  return argv.map((a, i) => (i > 0 && !a.startsWith('-') && existsSync(a) ? resolve(a) : a));
}

export async function spoolCommand(argv: string[]): Promise<number> {
  const io = commandIO();
  let positionals: string[];
  try {
    ({ positionals } = parseArgs({ args: argv, options: {}, allowPositionals: true, strict: true }));
  } catch (err) {
    io.err(`tallyhouse spool: ${describeArgsError(err, [])}\nUsage: ${USAGE}`);
    return 2;
  }
  const [sub, file, ...extra] = positionals;
  if (sub === undefined) return usageError('which subcommand? (salvage)');
  if (!SUBCOMMANDS.includes(sub)) return usageError(`unknown subcommand ${JSON.stringify(sub)}${didYouMean(sub, SUBCOMMANDS)}`);
  if (file === undefined) return usageError('salvage: which file? (a spool.sqlite.corrupt-<time> the drain set aside)');
  if (extra.length > 0) return usageError(`salvage takes one file (got ${positionals.length - 1})`);
  const path = resolve(file);
  if (!existsSync(path) || !statSync(path).isFile()) return usageError(`salvage: no such file: ${file}`);

  const read = legibleLines(path);
  if (read.rows.length === 0) {
    io.err(`tallyhouse spool salvage: no log line legible in ${path}${read.cut > 0 ? ` (${read.cut} cut at a page's end, left out)` : ''}; nothing stored\n`);
    return 1;
  }
  return withCommandRuntime(getConfig(), async (rt) => {
    const store = rt.store;
    // One record, one line: the first legible copy of each (the same record may be in two bodies).
    const byKey = new Map<string, { row: string; day: string; app: string }>();
    for (const row of read.rows) {
      const f = row.split('\t');
      const key = recordKey(f[0], unescapeTsvField(f[2]), unescapeTsvField(f[4]), unescapeTsvField(f[8]), unescapeTsvField(f[11]));
      if (!byKey.has(key)) byKey.set(key, { row, day: f[0].slice(0, 10), app: unescapeTsvField(f[2]) });
    }
    // What the store holds already, a day at a time (the keys of a day's lines of these apps).
    const days = new Map<string, Array<[string, { row: string; app: string }]>>();
    for (const entry of byKey) days.set(entry[1].day, [...(days.get(entry[1].day) ?? []), entry]);
    const fresh: string[] = [];
    let present = 0;
    let from = '';
    let to = '';
    const apps = new Set<string>();
    for (const [day, entries] of [...days].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const dayApps = [...new Set(entries.map(([, e]) => e.app))];
      const span = { from: `${day} 00:00:00.000`, to: `${day} 23:59:59.999`, apps: dayApps };
      const stored = new Set((await storedLogKeys(store, span)).map((r) => recordKey(r.ts, r.app, r.request_id, r.worker, r.message)));
      for (const [key, e] of entries) {
        if (stored.has(key)) present++;
        else fresh.push(e.row);
      }
      from ||= span.from;
      to = span.to;
      for (const a of dayApps) apps.add(a);
    }
    if (fresh.length > 0) {
      // The token is the rows': a retried insert of the same rows is stored once.
      const token = createHash('sha256').update('spool-salvage\n').update(fresh.join('\n')).digest('hex');
      await insertLogRows(store, LOG_ROW_COLUMNS, fresh, 'drain', token);
      // A history fill may hold some of these records: the drain's copy stays, as after any drain insert.
      await dropCopiesOfDrainLines(store, { from, to, apps: [...apps] });
    }
    io.err(
      `${path}: ${read.rows.length} log line(s) legible (${read.fromRecords} in records SQLite could read, ${read.rows.length - read.fromRecords} only as text)` +
        `${read.cut > 0 ? `, ${read.cut} more cut at a page's end and left out` : ''}; of their ${byKey.size} record(s) ${present} were in the store already, ${fresh.length} stored now\n`,
    );
    return 0;
  });
}

function usageError(message: string): number {
  commandIO().err(`tallyhouse spool: ${message}\nUsage: ${USAGE}`);
  return 2;
}

/** The rows legible in the file: those of the records SQLite reads, then those legible only as text. */
function legibleLines(path: string): { rows: string[]; fromRecords: number; cut: number } {
  const rows: string[] = [];
  const seen = new Set<string>();
  const add = (row: string) => {
    if (seen.has(row)) return false;
    seen.add(row);
    rows.push(row);
    return true;
  };
  const salvage = salvageSpool(path, mkdtempSync(join(tmpdir(), 'tallyhouse-spool-salvage-')));
  for (const r of salvage.records) {
    const format = JSON.parse(r.row_format) as { format?: string; columns?: string[] };
    if (format.format !== 'TabSeparated' || JSON.stringify(format.columns) !== JSON.stringify(LOG_ROW_COLUMNS)) continue;
    for (const row of Buffer.from(r.row_data).toString('utf8').split('\n')) {
      if (isLogRow(row)) add(row);
    }
  }
  const fromRecords = rows.length;
  const text = legibleLogRows(path);
  for (const row of text.rows) add(row);
  return { rows, fromRecords, cut: text.cut };
}
