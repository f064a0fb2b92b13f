-- A project's own history window (`retention_days` in its `limits`, set by the operator
-- below the server's window). Whole partitions keep enforcing the server's window; the
-- shorter ones are trimmed here in bounded steps: at most `batch` finished attempts and
-- `batch` events per project per call, so no statement holds locks on the log for long.
-- Events an attempt still waits for are kept (their payload is what will be sent).
CREATE FUNCTION posthorn_trim_short_windows(server_days integer, batch integer,
                                            OUT attempts bigint, OUT events bigint)
LANGUAGE plpgsql AS $$
DECLARE
    p record;
    n bigint;
BEGIN
    attempts := 0;
    events := 0;
    FOR p IN SELECT id, (limits->>'retention_days')::integer AS days FROM projects
              WHERE deleted_at IS NULL
                AND jsonb_typeof(limits->'retention_days') = 'number'
                AND (limits->>'retention_days')::integer < server_days
    LOOP
        DELETE FROM delivery_log WHERE (id, created_at) IN
            (SELECT id, created_at FROM delivery_log
              WHERE project_id = p.id AND created_at < now() - make_interval(days => p.days)
              LIMIT batch);
        GET DIAGNOSTICS n = ROW_COUNT;
        attempts := attempts + n;
        DELETE FROM events WHERE id IN
            (SELECT e.id FROM events e
              WHERE e.project_id = p.id AND e.created_at < now() - make_interval(days => p.days)
                AND NOT EXISTS (SELECT 1 FROM delivery_queue q WHERE q.event_id = e.event_id)
              LIMIT batch);
        GET DIAGNOSTICS n = ROW_COUNT;
        events := events + n;
    END LOOP;
END $$;
