-- note_ordering's usual call, the conversation's next number with nothing waiting beyond it, in one
-- statement: the update moves `upto` where the row is as that case needs, and only when it is not (the
-- conversation's first event, a redelivery, a gap) does the call go on as before. It took three before
-- (an insert that found the row, a select that locked it, the update): measured with pgbench on the
-- schedule statement of six events of one conversation, 2.22 ms against 1.38, and 1.11 with no note at
-- all (bench/RESULTS.md, forty-sixth session). An empty `ahead` has no gap open (`gap_since` is null
-- whenever `ahead` is emptied), which the update keeps so. Under a concurrent note of the same row the
-- update waits for it and checks its condition again on the row as that one left it.
create or replace function note_ordering(p_workspace uuid, p_key text, p_seq bigint, p_gap_wait_ms bigint)
returns void
language plpgsql as $$
declare
  v_upto bigint;
  v_ahead bigint[];
  v_gap_since timestamptz;
  v_from bigint;
begin
  update ordering_progress set upto = p_seq, gap_since = null, updated_at = now()
   where ordering_key = p_key and upto = p_seq - 1 and ahead = '{}';
  if found then
    return;
  end if;
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
