import type { OpenAPIRegistry, ResponseConfig } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { maxJsonBodyDepth } from './body-limits.js';
import { serviceOf } from './commands.js';
import { ErrorResponse } from './error-response.js';
import { errorTexts, platformTexts } from './error-texts.js';
import { documentedRateLimit, type HeaderName, rateLimitHeaders, ref } from './openapi-headers.js';
import { routeFailures } from './route-failures.js';
import { apiV1KeyTexts, isBodyRule, isCommandRoute, type RouteDefinition } from './routes.js';
import { schemaTexts } from './schema-texts.js';

/** An answer other than success, as the document tells it. */
interface Failure {
  status: number;
  when: string;
  body: z.input<typeof ErrorResponse>;
  headers?: HeaderName[];
}

const failure = (status: number, when: string, text: string, headers?: HeaderName[]): Failure => ({
  status,
  when,
  body: { error: text },
  ...(headers ? { headers } : {}),
});

const fieldFailures = (schema: z.ZodType, part: 'path' | 'query' | 'body') =>
  schemaTexts(schema, '').map(({ field, text }) =>
    failure(
      400,
      field
        ? `${part} ${part === 'body' ? 'field' : 'parameter'} \`${field}\` is not valid`
        : `the ${part} is not valid`,
      text,
    ),
  );

/** Every failure a route may answer, in the order the gateway checks (see route-table.ts), then its owner's. */
function failuresOf(route: RouteDefinition): Failure[] {
  const failures: Failure[] = [];
  if (route.access === 'workspace-key') {
    const texts = route.keyTexts ?? apiV1KeyTexts;
    failures.push(
      failure(401, 'no `Authorization` header', texts.missing),
      failure(401, 'the key is not a workspace API key', texts.invalid),
    );
  }
  if (route.access === 'admin-token')
    failures.push(failure(401, 'the admin token is wrong or missing', platformTexts.adminTokenInvalid));
  if (route.access !== 'none') {
    failures.push(
      failure(429, 'too many failed authentications from this address', platformTexts.authFailuresTooMany, [
        'Retry-After',
      ]),
    );
  }
  if (route.access === 'workspace-key') {
    failures.push(failure(403, 'the workspace is inactive or suspended', errorTexts.workspaceInactive));
  }
  if (route.access === 'admin-token' && route.path.includes('{workspace_id}')) {
    failures.push(failure(404, 'no workspace has this id', platformTexts.workspaceNotFound));
  }
  if (route.rateLimited) {
    failures.push(
      failure(
        429,
        "the workspace's budget for this minute is spent",
        errorTexts.rateLimited(documentedRateLimit),
        ['Retry-After', ...rateLimitHeaders],
      ),
    );
  }
  if (route.inFlightPerWorkspace) {
    failures.push(
      failure(
        503,
        `${route.inFlightPerWorkspace} of the workspace's requests to this endpoint are already under way at the gateway replica that took this one: nothing was done, try again in a moment`,
        platformTexts.workspaceRequestsInFlight(route.inFlightPerWorkspace),
        ['Retry-After'],
      ),
    );
  }
  if (route.params) failures.push(...fieldFailures(route.params, 'path'));
  if (route.body) {
    failures.push(
      failure(400, 'the body is not JSON', platformTexts.malformedJson),
      failure(413, 'the body is too large', platformTexts.bodyTooLarge),
      failure(
        415,
        'the body is compressed (a Content-Encoding other than identity)',
        platformTexts.bodyEncodingUnsupported,
      ),
      failure(
        400,
        `the body nests objects or arrays more than ${maxJsonBodyDepth} levels deep`,
        platformTexts.bodyTooDeep(maxJsonBodyDepth),
      ),
    );
  }
  if (route.query) failures.push(...fieldFailures(route.query, 'query'));
  if (route.body && isBodyRule(route.body)) {
    failures.push(
      failure(400, `${route.body.required.join(', ')}: absent, null or empty`, route.body.requiredText),
      ...fieldFailures(route.body.schema, 'body'),
    );
  } else if (route.body) failures.push(...fieldFailures(route.body, 'body'));
  if (route.idempotent) {
    failures.push(
      failure(
        400,
        'the Idempotency-Key header is not 1 to 255 visible characters',
        platformTexts.idempotencyKeyInvalid,
      ),
      failure(
        409,
        'a request with this Idempotency-Key is still under way',
        platformTexts.idempotencyKeyInFlight,
        ['Retry-After'],
      ),
      failure(422, 'this Idempotency-Key was used with another body', platformTexts.idempotencyKeyReused),
    );
  }
  failures.push(...(routeFailures[route.operationId] ?? []));
  if (isCommandRoute(route)) {
    failures.push(
      failure(503, 'the service that owns the request is not reachable', platformTexts.serviceUnavailable),
      failure(
        504,
        'the service that owns the request did not answer in time',
        platformTexts.serviceTimeout(serviceOf(route.command)),
      ),
    );
  }
  failures.push(
    failure(500, 'an unexpected failure (quote `error_id` when you report it)', errorTexts.internal),
  );
  return failures;
}

/**
 * Every answer the document shows as an example, each once under components: its name is its text made
 * plain (stable while the text is), its summary every case that answers it.
 */
export class Examples {
  private readonly byBody = new Map<string, { name: string; whens: Set<string>; body: Failure['body'] }>();
  private readonly names = new Set<string>();

  /** The example of an answer, to reference. */
  of(body: Failure['body'], when: string): { $ref: string } {
    const key = JSON.stringify(body);
    let example = this.byBody.get(key);
    if (!example) {
      example = { name: this.nameFor(body.error), whens: new Set(), body };
      this.byBody.set(key, example);
    }
    example.whens.add(when);
    return { $ref: `#/components/examples/${example.name}` };
  }

  register(registry: OpenAPIRegistry) {
    for (const { name, whens, body } of this.byBody.values()) {
      registry.registerComponent('examples', name, {
        summary: capitalised([...whens].join('; ')),
        value: body,
      });
    }
  }

  private nameFor(text: string): string {
    const base =
      text
        .normalize('NFD')
        .replace(/[\u0300-\u036f]/g, '')
        .toLowerCase()
        .replace(/[^a-z0-9]+/g, '-')
        .replace(/^-|-$/g, '')
        .slice(0, 60)
        .replace(/-$/, '') || 'error';
    let name = base;
    for (let n = 2; this.names.has(name); n++) name = `${base}-${n}`;
    this.names.add(name);
    return name;
  }
}

export const InternalErrorResponse = ErrorResponse.extend({
  error_id: z.uuid().optional().describe('Present when the failure was unexpected: its id in the logs.'),
});

export function failureResponses(route: RouteDefinition, examples: Examples) {
  const byStatus = new Map<number, Failure[]>();
  for (const found of failuresOf(route))
    byStatus.set(found.status, [...(byStatus.get(found.status) ?? []), found]);
  const responses: Record<string, ResponseConfig> = {};
  for (const status of [...byStatus.keys()].sort((a, b) => a - b)) {
    const failures = byStatus.get(status)!;
    const whens = [...new Set(failures.map((f) => f.when))];
    const shown: Record<string, { $ref: string }> = {};
    for (const { body, when } of failures) {
      const example = examples.of(body, when);
      shown[example.$ref.split('/').at(-1)!] = example;
    }
    // Rate-limit headers come with every answer after the limiter: all but the key's and the workspace's.
    const afterLimiter = route.rateLimited && status !== 401 && status !== 403;
    const headers = [
      'X-Request-Id' as const,
      ...new Set([...failures.flatMap((f) => f.headers ?? []), ...(afterLimiter ? rateLimitHeaders : [])]),
    ];
    responses[String(status)] = {
      description: whens.length === 1 ? capitalised(whens[0]!) : whens.map((w) => `- ${w}`).join('\n'),
      headers: Object.fromEntries(headers.map((name) => [name, ref('headers', name)])),
      content: {
        'application/json': {
          schema: status === 500 ? InternalErrorResponse : ErrorResponse,
          ...(Object.keys(shown).length > 0 ? { examples: shown } : {}),
        },
      },
    };
  }
  return responses;
}

export const capitalised = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);
