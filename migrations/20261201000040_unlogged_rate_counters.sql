-- The API's per-minute counters are written on every request. Kept in an unlogged
-- table, a count is one in-memory write with no WAL record to flush before the answer
-- (a logged upsert waited for a disk flush per request: the single largest share of an
-- event's ingest time). A database crash empties the table, which only resets the
-- current minute's counts; every server process still shares one count per key.
ALTER TABLE rate_counters SET UNLOGGED;
