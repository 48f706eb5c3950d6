-- An optional cap on attempts per second to one endpoint, counted across every replica.
alter table endpoints add column max_per_second int;
create index attempts_recent on attempts (at);
