-- A transaction that NOTIFYs holds a database-wide lock from just before its commit
-- record is written until the record is flushed, so NOTIFYing ingest transactions
-- flush one at a time instead of sharing a group commit: at hundreds of events per
-- second that queue is the whole latency tail. Hot paths therefore set
-- `posthorn.defer_notify` and send the notification themselves once committed (a
-- transaction without writes, which needs no flush); every other insert still wakes
-- the dispatchers from here.
CREATE OR REPLACE FUNCTION posthorn_notify_pending() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('posthorn.defer_notify', true) IS DISTINCT FROM 'on' THEN
        PERFORM pg_notify('posthorn_pending', '');
    END IF;
    RETURN NULL;
END $$;
