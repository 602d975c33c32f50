// Splits a drain body into lines as its bytes arrive: NDJSON (one JSON value per line) or a JSON array (one
// line per element). Nothing but the current line is held; a line longer than the limit is handed on alone as
// too long (its start kept, the rest skipped), and the lines after it go on being split.

export type LineHandler = (text: string, line: number) => void;

/**
 * A line (or array element) over the line limit: its first HEAD_BYTES (cut at a character boundary, for the
 * reject record) and its full length. The body goes on; only this line is rejected (CONTRIBUTING.md rule 7).
 */
export type LongLineHandler = (line: number, head: Buffer, bytes: number) => void;

/** A body whose structure cannot be split into lines (a JSON body that is not an array): answered 400. */
export class BodyFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BodyFormatError';
  }
}

/** How much of a too-long line is kept for its reject record. */
export const HEAD_BYTES = 64 * 1024;

/** The longest prefix of `buf` that does not end inside a UTF-8 sequence. */
export function wholeCharacters(buf: Buffer): Buffer {
  let i = buf.length - 1;
  // Back over continuation bytes (10xxxxxx) to the lead byte of the last sequence, at most 3.
  while (i >= 0 && buf.length - i <= 4 && (buf[i] & 0xc0) === 0x80) i--;
  if (i < 0) return buf;
  const lead = buf[i];
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return buf.length - i >= need ? buf : buf.subarray(0, i);
}

/**
 * The bytes of the line being split. Up to the line limit it keeps them all; past it, only the first HEAD_BYTES
 * (copied, so the body's chunks are not held) and a count.
 */
class LineBytes {
  private parts: Buffer[] = [];
  /** Bytes of the current line so far. */
  bytes = 0;
  /** Past the limit: `parts` holds at most HEAD_BYTES of the line's start. */
  tooLong = false;
  private kept = 0;

  constructor(private readonly maxLineBytes: number) {}

  add(part: Buffer): void {
    if (part.length === 0) return;
    this.bytes += part.length;
    if (!this.tooLong) {
      if (this.bytes <= this.maxLineBytes) {
        this.parts.push(part);
        this.kept += part.length;
        return;
      }
      // Over the limit: keep the head only.
      this.tooLong = true;
      // (concat with a length copies at most that much: the body's chunks are not held.)
      const head = Buffer.concat([...this.parts, part], Math.min(HEAD_BYTES, this.kept + part.length));
      this.parts = [head];
      this.kept = head.length;
      return;
    }
    if (this.kept < HEAD_BYTES) {
      const take = Buffer.from(part.subarray(0, HEAD_BYTES - this.kept));
      this.parts.push(take);
      this.kept += take.length;
    }
  }

  /** The line's text (within the limit), or its head and length when it was too long; then starts the next line. */
  take(): { text: string } | { head: Buffer; bytes: number } {
    const result = this.tooLong
      ? { head: wholeCharacters(Buffer.concat(this.parts, this.kept)), bytes: this.bytes }
      : { text: this.parts.length === 1 ? this.parts[0].toString('utf8') : Buffer.concat(this.parts, this.kept).toString('utf8') };
    this.parts = [];
    this.kept = 0;
    this.bytes = 0;
    this.tooLong = false;
    return result;
  }
}

export interface Splitter {
  push(chunk: Buffer): void;
  end(): void;
  /** Lines (or elements) seen so far, blank ones included. */
  readonly lines: number;
}

const NL = 0x0a;
const CR = 0x0d;
const CR_BYTE = Buffer.from([CR]);

function isBlank(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d && c !== 0x0a && c !== 0xfeff) return false;
  }
  return true;
}

/** NDJSON: lines end with \n (a \r before it is dropped); blank lines are skipped but keep their number. */
export class NdjsonSplitter implements Splitter {
  private readonly current: LineBytes;
  /** The last chunk ended with \r: dropped if the next one starts with \n, else part of the line. */
  private pendingCr = false;
  lines = 0;

  constructor(
    private readonly maxLineBytes: number,
    private readonly onLine: LineHandler,
    private readonly onLongLine: LongLineHandler,
  ) {
    this.current = new LineBytes(maxLineBytes);
  }

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    let start = 0;
    if (this.pendingCr) {
      this.pendingCr = false;
      if (chunk[0] !== NL) this.current.add(CR_BYTE);
    }
    for (;;) {
      const nl = chunk.indexOf(NL, start);
      if (nl === -1) {
        let end = chunk.length;
        if (end > start && chunk[end - 1] === CR) {
          end--;
          this.pendingCr = true;
        }
        this.current.add(chunk.subarray(start, end));
        return;
      }
      this.lines++;
      let end = nl;
      if (end > start && chunk[end - 1] === CR) end--;
      if (this.current.bytes === 0 && end - start <= this.maxLineBytes) {
        if (end > start) this.emit(chunk.toString('utf8', start, end));
      } else {
        this.current.add(chunk.subarray(start, end));
        this.finishLine();
      }
      start = nl + 1;
    }
  }

  end(): void {
    if (this.current.bytes > 0 || this.pendingCr) {
      this.pendingCr = false;
      this.lines++;
      this.finishLine();
    }
  }

  private finishLine(): void {
    const taken = this.current.take();
    if ('text' in taken) this.emit(taken.text);
    else this.onLongLine(this.lines, taken.head, taken.bytes);
  }

  private emit(text: string): void {
    const c = text.charCodeAt(0);
    // Empty once its CR is dropped (a CRLF blank line whose \r and \n arrived in different chunks), or blank:
    // skipped, whatever the chunking. Blank check only when the line starts like one (JSON starts with `{`).
    if (text.length === 0 || ((c === 0x20 || c === 0x09 || c === 0x0d || c === 0xfeff) && isBlank(text))) return;
    this.onLine(text, this.lines);
  }
}

const enum ArrayState {
  Start,
  FirstValue,
  NextValue,
  Value,
  Done,
}

/**
 * A JSON array, element by element: strings and nesting are tracked to find the commas at depth 0, each
 * element's text is handed on whole (JSON.parse decides whether it is valid). An unterminated last element
 * is handed on as it is (and rejected as not JSON); a missing closing bracket is tolerated.
 */
export class JsonArraySplitter implements Splitter {
  private state = ArrayState.Start;
  private depth = 0;
  private inString = false;
  private escape = false;
  private readonly current: LineBytes;
  lines = 0;

  constructor(
    private readonly maxLineBytes: number,
    private readonly onLine: LineHandler,
    private readonly onLongLine: LongLineHandler,
  ) {
    this.current = new LineBytes(maxLineBytes);
  }

  push(chunk: Buffer): void {
    let valueStart = this.state === ArrayState.Value ? 0 : -1;
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i];
      switch (this.state) {
        case ArrayState.Start:
          if (isSpace(b)) continue;
          if (b === 0x5b /* [ */) {
            this.state = ArrayState.FirstValue;
            continue;
          }
          throw new BodyFormatError('an application/json body must be a JSON array of log lines (or NDJSON)');
        case ArrayState.FirstValue:
        case ArrayState.NextValue:
          if (isSpace(b)) continue;
          if (b === 0x5d /* ] */ && this.state === ArrayState.FirstValue) {
            this.state = ArrayState.Done;
            continue;
          }
          this.lines++;
          if (b === 0x2c /* , */) {
            this.onLine('', this.lines); // an empty element: rejected as not JSON
            this.state = ArrayState.NextValue;
            continue;
          }
          this.state = ArrayState.Value;
          this.depth = b === 0x7b || b === 0x5b ? 1 : 0;
          this.inString = b === 0x22;
          this.escape = false;
          valueStart = i;
          continue;
        case ArrayState.Value: {
          if (this.inString) {
            if (this.escape) this.escape = false;
            else if (b === 0x5c /* \ */) this.escape = true;
            else if (b === 0x22 /* " */) this.inString = false;
            continue;
          }
          if (b === 0x22) this.inString = true;
          else if (b === 0x7b || b === 0x5b) this.depth++;
          else if ((b === 0x7d || b === 0x5d) && this.depth > 0) this.depth--;
          else if (this.depth === 0 && (b === 0x2c /* , */ || b === 0x5d /* ] */)) {
            this.finishValue(chunk, valueStart, i);
            valueStart = -1;
            this.state = b === 0x2c ? ArrayState.NextValue : ArrayState.Done;
          }
          continue;
        }
        case ArrayState.Done:
          if (isSpace(b)) continue;
          throw new BodyFormatError('unexpected data after the end of the JSON array');
      }
    }
    if (this.state === ArrayState.Value && valueStart >= 0) this.keep(chunk.subarray(valueStart));
  }

  end(): void {
    if (this.state === ArrayState.Value) {
      this.state = ArrayState.Done;
      const taken = this.current.take();
      if (!('text' in taken)) this.onLongLine(this.lines, taken.head, taken.bytes);
      else if (!isBlank(taken.text)) this.onLine(taken.text, this.lines);
    }
  }

  private keep(part: Buffer): void {
    this.current.add(part);
  }

  private finishValue(chunk: Buffer, start: number, end: number): void {
    if (this.current.bytes === 0 && end - start <= this.maxLineBytes) {
      this.onLine(chunk.toString('utf8', start, end), this.lines);
      return;
    }
    this.current.add(chunk.subarray(start, end));
    const taken = this.current.take();
    if ('text' in taken) this.onLine(taken.text, this.lines);
    else this.onLongLine(this.lines, taken.head, taken.bytes);
  }
}

function isSpace(b: number): boolean {
  return b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
}

/**
 * For `application/json`: a body whose first non-blank byte is `[` is an array; anything else is read as
 * NDJSON (a single object is a one-line NDJSON body, and NDJSON sent with the generic type still works).
 */
export class SniffingSplitter implements Splitter {
  private inner: Splitter | undefined;
  private blanks: Buffer[] = [];
  constructor(
    private readonly maxLineBytes: number,
    private readonly onLine: LineHandler,
    private readonly onLongLine: LongLineHandler,
  ) {}

  get lines(): number {
    return this.inner?.lines ?? 0;
  }

  push(chunk: Buffer): void {
    if (!this.inner) {
      let i = 0;
      while (i < chunk.length && (isSpace(chunk[i]) || chunk[i] === 0xef || chunk[i] === 0xbb || chunk[i] === 0xbf)) i++;
      if (i === chunk.length) {
        // Only blanks so far: decide on a later chunk (NDJSON still needs them to number its lines).
        this.blanks.push(chunk);
        return;
      }
      if (chunk[i] === 0x5b) {
        this.inner = new JsonArraySplitter(this.maxLineBytes, this.onLine, this.onLongLine);
        chunk = chunk.subarray(i);
      } else {
        this.inner = new NdjsonSplitter(this.maxLineBytes, this.onLine, this.onLongLine);
        for (const blank of this.blanks) this.inner.push(blank);
      }
      this.blanks = [];
    }
    this.inner.push(chunk);
  }

  end(): void {
    this.inner?.end();
  }
}
