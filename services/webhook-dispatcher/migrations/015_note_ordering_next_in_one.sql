-- note_ordering's usual call, the conversation's next number with nothing waiting beyond it, in one
-- statement: the update moves `upto` where the row is as that case needs, and only when it is not (the
-- conversation's first event, a redelivery, a gap) does it go on to the whole function, kept as it was
-- under another name (note_ordering_in_full). Every call took three statements before
-- (an insert that found the row, a select that locked it, the update): measured with pgbench on the
-- schedule statement of six events of one conversation, 2.0-2.5 ms before against 1.4-1.8 with this
-- function, and 1.1 with no note at all (bench/RESULTS.md, forty-sixth session). An empty `ahead` has no gap open (`gap_since` is null
-- whenever `ahead` is emptied), which the update keeps so. Under a concurrent note of the same row the
-- update waits for it and checks its condition again on the row as that one left it.
alter function note_ordering(uuid, text, bigint, bigint) rename to note_ordering_in_full;

create function note_ordering(p_workspace uuid, p_key text, p_seq bigint, p_gap_wait_ms bigint)
returns void
language plpgsql as $$
begin
  update ordering_progress set upto = p_seq, gap_since = null, updated_at = now()
   where ordering_key = p_key and upto = p_seq - 1 and ahead = '{}';
  if not found then
    perform note_ordering_in_full(p_workspace, p_key, p_seq, p_gap_wait_ms);
  end if;
end $$;
alter function note_ordering(uuid, text, bigint, bigint) set enable_seqscan = off;
