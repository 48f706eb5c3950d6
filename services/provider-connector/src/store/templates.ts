import { maxRenderedTemplateChars, templateChannels } from '@inbox/contracts';
import { inBatches, type Pool, storableText } from '@inbox/db';
import { type ProviderTemplate, templateChars } from '../adapters/channel-adapter.js';

/** The catalogue: one integration's templates as the provider last listed them. */
export class TemplateStore {
  constructor(private readonly pool: Pool) {}

  /**
   * Replaces the integration's catalogue with what the provider listed: written as a new generation, a
   * few hundred templates a statement, and switched to in one. A catalogue of ten thousand templates
   * written in one transaction took a second or more, and for that long held back every service's outbox
   * relay (each publishes only what committed before the oldest transaction still running), so one
   * tenant's listing delayed every tenant's events.
   *
   * Replicas refresh on their own, so two replacements of one catalogue can run at once: the generation
   * taken last wins whichever ends first (the switch only moves forward), and readers see one generation,
   * never two listings together nor one half written. What a replacement leaves behind (the generations
   * before it, its own when it lost, or a crashed one's) is deleted in short statements after it.
   *
   * Each name and language is kept once (the last listed wins), its text made storable; a template no
   * send could use (a name or language longer than a send may give, a body longer than a message) is left
   * out, rather than failing the listing in an index entry or filling the table.
   */
  async replace(integrationId: string, templates: ProviderTemplate[]): Promise<void> {
    const { rows } = await this.pool.query<{ generation: string }>(
      "select nextval('template_generations')::text as generation",
    );
    const generation = rows[0]!.generation;
    try {
      for (const part of statementParts(keptTemplates(templates)))
        await this.write(integrationId, generation, part);
    } catch (error) {
      await this.deleteGenerations(integrationId, generation, 'only').catch(() => undefined);
      throw error;
    }
    const switching = await this.pool.query(
      `update integrations set templates_generation = $2, templates_refreshed_at = now()
        where id = $1 and templates_generation < $2`,
      [integrationId, generation],
    );
    // The catalogue is replaced (or another replacement's newer one stands): rows left behind are never
    // read, and the next replacement that switches deletes them, so a failure here fails nothing.
    await this.deleteGenerations(
      integrationId,
      generation,
      switching.rowCount === 1 ? 'before' : 'only',
    ).catch(() => undefined);
  }

  private async write(integrationId: string, generation: string, part: ProviderTemplate[]): Promise<void> {
    await this.pool.query(
      `insert into templates (integration_id, generation, name, language, status, body, header_format, buttons)
       select $1, $2, name, language, status, body, header_format, buttons
         from unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::jsonb[])
           as listed (name, language, status, body, header_format, buttons)`,
      [
        integrationId,
        generation,
        part.map((t) => t.name),
        part.map((t) => t.language),
        part.map((t) => t.status),
        part.map((t) => t.body),
        part.map((t) => t.header_format),
        part.map((t) => JSON.stringify(t.buttons)),
      ],
    );
  }

  /** Deletes the generations before `generation` (or only it), a few thousand rows a statement. */
  private async deleteGenerations(integrationId: string, generation: string, which: 'before' | 'only') {
    const matching = which === 'before' ? 'generation < $2' : 'generation = $2';
    await inBatches(async (size) => {
      const { rowCount } = await this.pool.query(
        `delete from templates where ctid = any(array(
           select ctid from templates where integration_id = $1 and ${matching} limit $3))`,
        [integrationId, generation, size],
      );
      return rowCount ?? 0;
    }, rowsPerDelete);
  }

  async find(integrationId: string, name: string, language: string): Promise<ProviderTemplate | undefined> {
    const { rows } = await this.pool.query<ProviderTemplate>(
      `select t.name, t.language, t.status, t.body, t.header_format, t.buttons
         from integrations i
         join templates t on t.integration_id = i.id and t.generation = i.templates_generation
        where i.id = $1 and t.name = $2 and t.language = $3`,
      [integrationId, name, language],
    );
    return rows[0];
  }

  async list(integrationId: string): Promise<{ templates: ProviderTemplate[]; refreshedAt: Date | null }> {
    const { rows } = await this.pool.query<ProviderTemplate>(
      `select t.name, t.language, t.status, t.body, t.header_format, t.buttons
         from integrations i
         join templates t on t.integration_id = i.id and t.generation = i.templates_generation
        where i.id = $1
        order by t.name, t.language`,
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

/**
 * How many templates, and how many of their characters, one statement of a replacement writes: some tens
 * of milliseconds of Postgres's time, so the outbox relays wait no longer than that behind it.
 */
const statementBounds = { templates: 250, chars: 256 * 1024 } as const;

/** How many rows of a former generation one statement deletes. */
const rowsPerDelete = 2_000;

/**
 * The templates a listing keeps: storable, each name and language once (the last listed wins), none that
 * no send could use.
 */
function keptTemplates(templates: ProviderTemplate[]): ProviderTemplate[] {
  const kept = new Map<string, ProviderTemplate>();
  for (const listed of templates) {
    const t = storableTemplate(listed);
    if (t.name.length > 512 || t.language.length > 64 || t.body.length > maxRenderedTemplateChars) continue;
    // Keyed as stored: two names that differ only in what storing replaces are one row.
    kept.set(JSON.stringify([t.name, t.language]), t);
  }
  return [...kept.values()];
}

/** The templates in the parts one statement each writes (statementBounds); a larger template alone. */
function* statementParts(templates: ProviderTemplate[]): Generator<ProviderTemplate[]> {
  let part: ProviderTemplate[] = [];
  let chars = 0;
  for (const t of templates) {
    const size = templateChars(t);
    if (
      part.length > 0 &&
      (part.length === statementBounds.templates || chars + size > statementBounds.chars)
    ) {
      yield part;
      part = [];
      chars = 0;
    }
    part.push(t);
    chars += size;
  }
  if (part.length > 0) yield part;
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
