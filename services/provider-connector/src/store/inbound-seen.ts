import type { Queryable } from '@inbox/db';

/** True the first time a provider message id arrives for an integration, false on every repeat. */
export async function firstSighting(
  db: Queryable,
  integrationId: string,
  providerMessageId: string,
): Promise<boolean> {
  const { rowCount } = await db.query(
    'insert into inbound_seen (integration_id, provider_message_id) values ($1, $2) on conflict do nothing',
    [integrationId, providerMessageId],
  );
  return rowCount === 1;
}
