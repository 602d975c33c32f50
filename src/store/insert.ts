import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { ClickHouseSettings } from '@clickhouse/client';
import type { Store } from './client.js';

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

export interface BatchInsert {
  table: string;
  /** Column list of the rows, when the format needs one (TabSeparated); JSON formats name their columns. */
  columns?: readonly string[];
  /** A ClickHouse input format: JSONEachRow, TabSeparated, ... */
  format: string;
  /** The rows, already encoded in `format`, newline-terminated where the format wants it. */
  parts: ReadonlyArray<Buffer | string>;
  settings: ClickHouseSettings;
  /**
   * Embedded store: a directory for a batch file chDB reads itself (INSERT ... FROM INFILE), several times faster
   * than rows passed through the client and without copying the batch into the statement. Ignored for a server.
   */
  infileDir?: string;
  /** Distinguishes concurrent batch files of one process. */
  fileTag: string;
}

/** One INSERT of an encoded batch: the only place that builds insert statements from rows already encoded. */
export async function insertEncoded(store: Pick<Store, 'client' | 'mode'>, b: BatchInsert): Promise<void> {
  if (!IDENTIFIER.test(b.table) || !IDENTIFIER.test(b.format) || !(b.columns ?? []).every((c) => IDENTIFIER.test(c))) {
    throw new Error(`invalid insert target ${JSON.stringify({ table: b.table, format: b.format, columns: b.columns })}`);
  }
  const columns = b.columns ? ` (${b.columns.join(', ')})` : '';
  if (b.infileDir && store.mode === 'embedded') {
    const path = join(b.infileDir, `${b.table}-${process.pid}-${b.fileTag}.${b.format.toLowerCase()}`);
    try {
      await writeFile(path, b.parts);
      // The path is ours (under DATA_DIR); quoted as a ClickHouse string literal all the same.
      const literal = `'${path.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
      await store.client.command({ query: `INSERT INTO ${b.table}${columns} FROM INFILE ${literal} FORMAT ${b.format}`, clickhouse_settings: b.settings });
    } finally {
      await rm(path, { force: true });
    }
    return;
  }
  const result = await store.client.exec({
    query: `INSERT INTO ${b.table}${columns} FORMAT ${b.format}`,
    values: Readable.from(b.parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : p))),
    clickhouse_settings: b.settings,
  });
  await new Promise<void>((resolve, reject) => {
    result.stream.on('error', reject);
    result.stream.on('end', resolve);
    result.stream.resume();
  });
}
