import { describe, expect, it } from 'vitest';
import { InboundRejected } from './channel-adapter.js';
import { marketAdapter } from './market.js';

const config = {
  base_url: 'https://api.mercadolibre.com',
  seller_id: '123456789',
  access_token: 'APP_USR-1-1-x-123456789',
  refresh_token: 'TG-x-123456789',
  client_id: '2069392825111111',
  client_secret: 'secret',
};

/** A notification as ML documents it ("Receba notificações"), with overrides. */
const notification = (overrides: Record<string, unknown> = {}) => ({
  headers: {},
  rawBody: Buffer.from(
    JSON.stringify({
      _id: '5da8a1b24be30a49eb66c52a',
      resource: '/questions/5036111111',
      user_id: 123456789,
      topic: 'questions',
      application_id: 2069392825111111,
      attempts: 1,
      sent: '2017-10-09T13:51:05.464Z',
      received: '2017-10-09T13:51:05.438Z',
      ...overrides,
    }),
  ),
});

describe('market adapter: reading notifications', () => {
  it('names the question to fetch, and nothing else is taken from the notification', () => {
    expect(marketAdapter.readInbound(config, notification())).toEqual({
      messages: [],
      statuses: [],
      toFetch: [{ topic: 'questions', resource: '5036111111' }],
    });
  });

  it('reads a messages notification by the message id, user_id given as a string', () => {
    const read = marketAdapter.readInbound(
      config,
      notification({ topic: 'messages', resource: '3f6da1e35ac84f70a24af7360d24c7bc', user_id: '123456789' }),
    );
    expect(read.toFetch).toEqual([{ topic: 'messages', resource: '3f6da1e35ac84f70a24af7360d24c7bc' }]);
  });

  it('refuses a notification for another application or seller, or one that is not a notification', () => {
    for (const overrides of [{ application_id: 1 }, { user_id: 987654321 }, { resource: 42 }]) {
      expect(() => marketAdapter.readInbound(config, notification(overrides))).toThrow(InboundRejected);
    }
  });

  it('acknowledges other topics and resources it cannot name, fetching nothing', () => {
    for (const overrides of [
      { topic: 'items', resource: '/items/MLB123' },
      { topic: 'questions', resource: '/questions/../users/me' },
      { topic: 'messages', resource: '../../oauth/token' },
    ]) {
      expect(marketAdapter.readInbound(config, notification(overrides))).toEqual({
        messages: [],
        statuses: [],
      });
    }
  });
});
