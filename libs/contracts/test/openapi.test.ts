import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { documentPath, openApiJson } from '../scripts/write-openapi.js';
import {
  commandCatalogue,
  isBodyRule,
  isCommandRoute,
  openApiDocument,
  publicEventTypes,
  routeFailures,
  routes,
  testEventType,
} from '../src/index.js';

type Json = Record<string, unknown>;
const document = openApiDocument() as unknown as {
  openapi: string;
  paths: Record<string, Record<string, Json>>;
  webhooks: Record<string, { post: Json & { parameters: Json[] } }>;
  components: { schemas: Record<string, Json>; examples: Record<string, { value: { error: string } }> };
};
const documented = routes.filter((route) => route.access !== 'none');
const publicOperations = ['sendMessage', 'sendTemplate', 'externalSend', 'moveLead'];

const operation = (path: string, method: string) => document.paths[path]?.[method] as Json | undefined;
const resolve = (schema: Json): Json =>
  typeof schema.$ref === 'string' ? document.components.schemas[schema.$ref.split('/').at(-1)!]! : schema;

it('checks in docs/openapi.json exactly as `npm run openapi` writes it', () => {
  const checkedIn = readFileSync(new URL(`../../../${documentPath}`, import.meta.url), 'utf8');
  expect(checkedIn, 'docs/openapi.json is stale: run `npm run openapi`').toBe(openApiJson());
});

describe('the OpenAPI document', () => {
  it('is OpenAPI 3.1, and each of its schemas is valid JSON Schema 2020-12', () => {
    expect(document.openapi).toBe('3.1.0');
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    ajv.addSchema(document, 'openapi.json');
    for (const name of Object.keys(document.components.schemas)) {
      expect(ajv.getSchema(`openapi.json#/components/schemas/${name}`), name).toBeTypeOf('function');
    }
  });

  it('lists the four public endpoints, every route of the table, the four webhooks and the test event', () => {
    const operationIds = Object.values(document.paths).flatMap((item) =>
      Object.values(item).map((op) => (op as { operationId: string }).operationId),
    );
    expect(operationIds).toEqual(expect.arrayContaining(publicOperations));
    for (const route of documented) {
      expect(operation(route.path, route.method)?.operationId, `${route.method} ${route.path}`).toBe(
        route.operationId,
      );
    }
    expect(operationIds).toHaveLength(documented.length);
    expect(Object.keys(document.webhooks)).toEqual([...publicEventTypes, testEventType]);
    expect(publicEventTypes).toHaveLength(4);
  });

  it("requires a public body's fields as its rule does, which its schema also requires", () => {
    for (const route of documented) {
      if (!route.body || !isBodyRule(route.body)) continue;
      const shape = (route.body.schema as unknown as z.ZodObject).shape;
      const schemaRequired = Object.keys(shape).filter(
        (field) => !shape[field]!.safeParse(undefined).success,
      );
      expect(new Set(schemaRequired), route.operationId).toEqual(new Set(route.body.required));
      const requestBody = operation(route.path, route.method)?.requestBody as Json;
      const body = resolve((requestBody.content as Json)['application/json'] as Json);
      expect(resolve(body.schema as Json).required, route.operationId).toEqual(route.body.required);
    }
  });

  it("shows the spec's exact texts as the examples of a public endpoint's failures", () => {
    const sendMessage = operation('/api/v1/send-message', 'post')!;
    const texts = Object.values(sendMessage.responses as Record<string, Json>).flatMap((response) => {
      const examples = ((response.content as Json | undefined)?.['application/json'] as Json | undefined)
        ?.examples as Record<string, { $ref: string }> | undefined;
      return Object.values(examples ?? {}).map(
        ({ $ref }) => document.components.examples[$ref.split('/').at(-1)!]!.value.error,
      );
    });
    expect(texts).toEqual(
      expect.arrayContaining([
        'Parâmetros obrigatórios: phone, message, channel',
        'channel inválido. Use "chat-official", "alt-a" ou "alt-b"',
        'phone inválido. Forneça em E.164 ou só dígitos (mínimo 10).',
        'message deve ser string de 1–4096 caracteres',
        'Integração não está conectada',
        'API Key inválida',
        'Workspace inativo',
        'Muitas requisições. Limite: 60/min por workspace.',
      ]),
    );
  });

  it('gives every field of the public bodies, answers and webhooks a real shape', () => {
    const loose: string[] = [];
    const visit = (schema: unknown, where: string, seen: Set<unknown>) => {
      if (typeof schema !== 'object' || schema === null || seen.has(schema)) return;
      seen.add(schema);
      const node = resolve(schema as Json);
      const shaped = ['type', 'anyOf', 'oneOf', 'allOf', 'enum', 'const'].some((key) => key in node);
      if (!shaped) loose.push(where);
      for (const [key, value] of Object.entries(node)) {
        if (key === 'properties') {
          for (const [name, inner] of Object.entries(value as Json)) visit(inner, `${where}.${name}`, seen);
        } else if (key === 'items' || key === 'additionalProperties') visit(value, `${where}[]`, seen);
        else if (key === 'anyOf' || key === 'oneOf' || key === 'allOf') {
          for (const inner of value as unknown[]) visit(inner, where, seen);
        }
      }
    };
    for (const route of documented.filter((r) => publicOperations.includes(r.operationId))) {
      const op = operation(route.path, route.method)!;
      const body = ((op.requestBody as Json).content as Json)['application/json'] as Json;
      visit(body.schema, `${route.operationId} body`, new Set());
      const success = (op.responses as Record<string, Json>)['200']!;
      visit(
        ((success.content as Json)['application/json'] as Json).schema,
        `${route.operationId} answer`,
        new Set(),
      );
    }
    for (const [event, { post }] of Object.entries(document.webhooks)) {
      visit(
        (((post.requestBody as Json).content as Json)['application/json'] as Json).schema,
        event,
        new Set(),
      );
    }
    expect(loose).toEqual([]);
  });

  it('documents answers as they are sent: no answer schema transforms, defaults or catches', () => {
    const changing: string[] = [];
    const visit = (schema: z.ZodType, where: string) => {
      const def = (schema as unknown as { _zod: { def: Record<string, unknown> & { type: string } } })._zod
        .def;
      if (['pipe', 'transform', 'default', 'prefault', 'catch'].includes(def.type)) changing.push(where);
      for (const [key, value] of Object.entries(def)) {
        if (key === 'shape')
          for (const [name, inner] of Object.entries(value as Json))
            visit(inner as z.ZodType, `${where}.${name}`);
        else if (['innerType', 'element', 'keyType', 'valueType'].includes(key))
          visit(value as z.ZodType, where);
        else if (key === 'options') for (const inner of value as z.ZodType[]) visit(inner, where);
      }
    };
    for (const route of documented) {
      visit(isCommandRoute(route) ? commandCatalogue[route.command].reply : route.reply, route.operationId);
    }
    expect(changing).toEqual([]);
  });

  it('declares failures only for routes of the table', () => {
    const operationIds = new Set(routes.map((route) => route.operationId));
    expect(Object.keys(routeFailures).filter((id) => !operationIds.has(id))).toEqual([]);
  });
});
