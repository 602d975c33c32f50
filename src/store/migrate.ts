import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Store } from './client.js';
import type { Logger } from '../log.js';

export const MIGRATIONS_DIR = fileURLToPath(new URL('../../sql/', import.meta.url));

const FILE_NAME = /^(\d{3})_[a-z][a-z0-9]*(?:_[a-z0-9]+)+\.sql$/;

export interface Migration {
  version: number;
  name: string;
  checksum: string;
  statements: string[];
}

export class MigrationError extends Error {
  /** The store error a statement failed with, when one did (a transient one is retried at start-up). */
  override readonly cause?: unknown;
  constructor(message: string, readonly file?: string, cause?: unknown) {
    super(message);
    this.name = 'MigrationError';
    if (cause !== undefined) this.cause = cause;
  }
}

/** Splits a migration into statements at semicolons that end a line; comments are kept with their statement. */
export function splitStatements(sql: string): string[] {
  return sql
    .split(/;[ \t]*(?:\r?\n|$)/)
    .map((s) => s.trim())
    .filter((s) => s.replace(/--[^\n]*/g, '').trim().length > 0);
}

export function loadMigrations(dir = MIGRATIONS_DIR): Migration[] {
  const files = readdirSync(dir).filter((f) => f.endsWith('.sql')).sort();
  const seen = new Map<number, string>();
  return files.map((file) => {
    const m = FILE_NAME.exec(file);
    if (!m) throw new MigrationError(`migration file name ${file} does not match NNN_<verb>_<object>.sql`, file);
    const version = Number(m[1]);
    const clash = seen.get(version);
    if (clash) throw new MigrationError(`migrations ${clash} and ${file} share the number ${m[1]}`, file);
    seen.set(version, file);
    const text = readFileSync(join(dir, file), 'utf8');
    return {
      version,
      name: file,
      checksum: createHash('sha256').update(text).digest('hex'),
      statements: splitStatements(text),
    };
  });
}

const IDENT = String.raw`(?:\x60[^\x60]+\x60|[A-Za-z_][A-Za-z0-9_.]*)`;
const REPLICA_ARGS = `'/clickhouse/tables/{shard}/{database}/{table}', '{replica}'`;

/**
 * Renders a statement for a ClickHouse cluster: `ON CLUSTER` after the object name, and every
 * `*MergeTree` engine as its `Replicated*` variant with the conventional ZooKeeper path and replica
 * macros. Statements of a shape this does not know are an error, so a new kind of DDL cannot slip
 * through unreplicated. See sql/README.md.
 */
export function renderForCluster(statement: string, cluster: string): string {
  const onCluster = `ON CLUSTER '${cluster}'`;
  const body = statement.replace(/^(\s*--[^\n]*\n)*/, '');
  const head = new RegExp(
    String.raw`^(\s*(?:--[^\n]*\n\s*)*)(CREATE\s+(?:TABLE|DATABASE|(?:MATERIALIZED\s+)?VIEW|DICTIONARY)\s+(?:IF\s+NOT\s+EXISTS\s+)?${IDENT}|ALTER\s+TABLE\s+${IDENT}|DROP\s+(?:TABLE|VIEW|DICTIONARY)\s+(?:IF\s+EXISTS\s+)?${IDENT}|RENAME\s+TABLE\s+${IDENT}\s+TO\s+${IDENT}|OPTIMIZE\s+TABLE\s+${IDENT})`,
    'i',
  );
  // An INSERT ... SELECT between the server's own tables (023's catch-up of rows written during its copy) has no
  // ON CLUSTER form: it runs on the server connected to, and replication carries its rows to the shard's others.
  if (new RegExp(String.raw`^(\s*--[^\n]*\n)*\s*INSERT\s+INTO\s+${IDENT}\s*(\([^)]*\)\s*)?SELECT\s`, 'i').test(statement)) return statement;
  const m = head.exec(statement);
  if (!m) {
    throw new MigrationError(`cannot render the cluster variant of: ${body.slice(0, 80).replace(/\s+/g, ' ')}...`);
  }
  let out = `${m[1]}${m[2]} ${onCluster}${statement.slice(m[0].length)}`;
  out = out.replace(/ENGINE\s*=\s*(\w*)MergeTree(\s*\(([^)]*)\))?/gi, (_all, kind: string, _args, inner?: string) => {
    if (/^Replicated/i.test(kind)) return _all;
    const args = inner && inner.trim() ? `${REPLICA_ARGS}, ${inner.trim()}` : REPLICA_ARGS;
    return `ENGINE = Replicated${kind}MergeTree(${args})`;
  });
  return out;
}

export function renderStatement(statement: string, cluster: string | undefined): string {
  return cluster ? renderForCluster(statement, cluster) : statement;
}

const LEDGER_DDL = `CREATE TABLE IF NOT EXISTS schema_migrations
(
    version UInt32,
    name String,
    checksum String,   -- sha256 of the file as applied
    applied_at DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = MergeTree
ORDER BY version
SETTINGS non_replicated_deduplication_window = 1000`;

export interface MigrateResult {
  applied: string[];
  skipped: number;
}

/** Applies every migration not yet recorded, in order; verifies the checksum of those that are. */
export async function migrate(store: Store, opts: { dir?: string; logger?: Logger } = {}): Promise<MigrateResult> {
  const migrations = loadMigrations(opts.dir);
  await store.client.command({ query: renderStatement(LEDGER_DDL, store.cluster) });
  const applied = await appliedMigrations(store);
  const result: MigrateResult = { applied: [], skipped: 0 };
  for (const migration of migrations) {
    const record = applied.get(migration.version);
    if (record) {
      if (record.checksum !== migration.checksum) {
        throw new MigrationError(
          `migration ${migration.name} was changed after it was applied (checksum ${migration.checksum.slice(0, 12)} != recorded ${record.checksum.slice(0, 12)}); add a new migration instead of editing an applied one`,
          migration.name,
        );
      }
      result.skipped++;
      continue;
    }
    for (const statement of migration.statements) {
      try {
        await store.client.command({ query: renderStatement(statement, store.cluster) });
      } catch (err) {
        throw new MigrationError(
          `migration ${migration.name} failed: ${err instanceof Error ? err.message : String(err)}`,
          migration.name,
          err,
        );
      }
    }
    await store.client.insert({
      table: 'schema_migrations',
      values: [{ version: migration.version, name: migration.name, checksum: migration.checksum }],
      format: 'JSONEachRow',
      // A stable token: a ledger insert retried by the client is not recorded twice.
      clickhouse_settings: { insert_deduplication_token: `migration-${migration.version}-${migration.checksum}` },
    });
    opts.logger?.debug({ migration: migration.name }, 'migration applied');
    result.applied.push(migration.name);
  }
  return result;
}

async function appliedMigrations(store: Store): Promise<Map<number, { name: string; checksum: string }>> {
  const rs = await store.client.query({
    query: 'SELECT version, any(name) AS name, any(checksum) AS checksum FROM schema_migrations GROUP BY version',
    format: 'JSONEachRow',
  });
  const rows = await rs.json<{ version: number; name: string; checksum: string }>();
  return new Map(rows.map((r) => [Number(r.version), { name: r.name, checksum: r.checksum }]));
}

/** Names of migrations on disk that the store has not recorded (for /readyz). */
export async function pendingMigrations(store: Store, dir?: string): Promise<string[]> {
  const applied = await appliedMigrations(store);
  return loadMigrations(dir)
    .filter((m) => !applied.has(m.version))
    .map((m) => m.name);
}
