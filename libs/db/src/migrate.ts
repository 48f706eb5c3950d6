import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type pg from 'pg';
import { assertIdentifier, connectWithoutTimeouts } from './pool.js';

export interface MigrateOptions {
  schema: string;
  /** Folder of numbered SQL files: `001_contacts.sql`, `002_...`; applied in number order, once each. */
  directory: string;
  /** Also create the transactional outbox table in the schema. */
  outbox?: boolean;
  /**
   * Called while this replica waits for another to finish migrating, first after `reportEveryMs` and
   * then every `reportEveryMs`, with the session that holds the lock: a build that runs for minutes and
   * a replica stuck behind a lock that is never let go look alike from outside otherwise.
   */
  onWaiting?: (waiting: MigrationLockWait) => void;
  /** How often onWaiting is called; 30 s unless told. */
  reportEveryMs?: number;
  /**
   * How long a statement waits for a table's lock before the migration gives up and tries again (its
   * file from the start, after a pause); 2 s unless told. A statement waiting for a lock holds every
   * later query of that table behind it, and a migration runs while the release before still serves:
   * an `alter table` queued behind one long statement stopped every tenant's queries of the table.
   * Concurrent index builds wait for older transactions by design, and are left to wait.
   */
  lockTimeoutMs?: number;
  /** Called each time a migration gave up waiting for a lock, before it tries again. */
  onLockTimeout?: (timeout: { schema: string; migration: string; attempts: number }) => void;
}

/** The session holding a schema's migration lock, as this replica waits for it. */
export interface MigrationLockWait {
  schema: string;
  waitedMs: number;
  /** Undefined when the holder let go between the try and the look. */
  holder?: { pid: number; applicationName: string; state: string | null; since: Date | null; query: string };
}

/**
 * The outbox's own steps, applied before the service's files. They take versions 0, -1, -2, … in the
 * service's schema_migrations: a service's files are numbered from 1, so the two never collide, and an
 * install that already has version 0 gets only the later steps.
 */
const outboxMigrations = [
  {
    version: 0,
    name: '000_outbox (from @inbox/db)',
    sql: `
      create table outbox (
        seq bigserial primary key,
        id uuid not null unique,
        type text not null,
        workspace_id uuid not null,
        occurred_at timestamptz not null,
        data jsonb not null,
        trace_context jsonb,
        published_at timestamptz,
        -- The writing transaction: the relay only takes rows of transactions older than every running one,
        -- so a row written earlier but committed later is never overtaken.
        txid xid8 not null default pg_current_xact_id()
      );
      create index outbox_pending on outbox (seq) where published_at is null;
    `,
  },
  {
    version: -1,
    name: '000_outbox_dead_letters (from @inbox/db)',
    sql: `
      -- A row the broker refuses is set aside (failed_at) instead of blocking every row behind it.
      alter table outbox
        add column failed_at timestamptz,
        add column publish_error text,
        add column publish_attempts int not null default 0;
      drop index outbox_pending;
      create index outbox_pending on outbox (seq) where published_at is null and failed_at is null;
    `,
  },
  {
    version: -2,
    name: '000_outbox_pruning (from @inbox/db)',
    sql: `
      -- Published rows are deleted once past their retention; this finds them without reading the rest.
      create index outbox_published on outbox (published_at) where published_at is not null;
    `,
  },
  {
    version: -3,
    name: '000_outbox_ordering (from @inbox/db)',
    sql: `
      -- Each ordering key's last sequence number: taken and raised in the transaction that writes the
      -- event, so a key's numbers follow commit order with no gaps (the row lock serialises writers).
      create table event_sequences (
        ordering_key text primary key,
        seq bigint not null
      );
      alter table outbox add column ordering_key text, add column ordering_seq bigint;
    `,
  },
];

/**
 * A file whose first line is this runs statement by statement outside a transaction: what Postgres runs
 * only that way, `create index concurrently` above all, which builds an index while the table goes on
 * taking writes (a plain `create index` holds them back for the whole build, and a migration runs while
 * the release before still serves). Each statement must be safe to run again (`if not exists`,
 * `if exists`), since a failure part-way leaves the file to be run again from its start; a statement ends
 * with `;` at a line's end, and none may hold a `;` at a line's end inside it (no function bodies).
 */
const withoutTransaction = /^--\s*migrate:\s*without a transaction\s*$/;

/**
 * Drops the schema's invalid indexes: what a concurrent build left when it failed or its process died.
 * `create index concurrently if not exists` would take one for done. Called with the migration lock held,
 * so no build of ours is under way.
 */
async function dropInvalidIndexes(client: pg.PoolClient, schema: string): Promise<void> {
  const { rows } = await client.query<{ name: string }>(
    `select format('%I.%I', n.nspname, c.relname) as name
       from pg_index i join pg_class c on c.oid = i.indexrelid join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = $1 and not i.indisvalid`,
    [schema],
  );
  for (const { name } of rows) await client.query(`drop index concurrently if exists ${name}`);
}

/** The statements of a file run without a transaction, comments and blank lines left out. */
function statementsOf(sql: string): string[] {
  return sql
    .split(/;\s*$/m)
    .map((chunk) =>
      chunk
        .split('\n')
        .filter((line) => !/^\s*--/.test(line))
        .join('\n')
        .trim(),
    )
    .filter((statement) => statement.length > 0);
}

/**
 * Waits for the schema's migration lock without holding a snapshot: a session blocked in
 * `pg_advisory_lock` holds one, and `create index concurrently` in the session that has the lock waits
 * for every such snapshot to end, which would be a deadlock.
 */
async function takeMigrationLock(
  client: pg.PoolClient,
  schema: string,
  { onWaiting, reportEveryMs = 30_000 }: Pick<MigrateOptions, 'onWaiting' | 'reportEveryMs'>,
): Promise<void> {
  const started = Date.now();
  let reported = started;
  for (;;) {
    const { rows } = await client.query<{ taken: boolean }>(
      'select pg_try_advisory_lock(hashtext($1)) as taken',
      [`migrate:${schema}`],
    );
    if (rows[0]?.taken) return;
    if (onWaiting && Date.now() - reported >= reportEveryMs) {
      reported = Date.now();
      onWaiting({ schema, waitedMs: reported - started, holder: await lockHolder(client, schema) });
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Who holds the schema's migration lock. pg_locks splits an advisory lock's 64-bit key into classid (the
 * high half) and objid (the low half), with objsubid 1 for a key taken as one bigint.
 */
async function lockHolder(client: pg.PoolClient, schema: string): Promise<MigrationLockWait['holder']> {
  const { rows } = await client.query<NonNullable<MigrationLockWait['holder']>>(
    `select a.pid, a.application_name as "applicationName", a.state, a.query_start as since,
            left(a.query, 200) as query
       from pg_locks l join pg_stat_activity a on a.pid = l.pid
      where l.locktype = 'advisory' and l.granted and l.objsubid = 1
        and l.database = (select oid from pg_database where datname = current_database())
        and l.classid::bigint = (hashtext($1)::bigint >> 32) & 4294967295
        and l.objid::bigint = hashtext($1)::bigint & 4294967295
      limit 1`,
    [`migrate:${schema}`],
  );
  return rows[0];
}

/** Statements that wait for older transactions to end, as a concurrent index build or drop does. */
const waitsForOlderTransactions = /^(create\s+(unique\s+)?index|drop\s+index)\s+concurrently\b/i;

/** What Postgres answers a statement that gave up waiting for a lock (lock_timeout). */
const lockNotAvailable = '55P03';

/**
 * apply, again after a pause for as long as a statement gives up waiting for a lock: the file is run
 * again from its start (a transaction's is rolled back whole; a file run statement by statement is safe
 * to run again, as withoutTransaction requires).
 */
async function applyWhenLocksAllow(
  client: pg.PoolClient,
  schema: string,
  migration: { version: number; name: string; sql: string },
  { lockTimeoutMs, onLockTimeout }: { lockTimeoutMs: number; onLockTimeout: MigrateOptions['onLockTimeout'] },
): Promise<void> {
  for (let attempts = 1, pause = 100; ; attempts++, pause = Math.min(pause * 2, 5_000)) {
    try {
      return await apply(client, schema, migration, lockTimeoutMs);
    } catch (error) {
      if ((error as { cause?: { code?: string } }).cause?.code !== lockNotAvailable) throw error;
      onLockTimeout?.({ schema, migration: migration.name, attempts });
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

/** Runs one migration and records it: in a transaction, or statement by statement (withoutTransaction). */
async function apply(
  client: pg.PoolClient,
  schema: string,
  migration: { version: number; name: string; sql: string },
  lockTimeoutMs: number,
): Promise<void> {
  const record = () =>
    client.query('insert into schema_migrations (version, name) values ($1, $2)', [
      migration.version,
      migration.name,
    ]);
  const outside = withoutTransaction.test(migration.sql.split('\n', 1)[0] ?? '');
  const waitingAtMost = (ms: number) => client.query(`set lock_timeout to ${Math.max(0, Math.floor(ms))}`);
  await waitingAtMost(lockTimeoutMs);
  if (!outside) await client.query('begin');
  try {
    if (outside) {
      await waitingAtMost(0);
      await dropInvalidIndexes(client, schema);
      for (const statement of statementsOf(migration.sql)) {
        await waitingAtMost(waitsForOlderTransactions.test(statement) ? 0 : lockTimeoutMs);
        await client.query(statement);
      }
    } else {
      await client.query(migration.sql);
    }
    await record();
    if (!outside) await client.query('commit');
  } catch (error) {
    if (!outside) await client.query('rollback');
    throw new Error(`migration ${migration.name} of schema ${schema} failed`, { cause: error });
  }
}

async function readMigrations(directory: string) {
  const files = (await readdir(directory)).filter((file) => /^\d+_.+\.sql$/.test(file));
  const migrations = await Promise.all(
    files.map(async (file) => ({
      version: Number(file.split('_')[0]),
      name: file,
      sql: await readFile(join(directory, file), 'utf8'),
    })),
  );
  migrations.sort((a, b) => a.version - b.version);
  const versions = new Set<number>();
  for (const { version, name } of migrations) {
    if (version === 0) throw new Error(`${name}: version 0 is reserved for the outbox`);
    if (versions.has(version)) throw new Error(`two migrations share number ${version} in ${directory}`);
    versions.add(version);
  }
  return migrations;
}

/**
 * Brings the service's schema up to date. Every replica may call it at start-up at once: an advisory
 * lock lets one apply the files while the others wait and then find nothing left to do.
 */
export async function migrate(
  pool: pg.Pool,
  { schema, directory, outbox = false, lockTimeoutMs = 2_000, onLockTimeout, ...waiting }: MigrateOptions,
): Promise<string[]> {
  assertIdentifier(schema);
  const migrations = [...(outbox ? outboxMigrations : []), ...(await readMigrations(directory))];
  const client = await connectWithoutTimeouts(pool);
  const applied: string[] = [];
  try {
    await takeMigrationLock(client, schema, waiting);
    await client.query(`create schema if not exists ${schema}`);
    await client.query(`set search_path to ${schema}`);
    await client.query(
      'create table if not exists schema_migrations (version int primary key, name text not null, applied_at timestamptz not null default now())',
    );
    const { rows } = await client.query<{ version: number }>('select version from schema_migrations');
    const done = new Set(rows.map((row) => row.version));
    for (const migration of migrations) {
      if (done.has(migration.version)) continue;
      await applyWhenLocksAllow(client, schema, migration, { lockTimeoutMs, onLockTimeout });
      applied.push(migration.name);
    }
  } finally {
    await client
      .query('select pg_advisory_unlock(hashtext($1))', [`migrate:${schema}`])
      .catch(() => undefined);
    await client.query('reset search_path').catch(() => undefined);
    client.release();
  }
  return applied;
}
