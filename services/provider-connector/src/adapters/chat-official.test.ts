import { createHmac } from 'node:crypto';
import { AppError } from '@inbox/contracts';
import { describe, expect, it } from 'vitest';
import { InboundRejected, ProviderError } from './channel-adapter.js';
import { chatOfficialAdapter, graphFailure } from './chat-official.js';

const config = {
  base_url: 'https://graph.facebook.com',
  phone_number_id: '106540352242922',
  waba_id: '102290129340398',
  access_token: 'EAAJB-token',
  app_secret: 'app-secret',
  verify_token: 'verify',
  api_version: 'v21.0',
};

/** Meta signs the body as it sends it: the escaped bytes, keyed with the app secret. */
function signed(rawBody: string, secret = config.app_secret) {
  const signature = createHmac('sha256', secret).update(rawBody, 'utf8').digest('hex');
  return {
    headers: { 'x-hub-signature-256': `sha256=${signature}` },
    rawBody: Buffer.from(rawBody, 'utf8'),
  };
}

// The text message sample of Meta's "messages" webhook reference (ids, numbers, timestamp), with a name
// and text that are not ASCII, as Meta serialises them: escaped with lowercase hex digits, slashes too.
const textSample = String.raw`{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","changes":[{"value":{"messaging_product":"whatsapp","metadata":{"display_phone_number":"15550783881","phone_number_id":"106540352242922"},"contacts":[{"profile":{"name":"Jo\u00e3o Ara\u00fajo"},"wa_id":"16505551234"}],"messages":[{"from":"16505551234","id":"wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=","timestamp":"1749416383","type":"text","text":{"body":"Ol\u00e1! Tem em outra cor? 1\/2 \ud83d\ude00"}}]},"field":"messages"}]}]}`;

// A status notification in the shape of Meta's status webhook reference (errors[] with code, title,
// message, error_data.details, href): a message accepted and then failed outside the 24-hour window.
const failedSample = String.raw`{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","changes":[{"value":{"messaging_product":"whatsapp","metadata":{"display_phone_number":"15550783881","phone_number_id":"106540352242922"},"statuses":[{"id":"wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBJBRDI1Q0QxNEUzNjY4MjE1QjQA","status":"failed","timestamp":"1694468585","recipient_id":"16505551234","errors":[{"code":131047,"title":"Re-engagement message","message":"Re-engagement message","error_data":{"details":"Message failed to send because more than 24 hours have passed since the customer last replied to this number."},"href":"https:\/\/developers.facebook.com\/docs\/whatsapp\/cloud-api\/support\/error-codes\/"}]}]},"field":"messages"}]}]}`;

describe('chat-official callbacks', () => {
  it("verifies Meta's signature over the escaped bytes it sends and reads the unescaped text", () => {
    const batch = chatOfficialAdapter.readInbound(config, signed(textSample));
    expect(batch).toEqual({
      messages: [
        {
          providerMessageId: 'wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=',
          from: '16505551234',
          name: 'João Araújo',
          text: 'Olá! Tem em outra cor? 1/2 😀',
          type: 'text',
          sentAt: new Date(1749416383 * 1000),
        },
      ],
      statuses: [],
    });
  });

  it('refuses the same content when the signature is over another serialisation, or another secret', () => {
    // What a receiver that parsed and re-serialised the body would hash: the same data, other bytes.
    const reserialised = JSON.stringify(JSON.parse(textSample));
    expect(reserialised).not.toBe(textSample);
    const signedOtherBytes = { ...signed(reserialised), rawBody: Buffer.from(textSample) };
    expect(() => chatOfficialAdapter.readInbound(config, signedOtherBytes)).toThrow(InboundRejected);
    expect(() => chatOfficialAdapter.readInbound(config, signed(textSample, 'other-secret'))).toThrow(
      InboundRejected,
    );
    expect(() =>
      chatOfficialAdapter.readInbound(config, { headers: {}, rawBody: Buffer.from(textSample) }),
    ).toThrow(InboundRejected);
  });

  it('reads a failed status with its 131047 error, code and time', () => {
    const batch = chatOfficialAdapter.readInbound(config, signed(failedSample));
    expect(batch).toEqual({
      messages: [],
      statuses: [
        {
          providerMessageId: 'wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBJBRDI1Q0QxNEUzNjY4MjE1QjQA',
          status: 'failed',
          error:
            '131047 Re-engagement message: Message failed to send because more than 24 hours have passed since the customer last replied to this number.',
          errorCode: 131047,
          at: new Date(1694468585 * 1000),
        },
      ],
    });
  });

  it('reads every entry and change of a batched notification, and skips changes it does not know', () => {
    const value = (rest: Record<string, unknown>) => ({
      messaging_product: 'whatsapp',
      metadata: { display_phone_number: '15550783881', phone_number_id: config.phone_number_id },
      ...rest,
    });
    const message = (id: string, from: string, body: string) => ({
      from,
      id,
      timestamp: '1749416383',
      type: 'text',
      text: { body },
    });
    const batch = JSON.stringify({
      object: 'whatsapp_business_account',
      entry: [
        {
          id: config.waba_id,
          changes: [
            {
              field: 'messages',
              value: value({
                contacts: [
                  { profile: { name: 'Ana' }, wa_id: '5511999990001' },
                  { profile: { name: 'Bia' }, wa_id: '5511999990002' },
                ],
                messages: [
                  message('wamid.A', '5511999990001', 'primeira'),
                  message('wamid.B', '5511999990002', 'segunda'),
                ],
              }),
            },
            {
              field: 'messages',
              value: value({
                statuses: [
                  {
                    id: 'wamid.OUT',
                    status: 'delivered',
                    timestamp: '1749416390',
                    recipient_id: '5511999990001',
                  },
                ],
              }),
            },
            // Another field, and a change of a shape this adapter does not read: neither costs the rest.
            { field: 'message_template_status_update', value: { event: 'APPROVED' } },
            { field: 'messages', value: { messages: 'not a list' } },
          ],
        },
        {
          id: config.waba_id,
          changes: [
            {
              field: 'messages',
              value: value({ messages: [message('wamid.C', '5511999990003', 'terceira')] }),
            },
          ],
        },
      ],
    });
    const read = chatOfficialAdapter.readInbound(config, signed(batch));
    expect(read.messages.map((m) => [m.providerMessageId, m.name, m.text])).toEqual([
      ['wamid.A', 'Ana', 'primeira'],
      ['wamid.B', 'Bia', 'segunda'],
      ['wamid.C', null, 'terceira'],
    ]);
    expect(read.statuses).toEqual([
      {
        providerMessageId: 'wamid.OUT',
        status: 'delivered',
        error: null,
        errorCode: null,
        at: new Date(1749416390 * 1000),
      },
    ]);
  });
});

describe('chat-official errors', () => {
  const graph = (code: number, extra: Record<string, unknown> = {}) => ({
    error: {
      message: `(#${code}) title`,
      type: 'OAuthException',
      code,
      fbtrace_id: 'Az8or2yhqkZfEZ-_4Qn_Bam',
      ...extra,
    },
  });

  it('takes an expired or revoked token (190) as credentials the provider no longer takes', () => {
    const failure = graphFailure(
      401,
      graph(190, { error_subcode: 463, message: 'Error validating access token: Session has expired' }),
    );
    expect(failure).toBeInstanceOf(ProviderError);
    expect(failure).toMatchObject({ status: 401, providerCode: 190, refusal: 'credentials_rejected' });
  });

  it.each([130429, 131056, 80007, 4])('takes %i as a rate limit', (code) => {
    expect(
      graphFailure(400, graph(code, { error_data: { messaging_product: 'whatsapp', details: 'slow down' } })),
    ).toMatchObject({ name: 'ProviderError', providerCode: code, refusal: 'rate_limited' });
  });

  it('keeps 131047 the window answer and other codes plain provider failures', () => {
    const window = graphFailure(400, graph(131047));
    expect(window).toBeInstanceOf(AppError);
    expect((window as AppError).body).toMatchObject({ requires_template: true, meta_error_code: 131047 });
    expect(graphFailure(400, graph(100))).toMatchObject({
      name: 'ProviderError',
      providerCode: 100,
      refusal: undefined,
    });
    expect(graphFailure(502, '<html>')).toMatchObject({
      name: 'ProviderError',
      status: 502,
      refusal: undefined,
    });
  });
});
