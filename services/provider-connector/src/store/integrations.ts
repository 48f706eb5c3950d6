import { randomUUID } from 'node:crypto';
import { isOutage } from '@inbox/bus';
import type { Integration, IntegrationChannel } from '@inbox/contracts';
import {
  AppError,
  integrationChannels,
  integrationsPerWorkspace,
  platformTexts,
  providerOf,
} from '@inbox/contracts';
import { type Pool, withKeyLock } from '@inbox/db';
import { type SecretBox, sameSecret } from '@inbox/service-kit';
import { ExpiringCache } from './expiring-cache.js';
import { SendRecords } from './send-records.js';

interface IntegrationRow {
  id: string;
  workspace_id: string;
  channel: IntegrationChannel;
  provider: Integration['provider'];
  name: string | null;
  status: Integration['status'];
  status_reason: Integration['status_reason'];
  config_sealed: string;
  connected_at: Date | null;
  created_at: Date;
}

export interface StoredIntegration {
  integration: Integration;
  config: Record<string, string>;
}

const columns =
  'id, workspace_id, channel, provider, name, status, status_reason, config_sealed, connected_at, created_at';
// Credentials are sealed to their row: a sealed value copied elsewhere does not open.
const sealContext = (workspaceId: string, id: string) => `integrations:${workspaceId}:${id}`;

export type CallbackIntegration = StoredIntegration & { workspaceId: string };

/**
 * Another connected integration of the workspace is the same provider account (same channel, account id
 * and base_url): the providers that keep one callback URL per account (Telegram, Evolution, Z-API, the
 * Cloud API's override) call only the one registered last, and those with one per app (Meta's) call both
 * with every message. So a workspace connects an account once.
 */
export class AccountAlreadyConnected extends Error {
  override name = 'AccountAlreadyConnected';
  constructor(
    readonly channel: IntegrationChannel,
    readonly integrationId: string,
  ) {
    super(`the ${channel} account is already connected by integration ${integrationId}`);
  }
}

/** The same server, however its URL was written (a trailing slash, the default port, the host's case). */
function sameBaseUrl(a: string | undefined, b: string | undefined): boolean {
  const normal = (url: string | undefined) =>
    url === undefined || !URL.canParse(url) ? url : new URL(url).href.replace(/\/+$/, '');
  return normal(a) === normal(b);
}

export interface CallbackLookup {
  stored: CallbackIntegration | undefined;
  /** False when the answer came from this process's memory. */
  queried: boolean;
}

/** How long this process trusts an integration it read, when no notice of a change arrives. */
const callbackCacheMs = 5_000;
const absentCacheMs = 5 * 60_000;
/**
 * How long an integration read for a callback still answers one while Postgres cannot be asked: no change
 * can be made meanwhile, and a change made before reached this process by notice (forget).
 */
const lastReadMs = 60 * 60_000;

/**
 * How long after a statement found Postgres out of reach callbacks skip it: while its connections hang
 * rather than fail, each callback would wait out the pool's connection timeout (5 s) before it is kept on
 * the bus, its workspace's turn held meanwhile, and a provider that delivers once (Z-API) may give up
 * waiting first.
 */
const outageHoldMs = 5_000;

/**
 * What a callback that skips Postgres while it is out of reach fails with: an outage (a 503 where it is
 * answered), already noted, so it does not hold Postgres out of reach any longer.
 */
class SkippedWhileOutOfReach extends AppError {
  constructor() {
    super(503, { error: platformTexts.serviceUnavailable });
  }
}

export interface IntegrationStoreOptions {
  /** `callbackCacheMs` in place of five seconds: for tests that must see a row read again. */
  callbackCacheMs?: number;
}

export class IntegrationStore {
  // Separate maps, so ids that name nothing (a caller spraying them) never push real integrations out.
  private readonly callbacks: ExpiringCache<string, CallbackIntegration>;
  private readonly lastRead = new ExpiringCache<string, CallbackIntegration>(lastReadMs, 5_000);
  private outOfReachUntil = 0;
  private readonly absent = new ExpiringCache<string, true>(absentCacheMs, 20_000);
  private readonly lookups = new Map<string, Promise<CallbackIntegration | undefined>>();
  /** Each workspace's channel's most recently connected integration, by id, for sends that name none. */
  private readonly latest = new ExpiringCache<string, string | null>(callbackCacheMs, 5_000);
  private readonly sendRecords: SendRecords;

  /**
   * `changed` tells the other replicas (a notice) that an integration changed, so they drop what they
   * hold of it at once rather than within the cache's few seconds.
   */
  constructor(
    private readonly pool: Pool,
    private readonly secrets: SecretBox,
    private readonly changed: (change: { workspaceId: string; integrationId: string }) => void = () => {},
    options: IntegrationStoreOptions = {},
  ) {
    this.sendRecords = new SendRecords(pool);
    this.callbacks = new ExpiringCache(options.callbackCacheMs ?? callbackCacheMs, 5_000);
  }

  /** True for a few seconds after Postgres was found out of reach (`noteOutage`): callbacks skip it meanwhile. */
  get postgresOutOfReach(): boolean {
    return Date.now() < this.outOfReachUntil;
  }

  /** Throws while Postgres is out of reach (`noteOutage`): callbacks skip it meanwhile, rather than wait. */
  skipWhileOutOfReach(): void {
    if (this.postgresOutOfReach) throw new SkippedWhileOutOfReach();
  }

  /**
   * Notes a failure of a statement; true when it says Postgres is out of reach. Only a statement's own
   * failure holds Postgres out of reach for longer: a skip does not, or callbacks coming every few seconds
   * would keep it out of reach for ever.
   */
  noteOutage(error: unknown): boolean {
    if (error instanceof SkippedWhileOutOfReach) return true;
    if (!isOutage(error)) return false;
    this.outOfReachUntil = Date.now() + outageHoldMs;
    return true;
  }

  /** Drops what this process holds of an integration (changed here, or in another replica by notice). */
  forget(workspaceId: string, integrationId: string): void {
    this.callbacks.delete(integrationId);
    this.lastRead.delete(integrationId);
    this.absent.delete(integrationId);
    for (const channel of integrationChannels) this.latest.delete(`${workspaceId}:${channel}`);
  }

  private hasChanged(workspaceId: string, integrationId: string): void {
    this.forget(workspaceId, integrationId);
    this.changed({ workspaceId, integrationId });
  }

  private static toIntegration(row: Omit<IntegrationRow, 'config_sealed'>): Integration {
    return {
      id: row.id,
      channel: row.channel,
      provider: row.provider,
      name: row.name,
      status: row.status,
      status_reason: row.status_reason,
      connected_at: row.connected_at?.toISOString() ?? null,
      created_at: row.created_at.toISOString(),
    };
  }

  private toStored(row: IntegrationRow): StoredIntegration {
    return {
      integration: IntegrationStore.toIntegration(row),
      config: JSON.parse(
        this.secrets.open(row.config_sealed, sealContext(row.workspace_id, row.id)),
      ) as Record<string, string>,
    };
  }

  /** The new integration, or undefined when the workspace has `integrationsPerWorkspace` already. */
  async create(
    workspaceId: string,
    input: {
      /** Chosen by the caller when something else (the account id) depends on it. */
      id?: string;
      channel: IntegrationChannel;
      name?: string | null;
      config: Record<string, string>;
      accountId: string;
    },
  ): Promise<StoredIntegration | undefined> {
    const id = input.id ?? randomUUID();
    // Under the workspace's lock: creations at once count each other's rows, and the limit holds, and
    // two of the same account cannot both find the other absent.
    const { rows } = await withKeyLock(this.pool, `integrations:${workspaceId}`, async (client) => {
      await this.requireAccountFree(client, workspaceId, {
        id,
        channel: input.channel,
        accountId: input.accountId,
        config: input.config,
      });
      return client.query<IntegrationRow>(
        `insert into integrations (id, workspace_id, channel, provider, name, status, config_sealed, account_id, app_key, connected_at)
       select $1, $2, $3, $4, $5, 'connected', $6, $7, $9, now()
        where (select count(*) from integrations where workspace_id = $2) < $8
       returning ${columns}`,
        [
          id,
          workspaceId,
          input.channel,
          providerOf(input.channel),
          input.name ?? null,
          this.secrets.seal(JSON.stringify(input.config), sealContext(workspaceId, id)),
          input.accountId,
          integrationsPerWorkspace,
          this.appKey(input.config.app_secret),
        ],
      );
    });
    if (!rows[0]) return undefined;
    // The channel's most recently connected integration is now this one, here and in every replica.
    this.hasChanged(workspaceId, id);
    return this.toStored(rows[0]);
  }

  /**
   * The integration a provider callback names by its URL. The one lookup not scoped by a workspace we
   * already know: the callback is how the workspace becomes known, and the signature check that follows
   * proves the caller holds that integration's credentials.
   *
   * Answers are kept in this process for a few seconds, so a provider's burst of callbacks costs one
   * query and one decrypt per integration; a status change reaches the other replicas within that time.
   * An id that names nothing is remembered longer (ids are never reused), so a provider still calling a
   * removed integration costs nothing; `queried` says whether the database was asked.
   */
  async forCallback(id: string, options: { cachedOnly?: boolean } = {}): Promise<CallbackLookup> {
    const known = this.callbacks.get(id);
    if (known) return { stored: known, queried: false };
    if (options.cachedOnly || this.absent.get(id)) return { stored: undefined, queried: false };
    let pending = this.lookups.get(id);
    if (!pending) {
      pending = this.lookUpCallback(id).finally(() => this.lookups.delete(id));
      this.lookups.set(id, pending);
    }
    return { stored: await pending, queried: true };
  }

  /** Which app an integration's provider app secret names, without the secret: a keyed digest of it. */
  private appKey(appSecret: string | undefined): string | null {
    return appSecret ? this.secrets.digest(appSecret, 'provider-app') : null;
  }

  /**
   * The connected integrations, in any workspace, of a provider account on the app this secret names:
   * the callbacks of Meta apps shared by several accounts name the others' events too
   * (InboundBatch.elsewhere). Found by the secret's digest, so however many integrations others name the
   * account with another app's secret, none stands in the way; those stored before the digest was kept
   * (none of their keys is known) are opened and compared, a few at most.
   */
  async connectedOfAccountOnApp(
    channel: string,
    accountId: string,
    appSecret: string,
  ): Promise<CallbackIntegration[]> {
    const { rows } = await this.pool.query<IntegrationRow>(
      `(select ${columns} from integrations
         where channel = $1 and account_id = $2 and status = 'connected' and app_key = $3 limit 50)
       union all
       (select ${columns} from integrations
         where channel = $1 and account_id = $2 and status = 'connected' and app_key is null limit 10)`,
      [channel, accountId, this.appKey(appSecret)],
    );
    return rows
      .map((row) => ({ ...this.toStored(row), workspaceId: row.workspace_id }))
      .filter((found) => sameSecret(found.config.app_secret, appSecret));
  }

  /**
   * Reads an integration for a callback. While Postgres cannot be asked, one read within the last hour
   * still answers: a provider that delivers once (Z-API) loses what is refused, and its callbacks are kept
   * on the bus meanwhile (KeptCallbacks).
   */
  private async lookUpCallback(id: string): Promise<CallbackIntegration | undefined> {
    const known = this.lastRead.get(id);
    if (known && this.postgresOutOfReach) return known;
    let rows: IntegrationRow[];
    try {
      ({ rows } = await this.pool.query<IntegrationRow>(`select ${columns} from integrations where id = $1`, [
        id,
      ]));
    } catch (error) {
      if (!known || !this.noteOutage(error)) throw error;
      return known;
    }
    const row = rows[0];
    if (!row) {
      this.absent.set(id, true);
      return undefined;
    }
    const stored = { ...this.toStored(row), workspaceId: row.workspace_id };
    this.callbacks.set(id, stored);
    this.lastRead.set(id, stored);
    return stored;
  }

  /**
   * Claims an integration's config for `claimMs`, so one replica at a time changes it (a provider's
   * single-use refresh token is spent once) without a row lock: the change involves a call to the
   * provider, and a lock held across it held a pooled connection too, for as long as a tenant's own
   * token endpoint kept silent, with every other call of that integration queued on the lock, each on a
   * connection of its own. `taken` while another claim runs, or when the integration is gone: the caller
   * reads it next either way, and that read tells.
   */
  async claimConfig(
    workspaceId: string,
    id: string,
    claimMs: number,
  ): Promise<{ claim: string; config: Record<string, string> } | 'taken'> {
    const claim = randomUUID();
    const { rows } = await this.pool.query<IntegrationRow>(
      `update integrations set config_claim = $3, config_claimed_until = now() + $4 * interval '1 millisecond'
        where workspace_id = $1 and id = $2 and (config_claimed_until is null or config_claimed_until < now())
        returning ${columns}`,
      [workspaceId, id, claim, claimMs],
    );
    return rows[0] ? { claim, config: this.toStored(rows[0]).config } : 'taken';
  }

  /**
   * Ends a claim and stores `config` when given (every replica drops the old one at once, since a refresh
   * token is single-use). A new pair is stored even when the claim ran out meanwhile (an event loop
   * stalled past the margin) and another took it: the provider rotated the spent refresh token into this
   * pair, so it is the one that works. False when the claim was no longer this one.
   */
  async settleClaim(
    workspaceId: string,
    id: string,
    claim: string,
    config?: Record<string, string>,
  ): Promise<boolean> {
    const sealed = config && this.secrets.seal(JSON.stringify(config), sealContext(workspaceId, id));
    const { rows } = await this.pool.query<{ ours: boolean }>(
      `update integrations set config_sealed = coalesce($4, config_sealed),
         config_claim = case when config_claim = $3 then null else config_claim end,
         config_claimed_until = case when config_claim = $3 then null else config_claimed_until end
        where workspace_id = $1 and id = $2 and (config_claim = $3 or $4::text is not null)
        returning config_claim is null as ours`,
      [workspaceId, id, claim, sealed ?? null],
    );
    if (config) this.hasChanged(workspaceId, id);
    return rows[0]?.ours === true;
  }

  async remove(workspaceId: string, id: string): Promise<void> {
    await this.pool.query('delete from integrations where workspace_id = $1 and id = $2', [workspaceId, id]);
    this.hasChanged(workspaceId, id);
  }

  /** The workspace's integrations, the newest first; their credentials stay sealed. */
  async list(workspaceId: string): Promise<Integration[]> {
    const { rows } = await this.pool.query<Omit<IntegrationRow, 'config_sealed'>>(
      `select id, workspace_id, channel, provider, name, status, status_reason, connected_at, created_at from integrations
        where workspace_id = $1 order by created_at desc, id`,
      [workspaceId],
    );
    return rows.map(IntegrationStore.toIntegration);
  }

  async get(workspaceId: string, id: string): Promise<StoredIntegration | undefined> {
    const { rows } = await this.pool.query<IntegrationRow>(
      `select ${columns} from integrations where workspace_id = $1 and id = $2`,
      [workspaceId, id],
    );
    return rows[0] ? this.toStored(rows[0]) : undefined;
  }

  /**
   * The integration a send goes through, from this process's memory when it read it within the last few
   * seconds (a send is the hot path: a query and a decrypt saved each time). A change made by any replica
   * reaches this one by notice at once, or within those seconds should the notice be lost. Reads that
   * must be exact (the admin API) use `get`.
   */
  async forSend(workspaceId: string, id: string): Promise<StoredIntegration | undefined> {
    const { stored } = await this.forCallback(id);
    // Ids are only trusted within their own workspace, whatever the cache holds.
    return stored?.workspaceId === workspaceId ? stored : undefined;
  }

  /** `latestConnected`, remembered for a few seconds like `forSend`. */
  async latestConnectedForSend(
    workspaceId: string,
    channel: IntegrationChannel,
  ): Promise<StoredIntegration | undefined> {
    const key = `${workspaceId}:${channel}`;
    const knownId = this.latest.get(key);
    if (knownId === null) return undefined;
    if (knownId !== undefined) {
      const known = await this.forSend(workspaceId, knownId);
      if (known?.integration.status === 'connected' && known.integration.channel === channel) return known;
    }
    const latest = await this.latestConnected(workspaceId, channel);
    this.latest.set(key, latest?.integration.id ?? null);
    return latest;
  }

  /** The channel's most recently connected integration that is still connected. */
  async latestConnected(
    workspaceId: string,
    channel: IntegrationChannel,
  ): Promise<StoredIntegration | undefined> {
    const { rows } = await this.pool.query<IntegrationRow>(
      `select ${columns} from integrations where workspace_id = $1 and channel = $2 and status = 'connected'
       order by connected_at desc limit 1`,
      [workspaceId, channel],
    );
    return rows[0] ? this.toStored(rows[0]) : undefined;
  }

  /** Connects or disconnects; reconnecting makes it the channel's most recently connected integration. */
  async setStatus(
    workspaceId: string,
    id: string,
    status: 'connected' | 'disconnected',
  ): Promise<(StoredIntegration & { wasConnected: boolean }) | undefined> {
    // The status it had is read with the row's lock by the statement that changes it.
    const update = (client: Pick<Pool, 'query'>) =>
      client.query<IntegrationRow & { was_connected: boolean }>(
        `with was as (
           select id, status = 'connected' as was_connected from integrations
            where workspace_id = $1 and id = $2 for update)
         update integrations i set status = $3, status_reason = null,
                connected_at = case when $3 = 'connected' and i.status <> 'connected' then now() else i.connected_at end
           from was where i.id = was.id
         returning i.*, was.was_connected`,
        [workspaceId, id, status],
      );
    const { rows } =
      status === 'disconnected'
        ? await update(this.pool)
        : // Connecting one is creating it again, as far as its account goes: under the same lock and rule.
          await withKeyLock(this.pool, `integrations:${workspaceId}`, async (client) => {
            const { rows: found } = await client.query<IntegrationRow & { account_id: string }>(
              `select ${columns}, account_id from integrations where workspace_id = $1 and id = $2`,
              [workspaceId, id],
            );
            const target = found[0];
            // Already connected: nothing changes as far as its account goes.
            if (target && target.status !== 'connected')
              await this.requireAccountFree(client, workspaceId, {
                id,
                channel: target.channel,
                accountId: target.account_id,
                config: this.toStored(target).config,
              });
            return update(client);
          });
    this.hasChanged(workspaceId, id);
    const row = rows[0];
    return row ? { ...this.toStored(row), wasConnected: row.was_connected } : undefined;
  }

  /** Throws AccountAlreadyConnected when another connected integration of the workspace is this account. */
  private async requireAccountFree(
    client: Pick<Pool, 'query'>,
    workspaceId: string,
    integration: {
      id: string;
      channel: IntegrationChannel;
      accountId: string;
      config: Record<string, string>;
    },
  ): Promise<void> {
    const [same] = await this.connectedOfAccount(
      client,
      { ...integration, baseUrl: integration.config.base_url },
      { workspaceId, limit: 20 },
    );
    if (same) throw new AccountAlreadyConnected(integration.channel, same.id);
  }

  /**
   * The other connected integrations of an account: the same channel, account id and server
   * (`sameBaseUrl`), the oldest first. Either in one workspace, or in any workspace those whose callback
   * was registered before `registeredBefore` (or when no time was kept).
   */
  private async connectedOfAccount(
    client: Pick<Pool, 'query'>,
    integration: { id: string; channel: string; accountId: string; baseUrl: string | undefined },
    among: { workspaceId: string; limit: number } | { registeredBefore: string; limit: number },
  ): Promise<IntegrationRow[]> {
    // No account named (an alt-b config still without its instance): nothing to be the same as.
    if (integration.accountId === '') return [];
    const { rows } = await client.query<IntegrationRow>(
      `select ${columns} from integrations
        where channel = $1 and account_id = $2 and status = 'connected' and id <> $3
          and ($4::uuid is null or workspace_id = $4)
          and ($5::timestamptz is null or callback_registered_at is null or callback_registered_at < $5)
        order by created_at limit $6`,
      [
        integration.channel,
        integration.accountId,
        integration.id,
        'workspaceId' in among ? among.workspaceId : null,
        'registeredBefore' in among ? among.registeredBefore : null,
        among.limit,
      ],
    );
    return rows.filter((row) => sameBaseUrl(this.toStored(row).config.base_url, integration.baseUrl));
  }

  /**
   * The provider no longer takes the integration's credentials: it is disconnected, with the reason, so
   * sends stop trying it until an operator reconnects it. False when it was not connected any more.
   */
  async markCredentialsRejected(workspaceId: string, id: string): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `update integrations set status = 'disconnected', status_reason = 'credentials_rejected'
        where workspace_id = $1 and id = $2 and status = 'connected'`,
      [workspaceId, id],
    );
    this.hasChanged(workspaceId, id);
    return rowCount === 1;
  }

  /** The database's clock, taken before a registration's provider call (callbackRegistered). */
  async registrationClock(): Promise<string> {
    const { rows } = await this.pool.query<{ now: string }>('select now()::text as now');
    return rows[0]!.now;
  }

  /**
   * A provider keeping one callback URL per account accepted this integration's, in a call begun at
   * `startedAt` (registrationClock). Every other connected integration of the account (same channel,
   * account and server, in any workspace) whose own registration was accepted before that call began no
   * longer hears it: each is disconnected with `callback_taken`, and answered. One accepted while the
   * call ran may have come after it at the provider or before: it is left as it is.
   */
  async callbackRegistered(
    workspaceId: string,
    id: string,
    startedAt: string,
  ): Promise<Array<{ workspaceId: string; id: string }>> {
    const { rows: ours } = await this.pool.query<IntegrationRow & { account_id: string }>(
      `update integrations set callback_registered_at = now()
        where workspace_id = $1 and id = $2 and status = 'connected'
        returning ${columns}, account_id`,
      [workspaceId, id],
    );
    const registered = ours[0];
    return registered ? this.othersNoLongerCalled(registered, startedAt) : [];
  }

  /**
   * A provider that drops an account's callback URL before it judges a new one refused this integration's
   * registration, in a call begun at `startedAt`: the account has no callback URL now, and every other
   * connected integration of it whose registration was accepted before that call began no longer hears it
   * either. Each is disconnected with `callback_taken`, and answered, as callbackRegistered does.
   */
  async callbackDropped(
    workspaceId: string,
    id: string,
    startedAt: string,
  ): Promise<Array<{ workspaceId: string; id: string }>> {
    const { rows } = await this.pool.query<IntegrationRow & { account_id: string }>(
      `select ${columns}, account_id from integrations where workspace_id = $1 and id = $2`,
      [workspaceId, id],
    );
    const refused = rows[0];
    return refused ? this.othersNoLongerCalled(refused, startedAt) : [];
  }

  /** The other connected integrations of `ours`'s account registered before `startedAt`, disconnected. */
  private async othersNoLongerCalled(
    ours: IntegrationRow & { account_id: string },
    startedAt: string,
  ): Promise<Array<{ workspaceId: string; id: string }>> {
    // Bounded: as many as a few hundred workspaces could connect one account, and each is opened.
    const taken = (
      await this.connectedOfAccount(
        this.pool,
        {
          id: ours.id,
          channel: ours.channel,
          accountId: ours.account_id,
          baseUrl: this.toStored(ours).config.base_url,
        },
        { registeredBefore: startedAt, limit: 500 },
      )
    ).map((row) => row.id);
    if (taken.length === 0) return [];
    const { rows } = await this.pool.query<{ workspace_id: string; id: string }>(
      `update integrations set status = 'disconnected', status_reason = 'callback_taken'
        where id = any($1::uuid[]) and status = 'connected'
          and (callback_registered_at is null or callback_registered_at < $2::timestamptz)
        returning workspace_id, id`,
      [taken, startedAt],
    );
    for (const row of rows) this.hasChanged(row.workspace_id, row.id);
    return rows.map((row) => ({ workspaceId: row.workspace_id, id: row.id }));
  }

  /**
   * What was recorded of a message's send: its provider id and time once the provider accepted it, or
   * neither when an attempt started and its outcome is unknown; undefined when none was ever started.
   */
  async findSend(workspaceId: string, messageId: string) {
    const { rows } = await this.pool.query<{ provider_message_id: string | null; sent_at: Date | null }>(
      'select provider_message_id, sent_at from sends where workspace_id = $1 and message_id = $2',
      [workspaceId, messageId],
    );
    return rows[0];
  }

  /** Records that a message's provider call starts; false when one was already started for it. */
  beginSend(workspaceId: string, integrationId: string, messageId: string): Promise<boolean> {
    return this.sendRecords.begin({ workspaceId, integrationId, messageId });
  }

  /** The provider refused the message outright: nothing was sent, so a later attempt may call again. */
  async forgetAttempt(workspaceId: string, messageId: string): Promise<void> {
    await this.pool.query(
      'delete from sends where workspace_id = $1 and message_id = $2 and provider_message_id is null',
      [workspaceId, messageId],
    );
  }

  /** Records what the provider answered for a message, unless an earlier answer is recorded. */
  recordSend(
    workspaceId: string,
    integrationId: string,
    messageId: string,
    providerMessageId: string,
    sentAt: Date,
  ): Promise<void> {
    return this.sendRecords.record({ workspaceId, integrationId, messageId, providerMessageId, sentAt });
  }
}
