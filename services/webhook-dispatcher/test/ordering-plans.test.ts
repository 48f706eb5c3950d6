import type { Pool, PoolClient } from '@inbox/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migratedPool } from './support.js';

let pool: Pool;

beforeAll(async () => {
  pool = await migratedPool();
});
afterAll(async () => {
  await pool?.end();
});

const workspace = '00000000-0000-4000-8000-000000000001';
const gapWaitMs = 600_000;

/** The plans of the statements `note_ordering` runs, as auto_explain reports them to this session. */
async function plansOfNote(client: PoolClient, key: string, seq: number): Promise<string[]> {
  const plans: string[] = [];
  const collect = (notice: { message?: string }) => {
    if (notice.message?.includes('ordering_progress')) plans.push(notice.message);
  };
  client.on('notice', collect);
  try {
    await client.query('select note_ordering($1, $2, $3, $4)', [workspace, key, seq, gapWaitMs]);
  } finally {
    client.off('notice', collect);
  }
  return plans;
}

describe('note_ordering on a table that grew after its plans were cached', () => {
  it('finds its row by the primary key, never by scanning every conversation', async () => {
    const client = await pool.connect();
    try {
      await client.query(`load 'auto_explain'`);
      await client.query(`set auto_explain.log_min_duration = 0`);
      await client.query(`set auto_explain.log_nested_statements = on`);
      await client.query(`set auto_explain.log_level = notice`);
      // A dispatcher's first events, on a new database whose table autovacuum has analyzed at one row:
      // the session caches the function's plans for that table (PL/pgSQL's generic plan, after five calls).
      await plansOfNote(client, 'conversation-0', 1);
      await client.query('analyze ordering_progress');
      for (let seq = 2; seq <= 8; seq++) await plansOfNote(client, 'conversation-0', seq);
      // Then one row per conversation, as every new conversation's first event adds.
      await client.query(
        `insert into ordering_progress (ordering_key, workspace_id, upto)
         select 'conversation-' || n, $1, 1 from generate_series(1, 5000) n`,
        [workspace],
      );

      const plans = [
        ...(await plansOfNote(client, 'conversation-0', 9)),
        ...(await plansOfNote(client, 'conversation-new', 1)),
      ];

      const lookups = plans.filter((plan) => !/Query Text: insert/.test(plan));
      expect(lookups.length).toBeGreaterThanOrEqual(4);
      for (const plan of lookups) {
        expect(plan).not.toMatch(/Seq Scan on ordering_progress/);
        expect(plan).toMatch(/Index Scan using ordering_progress_pkey/);
      }
      const { rows } = await client.query(
        'select ordering_key, upto from ordering_progress where ordering_key = any($1) order by ordering_key',
        [['conversation-0', 'conversation-new']],
      );
      expect(rows).toEqual([
        { ordering_key: 'conversation-0', upto: 9 },
        { ordering_key: 'conversation-new', upto: 1 },
      ]);
    } finally {
      client.release();
    }
  });
});

describe("a gap in a conversation's ordering", () => {
  const note = (key: string, seq: number) =>
    pool.query('select note_ordering($1, $2, $3, $4)', [workspace, key, seq, gapWaitMs]);
  /** Its open gap dated from before the wait, as if it had been open that long. */
  const openedBeforeTheWait = (key: string) =>
    pool.query(
      `update ordering_progress set gap_since = now() - $2 * interval '1 millisecond' - interval '1 second'
        where ordering_key = $1`,
      [key, gapWaitMs],
    );
  const progress = async (key: string) =>
    (
      await pool.query<{ upto: string; ahead: string[]; open: boolean }>(
        `select upto::text, ahead::text[], gap_since is not null as open from ordering_progress
          where ordering_key = $1`,
        [key],
      )
    ).rows[0];

  it('is waited for while it is young, and given up once it has been open for the wait', async () => {
    const key = `gap-${Date.now()}`;
    await note(key, 1);
    await note(key, 3);
    expect(await progress(key)).toEqual({ upto: '1', ahead: ['3'], open: true });
    await note(key, 4);
    expect(await progress(key)).toEqual({ upto: '1', ahead: ['3', '4'], open: true });
    // Redelivered within the wait, the missing event closes the gap.
    await note(key, 2);
    expect(await progress(key)).toEqual({ upto: '4', ahead: [], open: false });

    await note(key, 6);
    await openedBeforeTheWait(key);
    // The next event after the wait gives the lost number up: what follows is not held behind it.
    await note(key, 7);
    expect(await progress(key)).toEqual({ upto: '7', ahead: [], open: false });
    await note(key, 8);
    expect(await progress(key)).toEqual({ upto: '8', ahead: [], open: false });
    // The lost event, if it ever comes, changes nothing.
    await note(key, 5);
    expect(await progress(key)).toEqual({ upto: '8', ahead: [], open: false });
  });

  it('is waited for from when it opened, not from when an earlier gap did', async () => {
    const key = `second-gap-${Date.now()}`;
    for (const seq of [1, 3, 5]) await note(key, seq);
    await openedBeforeTheWait(key);
    // The old gap closes; the one at 4 opens now, and is waited for as long.
    await note(key, 2);
    expect(await progress(key)).toEqual({ upto: '3', ahead: ['5'], open: true });
    await note(key, 6);
    expect(await progress(key)).toEqual({ upto: '3', ahead: ['5', '6'], open: true });
    await note(key, 4);
    expect(await progress(key)).toEqual({ upto: '6', ahead: [], open: false });
  });

  it('is given up once a thousand numbers wait behind it, however young', async () => {
    const key = `burst-${Date.now()}`;
    await note(key, 1);
    await pool.query('select note_ordering($1, $2, n, $3) from generate_series(3, 1001) n', [
      workspace,
      key,
      gapWaitMs,
    ]);
    expect((await progress(key))?.ahead).toHaveLength(999);
    await pool.query('select note_ordering($1, $2, n, $3) from generate_series(1002, 1003) n', [
      workspace,
      key,
      gapWaitMs,
    ]);
    expect(await progress(key)).toEqual({ upto: '1003', ahead: [], open: false });
  });

  it("is noted the same through the release before's call, with its wait", async () => {
    const key = `old-release-${Date.now()}`;
    for (const seq of [1, 3, 2]) await pool.query('select note_ordering($1, $2, $3)', [workspace, key, seq]);
    expect(await progress(key)).toEqual({ upto: '3', ahead: [], open: false });
  });
});
