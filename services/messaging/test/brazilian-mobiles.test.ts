import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { createPool, migrate, type Pool } from '@inbox/db';
import { createDatabase } from '@inbox/testkit';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';

// Migration 013 gives stored Brazilian mobiles their ninth digit, as canonicalPhone writes every new one,
// leaving a contact whose workspace already has the number with its nine, and landlines, as they are.

const migrations = new URL('../migrations/', import.meta.url);
let pool: Pool;

beforeAll(async () => {
  pool = createPool({ url: await createDatabase(inject('infra').postgresAdminUrl), schema: 'messaging' });
  await migrate(pool, { schema: 'messaging', directory: fileURLToPath(migrations), outbox: true });
});
afterAll(async () => {
  await pool?.end();
});

it('gives stored Brazilian mobiles their ninth digit, leaving twins and landlines as they are', async () => {
  const workspace = randomUUID();
  const other = randomUUID();
  const stored = [
    [workspace, '+553188887777'],
    [workspace, '+5531988887777'],
    [workspace, '+554199990000'],
    [workspace, '+553133334444'],
    [workspace, '+12025550123'],
    [other, '+553188887777'],
  ];
  for (const [workspaceId, phone] of stored)
    await pool.query('insert into contacts (id, workspace_id, phone) values ($1, $2, $3)', [
      randomUUID(),
      workspaceId,
      phone,
    ]);
  await pool.query(await readFile(new URL('013_brazilian_mobiles_with_nine.sql', migrations), 'utf8'));
  const phones = async (workspaceId: string) =>
    (
      await pool.query<{ phone: string }>(
        'select phone from contacts where workspace_id = $1 order by phone',
        [workspaceId],
      )
    ).rows.map((row) => row.phone);
  expect(await phones(workspace)).toEqual([
    '+12025550123',
    '+553133334444',
    '+553188887777',
    '+5531988887777',
    '+5541999990000',
  ]);
  expect(await phones(other)).toEqual(['+5531988887777']);
});
