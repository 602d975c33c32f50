// A drain body's bytes -> sealed chunks of `logs` rows (TabSeparated) and `ingest_rejects` rows (JSONEachRow),
// plus the per-line answer. No I/O: it runs on the request's thread or in a parser worker (parser-worker.ts).
import { MAX_REJECT_RAW_BYTES, truncateUtf8 } from '../../store/writer.js';
import { mapLineSafely, type BatchContext } from '../../collectors/log-line.js';
import { BodyFormatError, NdjsonSplitter, SniffingSplitter, type Splitter } from './split-lines.js';

export const MAX_LISTED_ERRORS = 100;
export const REJECT_SOURCE = 'log_drain';
/** Rows are handed on in chunks of about this many characters. */
const SEAL_CHARS = 64 * 1024;
/**
 * Reject rows a batch may store one by one, in characters: this much, plus REJECT_CHARS_PER_BODY_BYTE per byte of
 * the (decoded) body read so far. A reject row costs ~150 characters besides its line (time, reason, batch id), so
 * a body of tiny bad lines (`x\n`, 2 bytes each) made 75 times its size: a signed 15 MB body of `{}` lines made
 * ~1 GB of rejects, 1.9 GB of memory and a spool record SQLite refused (500, the batch lost). Real bad lines, each
 * longer than that overhead, stay under the budget and are all kept; past it, lines are counted (the answer's
 * `rejected`) and one `rejects_over_budget` row says how many and which.
 */
export const REJECT_BASE_CHARS = 1024 * 1024;
export const REJECT_CHARS_PER_BODY_BYTE = 4;

export interface ParseOptions {
  /** application/json (an array, or NDJSON) rather than application/x-ndjson. */
  json: boolean;
  ctx: BatchContext;
  maxLineBytes: number;
}

export type ParseFailure = { kind: 'format'; message: string };

export interface ParseSummary {
  accepted: number;
  rejected: number;
  /** The first MAX_LISTED_ERRORS rejected lines. */
  errors: Array<{ line: number; reason: string }>;
  /** Set when the body had to be refused as a whole (400 for a JSON body that is no array). */
  failure?: ParseFailure;
}

export interface ParseSink {
  onRows(buf: Buffer, count: number): void;
  onRejects(buf: Buffer, count: number): void;
}

class Sealer {
  private pending: string[] = [];
  private chars = 0;
  constructor(private readonly emit: (buf: Buffer, count: number) => void) {}

  add(row: string): void {
    this.pending.push(row);
    this.chars += row.length + 1;
    if (this.chars >= SEAL_CHARS) this.flush();
  }

  flush(): void {
    if (this.pending.length === 0) return;
    const count = this.pending.length;
    const buf = Buffer.from(`${this.pending.join('\n')}\n`);
    this.pending = [];
    this.chars = 0;
    this.emit(buf, count);
  }
}

export class BatchParser {
  private readonly splitter: Splitter;
  private readonly rows: Sealer;
  private readonly rejects: Sealer;
  private readonly summary: ParseSummary = { accepted: 0, rejected: 0, errors: [] };
  private bodyBytes = 0;
  private rejectChars = 0;
  /** Rejected lines past the reject budget: counted, not stored one by one. */
  private overBudget: { count: number; first: number; last: number; raw: string } | undefined;

  constructor(private readonly opts: ParseOptions, sink: ParseSink) {
    this.rows = new Sealer((buf, n) => sink.onRows(buf, n));
    this.rejects = new Sealer((buf, n) => sink.onRejects(buf, n));
    const onLine = (text: string, line: number) => this.line(text, line);
    const onLongLine = (line: number, head: Buffer, bytes: number) => this.longLine(line, head, bytes);
    this.splitter = opts.json
      ? new SniffingSplitter(opts.maxLineBytes, onLine, onLongLine)
      : new NdjsonSplitter(opts.maxLineBytes, onLine, onLongLine);
  }

  get failed(): boolean {
    return this.summary.failure !== undefined;
  }

  /** Takes the next bytes of the (decoded) body; after a failure the rest is ignored. */
  push(chunk: Buffer): void {
    if (this.summary.failure) return;
    this.bodyBytes += chunk.length;
    try {
      this.splitter.push(chunk);
    } catch (err) {
      this.fail(err);
    }
  }

  /** The end of the body: the last line, the last chunks handed on, the answer. */
  end(): ParseSummary {
    if (!this.summary.failure) {
      try {
        this.splitter.end();
      } catch (err) {
        this.fail(err);
      }
    }
    this.rows.flush();
    if (this.overBudget) {
      const { count, first, last, raw } = this.overBudget;
      this.rejects.add(
        this.rejectRow(
          first,
          `rejects_over_budget: ${count} more rejected lines (lines ${first} to ${last}) are counted, not stored one by one: the batch's reject rows reached ${REJECT_BASE_CHARS} characters plus ${REJECT_CHARS_PER_BODY_BYTE} per body byte; this row keeps the first one's text`,
          raw,
        ),
      );
    }
    this.rejects.flush();
    return this.summary;
  }

  private fail(err: unknown): void {
    if (err instanceof BodyFormatError) {
      this.summary.failure = { kind: 'format', message: err.message };
    } else {
      throw err;
    }
  }

  private line(text: string, line: number): void {
    const outcome = mapLineSafely(text, line, this.opts.ctx);
    if (outcome.ok) {
      this.rows.add(outcome.row);
      this.summary.accepted++;
      return;
    }
    this.reject(line, outcome.reason, text);
  }

  /**
   * A line over the line limit is rejected alone, its start kept; the rest of the batch is stored. Refusing the
   * batch (413) lost its good lines: the platform does not retry a batch, and the logs job fills only gaps of a
   * minute or more.
   */
  private longLine(line: number, head: Buffer, bytes: number): void {
    const reason = `line_too_long: ${bytes} bytes, over the ${this.opts.maxLineBytes}-byte line limit; its first ${head.length} bytes are kept`;
    this.reject(line, reason, head.toString('utf8'));
  }

  private reject(line: number, reason: string, raw: string): void {
    this.summary.rejected++;
    if (this.summary.errors.length < MAX_LISTED_ERRORS) this.summary.errors.push({ line, reason });
    if (this.overBudget) {
      this.overBudget.count++;
      this.overBudget.last = line;
      return;
    }
    const row = this.rejectRow(line, reason, raw);
    if (this.rejectChars + row.length > REJECT_BASE_CHARS + REJECT_CHARS_PER_BODY_BYTE * this.bodyBytes) {
      this.overBudget = { count: 1, first: line, last: line, raw };
      return;
    }
    this.rejectChars += row.length + 1;
    this.rejects.add(row);
  }

  private rejectRow(line: number, reason: string, raw: string): string {
    return JSON.stringify({
      rejected_at: this.opts.ctx.receivedAt,
      source: REJECT_SOURCE,
      reason,
      raw: truncateUtf8(raw, MAX_REJECT_RAW_BYTES),
      line,
      batch_id: this.opts.ctx.batchId,
    });
  }
}
