import { createHash, randomUUID } from 'node:crypto';
import { type EventType, eventCatalogue, platformTexts } from '@inbox/contracts';
import { waitFor } from '@inbox/testkit';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  forgetIdempotencyKeys,
  type Json,
  officialConfig,
  sandbox,
  sentTo as sentToSandbox,
  useStack,
} from './support/fixtures.js';

const fixture = useStack();
let ws: { id: string; key: string; integrationId: string };
const account = 'pn-templates';
/** The app secret of an account's integration here: derived from the account, as the sandbox is told it. */
const appSecretOf = (phoneNumberId: string) =>
  `app-${createHash('sha256').update(phoneNumberId).digest('hex').slice(0, 12)}`;
const appSecret = appSecretOf(account);

const registerTemplate = (template: Json) =>
  sandbox(fixture.stack, '/_sandbox/templates', { account, ...template });
const sendTemplate = (body: Json) => fixture.stack.api<Json>('/api/v1/send-template', ws.key, body);
const sentTo = (digits: string) => sentToSandbox(fixture.stack, digits, 'chat-official');

/** A workspace with a chat-official integration on the sandbox for `phoneNumberId`. */
async function officialWorkspace(name: string, phoneNumberId: string, secret: string) {
  const created = await fixture.stack.admin<{ workspace_id: string; api_key: string }>(
    'POST',
    '/admin/v1/workspaces',
    { name },
  );
  const integration = await fixture.stack.admin<{ id: string }>(
    'POST',
    `/admin/v1/workspaces/${created.body.workspace_id}/integrations`,
    {
      channel: 'chat-official',
      config: officialConfig(fixture.stack, phoneNumberId, secret),
    },
  );
  expect(integration.status).toBe(201);
  return { id: created.body.workspace_id, key: created.body.api_key, integrationId: integration.body.id };
}

beforeAll(async () => {
  await registerTemplate({
    name: 'boas_vindas',
    language: 'pt_BR',
    body: 'Olá {{1}}, seu pedido {{2}} saiu!',
  });
  await registerTemplate({
    name: 'promo_imagem',
    language: 'pt_BR',
    body: 'Oferta para {{1}}',
    header: { format: 'IMAGE' },
    buttons: [
      { type: 'URL', text: 'Ver', url: 'https://loja.example/{{1}}' },
      { type: 'QUICK_REPLY', text: 'Quero' },
    ],
  });
  ws = await officialWorkspace('templates', account, appSecret);
  await fixture.stack.admin('POST', `/admin/v1/workspaces/${ws.id}/webhooks`, {
    url: `${fixture.receiver.url}/t`,
    events: ['*'],
  });
});

describe('POST /api/v1/send-template', () => {
  it('fetches the catalogue of a new official integration at once, without being asked', async () => {
    await waitFor(
      async () => {
        const listed = await fixture.stack.admin<{ templates: Json[]; refreshed_at: string | null }>(
          'GET',
          `/admin/v1/workspaces/${ws.id}/integrations/${ws.integrationId}/templates`,
        );
        return (
          listed.body.refreshed_at !== null && listed.body.templates.some((t) => t.name === 'boas_vindas')
        );
      },
      { what: 'the first catalogue fetch' },
    );
  });

  it('sends every component in the provider format, echoes the template, stores the rendered body, and assigns by agentId', async () => {
    const agent = await fixture.stack.admin<{ id: string }>('POST', `/admin/v1/workspaces/${ws.id}/agents`, {
      name: 'Robô',
    });
    const request = {
      phone: '+5511966660001',
      channel: 'chat-official',
      templateName: 'promo_imagem',
      variables: ['Bruna'],
      headerMedia: { type: 'image', link: 'https://cdn.example/oferta.png' },
      buttons: [
        { index: 0, type: 'url', text: 'abc123' },
        { index: 1, type: 'quick_reply', payload: 'QUERO-1' },
      ],
      agentId: agent.body.id,
      contactName: 'Bruna',
    };
    const sent = await sendTemplate(request);
    expect(sent.status).toBe(200);
    expect(sent.body).toMatchObject({ success: true, contactCreated: true, conversationCreated: true });
    expect(sent.body.waMessageId).toMatch(/^wamid\./);
    expect(sent.body.template).toEqual({
      name: 'promo_imagem',
      language: 'pt_BR',
      variables: ['Bruna'],
      headerMedia: { type: 'image', link: 'https://cdn.example/oferta.png' },
      buttons: [
        { index: 0, type: 'url', text: 'abc123' },
        { index: 1, type: 'quick_reply', payload: 'QUERO-1' },
      ],
    });
    const [atProvider] = await sentTo('5511966660001');
    expect(atProvider!.body).toEqual({
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      // Our id, which Meta repeats in the message's statuses.
      biz_opaque_callback_data: sent.body.messageId,
      to: '5511966660001',
      type: 'template',
      template: {
        name: 'promo_imagem',
        language: { code: 'pt_BR' },
        components: [
          {
            type: 'header',
            parameters: [{ type: 'image', image: { link: 'https://cdn.example/oferta.png' } }],
          },
          { type: 'body', parameters: [{ type: 'text', text: 'Bruna' }] },
          { type: 'button', sub_type: 'url', index: '0', parameters: [{ type: 'text', text: 'abc123' }] },
          {
            type: 'button',
            sub_type: 'quick_reply',
            index: '1',
            parameters: [{ type: 'payload', payload: 'QUERO-1' }],
          },
        ],
      },
    });
    const events = await waitFor(
      () => {
        const found = fixture.receiver.received
          .map((r) => JSON.parse(r.rawBody) as Json)
          .filter((p) => p.conversation_id === sent.body.conversationId)
          .map((p) => eventCatalogue[p.event as EventType].parse(p) as Json);
        return found.length >= 2 ? found : undefined;
      },
      { what: 'assigned and sent' },
    );
    expect(events.map((e) => e.event)).toEqual(['conversation.assigned', 'message.sent']);
    expect((events[1]!.message as Json).text).toBe('Oferta para Bruna');
  });

  it('echoes nulls, defaults language to pt_BR, sends numbers as text, and opens free text after the reply', async () => {
    const sent = await sendTemplate({
      phone: '11966660002',
      channel: 'chat-official',
      templateName: 'boas_vindas',
      variables: ['Caio', 4521],
    });
    expect(sent.status).toBe(200);
    expect(sent.body.template).toEqual({
      name: 'boas_vindas',
      language: 'pt_BR',
      variables: ['Caio', 4521],
      headerMedia: null,
      buttons: null,
    });
    const [atProvider] = await sentTo('5511966660002');
    expect(((atProvider!.body as Json).template as Json).components).toEqual([
      {
        type: 'body',
        parameters: [
          { type: 'text', text: 'Caio' },
          { type: 'text', text: '4521' },
        ],
      },
    ]);
    const conversation = await fixture.stack.admin<Json & { messages: Json[] }>(
      'GET',
      `/admin/v1/workspaces/${ws.id}/conversations/${sent.body.conversationId}`,
    );
    expect(conversation.body.messages[0]!.text).toBe('Olá Caio, seu pedido 4521 saiu!');

    const free = { phone: '+5511966660002', message: 'Obrigado!', channel: 'chat-official' };
    expect((await fixture.stack.api<Json>('/api/v1/send-message', ws.key, free)).body).toMatchObject({
      requires_template: true,
    });
    await sandbox(fixture.stack, '/_sandbox/inbound', {
      channel: 'chat-official',
      account,
      from: '5511966660002',
      text: 'Oba!',
      app_secret: appSecret,
    });
    const accepted = await waitFor(
      async () => {
        const answer = await fixture.stack.api<Json>('/api/v1/send-message', ws.key, free);
        return answer.status === 200 ? answer : undefined;
      },
      { what: 'free text after the reply' },
    );
    expect(accepted.body.conversationId).toBe(sent.body.conversationId);
  });

  it('refuses with 132001, 132000 and 131053 from our catalogue, before calling the provider', async () => {
    const cases: Array<[Json, number, RegExp]> = [
      [
        { templateName: 'nao_existe' },
        132001,
        /Template "nao_existe" \(idioma pt_BR\) não encontrado ou não aprovado/,
      ],
      [{ templateName: 'boas_vindas', language: 'en_US', variables: ['a', 'b'] }, 132001, /idioma en_US/],
      [{ templateName: 'boas_vindas', variables: ['só uma'] }, 132000, /tem 2 placeholder\(s\).*1 variável/],
      [{ templateName: 'promo_imagem', variables: ['x'] }, 131053, /headerMedia é obrigatório.*image/],
      [
        {
          templateName: 'promo_imagem',
          variables: ['x'],
          headerMedia: { type: 'video', link: 'https://x/v.mp4' },
        },
        131053,
        /deve ser "image"/,
      ],
    ];
    for (const [fields, code, text] of cases) {
      const answer = await sendTemplate({ phone: '+5511966660003', channel: 'chat-official', ...fields });
      expect(answer.status, JSON.stringify(fields)).toBe(400);
      expect(answer.body.meta_error_code).toBe(code);
      expect(String(answer.body.error)).toMatch(text);
    }
    expect(await sentTo('5511966660003')).toHaveLength(0);
  });

  it('refreshes once for a template approved after the catalogue was fetched', async () => {
    await registerTemplate({ name: 'recem_aprovado', language: 'pt_BR', body: 'Novo!' });
    const sent = await sendTemplate({
      phone: '+5511966660004',
      channel: 'chat-official',
      templateName: 'recem_aprovado',
    });
    expect(sent.status).toBe(200);
    const listed = await fixture.stack.admin<{ templates: Json[] }>(
      'GET',
      `/admin/v1/workspaces/${ws.id}/integrations/${ws.integrationId}/templates`,
    );
    expect(listed.body.templates.map((t) => t.name)).toContain('recem_aprovado');
  });

  it("passes the provider's 132001, 132000 and 131053 through when our catalogue is stale", async () => {
    await registerTemplate({ name: 'mutante', language: 'pt_BR', body: 'Oi {{1}}' });
    const refreshed = await fixture.stack.admin<{ templates: Json[] }>(
      'POST',
      `/admin/v1/workspaces/${ws.id}/integrations/${ws.integrationId}/templates/refresh`,
    );
    expect(refreshed.body.templates.map((t) => t.name)).toContain('mutante');
    const base = { phone: '+5511966660005', channel: 'chat-official', templateName: 'mutante' };

    // The provider now wants two variables; our copy still says one.
    await registerTemplate({ name: 'mutante', language: 'pt_BR', body: 'Oi {{1}} {{2}}' });
    const count = await sendTemplate({ ...base, variables: ['a'] });
    // Our words, not the provider's: its details stay in our records.
    expect(count.body).toEqual({ error: platformTexts.templateVariablesRefused, meta_error_code: 132000 });
    // Now it has a media header; our copy has none.
    await registerTemplate({
      name: 'mutante',
      language: 'pt_BR',
      body: 'Oi {{1}}',
      header: { format: 'VIDEO' },
    });
    const media = await sendTemplate({ ...base, variables: ['a'] });
    expect(media.body).toMatchObject({ meta_error_code: 131053 });
    // And now it is no longer approved.
    await registerTemplate({ name: 'mutante', language: 'pt_BR', body: 'Oi {{1}}', status: 'REJECTED' });
    const gone = await sendTemplate({ ...base, variables: ['a'] });
    expect(gone.body).toEqual({ error: platformTexts.templateRefusedByProvider, meta_error_code: 132001 });
    expect([count.status, media.status, gone.status]).toEqual([400, 400, 400]);
  });

  it("records the provider's late 131053 when it cannot fetch the header's media", async () => {
    const lateAccount = 'pn-late-media';
    const late = await officialWorkspace('late media', lateAccount, 'app-late-media');
    await sandbox(fixture.stack, '/_sandbox/templates', {
      account: lateAccount,
      name: 'banner',
      language: 'pt_BR',
      body: 'Oferta para {{1}}',
      header: { format: 'IMAGE' },
    });
    // Meta knows the app's secret and signs its status callbacks with it; the sandbox is told.
    await sandbox(fixture.stack, '/_sandbox/chat-official/app-secret', {
      account: lateAccount,
      app_secret: 'app-late-media',
    });
    // Nothing listens there: Meta's download of the media fails after it accepted the message.
    const link = 'http://127.0.0.1:9/banner.png';
    const sent = await waitFor(
      async () => {
        const answer = await fixture.stack.api<Json>('/api/v1/send-template', late.key, {
          phone: '+5511966660010',
          channel: 'chat-official',
          templateName: 'banner',
          variables: ['Lia'],
          headerMedia: { type: 'image', link },
        });
        // The catalogue of a new integration is fetched in the background; until then the name is unknown.
        return answer.status === 200 ? answer : undefined;
      },
      { what: 'the template send' },
    );
    expect(sent.body.waMessageId).toMatch(/^wamid\./);
    const failed = await waitFor(
      async () => {
        const read = await fixture.stack.admin<Json & { messages: Json[] }>(
          'GET',
          `/admin/v1/workspaces/${late.id}/conversations/${sent.body.conversationId}`,
        );
        const message = read.body.messages.find((m) => m.id === sent.body.messageId);
        return message?.delivery_status === 'failed' ? message : undefined;
      },
      { what: 'the late 131053 failure on the message' },
    );
    expect(failed).toMatchObject({
      text: 'Oferta para Lia',
      delivery_error_code: 131053,
      error: expect.stringContaining(
        `131053 Media upload error: Unable to upload the media used in the message. Downloading ${link} failed`,
      ),
    });
    const listed = await fixture.stack.admin<{ messages: Json[] }>(
      'GET',
      `/admin/v1/workspaces/${late.id}/messages/failed`,
    );
    expect(listed.body.messages.map((m) => [m.id, m.delivery_error_code])).toEqual([
      [sent.body.messageId, 131053],
    ]);
  });

  it('answers 404 without a connected official integration', async () => {
    const other = await fixture.stack.admin<{ api_key: string }>('POST', '/admin/v1/workspaces', {
      name: 'sem oficial',
    });
    const answer = await fixture.stack.api<Json>('/api/v1/send-template', other.body.api_key, {
      phone: '+5511966660006',
      channel: 'chat-official',
      templateName: 'boas_vindas',
    });
    expect(answer).toEqual({
      status: 404,
      body: { error: 'Nenhuma integração conectada do canal "chat-official" neste workspace' },
    });
  });
});

describe('a send-template naming its integration', () => {
  it("takes the one it names, and refuses one not connected, unknown or another workspace's", async () => {
    const namedAccount = 'pn-templates-named';
    await sandbox(fixture.stack, '/_sandbox/templates', {
      account: namedAccount,
      name: 'boas_vindas',
      language: 'pt_BR',
      body: 'Olá {{1}}, seu pedido {{2}} saiu!',
    });
    const named = await officialWorkspace('templates-named', namedAccount, appSecretOf(namedAccount));
    const request = {
      phone: '+5511966660007',
      channel: 'chat-official',
      templateName: 'boas_vindas',
      variables: ['Ana', '42'],
    };
    const call = (extra: Json) =>
      fixture.stack.api<Json>('/api/v1/send-template', named.key, { ...request, ...extra });

    const sent = await call({ integrationId: named.integrationId });
    expect(sent.status).toBe(200);
    const conversation = await fixture.stack.admin<Json>(
      'GET',
      `/admin/v1/workspaces/${named.id}/conversations/${sent.body.conversationId}`,
    );
    expect(conversation.body.integration).toMatchObject({ id: named.integrationId });
    // The phone's rule is send-message's.
    expect(await call({ phone: '123456789' })).toEqual({
      status: 400,
      body: { error: 'phone inválido. Forneça em E.164 ou só dígitos (mínimo 10).' },
    });
    for (const integrationId of [ws.integrationId, randomUUID()])
      expect(await call({ integrationId })).toEqual({
        status: 404,
        body: { error: platformTexts.integrationNotFound },
      });

    await fixture.stack.admin(
      'PATCH',
      `/admin/v1/workspaces/${named.id}/integrations/${named.integrationId}`,
      {
        status: 'disconnected',
      },
    );
    expect(await call({ integrationId: named.integrationId })).toEqual({
      status: 400,
      body: { error: 'Integração não está conectada' },
    });
    expect(await call({})).toEqual({
      status: 404,
      body: { error: 'Nenhuma integração conectada do canal "chat-official" neste workspace' },
    });
  });
});

describe('templates we do not know', () => {
  it('refresh the catalogue only within a small budget, so made-up names cannot each cost a full fetch', async () => {
    const floodAccount = 'pn-template-flood';
    const flood = await officialWorkspace('template flood', floodAccount, 'app-flood');
    const send = (templateName: string) =>
      fixture.stack.api<Json>('/api/v1/send-template', flood.key, {
        phone: '+5511966660099',
        channel: 'chat-official',
        templateName,
      });
    for (let i = 0; i < 12; i++) expect((await send(`inventado_${i}`)).body.meta_error_code).toBe(132001);
    // Approved now, but the budget of refreshes on a miss is spent: our copy stays as it was for a while.
    await sandbox(fixture.stack, '/_sandbox/templates', {
      account: floodAccount,
      name: 'aprovado_agora',
      language: 'pt_BR',
      body: 'Oi',
    });
    expect((await send('aprovado_agora')).body.meta_error_code).toBe(132001);
    // An explicit refresh still works at once.
    await fixture.stack.admin(
      'POST',
      `/admin/v1/workspaces/${flood.id}/integrations/${flood.integrationId}/templates/refresh`,
    );
    expect((await send('aprovado_agora')).status).toBe(200);
  });
});

describe('a keyed send-template', () => {
  const keyed = async (body: Json, key: string) => {
    const response = await fetch(`${fixture.stack.gatewayUrl}/api/v1/send-template`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${ws.key}`,
        'content-type': 'application/json',
        'idempotency-key': key,
      },
      body: JSON.stringify(body),
    });
    return {
      status: response.status,
      replayed: response.headers.get('idempotent-replayed'),
      body: await response.json(),
    };
  };
  it('is sent once: a replay gets the first answer, and so does a retry the gateway lost track of', async () => {
    const request = {
      phone: '+5511966660091',
      channel: 'chat-official',
      templateName: 'boas_vindas',
      language: 'pt_BR',
      variables: ['Iara', 'A-91'],
    };
    const first = await keyed(request, 'template-once');
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ success: true, template: { name: 'boas_vindas' } });
    const replay = await keyed(request, 'template-once');
    expect(replay).toEqual({ ...first, replayed: 'true' });
    // As a gateway that died before recording the answer leaves it: its record of the key gone.
    await forgetIdempotencyKeys(fixture.stack, ws.id);
    // Messaging finds the message the key created and answers from it: same ids, no second provider call.
    const retry = await keyed(request, 'template-once');
    expect(retry).toEqual(first);
    expect(await sentTo('5511966660091')).toHaveLength(1);
    const other = await keyed({ ...request, variables: ['Iara', 'B-92'] }, 'template-once');
    expect(other).toMatchObject({
      status: 422,
      body: { error: platformTexts.idempotencyKeyReused },
    });
    expect(await sentTo('5511966660091')).toHaveLength(1);
  });
});
