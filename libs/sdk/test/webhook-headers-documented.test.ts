import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { deliveryHeaders } from '../src/webhooks/index.js';

// The OpenAPI document (docs/openapi.json, kept equal to the generated one by @inbox/contracts' tests)
// must list the headers of a delivery exactly as the signer sends them.

type Json = Record<string, unknown>;
const document = JSON.parse(readFileSync(new URL('../../../docs/openapi.json', import.meta.url), 'utf8')) as {
  webhooks: Record<string, { post: Json & { parameters: Json[] } }>;
};
// The four public events and the test event an operator sends: every one is a delivery like the others.
const publicEventTypes = Object.keys(document.webhooks);
if (publicEventTypes.length !== 5)
  throw new Error('docs/openapi.json should list the four webhook events and the test event');

describe('the documented webhook headers', () => {
  it('are every header of a webhook delivery as the dispatcher sends it, marking those of a secret', () => {
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    for (const event of publicEventTypes) {
      const base = { eventId: randomUUID(), eventType: event, body: '{"event":"x"}', now: new Date() };
      const signed = deliveryHeaders({ ...base, secret: 'new secret', previousSecret: 'old secret' });
      const unsigned = deliveryHeaders({ ...base, secret: null });
      const { parameters, requestBody } = document.webhooks[event]!.post;
      // Content-Type is the request body's media type, which OpenAPI does not list as a header.
      expect(signed['Content-Type']).toBe('application/json');
      expect(Object.keys((requestBody as Json).content as Json)).toEqual(['application/json']);
      const sent = (headers: Record<string, string>) =>
        Object.keys(headers)
          .filter((n) => n !== 'Content-Type')
          .sort();
      expect(parameters.map((p) => p.name).sort()).toEqual(sent(signed));
      expect(
        parameters
          .filter((p) => p.required)
          .map((p) => p.name)
          .sort(),
      ).toEqual(sent(unsigned));
      for (const parameter of parameters) {
        const value = signed[parameter.name as string];
        expect(ajv.validate(parameter.schema as Json, value), `${event} ${parameter.name}: ${value}`).toBe(
          true,
        );
      }
    }
  });
});
