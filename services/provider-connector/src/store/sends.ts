import type { Queryable } from '@inbox/db';

/** Our message id for a provider's id, when this connector sent that message through the integration. */
export async function sentMessageId(
  db: Queryable,
  integrationId: string,
  providerMessageId: string,
): Promise<string | null> {
  const { rows } = await db.query<{ message_id: string }>(
    'select message_id from sends where integration_id = $1 and provider_message_id = $2 limit 1',
    [integrationId, providerMessageId],
  );
  return rows[0]?.message_id ?? null;
}
