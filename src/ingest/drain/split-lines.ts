// Splits a drain body into lines as its bytes arrive: NDJSON (one JSON value per line) or a JSON array (one
// line per element). Nothing but the current line is held; a line longer than the limit stops the body.

export type LineHandler = (text: string, line: number) => void;

/** A line (or array element) over the line limit: the request is answered 413. */
export class LineTooLongError extends Error {
  /** The start of the line (at most HEAD_BYTES), for the reject record. */
  head: Buffer = Buffer.alloc(0);
  constructor(readonly line: number, readonly maxLineBytes: number) {
    super(`line ${line} is longer than the ${maxLineBytes}-byte line limit`);
    this.name = 'LineTooLongError';
  }
}

/** A body whose structure cannot be split into lines (a JSON body that is not an array): answered 400. */
export class BodyFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BodyFormatError';
  }
}

const HEAD_BYTES = 64 * 1024;

function tooLong(line: number, max: number, parts: Buffer[]): LineTooLongError {
  const err = new LineTooLongError(line, max);
  const head: Buffer[] = [];
  let bytes = 0;
  for (const p of parts) {
    if (bytes >= HEAD_BYTES) break;
    const take = p.subarray(0, HEAD_BYTES - bytes);
    head.push(take);
    bytes += take.length;
  }
  err.head = Buffer.concat(head);
  return err;
}

export interface Splitter {
  push(chunk: Buffer): void;
  end(): void;
  /** Lines (or elements) seen so far, blank ones included. */
  readonly lines: number;
}

const NL = 0x0a;
const CR = 0x0d;

function isBlank(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d && c !== 0x0a && c !== 0xfeff) return false;
  }
  return true;
}

/** NDJSON: lines end with \n (a \r before it is dropped); blank lines are skipped but keep their number. */
export class NdjsonSplitter implements Splitter {
  private carry: Buffer[] = [];
  private carryBytes = 0;
  lines = 0;

  constructor(private readonly maxLineBytes: number, private readonly onLine: LineHandler) {}

  push(chunk: Buffer): void {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(NL, start);
      if (nl === -1) {
        const rest = chunk.length - start;
        if (rest > 0) {
          if (this.carryBytes + rest > this.maxLineBytes) throw tooLong(this.lines + 1, this.maxLineBytes, [...this.carry, chunk.subarray(start)]);
          this.carry.push(chunk.subarray(start));
          this.carryBytes += rest;
        }
        return;
      }
      this.lines++;
      let end = nl;
      if (this.carryBytes === 0) {
        if (end > start && chunk[end - 1] === CR) end--;
        if (end - start > this.maxLineBytes) throw tooLong(this.lines, this.maxLineBytes, [chunk.subarray(start, end)]);
        if (end > start) this.emit(chunk.toString('utf8', start, end));
      } else {
        if (this.carryBytes + (nl - start) > this.maxLineBytes) throw tooLong(this.lines, this.maxLineBytes, [...this.carry, chunk.subarray(start, nl)]);
        this.carry.push(chunk.subarray(start, nl));
        this.carryBytes += nl - start;
        this.emit(this.takeCarry());
      }
      start = nl + 1;
    }
  }

  end(): void {
    if (this.carryBytes > 0) {
      this.lines++;
      this.emit(this.takeCarry());
    }
  }

  private takeCarry(): string {
    let buf = Buffer.concat(this.carry, this.carryBytes);
    this.carry = [];
    this.carryBytes = 0;
    if (buf.length > 0 && buf[buf.length - 1] === CR) buf = buf.subarray(0, buf.length - 1);
    return buf.toString('utf8');
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
  private parts: Buffer[] = [];
  private partBytes = 0;
  lines = 0;

  constructor(private readonly maxLineBytes: number, private readonly onLine: LineHandler) {}

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
      const text = Buffer.concat(this.parts, this.partBytes).toString('utf8');
      this.parts = [];
      this.partBytes = 0;
      this.state = ArrayState.Done;
      if (!isBlank(text)) this.onLine(text, this.lines);
    }
  }

  private keep(part: Buffer): void {
    if (this.partBytes + part.length > this.maxLineBytes) throw tooLong(this.lines, this.maxLineBytes, [...this.parts, part]);
    this.parts.push(part);
    this.partBytes += part.length;
  }

  private finishValue(chunk: Buffer, start: number, end: number): void {
    let text: string;
    if (this.partBytes === 0) {
      if (end - start > this.maxLineBytes) throw tooLong(this.lines, this.maxLineBytes, [chunk.subarray(start, end)]);
      text = chunk.toString('utf8', start, end);
    } else {
      this.keep(chunk.subarray(start, end));
      text = Buffer.concat(this.parts, this.partBytes).toString('utf8');
      this.parts = [];
      this.partBytes = 0;
    }
    this.onLine(text, this.lines);
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
  constructor(private readonly maxLineBytes: number, private readonly onLine: LineHandler) {}

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
        this.inner = new JsonArraySplitter(this.maxLineBytes, this.onLine);
        chunk = chunk.subarray(i);
      } else {
        this.inner = new NdjsonSplitter(this.maxLineBytes, this.onLine);
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
