import { openApiDocument } from '@inbox/contracts';
import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { afterAll } from 'vitest';

/**
 * The generated OpenAPI document must tell the truth: every answer the e2e suite gets from a documented
 * route, and every webhook its receivers get, is checked against the document's own schemas. Importing
 * this module installs the check on `fetch` for the whole test file, and fails the file at its end if a
 * webhook receiver recorded a disagreement.
 */

type Schema = Record<string, unknown>;
interface Operation {
  method: string;
  template: string;
  pattern: RegExp;
  responses: Record<string, { content?: Record<string, { schema?: Schema }> }>;
}

const document = openApiDocument() as unknown as {
  paths: Record<string, Record<string, Operation['responses'] | { responses: Operation['responses'] }>>;
  webhooks: Record<
    string,
    {
      post: {
        parameters?: Array<{ in: string; name: string; required?: boolean }>;
        requestBody: { content: Record<string, { schema: Schema }> };
      };
    }
  >;
};

const documentId = 'openapi.json';
// OpenAPI 3.1 schemas are JSON Schema 2020-12, with a few annotation keywords ajv need not know.
const ajv = new Ajv2020({ strict: false, allErrors: true });
const addFormats =
  (addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule;
(addFormats as unknown as (instance: Ajv2020) => void)(ajv);
ajv.addSchema(document as unknown as Schema, documentId);

const pointer = (...segments: string[]) =>
  `${documentId}#/${segments.map((s) => s.replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`;

const methods = ['get', 'put', 'post', 'delete', 'patch'];
const operations: Operation[] = Object.entries(document.paths).flatMap(([template, item]) =>
  Object.entries(item)
    .filter(([method]) => methods.includes(method))
    .map(([method, operation]) => ({
      method,
      template,
      pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`),
      responses: (operation as { responses: Operation['responses'] }).responses,
    })),
);

/** What the document got wrong, kept for the test file's end as well as thrown where it happened. */
export const contractViolations: string[] = [];

function violation(text: string): Error {
  contractViolations.push(text);
  return new Error(`OpenAPI document disagrees with the platform: ${text}`);
}

const describeErrors = (errors: ErrorObject[] | null | undefined) =>
  (errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ');

function documentedOperation(method: string, url: string): Operation | undefined {
  const path = new URL(url).pathname;
  return operations.find((op) => op.method === method.toLowerCase() && op.pattern.test(path));
}

/** Checks one answer of the gateway against its documented operation; routes not documented pass. */
export function checkAnswer(method: string, url: string, status: number, contentType: string, body: string) {
  const operation = documentedOperation(method, url);
  if (!operation) return;
  const where = `${method.toUpperCase()} ${operation.template} → ${status}`;
  const response = operation.responses[String(status)] ?? operation.responses.default;
  if (!response) throw violation(`${where}: status not documented`);
  if (!response.content) return;
  if (!contentType.startsWith('application/json') || !response.content['application/json']) {
    throw violation(`${where}: answered ${contentType || 'no content type'}`);
  }
  const statusKey = operation.responses[String(status)] ? String(status) : 'default';
  const validate = ajv.getSchema(
    pointer(
      'paths',
      operation.template,
      operation.method,
      'responses',
      statusKey,
      'content',
      'application/json',
      'schema',
    ),
  );
  if (!validate) throw violation(`${where}: no schema`);
  if (!validate(JSON.parse(body))) throw violation(`${where}: ${describeErrors(validate.errors)} in ${body}`);
}

/** Checks a webhook delivery: its body against the event's payload schema, its headers against the list. */
export function checkWebhook(headers: Record<string, string | string[] | undefined>, rawBody: string) {
  const payload = JSON.parse(rawBody) as { event?: string };
  const webhook = payload.event ? document.webhooks[payload.event] : undefined;
  if (!webhook) throw violation(`webhook ${payload.event ?? '(no event)'} not documented`);
  const validate = ajv.getSchema(
    pointer('webhooks', payload.event!, 'post', 'requestBody', 'content', 'application/json', 'schema'),
  );
  if (!validate?.(payload)) {
    throw violation(`webhook ${payload.event}: ${describeErrors(validate?.errors)} in ${rawBody}`);
  }
  for (const header of webhook.post.parameters ?? []) {
    if (header.in === 'header' && header.required && headers[header.name.toLowerCase()] === undefined) {
      throw violation(`webhook ${payload.event}: header ${header.name} missing`);
    }
  }
}

// Each test file loads this module afresh; the fetch it wraps is always the original one.
const original = Symbol.for('inbox.openapi-contract.fetch');
const holder = globalThis as unknown as Record<symbol, typeof fetch>;
holder[original] ??= globalThis.fetch;
const realFetch = holder[original];
globalThis.fetch = async (input, init) => {
  const response = await realFetch(input, init);
  const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
  const url = response.url || (input instanceof Request ? input.url : String(input));
  // Only a documented route's answer is read twice (the sandbox's, the metrics' are left alone).
  if (!documentedOperation(method, url)) return response;
  checkAnswer(
    method,
    url,
    response.status,
    response.headers.get('content-type') ?? '',
    await response.clone().text(),
  );
  return response;
};

afterAll(() => {
  if (contractViolations.length > 0) {
    throw new Error(`OpenAPI document disagrees with the platform:\n${contractViolations.join('\n')}`);
  }
});
