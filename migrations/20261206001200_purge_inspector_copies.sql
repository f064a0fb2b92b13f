-- A project's deliveries to inspector bins (Redirects, and endpoints pointing at a bin)
-- are captured with `source = 'project:<id>'`. Deleting the project takes them out of
-- the bins at once (app/src/db/tenants.rs); the purge takes any that an attempt in
-- flight still landed, before the project's row goes. Before, they stayed readable in
-- their bins until the bins expired.
CREATE INDEX bin_requests_project_source ON bin_requests (source) WHERE source LIKE 'project:%';

CREATE OR REPLACE FUNCTION posthorn_purge_project(pid bigint, batch integer) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    PERFORM 1 FROM projects WHERE id = pid AND deleted_at IS NOT NULL;
    IF NOT FOUND THEN
        RETURN 0;
    END IF;
    DELETE FROM delivery_queue WHERE id IN (SELECT id FROM delivery_queue WHERE project_id = pid LIMIT batch);
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN RETURN n; END IF;
    DELETE FROM delivery_log WHERE (id, created_at) IN
        (SELECT id, created_at FROM delivery_log WHERE project_id = pid LIMIT batch);
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN RETURN n; END IF;
    DELETE FROM lane_releases WHERE project_id = pid;
    DELETE FROM replay_items i USING (
        SELECT x.replay_id, x.event_id, x.endpoint_id FROM replay_items x
          JOIN replays r ON r.id = x.replay_id WHERE r.project_id = pid LIMIT batch) gone
     WHERE (i.replay_id, i.event_id, i.endpoint_id) = (gone.replay_id, gone.event_id, gone.endpoint_id);
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN RETURN n; END IF;
    DELETE FROM events WHERE id IN (SELECT id FROM events WHERE project_id = pid LIMIT batch);
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN RETURN n; END IF;
    DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE project_id = pid LIMIT batch);
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN RETURN n; END IF;
    DELETE FROM bin_requests WHERE id IN (
        SELECT id FROM bin_requests
         WHERE source = 'project:' || pid AND source LIKE 'project:%' LIMIT batch);
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN RETURN n; END IF;
    DELETE FROM projects WHERE id = pid;
    RETURN 1;
END $$;
