-- note_ordering reaches its conversation's row by the primary key, whatever plan the session has cached.
-- PL/pgSQL keeps a session's plan of each of its statements, and after a few calls that is a generic plan
-- made for the table as it was then: a dispatcher started on a new database cached a sequential scan of
-- a one-row ordering_progress, and went on scanning it as it grew by one row per conversation (every
-- row, twice an event), until an analyze of the table happened to replace the plan. Every statement of
-- the function looks up one row by its key, for which the index is always the right way.
alter function note_ordering(uuid, text, bigint) set enable_seqscan = off;
