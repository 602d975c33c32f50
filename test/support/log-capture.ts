import { Writable } from 'node:stream';
import pino, { type Level } from 'pino';

/** A pino logger whose lines a test reads back as objects (`lines`), in the order they were written. */
export function captureLog(level: Level = 'debug'): { logger: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      done();
    },
  });
  return { logger: pino({ level }, stream), lines };
}
