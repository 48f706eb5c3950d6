import { waitFor } from '@inbox/testkit';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { callApi, eventsOf, type Json, onlyEvent, sandbox, sentTo, useStack } from './support/fixtures.js';

// The Meta messaging channels through the distributed stack: social (Messenger) and photo (Instagram).
// The integration subscribes the account to the app; the operator points the app's callback URL at the
// integration (the sandbox's stand-in for the App Dashboard, verified by hub.challenge); a signed
// callback becomes message.received with a contact keyed by the scoped user id; a reply from the panel
// reaches the Send API within the 24-hour window and is refused outside it; external send is refused.

const fixture = useStack();

const channels = [
  {
    channel: 'social',
    account: '104729185532299',
    user: '6543219870100001',
    config: (account: string) => ({ page_id: account, page_access_token: 'EAAG-e2e-page-token' }),
    path: (account: string) => `/social/v21.0/${account}/messages`,
    sent: (user: string, text: string) => ({
      recipient: { id: user },
      messaging_type: 'RESPONSE',
      message: { text },
    }),
  },
  {
    channel: 'photo',
    account: '17841400000000099',
    user: '1234567890100002',
    config: (account: string) => ({ ig_user_id: account, access_token: 'IGAA-e2e-token' }),
    path: (account: string) => `/photo/v21.0/${account}/messages`,
    sent: (user: string, text: string) => ({ recipient: { id: user }, message: { text } }),
  },
] as const;

describe('Meta messaging channels', () => {
  for (const subject of channels) {
    it(`${subject.channel}: a signed callback becomes message.received; the panel replies within the window; external send is refused`, async () => {
      const ws = await fixture.stack.admin<{ workspace_id: string; api_key: string }>(
        'POST',
        '/admin/v1/workspaces',
        { name: `meta-${subject.channel}` },
      );
      const workspaceId = ws.body.workspace_id;
      const key = ws.body.api_key;
      await fixture.stack.admin('POST', `/admin/v1/workspaces/${workspaceId}/webhooks`, {
        url: `${fixture.receiver.url}/meta-${subject.channel}`,
        events: ['*'],
      });

      const integration = await fixture.stack.admin<Json>(
        'POST',
        `/admin/v1/workspaces/${workspaceId}/integrations`,
        {
          channel: subject.channel,
          config: {
            ...subject.config(subject.account),
            app_secret: 'e2e-app-secret',
            verify_token: 'e2e-verify-token',
            base_url: `${fixture.stack.sandboxUrl}/${subject.channel}`,
          },
        },
      );
      expect(integration.status).toBe(201);
      expect(integration.body).toMatchObject({
        channel: subject.channel,
        provider: subject.channel,
        status: 'connected',
      });
      // The account was subscribed to the app; the callback URL is the app's, set by the operator, and
      // the answer says what to set (besides the http URL the real Meta would refuse).
      const callbackUrl = `${fixture.stack.connectorUrl}/inbound/${subject.channel}/${integration.body.id}`;
      expect(integration.body.warnings).toContainEqual(
        `O provedor do canal "${subject.channel}" não registra a URL de notificações por API: configure ${callbackUrl} como URL de notificações do aplicativo no painel de desenvolvedor do provedor, com os tópicos ${subject.channel === 'social' ? 'messages, messaging_postbacks, message_deliveries, message_reads' : 'messages, messaging_postbacks, messaging_seen'}`,
      );
      const registered = await sandbox(fixture.stack, `/_sandbox/${subject.channel}/app`, {
        account: subject.account,
        callback_url: `${fixture.stack.connectorUrl}/inbound/${subject.channel}/${integration.body.id}`,
        verify_token: 'e2e-verify-token',
        app_secret: 'e2e-app-secret',
      });
      expect(registered).toEqual({ status: 200, body: { ok: true } });

      const inbound = await sandbox(fixture.stack, '/_sandbox/inbound', {
        channel: subject.channel,
        account: subject.account,
        from: subject.user,
        text: 'Olá! Vocês entregam?',
        repeat: 2,
      });
      expect(inbound.body).toMatchObject({ ok: true, delivered_statuses: [200, 200] });
      const received = await onlyEvent(fixture.receiver, workspaceId, 'message.received');
      expect(received).toMatchObject({
        contact: { id: expect.any(String), phone: null, name: null },
        message: { text: 'Olá! Vocês entregam?', type: 'text' },
        integration: { id: integration.body.id, provider: subject.channel },
      });
      const conversationId = received!.conversation_id as string;

      // Echoes of our own sends and standby events (another app owns the thread) are not the customer's.
      const batch = await sandbox(fixture.stack, `/_sandbox/${subject.channel}/batch`, {
        account: subject.account,
        events: [
          { kind: 'echo', from: subject.user, text: 'eco' },
          { kind: 'standby', from: subject.user, text: 'em espera' },
        ],
      });
      expect(batch.body).toMatchObject({ ok: true, delivered_status: 200 });

      const external = await callApi(fixture.stack, 'POST', '/api/external/messages/send', key, {
        conversation_id: conversationId,
        text: 'pela API',
      });
      expect(external).toEqual({
        status: 400,
        body: {
          error: `O envio externo não é suportado em conversas do canal "${subject.channel}": ele só é suportado nos canais "chat-official", "alt-a", "alt-b", "bot" ou "livechat"`,
        },
      });

      const replyPath = `/admin/v1/workspaces/${workspaceId}/conversations/${conversationId}/messages`;
      const reply = await fixture.stack.admin<Json>('POST', replyPath, { text: 'Entregamos, sim!' });
      expect(reply.status).toBe(201);
      const atMeta = await sentTo(fixture.stack, subject.user, subject.channel);
      expect(atMeta).toHaveLength(1);
      expect(atMeta[0]).toMatchObject({
        path: subject.path(subject.account),
        body: subject.sent(subject.user, 'Entregamos, sim!'),
      });

      // The conversation's messages: the two echoed/standby events were not taken in.
      const read = await fixture.stack.admin<Json & { messages: Json[] }>(
        'GET',
        `/admin/v1/workspaces/${workspaceId}/conversations/${conversationId}`,
      );
      expect(read.body).toMatchObject({
        contact: { phone: null, name: null },
        integration: { channel: subject.channel, provider: subject.channel },
      });
      expect(read.body.messages.map((m) => m.text)).toEqual(['Olá! Vocês entregam?', 'Entregamos, sim!']);

      // The customer reads the reply: Instagram names it by its mid, Messenger only by a watermark, and
      // either way the reply shows read.
      const seen = await sandbox(fixture.stack, '/_sandbox/status', {
        channel: subject.channel,
        account: subject.account,
        message_id: atMeta[0]!.provider_message_id,
        status: 'read',
      });
      expect(seen.body).toMatchObject({ ok: true, delivered_status: 200 });
      await waitFor(
        async () => {
          const now = await fixture.stack.admin<Json & { messages: Json[] }>(
            'GET',
            `/admin/v1/workspaces/${workspaceId}/conversations/${conversationId}`,
          );
          return now.body.messages.find((m) => m.text === 'Entregamos, sim!')?.delivery_status === 'read';
        },
        { what: `the ${subject.channel} reply read` },
      );

      // A day later the window is closed: our own check refuses the reply before Meta is called (the
      // sandbox still has the window open, so only the local check can have refused it).
      const db = new pg.Client({ connectionString: fixture.stack.databaseUrl });
      await db.connect();
      try {
        await db.query(
          "update messaging.conversations set last_inbound_at = now() - interval '25 hours' where id = $1",
          [conversationId],
        );
      } finally {
        await db.end();
      }
      const late = await fixture.stack.admin<Json>('POST', replyPath, { text: 'ainda aí?' });
      expect(late).toMatchObject({
        status: 400,
        body: {
          error: `Fora da janela de 24 horas do canal "${subject.channel}": o contato não escreveu nas últimas 24 horas, e o provedor só aceita respostas dentro dela. Aguarde uma nova mensagem do contato`,
        },
      });
      expect(await sentTo(fixture.stack, subject.user, subject.channel)).toHaveLength(1);

      // The customer taps Get Started (a postback): taken in as their answer with the button's title,
      // it opens the window again as a message does.
      const tap = await sandbox(fixture.stack, '/_sandbox/inbound', {
        channel: subject.channel,
        account: subject.account,
        from: subject.user,
        text: 'Começar',
        type: 'postback',
      });
      expect(tap.body).toMatchObject({ ok: true, delivered_status: 200 });
      await waitFor(() => eventsOf(fixture.receiver, workspaceId, 'message.received').length === 2, {
        what: 'the postback received',
      });
      expect(eventsOf(fixture.receiver, workspaceId, 'message.received')[1]).toMatchObject({
        conversation_id: conversationId,
        message: { text: 'Começar', type: 'text' },
      });
      const again = await fixture.stack.admin<Json>('POST', replyPath, { text: 'Bem-vindo!' });
      expect(again.status).toBe(201);
      expect(await sentTo(fixture.stack, subject.user, subject.channel)).toHaveLength(2);
    });
  }

  it("social: two Pages of one app share its one callback URL, each Page's messages reach its own integration", async () => {
    const appSecret = 'e2e-shared-app-secret';
    const page = (n: number) => `10472918553${n}300`;
    const setUp = async (name: string, account: string, secret: string) => {
      const ws = await fixture.stack.admin<{ workspace_id: string }>('POST', '/admin/v1/workspaces', {
        name,
      });
      const workspaceId = ws.body.workspace_id;
      await fixture.stack.admin('POST', `/admin/v1/workspaces/${workspaceId}/webhooks`, {
        url: `${fixture.receiver.url}/${name}`,
        events: ['*'],
      });
      const integration = await fixture.stack.admin<Json>(
        'POST',
        `/admin/v1/workspaces/${workspaceId}/integrations`,
        {
          channel: 'social',
          config: {
            page_id: account,
            page_access_token: `EAAG-page-${account}`,
            app_secret: secret,
            verify_token: `verify-${name}`,
            base_url: `${fixture.stack.sandboxUrl}/social`,
          },
        },
      );
      expect(integration.status).toBe(201);
      return { workspaceId, id: String(integration.body.id), name };
    };
    const first = await setUp('meta-app-first', page(1), appSecret);
    // The second Page is another tenant's, on the same app; before it, a third tenant named that Page with
    // an app secret of its own.
    const pretender = await setUp('meta-app-pretender', page(2), 'another-app-secret');
    const second = await setUp('meta-app-second', page(2), appSecret);
    // The app's one callback URL is the first integration's; the second Page is only subscribed to the app.
    expect(
      await sandbox(fixture.stack, '/_sandbox/social/app', {
        account: page(1),
        callback_url: `${fixture.stack.connectorUrl}/inbound/social/${first.id}`,
        verify_token: 'verify-meta-app-first',
        app_secret: appSecret,
      }),
    ).toEqual({ status: 200, body: { ok: true } });
    expect(
      await sandbox(fixture.stack, '/_sandbox/social/app', { account: page(2), app_secret: appSecret }),
    ).toEqual({
      status: 200,
      body: { ok: true },
    });
    const inbound = await sandbox(fixture.stack, '/_sandbox/inbound', {
      channel: 'social',
      account: page(2),
      from: '6543219870100077',
      text: 'Oi, segunda página',
    });
    expect(inbound.body).toMatchObject({ ok: true, delivered_status: 200 });
    const received = await onlyEvent(fixture.receiver, second.workspaceId, 'message.received');
    expect(received).toMatchObject({
      message: { text: 'Oi, segunda página' },
      integration: { id: second.id, provider: 'social' },
    });
    // Nothing reached the first Page's workspace, nor the one whose integration names the Page with
    // another app's secret (its events were delivered by now: the second's came from the same POST).
    for (const other of [first, pretender])
      expect(eventsOf(fixture.receiver, other.workspaceId, 'message.received')).toEqual([]);
  });

  it('photo: refuses an account named by its app-scoped id, saying the user_id its webhooks carry', async () => {
    const account = '17841400000000055';
    const token = 'IGAA-e2e-scoped';
    // What an operator reads off `/me` in Graph's explorer: the account's app-scoped id.
    const me = await fetch(`${fixture.stack.sandboxUrl}/photo/v21.0/${account}?fields=id`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const appScoped = String(((await me.json()) as Json).id);
    expect(appScoped).not.toBe(account);
    const ws = await fixture.stack.admin<{ workspace_id: string }>('POST', '/admin/v1/workspaces', {
      name: 'meta-photo-scoped',
    });
    const path = `/admin/v1/workspaces/${ws.body.workspace_id}/integrations`;
    const create = (igUserId: string) =>
      fixture.stack.admin<Json>('POST', path, {
        channel: 'photo',
        config: {
          ig_user_id: igUserId,
          access_token: token,
          app_secret: 'e2e-app-secret',
          verify_token: 'e2e-verify-token',
          base_url: `${fixture.stack.sandboxUrl}/photo`,
        },
      });
    expect(await create(appScoped)).toMatchObject({
      status: 400,
      body: {
        error: `config.ig_user_id deve ser o id da conta nas notificações do provedor do canal "photo" (user_id): ${account}`,
      },
    });
    // Nothing was kept of it; the same account by its user_id connects.
    expect((await fixture.stack.admin<Json>('GET', path)).body).toEqual({ integrations: [] });
    expect(await create(account)).toMatchObject({ status: 201, body: { status: 'connected' } });
  });
});
