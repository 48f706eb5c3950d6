import type { Queryable } from '@inbox/db';
import type { ClaimedIntegration } from '../integration-sweep.js';

/** The column of `integrations` a sweep stamps when it claims one (migrations 019 and 020). */
export type SweepStamp = 'missed_polled_at' | 'subscription_checked_at';

/**
 * Claims the connected integration of `channels` stamped longest ago and not within `everyMs`, outside
 * `busyWorkspaces`, stamped now: no worker of any replica claims it again for `everyMs`.
 */
export async function claimDueIntegration(
  db: Queryable,
  options: {
    stamp: SweepStamp;
    channels: readonly string[];
    everyMs: number;
    busyWorkspaces: readonly string[];
  },
): Promise<ClaimedIntegration | undefined> {
  const { stamp } = options;
  const { rows } = await db.query<ClaimedIntegration>(
    `update integrations set ${stamp} = now()
      where id = (
        select id from integrations
         where channel = any($1) and status = 'connected'
           and (${stamp} is null or ${stamp} < now() - $2 * interval '1 millisecond')
           and workspace_id <> all($3::uuid[])
         order by ${stamp} nulls first, id
         limit 1
         for update skip locked)
      returning id, workspace_id`,
    [options.channels, options.everyMs, options.busyWorkspaces],
  );
  return rows[0];
}
