import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { checkAnswer, checkWebhook, contractViolations } from './support/openapi-contract.js';

// The check every e2e answer and webhook passes through must itself refuse what the document does not say.

const json = 'application/json; charset=utf-8';
const uuid = '3f1c2a8e-5b7d-4c1e-9a2b-6d8e0f4a1b2c';

describe('the OpenAPI contract check', () => {
  it('accepts a documented answer and refuses one the document does not describe', () => {
    const url = 'http://127.0.0.1:1/api/v1/send-message';
    expect(() => checkAnswer('POST', url, 400, json, JSON.stringify({ error: 'x' }))).not.toThrow();
    expect(() => checkAnswer('POST', url, 200, json, JSON.stringify({ success: true }))).toThrow(
      /send-message/,
    );
    expect(() => checkAnswer('POST', url, 418, json, '{}')).toThrow(/not documented/);
    expect(() => checkAnswer('GET', 'http://127.0.0.1:1/healthz', 200, json, '{}')).not.toThrow();
    contractViolations.length = 0;
  });

  it('refuses a webhook body that is not the documented payload', () => {
    const resolved = {
      event: 'conversation.resolved',
      workspace_id: uuid,
      conversation_id: uuid,
      status: { value: 'resolved' },
    };
    const headers = { 'content-type': 'application/json' };
    expect(() => checkWebhook(headers, JSON.stringify({ ...resolved, status: { value: 'open' } }))).toThrow(
      /conversation.resolved/,
    );
    expect(() => checkWebhook(headers, JSON.stringify({ ...resolved, event: 'message.deleted' }))).toThrow(
      /not documented/,
    );
    contractViolations.length = 0;
  });

  it('is applied to every fetch of a documented route', async () => {
    // A server that answers send-message with a body the document does not allow.
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ success: true }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      await expect(fetch(`http://127.0.0.1:${port}/api/v1/send-message`, { method: 'POST' })).rejects.toThrow(
        /send-message/,
      );
      expect((await fetch(`http://127.0.0.1:${port}/not-documented`)).status).toBe(200);
    } finally {
      server.close();
      contractViolations.length = 0;
    }
  });
});
