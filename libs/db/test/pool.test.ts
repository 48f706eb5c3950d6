import { startPostgres } from '@inbox/testkit';
import { describe, expect, it } from 'vitest';
import { createPool } from '../src/index.js';

describe('createPool', () => {
  it('survives the database going away under a checked-out client', async () => {
    const server = await startPostgres();
    const pool = createPool({ url: server.url, schema: 'public' });
    const client = await pool.connect();
    await client.query('select 1');
    const unhandled: unknown[] = [];
    const onUncaught = (error: unknown) => unhandled.push(error);
    process.on('uncaughtException', onUncaught);
    try {
      await server.stop();
      await expect(client.query('select 1')).rejects.toThrow();
      expect(unhandled).toEqual([]);
    } finally {
      process.off('uncaughtException', onUncaught);
      client.release(true);
      await pool.end().catch(() => undefined);
    }
  });
});
