import { maxRenderedTemplateChars, templateChannels } from '@inbox/contracts';
import { type Pool, storableText, withTransaction } from '@inbox/db';
import type { ProviderTemplate } from '../adapters/channel-adapter.js';

/** The catalogue: one integration's templates as the provider last listed them. */
export class TemplateStore {
  constructor(private readonly pool: Pool) {}

  /**
   * Replaces the integration's catalogue with what the provider listed, in one transaction. Replicas
   * refresh on their own, so two replacements of one catalogue can run at once: the integration's row
   * is locked first, and the delete that follows the lock sees what the other one committed. Without it
   * the second delete did not see the first's rows, and the catalogue became both listings together (a
   * template deleted at the provider still prepared).
   *
   * The listing is written by one statement (the statement timeout bounds it, where a row a round trip
   * kept the lock and a pooled connection for as long as a tenant's provider listed templates), each
   * name and language once (the last listed wins), its text made storable; a template no send could
   * use (a name or language longer than a send may give, a body longer than a message) is left out,
   * rather than failing the listing in an index entry or filling the table.
   */
  async replace(integrationId: string, templates: ProviderTemplate[]): Promise<void> {
    const kept = new Map<string, ProviderTemplate>();
    for (const listed of templates) {
      const t = storableTemplate(listed);
      if (t.name.length > 512 || t.language.length > 64 || t.body.length > maxRenderedTemplateChars) continue;
      // Keyed as stored: two names that differ only in what storing replaces are one row.
      kept.set(JSON.stringify([t.name, t.language]), t);
    }
    const rows = [...kept.values()];
    await withTransaction(this.pool, async (client) => {
      // Serialises two replaces of a catalogue. `no key update`, not `update`: a send's row references
      // the integration, and its key check must not wait behind a listing, nor hold the other
      // workspaces' sends batched into the same statement (SendRecords) with it.
      await client.query('select 1 from integrations where id = $1 for no key update', [integrationId]);
      await client.query('delete from templates where integration_id = $1', [integrationId]);
      await client.query(
        `insert into templates (integration_id, name, language, status, body, header_format, buttons)
         select $1, name, language, status, body, header_format, buttons
           from unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::jsonb[])
             as listed (name, language, status, body, header_format, buttons)`,
        [
          integrationId,
          rows.map((t) => t.name),
          rows.map((t) => t.language),
          rows.map((t) => t.status),
          rows.map((t) => t.body),
          rows.map((t) => t.header_format),
          rows.map((t) => JSON.stringify(t.buttons)),
        ],
      );
      await client.query('update integrations set templates_refreshed_at = now() where id = $1', [
        integrationId,
      ]);
    });
  }

  async find(integrationId: string, name: string, language: string): Promise<ProviderTemplate | undefined> {
    const { rows } = await this.pool.query<ProviderTemplate>(
      'select name, language, status, body, header_format, buttons from templates where integration_id = $1 and name = $2 and language = $3',
      [integrationId, name, language],
    );
    return rows[0];
  }

  async list(integrationId: string): Promise<{ templates: ProviderTemplate[]; refreshedAt: Date | null }> {
    const { rows } = await this.pool.query<ProviderTemplate>(
      'select name, language, status, body, header_format, buttons from templates where integration_id = $1 order by name, language',
      [integrationId],
    );
    const { rows: meta } = await this.pool.query<{ templates_refreshed_at: Date | null }>(
      'select templates_refreshed_at from integrations where id = $1',
      [integrationId],
    );
    return { templates: rows, refreshedAt: meta[0]?.templates_refreshed_at ?? null };
  }

  /**
   * Claims one connected integration of a channel with templates whose catalogue is older than `maxAgeMs`
   * (or never fetched), outside `busyWorkspaces`, and stamps the attempt. The stamp keeps it from being
   * claimed again for `retryAfterMs`, here or by another replica, so a refresh that fails (a provider that
   * refuses or keeps silent) goes behind every other due catalogue instead of staying at the head of the
   * line; the least recently attempted comes first.
   */
  async claimDue(options: {
    maxAgeMs: number;
    retryAfterMs: number;
    busyWorkspaces: readonly string[];
  }): Promise<{ id: string; workspace_id: string } | undefined> {
    const { rows } = await this.pool.query<{ id: string; workspace_id: string }>(
      `update integrations set templates_attempted_at = now()
        where id = (
          select id from integrations
           where channel = any($1) and status = 'connected'
             and (templates_refreshed_at is null or templates_refreshed_at < now() - $2 * interval '1 millisecond')
             and (templates_attempted_at is null or templates_attempted_at < now() - $3 * interval '1 millisecond')
             and workspace_id <> all($4::uuid[])
           order by templates_attempted_at nulls first, id
           limit 1
           for update skip locked)
        returning id, workspace_id`,
      [templateChannels, options.maxAgeMs, options.retryAfterMs, options.busyWorkspaces],
    );
    return rows[0];
  }
}

/** A listed template as it can be stored: every string in it, keys included, storable. */
function storableTemplate(t: ProviderTemplate): ProviderTemplate {
  return {
    name: storableText(t.name),
    language: storableText(t.language),
    status: storableText(t.status, 64),
    body: storableText(t.body),
    header_format: t.header_format === null ? null : storableText(t.header_format, 64),
    buttons: storableJson(t.buttons) as ProviderTemplate['buttons'],
  };
}

function storableJson(value: unknown): unknown {
  if (typeof value === 'string') return storableText(value);
  if (Array.isArray(value)) return value.map(storableJson);
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value).map(([key, inner]) => [storableText(key), storableJson(inner)]),
    );
  return value;
}
