-- A conversation's gap in ordering (an event the dispatcher never scheduled: dead-lettered, or older than
-- what its lanes read on their first start) used to stay open for ever: every later number was appended
-- to `ahead` (each call copying and searching the whole array, a row growing without end) and, `upto`
-- never passing the gap again, every later delivery of the conversation to an ordered endpoint waited out
-- the gap wait (10 minutes) on its own. Now a gap is given up once it has been open for the wait, or
-- once 1,000 numbers wait behind it (a burst that large in one conversation is not held for a
-- straggler): `upto` moves to the last number seen, and what was missing, if it ever comes, is delivered
-- without being waited for, as the lease already let it go. A gap's wait starts when it opens: when
-- `upto` moves and numbers still wait beyond it, the gap now open is a new one.
alter table ordering_progress add column if not exists gap_since timestamptz;

create or replace function note_ordering(p_workspace uuid, p_key text, p_seq bigint, p_gap_wait_ms bigint)
returns void
language plpgsql as $$
declare
  v_upto bigint;
  v_ahead bigint[];
  v_gap_since timestamptz;
  v_from bigint;
begin
  insert into ordering_progress (ordering_key, workspace_id) values (p_key, p_workspace)
    on conflict (ordering_key) do nothing;
  select upto, ahead, gap_since into v_upto, v_ahead, v_gap_since
    from ordering_progress where ordering_key = p_key for update;
  if p_seq <= v_upto or p_seq = any(v_ahead) then
    return;
  end if;
  v_from := v_upto;
  v_ahead := array_append(v_ahead, p_seq);
  while (v_upto + 1) = any(v_ahead) loop
    v_upto := v_upto + 1;
    v_ahead := array_remove(v_ahead, v_upto);
  end loop;
  if cardinality(v_ahead) = 0 then
    v_gap_since := null;
  elsif v_gap_since is null or v_upto > v_from then
    v_gap_since := now();
  elsif v_gap_since < now() - p_gap_wait_ms * interval '1 millisecond' or cardinality(v_ahead) > 1000 then
    select max(n) into v_upto from unnest(v_ahead) as n;
    v_ahead := '{}';
    v_gap_since := null;
  end if;
  update ordering_progress set upto = v_upto, ahead = v_ahead, gap_since = v_gap_since, updated_at = now()
   where ordering_key = p_key;
end $$;
alter function note_ordering(uuid, text, bigint, bigint) set enable_seqscan = off;

-- What the release before calls, until every dispatcher has rolled: the same, with its gap wait.
create or replace function note_ordering(p_workspace uuid, p_key text, p_seq bigint) returns void
language sql as $$ select note_ordering(p_workspace, p_key, p_seq, 600000) $$;
