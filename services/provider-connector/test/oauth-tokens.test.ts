import { randomUUID } from 'node:crypto';
import type { Pool } from '@inbox/db';
import { SecretBox } from '@inbox/service-kit';
import { waitFor } from '@inbox/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProviderError, type TokenGrant } from '../src/adapters/channel-adapter.js';
import { IntegrationStore } from '../src/store/integrations.js';
import { oauthTokens } from '../src/store/oauth-tokens.js';
import { migratedPool } from './support.js';

const secrets = new SecretBox(SecretBox.generateKey());
let pool: Pool;

beforeAll(async () => {
  // As few connections as a busy connector has to spare.
  pool = await migratedPool({ max: 3 });
});
afterAll(() => pool.end());

async function integration(store: IntegrationStore) {
  const workspaceId = randomUUID();
  const created = await store.create(workspaceId, {
    channel: 'market',
    config: { access_token: 'refused', refresh_token: 'r1', client_id: 'app', client_secret: 's' },
    accountId: randomUUID(),
  });
  return { workspaceId, id: created!.integration.id };
}

const answered = (query: Promise<unknown>, withinMs: number) =>
  Promise.race([
    query.then(() => 'answered'),
    new Promise((resolve) => setTimeout(() => resolve('still waiting'), withinMs)),
  ]);

/** Another replica inside a refresh of the integration, its claim good for a minute; `storesPair` ends it. */
async function anotherReplicaRefreshing(store: IntegrationStore, workspaceId: string, id: string) {
  const other = await store.claimConfig(workspaceId, id, 60_000);
  if (!other || other === 'taken') throw new Error('not claimed');
  return {
    claim: other.claim,
    storesPair: () =>
      store.settleClaim(workspaceId, id, other.claim, {
        ...other.config,
        access_token: 'theirs',
        refresh_token: 'r2',
      }),
  };
}

/** A token endpoint no call may reach: another replica holds the claim. */
const neverAsked = async (): Promise<TokenGrant> => {
  throw new Error('never asked: the other replica holds the claim');
};

/** The store, counting the calls of one of its methods. */
function countingCalls(store: IntegrationStore, method: keyof IntegrationStore) {
  let calls = 0;
  const counting = new Proxy(store, {
    get(target, name, receiver) {
      if (name === method) calls++;
      const value = Reflect.get(target, name, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { counting, calls: () => calls };
}

describe("an integration's OAuth tokens", () => {
  it("hold no database connection while the tenant's token endpoint keeps silent", async () => {
    const first = new IntegrationStore(pool, secrets);
    const { workspaceId, id } = await integration(first);
    let fail: (error: Error) => void = () => undefined;
    // The tenant's own token endpoint: it answers nothing until the test lets the call fail.
    const silent = new Promise<TokenGrant>((_, reject) => {
      fail = reject;
    });
    silent.catch(() => undefined);
    let asked = 0;
    const refresh = () => {
      asked++;
      return silent;
    };
    // Six replicas (the pool has three connections), each with a call the provider answered 401.
    const renewals = Array.from({ length: 6 }, (_, i) =>
      oauthTokens(i === 0 ? first : new IntegrationStore(pool, secrets), workspaceId, id, 2_000)
        .renew('refused', refresh)
        .then(
          () => 'renewed',
          (error: Error) => error.message,
        ),
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Every other tenant's statement still gets a connection, at once.
    expect(await answered(pool.query('select 1'), 2_000)).toBe('answered');
    expect(asked).toBe(1);
    fail(new Error('token endpoint unreachable'));
    // The claim ends with the failed call: the waiting replicas try in turn and fail the same way.
    expect(await Promise.all(renewals)).toEqual(Array(6).fill('token endpoint unreachable'));
    const { rows } = await pool.query('select config_claim from integrations where id = $1', [id]);
    expect(rows[0]).toEqual({ config_claim: null });
  });

  it('takes over a claim left by a replica that died, once it runs out', async () => {
    const store = new IntegrationStore(pool, secrets);
    const { workspaceId, id } = await integration(store);
    // A replica claimed the config to refresh, and died before it settled the claim.
    expect(await store.claimConfig(workspaceId, id, 300)).toMatchObject({ claim: expect.any(String) });
    const spent: string[] = [];
    const token = await oauthTokens(new IntegrationStore(pool, secrets), workspaceId, id, 2_000).renew(
      'refused',
      async (refreshToken) => {
        spent.push(refreshToken);
        return { accessToken: 'fresh', refreshToken: 'r2', expiresIn: 21_600 };
      },
    );
    expect(token).toBe('fresh');
    expect(spent).toEqual(['r1']);
    expect((await store.get(workspaceId, id))?.config).toMatchObject({
      access_token: 'fresh',
      refresh_token: 'r2',
    });
    expect(await store.claimConfig(workspaceId, id, 300)).toMatchObject({ claim: expect.any(String) });
  });

  it('stores a new pair even when its claim ran out and another replica took it', async () => {
    const store = new IntegrationStore(pool, secrets);
    const { workspaceId, id } = await integration(store);
    const stalled = await store.claimConfig(workspaceId, id, 1);
    if (!stalled || stalled === 'taken') throw new Error('not claimed');
    await new Promise((resolve) => setTimeout(resolve, 20));
    const next = await store.claimConfig(workspaceId, id, 60_000);
    expect(next).toMatchObject({ claim: expect.any(String) });
    // The provider rotated the spent refresh token into this pair: it is the one that works.
    const renewed = { ...stalled.config, access_token: 'fresh', refresh_token: 'r2' };
    expect(await store.settleClaim(workspaceId, id, stalled.claim, renewed)).toBe(false);
    expect((await store.get(workspaceId, id))?.config).toMatchObject({ refresh_token: 'r2' });
    // The other claim stands until its holder settles it.
    expect(await store.claimConfig(workspaceId, id, 60_000)).toBe('taken');
    expect(await store.settleClaim(workspaceId, id, (next as { claim: string }).claim)).toBe(true);
  });

  it("stops waiting for another replica's refresh at the call's deadline, saying nothing was sent", async () => {
    const store = new IntegrationStore(pool, secrets);
    const { workspaceId, id } = await integration(store);
    // Another replica is inside a refresh, with a claim good for a minute.
    const other = await anotherReplicaRefreshing(store, workspaceId, id);
    // The call may take 300 ms: its wait ends then, not when the other replica's claim runs out.
    const renewal = oauthTokens(store, workspaceId, id, 2_000, { signal: AbortSignal.timeout(300) }).renew(
      'refused',
      neverAsked,
    );
    expect(
      await answered(
        renewal.catch(() => undefined),
        1_500,
      ),
    ).toBe('answered');
    await expect(renewal).rejects.toMatchObject({ name: 'ProviderError', unsent: true });

    // A call of this process that finds its refresh begun for another call waits no longer either.
    const claimHolder = oauthTokens(store, workspaceId, id, 2_000);
    const first = claimHolder.renew('refused', neverAsked);
    first.catch(() => undefined);
    const joined = oauthTokens(store, workspaceId, id, 2_000, { signal: AbortSignal.timeout(300) }).renew(
      'refused',
      neverAsked,
    );
    expect(
      await answered(
        joined.catch(() => undefined),
        1_500,
      ),
    ).toBe('answered');
    await expect(joined).rejects.toMatchObject({ unsent: true });
    await store.settleClaim(workspaceId, id, other.claim);
    await expect(first).rejects.toThrow('never asked');
  });

  it('says nothing was sent when its deadline passes or its own refresh fails, keeping a refusal', async () => {
    const store = new IntegrationStore(pool, secrets);
    const { workspaceId, id } = await integration(store);
    // The token endpoint keeps silent, until the refresh's own bound (the provider timeout) ends it.
    const cutOff = oauthTokens(store, workspaceId, id, 400, { signal: AbortSignal.timeout(100) }).renew(
      'refused',
      (_token, bound) =>
        new Promise<TokenGrant>((_, reject) =>
          bound.addEventListener('abort', () =>
            reject(new ProviderError('market: POST /oauth/token timed out')),
          ),
        ),
    );
    await expect(cutOff).rejects.toMatchObject({
      unsent: true,
      message: `integration ${id}: the call's deadline passed while its token was refreshed`,
    });
    // Its token call runs on to its own bound (400 ms), and a call before its claim is given back would
    // join it.
    await waitFor(
      async () => {
        const { rows } = await pool.query('select config_claim from integrations where id = $1', [id]);
        return rows[0]?.config_claim === null;
      },
      { what: 'the claim given back' },
    );
    // invalid_grant: still a refusal (the integration is disconnected), and still nothing sent.
    const refused = oauthTokens(store, workspaceId, id, 2_000).renew('refused', async () => {
      throw new ProviderError('market: invalid_grant', 400, undefined, { refusal: 'credentials_rejected' });
    });
    await expect(refused).rejects.toMatchObject({
      unsent: true,
      refusal: 'credentials_rejected',
      status: 400,
    });
  });

  it("keeps the pair a refresh got after its call's deadline, for the calls that joined it", async () => {
    const store = new IntegrationStore(pool, secrets);
    const { workspaceId, id } = await integration(store);
    let answer: (grant: TokenGrant) => void = () => undefined;
    const spent: string[] = [];
    let boundAborted = false;
    const slow = (refreshToken: string, bound: AbortSignal) => {
      spent.push(refreshToken);
      bound.addEventListener('abort', () => {
        boundAborted = true;
      });
      return new Promise<TokenGrant>((resolve) => {
        answer = resolve;
      });
    };
    // The first call may take 150 ms; a second call of the process, with a later deadline, joins its refresh.
    const first = oauthTokens(store, workspaceId, id, 2_000, { signal: AbortSignal.timeout(150) }).renew(
      'refused',
      slow,
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    const joined = oauthTokens(store, workspaceId, id, 2_000, { signal: AbortSignal.timeout(1_500) }).renew(
      'refused',
      slow,
    );
    await expect(first).rejects.toMatchObject({ unsent: true });
    // The provider answers after the first call's deadline: the single-use refresh token is spent for this pair.
    answer({ accessToken: 'fresh', refreshToken: 'r2', expiresIn: 21_600 });
    expect(await joined).toBe('fresh');
    expect(spent).toEqual(['r1']);
    expect(boundAborted).toBe(false);
    expect((await store.get(workspaceId, id))?.config).toMatchObject({
      access_token: 'fresh',
      refresh_token: 'r2',
    });
  });

  it("keeps waiting for another replica's pair while a call that joined later still wants it", async () => {
    const store = new IntegrationStore(pool, secrets);
    const { workspaceId, id } = await integration(store);
    const other = await anotherReplicaRefreshing(store, workspaceId, id);
    const first = oauthTokens(store, workspaceId, id, 2_000, { signal: AbortSignal.timeout(150) }).renew(
      'refused',
      neverAsked,
    );
    const later = oauthTokens(store, workspaceId, id, 2_000, { signal: AbortSignal.timeout(1_500) }).renew(
      'refused',
      neverAsked,
    );
    await expect(first).rejects.toMatchObject({ unsent: true });
    // The other replica stores its pair after the first call has gone: the later one takes it.
    await new Promise((resolve) => setTimeout(resolve, 200));
    await other.storesPair();
    expect(await later).toBe('theirs');
  });

  it("lets a later call join this process's own token call after the call that began it has left", async () => {
    const store = new IntegrationStore(pool, secrets);
    const { workspaceId, id } = await integration(store);
    const { counting, calls: claims } = countingCalls(store, 'claimConfig');
    let answer: (grant: TokenGrant) => void = () => undefined;
    const spent: string[] = [];
    const slow = (refreshToken: string) => {
      spent.push(refreshToken);
      return new Promise<TokenGrant>((resolve) => {
        answer = resolve;
      });
    };
    const first = oauthTokens(counting, workspaceId, id, 2_000, { signal: AbortSignal.timeout(100) }).renew(
      'refused',
      slow,
    );
    await expect(first).rejects.toMatchObject({ unsent: true });
    // The token call the first began is still under way, under this process's claim: the later call
    // waits for it rather than finding the claim taken and polling for the pair.
    const later = oauthTokens(counting, workspaceId, id, 2_000, { signal: AbortSignal.timeout(1_500) }).renew(
      'refused',
      slow,
    );
    await new Promise((resolve) => setTimeout(resolve, 250));
    answer({ accessToken: 'fresh', refreshToken: 'r2', expiresIn: 21_600 });
    expect(await later).toBe('fresh');
    expect(spent).toEqual(['r1']);
    expect(claims()).toBe(1);
  });

  it("stops waiting for another replica's refresh once every call of this process has left", async () => {
    const store = new IntegrationStore(pool, secrets);
    const { workspaceId, id } = await integration(store);
    const other = await anotherReplicaRefreshing(store, workspaceId, id);
    const { counting, calls: reads } = countingCalls(store, 'get');
    const gone = oauthTokens(counting, workspaceId, id, 2_000, { signal: AbortSignal.timeout(150) }).renew(
      'refused',
      neverAsked,
    );
    await expect(gone).rejects.toMatchObject({ unsent: true });
    await new Promise((resolve) => setTimeout(resolve, 150));
    const afterLeaving = reads();
    await new Promise((resolve) => setTimeout(resolve, 400));
    // Nobody waits: the process no longer polls for the other replica's pair.
    expect(reads()).toBe(afterLeaving);
    // A call that comes now starts afresh, and takes the pair once the other replica stores it.
    const later = oauthTokens(counting, workspaceId, id, 2_000, { signal: AbortSignal.timeout(1_500) }).renew(
      'refused',
      neverAsked,
    );
    await new Promise((resolve) => setTimeout(resolve, 120));
    await other.storesPair();
    expect(await later).toBe('theirs');
  });

  it('answers that an integration removed meanwhile is gone', async () => {
    const store = new IntegrationStore(pool, secrets);
    const { workspaceId, id } = await integration(store);
    await store.remove(workspaceId, id);
    await expect(
      oauthTokens(store, workspaceId, id, 2_000).renew('refused', async () => {
        throw new Error('never asked');
      }),
    ).rejects.toThrow(`integration ${id} is gone`);
  });
});
