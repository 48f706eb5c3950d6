// Statements traced and timed by the client that runs them (statement-telemetry.ts), and each pool's
// connections counted when metrics are read (pool-gauges.ts), against a real Postgres.
import { outsideSpans } from '@inbox/telemetry';
import { createDatabase } from '@inbox/testkit';
import { context, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { createPool, type Pool } from '../src/index.js';
import { metricsText } from './metrics-text.js';

const spans = new InMemorySpanExporter();
let pool: Pool;
let database: string;

beforeAll(async () => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(
    new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }),
  );
  const url = await createDatabase(inject('infra').postgresAdminUrl);
  database = new URL(url).pathname.slice(1);
  pool = createPool({ url, schema: 'public', max: 1, applicationName: 'statements-test' });
});
afterAll(() => pool?.end());
beforeEach(() => spans.reset());

const tracer = () => trace.getTracer('statement-telemetry-test');

/** Runs `fn` inside an operation's span, as a handler does. */
function inOperation<T>(name: string, fn: (span: Span) => Promise<T>): Promise<T> {
  return tracer().startActiveSpan(name, async (span) => {
    try {
      return await fn(span);
    } finally {
      span.end();
    }
  });
}

const statementSpans = () => spans.getFinishedSpans().filter((span) => span.name.startsWith('pg.query:'));
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

/** The value of one series on /metrics, as Prometheus reads it; undefined when it is not there. */
async function series(name: string, labels: Record<string, string>): Promise<number | undefined> {
  const text = await metricsText();
  const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`);
  const line = text
    .split('\n')
    .find(
      (candidate) => candidate.startsWith(`${name}{`) && wanted.every((label) => candidate.includes(label)),
    );
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** How many statements of `operation` the duration histogram has counted, by outcome. */
async function timed(operation: string, errorType?: string): Promise<number> {
  const counted = await series('db_client_operation_duration_count', {
    db_operation_name: operation,
    ...(errorType ? { error_type: errorType } : {}),
  });
  return counted ?? 0;
}

describe('statements run inside an operation', () => {
  it('get a client span named by their prepared statement, under the operation, and a measured duration', async () => {
    const before = await timed('SELECT');
    const operation = await inOperation('handle', async (span) => {
      const { rows } = await pool.query<{ n: number }>('select $1::int + 1 as n', [41]);
      expect(rows).toEqual([{ n: 42 }]);
      return span.spanContext().spanId;
    });
    const [statement, ...others] = statementSpans();
    expect(others).toEqual([]);
    expect(statement!.name).toMatch(new RegExp(`^pg\\.query:select:[0-9a-f]{12} ${database}$`));
    expect(statement!.kind).toBe(SpanKind.CLIENT);
    expect(parentOf(statement!)).toBe(operation);
    expect(statement!.attributes).toEqual({
      'db.system.name': 'postgresql',
      'db.namespace': database,
      'server.address': '127.0.0.1',
      'server.port': expect.any(Number),
      'db.query.text': 'select $1::int + 1 as n',
      'db.postgresql.plan': expect.stringMatching(/^select:[0-9a-f]{12}$/),
    });
    expect(statement!.status.code).toBe(SpanStatusCode.UNSET);
    expect(await timed('SELECT')).toBe(before + 1);
  });

  it('records a failure by its SQLSTATE, without the value Postgres quotes in its message', async () => {
    const before = await timed('SELECT', '22P02');
    await inOperation('handle', () =>
      expect(pool.query('select $1::uuid as id', ['not-a-secret-uuid'])).rejects.toMatchObject({
        code: '22P02',
      }),
    );
    const [statement] = statementSpans();
    expect(statement!.status).toEqual({
      code: SpanStatusCode.ERROR,
      message: 'Postgres refused the statement (SQLSTATE 22P02)',
    });
    expect(JSON.stringify(statement!.events)).not.toContain('not-a-secret-uuid');
    expect(statement!.events.map((event) => event.name)).toEqual(['exception']);
    expect(await timed('SELECT', '22P02')).toBe(before + 1);
  });

  it('traces a statement without parameters by its verb', async () => {
    await inOperation('handle', () => pool.query('select 1 as one'));
    expect(statementSpans().map((span) => span.name)).toEqual([`pg.query:SELECT ${database}`]);
  });

  it('keeps a checkout that waited for a connection in its own operation', async () => {
    // One connection: the second operation's statement waits until the first releases it, and resumes
    // from the first's release.
    const first = await pool.connect();
    let second: Promise<string> | undefined;
    await inOperation('holding', async () => {
      second = inOperation('waiting', async (span) => {
        await pool.query('select $1::int as n', [2]);
        return span.spanContext().spanId;
      });
      await first.query('select $1::int as n', [1]);
      first.release();
    });
    const waiting = await second!;
    const statement = statementSpans().find(
      (span) => span.attributes['db.query.text'] === 'select $1::int as n' && parentOf(span) === waiting,
    );
    expect(statement).toBeDefined();
    expect(statementSpans()).toHaveLength(2);
  });
});

describe('statements outside any operation', () => {
  it('are neither traced nor timed: polls, and what outsideSpans runs', async () => {
    const before = await timed('SELECT');
    await pool.query('select $1::int as n', [1]);
    await inOperation('handle', () => outsideSpans(() => pool.query('select $1::int as n', [2])));
    expect(statementSpans()).toEqual([]);
    expect(await timed('SELECT')).toBe(before);
  });
});

describe('the pool gauges', () => {
  it('count the connections in use, idle and waited for, and the most the pool may open', async () => {
    const gauge = (name: string, state?: string) =>
      series(name, {
        db_client_connection_pool_name: 'statements-test',
        ...(state ? { db_client_connection_state: state } : {}),
      });
    const client = await pool.connect();
    const waiting = pool.query('select 1');
    try {
      expect(await gauge('db_client_connection_count', 'used')).toBe(1);
      expect(await gauge('db_client_connection_count', 'idle')).toBe(0);
      expect(await gauge('db_client_connection_pending_requests')).toBe(1);
      expect(await gauge('db_client_connection_max')).toBe(1);
    } finally {
      client.release();
      await waiting;
    }
    expect(await gauge('db_client_connection_count', 'used')).toBe(0);
    expect(await gauge('db_client_connection_count', 'idle')).toBe(1);
    expect(await gauge('db_client_connection_pending_requests')).toBe(0);
  });
});
