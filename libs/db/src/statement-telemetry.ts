import { meter, tracer } from '@inbox/telemetry';
import {
  type Attributes,
  context,
  type Histogram,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';

/**
 * The span and the duration of a statement run inside an operation (a span is active), recorded by the
 * client that runs it rather than by OpenTelemetry's pg instrumentation, which wrapped every query and
 * pool checkout and recounted the pool on each checkout and release (bench/RESULTS.md, 2026-11-27,
 * fourteenth session: the spans themselves are most of what tracing statements costs; the wrapping was
 * 0.03-0.20 ms of a send). What it showed is kept as it was: a CLIENT span
 * `pg.query:<statement name> <database>` with the database semantic conventions' attributes, and the
 * `db.client.operation.duration` histogram the dashboard reads. Statements outside any operation (the
 * outbox relay's polls, `begin` and `commit`, which `outsideSpans` runs) are neither traced nor timed, as
 * before.
 */

/** Where a client is connected: the part of every span's and measurement's attributes that it fixes. */
export interface ConnectionAttributes {
  'db.system.name': 'postgresql';
  'db.namespace': string;
  'server.address': string;
  'server.port': number;
}

/** What a statement is known by in traces: the name it is prepared under, if any, and its verb. */
export interface StatementIdentity {
  text: string;
  name: string | undefined;
  operation: string;
}

let durations: Histogram | undefined;

function operationDurations(): Histogram {
  durations ??= meter().createHistogram('db.client.operation.duration', {
    description: 'Duration of database client operations.',
    unit: 's',
    advice: { explicitBucketBoundaries: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10] },
  });
  return durations;
}

/** True when a statement run now belongs to an operation, and so gets a span and a measurement. */
export function inOperation(): boolean {
  return trace.getSpan(context.active()) !== undefined;
}

/** A statement's verb, as the conventions' `db.operation.name` has it: `SELECT`, `WITH`, `INSERT`. */
export function operationOf(text: string): string {
  return (/^\s*(\w+)/.exec(text)?.[1] ?? 'query').toUpperCase();
}

/** A finished statement's outcome, for its span and its measurement. */
export type StatementEnd = (error: unknown) => void;

/** Starts a statement's span; the function it answers ends the span and records the duration. */
export function startStatement(statement: StatementIdentity, connection: ConnectionAttributes): StatementEnd {
  const spanAttributes: Attributes = { ...connection, 'db.query.text': statement.text };
  if (statement.name) spanAttributes['db.postgresql.plan'] = statement.name;
  const span = tracer().startSpan(
    `pg.query:${statement.name ?? statement.operation} ${connection['db.namespace']}`,
    { kind: SpanKind.CLIENT, attributes: spanAttributes },
  );
  const started = performance.now();
  return (error) => {
    const measured: Attributes = { ...connection, 'db.operation.name': statement.operation };
    if (error !== undefined && error !== null) recordFailure(span, measured, error);
    operationDurations().record((performance.now() - started) / 1000, measured);
    span.end();
  };
}

/**
 * A failure by its SQLSTATE (or, for a failure Postgres did not answer, the error's name): Postgres's
 * messages quote the values they refused (`invalid input syntax for type uuid: "…"`), which have no place
 * in a trace.
 */
function recordFailure(span: Span, measured: Attributes, error: unknown): void {
  const { code, name } = error as { code?: unknown; name?: unknown };
  const refused = typeof code === 'string';
  const type = refused ? code : typeof name === 'string' ? name : 'Error';
  measured['error.type'] = type;
  const message = refused
    ? `Postgres refused the statement (SQLSTATE ${type})`
    : `The statement failed (${type})`;
  span.recordException({ name: type, message });
  span.setStatus({ code: SpanStatusCode.ERROR, message });
}
