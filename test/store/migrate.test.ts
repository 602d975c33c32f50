import { cpSync, mkdtempSync, writeFileSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../src/store/client.js';
import {
  MIGRATIONS_DIR,
  MigrationError,
  loadMigrations,
  migrate,
  renderForCluster,
  splitStatements,
} from '../../src/store/migrate.js';
import { processDataDir, queryRows } from '../support/store.js';

let store: Store;

beforeAll(async () => {
  store = await openStore({ dataDir: processDataDir(), database: 'migrate_test' });
});
afterAll(async () => {
  await store.close();
});

describe('migrations', () => {
  it('apply once, and a second run changes nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sql-'));
    cpSync(MIGRATIONS_DIR, dir, { recursive: true });
    const first = await migrate(store, { dir });
    const files = readdirSync(dir).filter((f) => f.endsWith('.sql')).sort();
    expect(first.applied).toEqual(files);
    const tablesBefore = await queryRows<{ name: string }>(
      { store },
      'SELECT name FROM system.tables WHERE database = currentDatabase() ORDER BY name',
    );
    const ledgerBefore = await queryRows({ store }, 'SELECT version, name, checksum FROM schema_migrations ORDER BY version');

    const second = await migrate(store, { dir });
    expect(second).toEqual({ applied: [], skipped: files.length });
    expect(
      await queryRows({ store }, 'SELECT name FROM system.tables WHERE database = currentDatabase() ORDER BY name'),
    ).toEqual(tablesBefore);
    expect(await queryRows({ store }, 'SELECT version, name, checksum FROM schema_migrations ORDER BY version')).toEqual(
      ledgerBefore,
    );
    expect(ledgerBefore).toHaveLength(files.length);
  });

  it('refuses to start when an applied migration was edited, naming the file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sql-'));
    cpSync(MIGRATIONS_DIR, dir, { recursive: true });
    await migrate(store, { dir });
    const file = '001_create_ingest_rejects.sql';
    writeFileSync(join(dir, file), `${readFileSync(join(dir, file), 'utf8')}\n-- edited\n`);
    const err = await migrate(store, { dir }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MigrationError);
    expect((err as MigrationError).file).toBe(file);
    expect((err as Error).message).toContain(file);
  });

  it('rejects badly named migration files', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sql-'));
    writeFileSync(join(dir, '1_things.sql'), 'SELECT 1');
    expect(() => loadMigrations(dir)).toThrow(/1_things\.sql does not match NNN_<verb>_<object>\.sql/);
  });

  it('renders every migration for a cluster, and ClickHouse parses the result', async () => {
    const migrations = loadMigrations();
    expect(migrations.length).toBeGreaterThan(0);
    let engines = 0;
    for (const m of migrations) {
      for (const statement of m.statements) {
        const rendered = renderForCluster(statement, 'tallyhouse_cluster');
        // An INSERT ... SELECT (023's catch-up) runs on the server connected to: no ON CLUSTER form exists.
        if (/^(\s*--[^\n]*\n)*\s*INSERT\s/i.test(statement)) {
          expect(rendered, m.name).toBe(statement);
          continue;
        }
        expect(rendered, m.name).toMatch(/ON CLUSTER 'tallyhouse_cluster'/);
        expect(rendered, m.name).not.toMatch(/ENGINE\s*=\s*(?!Replicated)\w*MergeTree/);
        if (/ENGINE\s*=/.test(rendered)) engines++;
        const [row] = await queryRows<{ q: string }>({ store }, 'SELECT formatQuery({sql:String}) AS q', {
          sql: rendered,
        });
        expect(row.q, m.name).toContain('ON CLUSTER tallyhouse_cluster');
      }
    }
    expect(engines).toBeGreaterThan(0);
  });

  it('renders the engine shapes it meets', () => {
    expect(
      renderForCluster('CREATE TABLE IF NOT EXISTS t (a UInt8, v UInt64) ENGINE = ReplacingMergeTree(v) ORDER BY a', 'c'),
    ).toBe(
      "CREATE TABLE IF NOT EXISTS t ON CLUSTER 'c' (a UInt8, v UInt64) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}', v) ORDER BY a",
    );
    expect(renderForCluster('ALTER TABLE t ADD COLUMN IF NOT EXISTS b String', 'c')).toBe(
      "ALTER TABLE t ON CLUSTER 'c' ADD COLUMN IF NOT EXISTS b String",
    );
    expect(() => renderForCluster('INSERT INTO t VALUES (1)', 'c')).toThrow(MigrationError);
    expect(renderForCluster('-- catch up\nINSERT INTO t (a, b) SELECT a, b FROM u', 'c')).toBe('-- catch up\nINSERT INTO t (a, b) SELECT a, b FROM u');
  });

  it('splits statements at semicolons ending a line only', () => {
    expect(splitStatements("-- a comment; still a comment\nCREATE TABLE a (s String DEFAULT ';') ENGINE = Log;\n\nSELECT 1;\n")).toEqual([
      "-- a comment; still a comment\nCREATE TABLE a (s String DEFAULT ';') ENGINE = Log",
      'SELECT 1',
    ]);
  });
});
