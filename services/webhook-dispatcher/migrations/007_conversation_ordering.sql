-- Ordered delivery no longer reads the broker's stream positions (RabbitMQ has none): each public event
-- carries its conversation's sequence number (1, 2, 3… in commit order, given by messaging), and the
-- dispatcher holds a delivery until every earlier event of its conversation has been scheduled and the
-- endpoint's earlier deliveries of it are done.
alter table deliveries rename column stream_seq to ordering_seq;
-- Rows scheduled under the old numbering carry stream positions, not conversation sequences: they are
-- delivered without ordering rather than held behind numbers that will never come.
update deliveries set ordering_key = null where status in ('pending', 'sending');

-- Per conversation: every sequence number up to `upto` has been scheduled; `ahead` holds those seen
-- beyond a gap (an earlier event still on its way, e.g. redelivered by the broker).
create table ordering_progress (
  ordering_key text primary key,
  workspace_id uuid not null,
  upto bigint not null default 0,
  ahead bigint[] not null default '{}',
  updated_at timestamptz not null default now()
);

-- Notes that an event of a conversation has been scheduled, advancing `upto` over what is now
-- contiguous. Row-locked, so concurrent schedulers of one conversation take turns; a redelivered
-- event changes nothing.
create function note_ordering(p_workspace uuid, p_key text, p_seq bigint) returns void
language plpgsql as $$
declare
  v_upto bigint;
  v_ahead bigint[];
begin
  insert into ordering_progress (ordering_key, workspace_id) values (p_key, p_workspace)
    on conflict (ordering_key) do nothing;
  select upto, ahead into v_upto, v_ahead from ordering_progress where ordering_key = p_key for update;
  if p_seq <= v_upto or p_seq = any(v_ahead) then
    return;
  end if;
  v_ahead := array_append(v_ahead, p_seq);
  while (v_upto + 1) = any(v_ahead) loop
    v_upto := v_upto + 1;
    v_ahead := array_remove(v_ahead, v_upto);
  end loop;
  update ordering_progress set upto = v_upto, ahead = v_ahead, updated_at = now() where ordering_key = p_key;
end $$;
