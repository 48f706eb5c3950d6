-- Mercado Livre: what a reply to a buyer answers. A buyer writes either a question on a listing (answered
-- once, through /answers) or a post-sale message in a sale's pack (answered in that pack), so a reply
-- from the panel needs the latest of each; written when the buyer's message is taken in.
create table market_reply_contexts (
  integration_id uuid not null references integrations (id) on delete cascade,
  buyer_id text not null,
  question_id text,
  pack_id text,
  updated_at timestamptz not null default now(),
  primary key (integration_id, buyer_id)
);
