import { randomUUID } from 'node:crypto';
import type { DeliveryAttempt } from '@inbox/contracts';
import type { Pool, Queryable } from '@inbox/db';
import type { z } from 'zod';
import { type TargetColumns, targetColumns } from './endpoints.js';

export interface LeasedDelivery {
  trace_context: Record<string, string> | null;
  id: string;
  workspace_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  /** Null only if its event's body is gone: the attempt then fails, never posted empty. */
  body: string | null;
  attempts: number;
}

export interface AttemptResult {
  delivery: LeasedDelivery;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  responseBody: string | null;
  at: Date;
  /** What the policy decided: delivered, retry at a time, or failed for good. */
  status: 'delivered' | 'pending' | 'failed';
  nextAttemptAt: Date | null;
}

/** An attempt's result to record, and whether the receiver said its endpoint is gone (410). */
export interface RecordedAttempt extends AttemptResult {
  endpointGone?: boolean;
}

/** An endpoint a recorded batch disabled: its receiver answered 410, or it failed for too long. */
export interface DisabledEndpoint {
  id: string;
  workspace_id: string;
  reason: 'gone' | 'failing';
}

export interface DeliveryFilter {
  status?: 'pending' | 'delivered' | 'failed';
  eventType?: string;
  since?: string;
  until?: string;
  /** A delivery of the endpoint: only those after it, in the list's order. */
  before?: string;
  limit: number;
}

/** A public event to schedule deliveries of: its body is the bytes every attempt sends and signs. */
export interface EventToSchedule {
  workspaceId: string;
  eventId: string;
  eventType: string;
  body: string;
  ordering: { key: string; seq: number } | null;
  traceContext: Record<string, string>;
}

const iso = (value: Date | null) => (value ? value.toISOString() : null);

/**
 * Two recursive CTEs, `<name>_from_start` and `<name>_wrapped`, that together give the first row (in
 * `order`, which starts with `key`) of each distinct `key` among the deliveries matching `where`: a loose
 * index scan, one probe per key however many rows share it. It starts at `start` and runs to the end,
 * then from the beginning up to `start`; `rotatedScan(name)` reads them in that order, so a reader that
 * stops early has begun at `start`.
 */
function rotatedLooseScan(
  name: string,
  {
    columns,
    where,
    key,
    order,
    start,
  }: { columns: string; where: string; key: string; order: string; start: string },
): string {
  const probe = (bound: string) =>
    `select ${columns} from deliveries d where ${where} and ${bound} order by ${order} limit 1`;
  const half = (half: string, first: string, next: (previous: string) => string) =>
    `${name}_${half} as (
         (${probe(first)})
         union all
         select n.* from ${name}_${half} p cross join lateral (${probe(next(`p.${key}`))}) n
       )`;
  return `${half('from_start', `d.${key} >= ${start}`, (previous) => `d.${key} > ${previous}`)},
       ${half('wrapped', `d.${key} < ${start}`, (previous) => `d.${key} > ${previous} and d.${key} < ${start}`)}`;
}

const rotatedScan = (name: string) =>
  `(select * from ${name}_from_start union all select * from ${name}_wrapped)`;

// Endpoints with a pending delivery, each with its earliest: one probe of deliveries_pending_by_endpoint
// per endpoint however long its queue.
const pendingEndpoints = rotatedLooseScan('endpoints', {
  columns: 'd.endpoint_id, d.next_attempt_at',
  where: "d.status = 'pending'",
  key: 'endpoint_id',
  order: 'd.endpoint_id, d.next_attempt_at',
  start: '$5',
});

// An ordered endpoint's conversations, each with its first undelivered delivery: one probe of
// deliveries_in_order per conversation however many wait behind it.
const conversationHeads = rotatedLooseScan('heads', {
  columns: 'd.*',
  where: "d.endpoint_id = r.id and d.status in ('pending', 'sending')",
  key: 'ordering_key',
  order: 'd.ordering_key, d.ordering_seq',
  start: '$5::text',
});

/** Where the body pruner goes on from: the last body it looked at, by age and event. */
export interface BodyCursor {
  at: string;
  eventId: string;
}

/**
 * Where an event's body is kept. Always once for the event (event_bodies), which every release since
 * dispatcher migration 013 reads; with `each`, also in each delivery, which is all the releases before it
 * read: set it while replicas of those releases are left, since they lease deliveries this one schedules.
 * `once`, the default, keeps a workspace's fifty endpoints from making fifty copies of each body.
 */
export type BodyCopies = 'each' | 'once';

/**
 * How long a delivery to an ordered endpoint waits for an earlier event of its conversation that has not
 * been scheduled, before it goes anyway, and how long the conversation's gap stays open (note_ordering):
 * past the bus's whole redelivery schedule, so only an event the dispatcher gave up on is skipped.
 */
export const defaultOrderingGapWaitMs = 600_000;

/** Deliveries and their attempts. Queries that serve one workspace name it; the worker's span them all. */
export class DeliveryStore {
  constructor(
    private readonly pool: Pool,
    private readonly bodyCopies: BodyCopies = 'once',
    /** How long a conversation's gap in ordering is waited for before it is given up (the lease's too). */
    private readonly orderingGapWaitMs = defaultOrderingGapWaitMs,
  ) {}

  /**
   * One delivery per enabled endpoint of the event's workspace that subscribed to its type, due now; a
   * redelivered event creates none again. An ordered event is also noted in its conversation's
   * progress, whether or not any endpoint takes it, in the same statement. Returns how many were
   * scheduled.
   */
  async schedule(event: EventToSchedule): Promise<number> {
    return (await this.scheduleMany([event]))[0]!;
  }

  /**
   * `schedule` for several events in one statement (one round trip, one commit), each event still
   * scoped to its own workspace's endpoints; how many deliveries each got, in their order. Either all
   * are scheduled or none is.
   */
  async scheduleMany(events: readonly EventToSchedule[]): Promise<number[]> {
    // The inserts run as data-modifying CTEs and the ordering notes in the select list, evaluated once
    // per event, so everything commits together with no begin/commit around it. The body is stored once
    // per event that any endpoint takes (event_bodies), whatever the number of its deliveries.
    const { rows } = await this.pool.query<{ scheduled: number }>(
      `with ev as (
         select * from unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[])
           with ordinality as ev (workspace_id, event_id, event_type, body, ordering_seq, ordering_key, trace_context, n)),
       taken as (
         select e.workspace_id, e.id as endpoint_id, ev.event_id, ev.event_type, ev.ordering_seq, ev.ordering_key, ev.trace_context,
                case when $8::boolean then ev.body end as body
           from ev join endpoints e
             on e.workspace_id = ev.workspace_id and e.enabled and (ev.event_type = any(e.events) or '*' = any(e.events))),
       -- An event redelivered after its body was pruned stores it again; one whose body is still kept
       -- renews it, so that a pruner that read it as unused (in its snapshot) finds it young again.
       bodies as (
         insert into event_bodies (workspace_id, event_id, body)
         select distinct on (ev.workspace_id, ev.event_id) ev.workspace_id, ev.event_id, ev.body from ev
          where exists (select 1 from taken t where t.workspace_id = ev.workspace_id and t.event_id = ev.event_id)
         on conflict (workspace_id, event_id) do update set created_at = now()),
       scheduled as (
         insert into deliveries (id, workspace_id, endpoint_id, event_id, event_type, body, ordering_seq, ordering_key, trace_context, status, next_attempt_at)
         select gen_random_uuid(), t.workspace_id, t.endpoint_id, t.event_id, t.event_type, t.body, t.ordering_seq, t.ordering_key,
                t.trace_context::jsonb, 'pending', now()
           from taken t
         on conflict (endpoint_id, event_id) do nothing
         returning event_id)
       select (select count(*) from scheduled s where s.event_id = ev.event_id)::int as scheduled,
              case when ev.ordering_key is not null
                then note_ordering(ev.workspace_id, ev.ordering_key, ev.ordering_seq, $9)::text end as noted
         from ev order by ev.n`,
      [
        events.map((e) => e.workspaceId),
        events.map((e) => e.eventId),
        events.map((e) => e.eventType),
        events.map((e) => e.body),
        events.map((e) => e.ordering?.seq ?? 0),
        events.map((e) => e.ordering?.key ?? null),
        events.map((e) => JSON.stringify(e.traceContext)),
        this.bodyCopies === 'each',
        this.orderingGapWaitMs,
      ],
    );
    return rows.map((row) => row.scheduled);
  }

  /**
   * One delivery to one endpoint, due now, of an event that is on no stream (a test): it is ordered after
   * nothing, whatever the endpoint's ordering. Returns the delivery as the log shows it.
   */
  async scheduleOne(delivery: {
    workspaceId: string;
    endpointId: string;
    eventId: string;
    eventType: string;
    body: string;
    traceContext: Record<string, string>;
  }) {
    const id = randomUUID();
    await this.pool.query(
      `insert into deliveries (id, workspace_id, endpoint_id, event_id, event_type, body, ordering_seq, ordering_key, trace_context, status, next_attempt_at)
       values ($1, $2, $3, $4, $5, $6, 0, null, $7, 'pending', now())`,
      [
        id,
        delivery.workspaceId,
        delivery.endpointId,
        delivery.eventId,
        delivery.eventType,
        delivery.body,
        delivery.traceContext,
      ],
    );
    const [scheduled] = await this.select('and d.id = $3', [delivery.workspaceId, delivery.endpointId, id]);
    return scheduled!;
  }

  /**
   * Leases up to `limit` due deliveries for this worker, the oldest due first. Due: pending and its time
   * has come, or leased by a worker that died (lease expired). Each endpoint gets no more than its room:
   * its concurrency cap (one while its receiver is failing) less its attempts in flight, and for an
   * endpoint with a rate limit also less its attempts of the last second; a disabled endpoint gets none. For ordered endpoints, skipped: any
   * delivery with an earlier one of the same conversation still undelivered, or whose conversation has
   * an earlier event not yet scheduled (still on its way through the broker). A gap older than
   * `gapWaitMs` stops holding: its event was lost to the dispatcher (dead-lettered), and holding the
   * conversation for ever would lose every later one too. An ordered endpoint is read conversation by
   * conversation (the first undelivered delivery of each, one probe however many wait behind it), so a
   * conversation held behind a failing delivery holds back none of the endpoint's others.
   *
   * The endpoints with pending deliveries are visited one by one (a loose scan of their index, one probe
   * per endpoint however long its queue), from a random one on, at most `4 × limit` of them; each is
   * asked for its earliest due deliveries up to its room. So an endpoint at its cap with a backlog of any
   * size holds back no other endpoint's deliveries, and a lease reads in proportion to what it can take,
   * not to the backlog.
   *
   * A workspace gets no more than its room in this worker: `perWorkspace.cap` less its attempts this
   * worker has in flight (`perWorkspace.inFlight`), so one workspace's endpoints, however many and however
   * slow their receivers, never hold every slot of a worker while other workspaces' deliveries wait.
   */
  async lease(
    limit: number,
    perEndpoint: number,
    leaseMs: number,
    gapWaitMs: number,
    perWorkspace?: { cap: number; inFlight: ReadonlyMap<string, number> },
  ): Promise<Array<LeasedDelivery & TargetColumns>> {
    // Prepared once per connection, as every statement is: planning it cost more than running it. Its
    // plan cannot turn into a scan of the backlog on statistics older than the backlog (which a backlog
    // outgrows before autoanalyze runs): every step goes by index probe or by key.
    const { rows } = await this.pool.query<LeasedDelivery & TargetColumns>(
      `with recursive
       -- Endpoints with a pending delivery, from $5 on.
       ${pendingEndpoints},
       -- Only as many as are read: the scans stop at the limit. An endpoint whose earliest is not due
       -- (its receiver failing, say, and its retries waiting) costs this one probe.
       visited as (
         select endpoint_id from (select * from ${rotatedScan('endpoints')} v limit $1 * 4) v
          where next_attempt_at <= now()
       ),
       -- Of enabled endpoints only: a disabled one's never get room, and at the head of this order they
       -- kept every other workspace's expired leases from being taken back.
       expired as (
         select d.id, d.workspace_id, d.endpoint_id, d.next_attempt_at, d.ordering_seq, d.ordering_key, d.created_at
           from deliveries d
          where d.status = 'sending' and d.lease_until < now()
            and exists (select 1 from endpoints e where e.id = d.endpoint_id and e.enabled)
          order by d.lease_until limit $1
       ),
       considered as (select endpoint_id from visited union select endpoint_id from expired),
       -- Each endpoint's attempts in flight, counted through its own entries in the index of leased
       -- deliveries (one scan of the whole index read every delivery finished since the last vacuum: a
       -- finished one leaves its entry behind until then).
       -- An endpoint whose receiver is failing (no success since failing_since) gets one attempt in
       -- flight, as a probe, until one succeeds: dead or hanging receivers would otherwise take the
       -- whole worker's slots, each up to the cap, from every other workspace.
       room as (
         select e.id, e.workspace_id, e.ordered,
                greatest(0, least(case when e.failing_since is null then $2 else 1 end - b.n,
                  case when e.max_per_second is null then $2
                       -- Attempts started in the last second, counted for endpoints with a rate limit only.
                       else e.max_per_second - b.n
                            - (select count(*) from attempts a where a.endpoint_id = e.id and a.at > now() - interval '1 second')
                  end)) as free
           from endpoints e
           -- In the index's order and no further than the cap, past which the count changes nothing.
           cross join lateral (
             select count(*) as n from (
               select 1 from deliveries s
                where s.endpoint_id = e.id and s.status = 'sending' and s.lease_until >= now()
                order by s.lease_until limit $2) inflight) b
          where e.id in (select endpoint_id from considered) and e.enabled
            -- A workspace at its room in this worker ($6 less $7/$8) costs nothing more: its endpoints
            -- would be read only for capped to drop what they found.
            and ($6::int is null or $6::int > coalesce(
                  (select busy.n from unnest($7::uuid[], $8::int[]) as busy(workspace_id, n)
                    where busy.workspace_id = e.workspace_id), 0))
       ),
       candidates as (
         select c.*, r.ordered, r.free, r.workspace_id
           from room r
           cross join lateral (
             select d.id, d.endpoint_id, d.next_attempt_at, d.ordering_seq, d.ordering_key, d.created_at from deliveries d
              where d.endpoint_id = r.id and d.workspace_id = r.workspace_id
                and d.status = 'pending' and d.next_attempt_at <= now()
              order by d.next_attempt_at limit r.free) c
          where r.free > 0 and not r.ordered
         union all
         -- An ordered endpoint: the first undelivered delivery of each of its conversations, one probe of
         -- deliveries_in_order per conversation however many wait behind it (from $5 on, then from the
         -- start), if it is pending and due. At most sixteen conversations for each attempt it has room
         -- for, and 4 × limit in all: a failing endpoint (room for one) with thousands of conversations
         -- waiting on their retries cost every lease 4 × limit probes to take one.
         select c.*, r.ordered, r.free, r.workspace_id
           from room r
           cross join lateral (
             with recursive ${conversationHeads}
             select h.id, h.endpoint_id, h.next_attempt_at, h.ordering_seq, h.ordering_key, h.created_at
               from (select * from ${rotatedScan('heads')} v limit least($1 * 4, r.free * 16)) h
              where h.status = 'pending' and h.next_attempt_at <= now() and h.workspace_id = r.workspace_id
             union all
             -- Its deliveries of no conversation are not ordered. Read in deliveries_in_order's order, so
             -- that the scan never steps over a conversation's held deliveries.
             (select d.id, d.endpoint_id, d.next_attempt_at, d.ordering_seq, d.ordering_key, d.created_at from deliveries d
               where d.endpoint_id = r.id and d.status in ('pending', 'sending') and d.ordering_key is null
                 and d.workspace_id = r.workspace_id and d.status = 'pending' and d.next_attempt_at <= now()
               order by d.ordering_key, d.ordering_seq limit r.free)) c
          where r.free > 0 and r.ordered
         union all
         select x.id, x.endpoint_id, x.next_attempt_at, x.ordering_seq, x.ordering_key, x.created_at, r.ordered, r.free,
                r.workspace_id
           from expired x join room r on r.id = x.endpoint_id and r.workspace_id = x.workspace_id
          where r.free > 0
       ),
       eligible as (
         select c.id, c.workspace_id, c.next_attempt_at, c.ordering_seq, c.free,
                row_number() over (partition by c.endpoint_id order by c.next_attempt_at, c.ordering_seq) as place
           from candidates c
           left join ordering_progress o on c.ordered and o.ordering_key = c.ordering_key
          where not c.ordered or c.ordering_key is null or (
                  (c.ordering_seq <= coalesce(o.upto, 0) or c.created_at < now() - $4 * interval '1 millisecond')
                  and not exists (
                    select 1 from deliveries p
                     where p.endpoint_id = c.endpoint_id and p.ordering_key = c.ordering_key
                       and p.ordering_seq < c.ordering_seq and p.status in ('pending', 'sending')))
       ),
       -- Each workspace no further than its room in this worker ($6: the cap, $7 and $8: its attempts in
       -- flight here), when there is a cap.
       capped as (
         select w.id from (
           select e.id, e.workspace_id, e.next_attempt_at, e.ordering_seq,
                  row_number() over (partition by e.workspace_id order by e.next_attempt_at, e.ordering_seq) as wplace
             from eligible e where e.place <= e.free) w
           left join unnest($7::uuid[], $8::int[]) as busy(workspace_id, n) on busy.workspace_id = w.workspace_id
          where $6::int is null or w.wplace <= $6::int - coalesce(busy.n, 0)
          order by w.next_attempt_at, w.ordering_seq limit $1
       ),
       -- The due condition again, on the row as it is now: under read committed a row another
       -- replica leased (and committed) since this statement's snapshot is re-checked and skipped.
       -- Found by key. Written as a case, the condition matches no partial index: otherwise a plan made
       -- on stale statistics read every pending row through those indexes to find these few.
       locked as (
         select id from deliveries
          where id = any(array(select id from capped))
            and case status when 'pending' then next_attempt_at <= now() when 'sending' then lease_until < now() else false end
          for update skip locked
       ),
       leased as (
         update deliveries d
            set status = 'sending', lease_until = now() + $3 * interval '1 millisecond', attempts = d.attempts + 1
          where d.id = any(array(select id from locked))
         returning d.id, d.workspace_id, d.endpoint_id, d.event_id, d.event_type, d.body, d.attempts, d.trace_context,
                   d.next_attempt_at, d.ordering_seq
       )
       -- Where each one posts, and its event's body, read along rather than in statements of their own;
       -- the oldest first, so that they are attempted in the order they came due.
       select l.id, l.workspace_id, l.endpoint_id, l.event_id, l.event_type, coalesce(l.body, b.body) as body,
              l.attempts, l.trace_context, ${targetColumns}
         from leased l left join endpoints e on e.id = l.endpoint_id and e.workspace_id = l.workspace_id
         left join event_bodies b on b.workspace_id = l.workspace_id and b.event_id = l.event_id
        order by l.next_attempt_at, l.ordering_seq`,
      // A random first endpoint, so that when more endpoints wait than one lease visits, none is always
      // the last one visited.
      [
        limit,
        perEndpoint,
        leaseMs,
        gapWaitMs,
        randomUUID(),
        perWorkspace?.cap ?? null,
        [...(perWorkspace?.inFlight.keys() ?? [])],
        [...(perWorkspace?.inFlight.values() ?? [])],
      ],
    );
    return rows;
  }

  /**
   * Records a batch of attempts in one statement (one round trip, one commit, no begin/commit around
   * it): each attempt's row, its delivery's next state, and its endpoint's health. An attempt that
   * outlived its lease (the delivery leased again meanwhile, one attempt more) is logged and settles
   * nothing: neither the newer lease's row nor the endpoint's health. An endpoint whose
   * receiver answered 410 is disabled; one with no success in the batch starts (or keeps) failing, and
   * is disabled once it has failed for `disableAfterMs`; a success clears that. A delivery deleted
   * meanwhile, with its endpoint, has nothing left to record: its attempt is skipped rather than failing
   * the rest. Returns the endpoints this batch disabled, each with why (one already disabled is not
   * reported again).
   */
  async record(
    db: Queryable,
    results: RecordedAttempt[],
    disableAfterMs: number,
  ): Promise<DisabledEndpoint[]> {
    if (results.length === 0) return [];
    // Every data-modifying CTE runs once, on one snapshot: each table is changed by one of them only.
    // Whether an endpoint is disabled is judged on its row as the update finds it, not as the snapshot
    // had it: an operator's re-enabling (which clears the failure clock) committed while the batch ran is
    // kept, and an endpoint another batch disabled meanwhile is neither written nor reported again.
    const goneReason = `'the receiver answered 410 Gone'`;
    const disabling = `(case when not e.enabled then null
                             when j.gone then 'gone'
                             when not j.success and e.failing_since < now() - $14 * interval '1 millisecond' then 'failing'
                        end)`;
    // Only an endpoint whose state changes is written: rewriting an unchanged row on every batch left a
    // dead version of it behind each time, and held its row lock against every other batch.
    const changes = `(${disabling} is not null or (j.success = (e.failing_since is not null)))`;
    // The arrays reach `unnest` through a subquery the planner keeps (`offset 0`): given them directly, a
    // plan made for the values counts their elements, and for a batch smaller than the ten rows a generic
    // plan assumes it always looked cheaper, so Postgres planned this statement anew on every call, which
    // took two thirds as long as running it (bench/RESULTS.md, twenty-second session). Every table is
    // reached by key either way.
    const { rows } = await db.query<
      Omit<DisabledEndpoint, 'reason'> & { reason: DisabledEndpoint['reason'] | null }
    >(
      `with u as (
         select u.* from (select $1::uuid[] as id, $2::uuid[] as workspace_id, $3::uuid[] as endpoint_id,
                                 $4::int[] as attempt, $5::timestamptz[] as at, $6::int[] as status_code,
                                 $7::text[] as error, $8::int[] as duration_ms, $9::text[] as response_body,
                                 $10::text[] as status, $11::timestamptz[] as next_at, $12::text[] as last_error,
                                 $13::bool[] as gone
                          offset 0) a,
              unnest(a.id, a.workspace_id, a.endpoint_id, a.attempt, a.at, a.status_code, a.error, a.duration_ms,
                     a.response_body, a.status, a.next_at, a.last_error, a.gone)
           as u(id, workspace_id, endpoint_id, attempt, at, status_code, error, duration_ms, response_body,
                status, next_at, last_error, gone)),
       attempted as (
         insert into attempts (workspace_id, endpoint_id, delivery_id, attempt, at, status_code, error, duration_ms, response_body)
         select u.workspace_id, u.endpoint_id, u.id, u.attempt, u.at, u.status_code, u.error, u.duration_ms, u.response_body
           from u where exists (select 1 from deliveries d where d.id = u.id and d.workspace_id = u.workspace_id)),
       settled as (
         update deliveries d set status = u.status, next_attempt_at = u.next_at, lease_until = null, last_error = u.last_error,
                delivered_at = case when u.status = 'delivered' then u.at else d.delivered_at end,
                finished_at = case when u.status in ('delivered', 'failed') then u.at end
           from u
          -- As in the lease, a condition no partial index matches: the rows are found by key. Only the
          -- attempt of the delivery's current lease settles it (each lease counts one more attempt): one
          -- that outlived its lease, while a newer attempt is in flight, leaves that one's row alone.
          where d.id = u.id and d.workspace_id = u.workspace_id and d.attempts = u.attempt
            and case d.status when 'sending' then true else false end
         returning d.id),
       -- Judged on the attempts that settled their delivery: a late one tells of a lease already given up.
       outcome as (
         select u.endpoint_id, u.workspace_id, bool_or(u.status = 'delivered') as success, bool_or(u.gone) as gone
           from u join settled s on s.id = u.id group by u.endpoint_id, u.workspace_id),
       judged as (
         select e.id, o.success, o.gone
           from outcome o join endpoints e on e.id = o.endpoint_id and e.workspace_id = o.workspace_id),
       -- The endpoints whose state changes, locked in id order before the update writes them, so that two
       -- replicas' batches changing the same endpoints never wait on each other in a circle (in the
       -- join's order they could deadlock, and each batch was then recorded again row by row). The
       -- update's own lock strength: deliveries can still be scheduled for them meanwhile.
       ordered as (
         select e.id from endpoints e join judged j on j.id = e.id
          where ${changes}
          order by e.id
            for no key update of e)
       update endpoints e
          set failing_since = case when j.success then null else coalesce(e.failing_since, now()) end,
              enabled = e.enabled and ${disabling} is null,
              disabled_reason = case ${disabling}
                when 'gone' then ${goneReason}
                when 'failing' then 'no successful delivery for ' || $15 || ' hours'
                else e.disabled_reason end,
              updated_at = case when ${disabling} is null then e.updated_at else now() end
         from judged j
        where e.id = j.id and e.id in (select id from ordered) and ${changes}
       -- What this update disabled: RETURNING sees the row it wrote, and only a disabling stamps updated_at
       -- with the statement's time.
       returning e.id, e.workspace_id,
                 case when not e.enabled and e.updated_at = now()
                      then case when e.disabled_reason = ${goneReason} then 'gone' else 'failing' end
                 end as reason`,
      [
        results.map((r) => r.delivery.id),
        results.map((r) => r.delivery.workspace_id),
        results.map((r) => r.delivery.endpoint_id),
        results.map((r) => r.delivery.attempts),
        results.map((r) => r.at),
        results.map((r) => r.statusCode),
        results.map((r) => r.error),
        results.map((r) => r.durationMs),
        results.map((r) => r.responseBody),
        results.map((r) => r.status),
        results.map((r) => r.nextAttemptAt),
        results.map(
          (r) =>
            r.error ?? (r.statusCode !== null && r.status !== 'delivered' ? `HTTP ${r.statusCode}` : null),
        ),
        results.map((r) => r.endpointGone === true),
        disableAfterMs,
        String(disableAfterMs / 3_600_000),
      ],
    );
    return rows.filter((row): row is DisabledEndpoint => row.reason !== null);
  }

  async list(workspaceId: string, endpointId: string, filter: DeliveryFilter) {
    return this.select(
      `and ($3::text is null or (case when d.status = 'sending' then 'pending' else d.status end) = $3)
       and ($4::text is null or d.event_type = $4)
       and ($5::timestamptz is null or d.created_at >= $5)
       and ($6::timestamptz is null or d.created_at < $6)
       and ($8::uuid is null or (d.created_at, d.id) < (
             select created_at, id from deliveries where workspace_id = $1 and endpoint_id = $2 and id = $8))
       order by d.created_at desc, d.id desc limit $7`,
      [
        workspaceId,
        endpointId,
        filter.status ?? null,
        filter.eventType ?? null,
        filter.since ?? null,
        filter.until ?? null,
        filter.limit,
        filter.before ?? null,
      ],
    );
  }

  private async select(conditions: string, values: unknown[]) {
    const { rows } = await this.pool.query(
      `select d.id, d.event_id, d.event_type, d.status, d.attempts, d.next_attempt_at, d.last_error, d.created_at, d.delivered_at
         from deliveries d
        where d.workspace_id = $1 and d.endpoint_id = $2 ${conditions}`,
      values,
    );
    return rows.map((row) => ({
      id: row.id as string,
      event_id: row.event_id as string,
      event_type: row.event_type as string,
      status: (row.status === 'sending' ? 'pending' : row.status) as 'pending' | 'delivered' | 'failed',
      attempt_count: row.attempts as number,
      next_attempt_at: iso(row.next_attempt_at),
      last_error: row.last_error as string | null,
      created_at: iso(row.created_at)!,
      delivered_at: iso(row.delivered_at),
    }));
  }

  async attemptsOf(workspaceId: string, deliveryId: string) {
    const { rows } = await this.pool.query(
      `select attempt, at, status_code, error, duration_ms, response_body from attempts
        where workspace_id = $1 and delivery_id = $2 order by attempt, id`,
      [workspaceId, deliveryId],
    );
    return rows.map((row) => ({ ...row, at: iso(row.at)! })) as Array<z.infer<typeof DeliveryAttempt>>;
  }

  async one(workspaceId: string, endpointId: string, deliveryId: string) {
    const [delivery] = await this.select('and d.id = $3', [workspaceId, endpointId, deliveryId]);
    if (!delivery) return undefined;
    return { ...delivery, attempts: await this.attemptsOf(workspaceId, deliveryId) };
  }

  /** Due again now, whatever its state, unless it is being attempted this moment. */
  async resend(workspaceId: string, endpointId: string, deliveryId: string): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `update deliveries set status = 'pending', next_attempt_at = now(), finished_at = null
        where workspace_id = $1 and endpoint_id = $2 and id = $3 and status <> 'sending'`,
      [workspaceId, endpointId, deliveryId],
    );
    return rowCount === 1;
  }

  /**
   * Every failed delivery of the endpoint created since `since`, due again now; says how many. A batch a
   * statement, in the order they were created: one statement over a month of an always-failing
   * receiver's deliveries ran for seconds, holding every outbox relay's fence for as long. The cursor
   * moves past each batch (and bounds the index's range, so a batch does not read the ones before), so a
   * delivery that fails again meanwhile is not replayed twice.
   */
  async replayFailed(
    workspaceId: string,
    endpointId: string,
    since: string,
    batchSize = 1_000,
  ): Promise<number> {
    let total = 0;
    // The last replayed, its time as text: a Date would drop the microseconds, and the cursor fall behind it.
    let after: { at: string; id: string } | undefined;
    for (;;) {
      const { rows } = await this.pool.query<{ at: string; id: string; replayed: number }>(
        `with batch as (
           select id, created_at from deliveries
            where workspace_id = $1 and endpoint_id = $2 and status = 'failed'
              and created_at >= coalesce($4::timestamptz, $3::timestamptz)
              and ($4::timestamptz is null or (created_at, id) > ($4::timestamptz, $5::uuid))
            order by created_at, id
            limit $6
            for update),
         replayed as (
           update deliveries d set status = 'pending', next_attempt_at = now(), finished_at = null
             from batch where d.id = batch.id
           returning d.id)
         select b.created_at::text as at, b.id, (select count(*) from replayed)::int as replayed
           from batch b order by b.created_at desc, b.id desc limit 1`,
        [workspaceId, endpointId, since, after?.at ?? null, after?.id ?? null, batchSize],
      );
      // Only an empty batch ends it: a delivery resent meanwhile is left out of its batch, which then
      // comes back short with more behind it.
      const last = rows[0];
      if (!last) return total;
      total += last.replayed;
      after = { at: last.at, id: last.id };
    }
  }

  /**
   * Deletes the bodies older than the retention whose event has no delivery left (pruned, or gone with
   * its endpoint), among the next `batchSize` past the retention after `after`, in age order; says how
   * many it deleted and where the next batch starts (none when it looked at the last). Bodies still in
   * use are passed over by the cursor, not read again by each batch. An event's deliveries all point at
   * one of its workspace's endpoints, so each is found by the (endpoint, event) key. The age is checked
   * again on the row deleted: a redelivered event renews its body (scheduleMany) in a statement this one
   * does not see.
   */
  async pruneBodies(
    retentionDays: number,
    batchSize: number,
    after: BodyCursor = { at: '-infinity', eventId: '00000000-0000-0000-0000-000000000000' },
  ): Promise<{ deleted: number; next?: BodyCursor }> {
    const { rows } = await this.pool.query<{
      deleted: number;
      scanned: number;
      at: string;
      event_id: string;
    }>(
      `with scanned as (
         select workspace_id, event_id, created_at from event_bodies
          where created_at < now() - $1 * interval '1 day' and (created_at, event_id) > ($3::timestamptz, $4::uuid)
          order by created_at, event_id limit $2),
       gone as (
         delete from event_bodies b using scanned s
          where b.workspace_id = s.workspace_id and b.event_id = s.event_id
            and b.created_at < now() - $1 * interval '1 day'
            and not exists (
              select 1 from endpoints e join deliveries d on d.endpoint_id = e.id and d.event_id = b.event_id
               where e.workspace_id = b.workspace_id)
         returning 1)
       select (select count(*)::int from gone) as deleted, (select count(*)::int from scanned) as scanned,
              l.created_at::text as at, l.event_id
         from (select 1) one
         left join lateral (select created_at, event_id from scanned order by created_at desc, event_id desc limit 1) l on true`,
      [retentionDays, batchSize, after.at, after.eventId],
    );
    const { deleted, scanned, at, event_id } = rows[0]!;
    return { deleted, ...(scanned === batchSize ? { next: { at, eventId: event_id } } : {}) };
  }

  /**
   * Deletes deliveries finished (delivered or failed) more than `retentionDays` ago, their attempts with
   * them (on delete cascade), at most `batchSize` per statement so none holds many locks or runs long.
   * A delivery being resent is locked or pending again, and skipped. Says how many it deleted.
   */
  async pruneFinished(retentionDays: number, batchSize: number): Promise<number> {
    const { rowCount } = await this.pool.query(
      `delete from deliveries where id in (
         select id from deliveries
          where status in ('delivered', 'failed') and finished_at < now() - $1 * interval '1 day'
          limit $2 for update skip locked)`,
      [retentionDays, batchSize],
    );
    return rowCount ?? 0;
  }

  async pendingRetries(): Promise<number> {
    const { rows } = await this.pool.query<{ n: number }>(
      "select count(*)::int as n from deliveries where status = 'pending' and attempts > 0",
    );
    return rows[0]?.n ?? 0;
  }
}
