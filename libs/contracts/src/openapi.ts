import {
  OpenAPIRegistry,
  OpenApiGeneratorV31,
  type ResponseConfig,
  zodToOpenAPIRegistry,
} from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { commandCatalogue } from './commands.js';
import { eventTypes } from './event-types.js';
import { eventCatalogue, type PublicEventType, publicEventTypes } from './events.js';
import * as contracts from './index.js';
import { Examples, failureResponses, InternalErrorResponse } from './openapi-failures.js';
import {
  deliveryHeaderParameters,
  documentedRateLimit,
  idempotencyKey,
  rateLimitHeaders,
  ref,
  responseHeaders,
} from './openapi-headers.js';
import { testEventType, WebhookTest } from './public-events.js';
import { isBodyRule, isCommandRoute, type RouteDefinition, routes } from './routes.js';

/**
 * The OpenAPI 3.1 document of the gateway, generated from the route table, the command and event
 * catalogues and their zod schemas: every route with its parameters, body and answers (each failure
 * with its exact text as an example, see openapi-failures.ts), the headers the gateway reads and
 * writes, and the webhooks with every header of a delivery (openapi-headers.ts).
 */

export type OpenApiDocument = ReturnType<OpenApiGeneratorV31['generateDocument']>;

const tagDescriptions: Record<RouteDefinition['tag'] | 'Events', string> = {
  'Public API':
    "The spec's four endpoints, called with the workspace's API key: every request acts on that workspace.",
  Workspaces: "The operator's API (admin token): workspaces and their API keys.",
  Integrations: 'Channels connected to a workspace, and the templates of the official channel.',
  Team: 'Human members and AI agents that conversations are assigned to.',
  Conversations: 'Conversations and contacts as the panel sees them.',
  Pipelines: 'Kanban funnels and their stages; contacts move between stages.',
  Webhooks: 'Where events are delivered, and the record of each delivery.',
  Events:
    'What the platform POSTs to a webhook endpoint. Any 2xx acknowledges receipt; anything else, or no answer in time, is retried.',
  Documentation: 'This document, for tools and for the page at /docs.',
};

const eventSummaries: Record<PublicEventType, string> = {
  [eventTypes.messageReceived]: 'A new message arrived from a contact',
  [eventTypes.messageSent]: 'The platform sent a message (panel, API or AI agent)',
  [eventTypes.conversationAssigned]: 'A conversation was assigned, reassigned or unassigned',
  [eventTypes.conversationResolved]: 'A conversation was marked resolved',
};

/** What each webhook delivers: the public events, then the test event an operator sends to one endpoint. */
const documentedWebhooks = [
  ...publicEventTypes.map((event) => ({
    event,
    summary: eventSummaries[event],
    schema: eventCatalogue[event] as z.ZodType,
  })),
  {
    event: testEventType,
    summary:
      'A test sent on request to this one endpoint ("send test event"), whatever events it subscribed to; it reports nothing that happened',
    schema: WebhookTest,
  },
];

const securitySchemes = {
  workspaceKey: {
    type: 'http' as const,
    scheme: 'bearer',
    bearerFormat: 'sk_live_…',
    description:
      "The workspace's API key: `sk_live_` followed by 40 letters and digits. It grants full access to its workspace's API, and scopes every request to that workspace.",
  },
  adminToken: {
    type: 'http' as const,
    scheme: 'bearer',
    description: "The platform operator's token (the gateway's ADMIN_TOKEN).",
  },
};
const securityOf = (route: RouteDefinition) =>
  route.access === 'workspace-key'
    ? [{ workspaceKey: [] }]
    : route.access === 'admin-token'
      ? [{ adminToken: [] }]
      : [];

function successResponse(route: RouteDefinition): ResponseConfig {
  const reply = isCommandRoute(route) ? commandCatalogue[route.command].reply : route.reply;
  const headers: Record<string, { $ref: string }> = { 'X-Request-Id': ref('headers', 'X-Request-Id') };
  if (route.rateLimited) for (const name of rateLimitHeaders) headers[name] = ref('headers', name);
  if (route.idempotent) headers['Idempotent-Replayed'] = ref('headers', 'Idempotent-Replayed');
  return {
    description: route.status === 201 ? 'Created' : 'Success',
    headers,
    content: { 'application/json': { schema: reply } },
  };
}

function operationDescription(route: RouteDefinition): string | undefined {
  const notes = [
    route.rateLimited &&
      `Counts against the workspace's ${documentedRateLimit} requests per minute; the RateLimit-* headers tell where it stands, and 429 comes with Retry-After.`,
    route.idempotent && 'Takes an `Idempotency-Key` header, so that a retry never sends twice.',
    route.body &&
      isBodyRule(route.body) &&
      `${route.body.required.map((f) => `\`${f}\``).join(', ')} must be present and neither null nor empty; the other fields may be absent or null.`,
  ].filter((note): note is string => typeof note === 'string');
  return notes.length > 0 ? notes.join('\n\n') : undefined;
}

/** Schemas that contracts export under a name are documented under that name, once referenced. */
let exportsNamed = false;
function nameExportedSchemas() {
  if (exportsNamed) return;
  exportsNamed = true;
  for (const [name, value] of Object.entries(contracts)) {
    if (value instanceof z.ZodObject && /^[A-Z]/.test(name)) {
      zodToOpenAPIRegistry.add(value, { _internal: { refId: name } });
    }
  }
  zodToOpenAPIRegistry.add(InternalErrorResponse, { _internal: { refId: 'InternalErrorResponse' } });
}

const camelCase = (text: string) => text.replace(/[.-](\w)/g, (_, letter: string) => letter.toUpperCase());

/** The document for a route table (the gateway's by default). */
export function openApiDocument(table: readonly RouteDefinition[] = routes): OpenApiDocument {
  nameExportedSchemas();
  // What describes the API itself (this document) is not part of it.
  const documented = table.filter((route) => route.access !== 'none');
  const registry = new OpenAPIRegistry();
  const examples = new Examples();
  for (const [name, header] of Object.entries(responseHeaders))
    registry.registerComponent('headers', name, header);
  registry.registerComponent('parameters', 'IdempotencyKey', idempotencyKey);
  for (const [name, scheme] of Object.entries(securitySchemes)) {
    registry.registerComponent('securitySchemes', name, scheme);
  }

  for (const route of documented) {
    const body = route.body && (isBodyRule(route.body) ? route.body.schema : route.body);
    const description = operationDescription(route);
    registry.registerPath({
      method: route.method,
      path: route.path,
      operationId: route.operationId,
      summary: route.summary,
      ...(description ? { description } : {}),
      tags: [route.tag],
      security: securityOf(route),
      ...(route.idempotent ? { parameters: [ref('parameters', 'IdempotencyKey')] } : {}),
      request: {
        ...(route.params ? { params: route.params } : {}),
        ...(route.query ? { query: route.query } : {}),
        ...(body ? { body: { required: true, content: { 'application/json': { schema: body } } } } : {}),
      },
      responses: {
        [String(route.status ?? 200)]: successResponse(route),
        ...failureResponses(route, examples),
      },
    });
  }

  for (const { event, summary, schema } of documentedWebhooks) {
    registry.registerWebhook({
      method: 'post',
      path: event,
      operationId: `${camelCase(event)}Event`,
      summary,
      tags: ['Events'],
      // Deliveries carry no credential: receivers check their signature (see the headers).
      security: [],
      parameters: deliveryHeaderParameters(event),
      request: {
        body: { required: true, content: { 'application/json': { schema } } },
      },
      responses: {
        '2XX': { description: 'Receipt acknowledged: the delivery is done.' },
        default: { description: 'Not acknowledged: the delivery is retried with backoff, then given up.' },
      },
    });
  }

  examples.register(registry);
  const generated = new OpenApiGeneratorV31(registry.definitions, {
    sortComponents: 'alphabetically',
  }).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Messaging Inbox API',
      version: '1.0.0',
      description:
        'Send messages, reply in conversations and move leads as a workspace (`/api/…`, with its API key); run the platform as its operator (`/admin/v1/…`, with the admin token); and receive events at your webhook endpoints (see Events). Answers are JSON; every failure is an ErrorResponse whose `error` text is exact, as the examples show.',
    },
  });
  const usedTags = [...new Set(documented.map((route) => route.tag)), 'Events' as const];
  const document: OpenApiDocument = {
    openapi: generated.openapi,
    info: generated.info,
    // Relative: calls go to the gateway that serves the document, wherever it is reached.
    servers: [{ url: '/', description: 'The gateway serving this document' }],
    tags: usedTags.map((name) => ({ name, description: tagDescriptions[name] })),
    paths: generated.paths,
    webhooks: generated.webhooks,
    components: generated.components,
  };
  listRequiredFieldsAsTheRulesDo(document, documented);
  return document;
}

/**
 * The spec's endpoints check their required fields first, in the order the rule names them (an empty
 * value counts as absent); the body schema lists them in that order too.
 */
function listRequiredFieldsAsTheRulesDo(document: OpenApiDocument, table: readonly RouteDefinition[]) {
  for (const route of table) {
    if (!route.body || !isBodyRule(route.body)) continue;
    const operation = document.paths?.[route.path]?.[route.method];
    const content =
      operation?.requestBody && 'content' in operation.requestBody ? operation.requestBody.content : {};
    let schema = content['application/json']?.schema as Record<string, unknown> | undefined;
    const target = typeof schema?.$ref === 'string' ? schema.$ref.split('/').at(-1)! : undefined;
    if (target) schema = document.components?.schemas?.[target] as Record<string, unknown> | undefined;
    if (schema) schema.required = [...route.body.required];
  }
}
