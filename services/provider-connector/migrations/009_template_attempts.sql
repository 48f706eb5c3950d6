-- When the background sweep last set out to refresh an integration's catalogue, whether or not it got
-- one: a refresh that fails goes behind every other due one, and another replica passes it by meanwhile.
alter table integrations add column templates_attempted_at timestamptz;
