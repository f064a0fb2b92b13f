-- Listen sessions (`posthorn listen`): an endpoint whose attempts go to a developer's
-- laptop over the CLI's WebSocket, not to a URL the dispatcher can reach. Its waiting
-- attempts are parked like a disabled endpoint's, out of the dispatcher's indexes, and
-- the session that holds the WebSocket claims them by endpoint (`deliveries_parked`).
-- The destination never changes after creation (SPEC "Destinations").
ALTER TABLE endpoints
    ADD COLUMN destination text NOT NULL DEFAULT 'http' CHECK (destination IN ('http', 'listen')),
    -- The CLI's `--name`: a restarted CLI reattaches to the project's live session of
    -- that name. NULL for an unnamed session (it ends when its CLI exits).
    ADD COLUMN listen_name text CHECK (listen_name IS NULL OR destination = 'listen'),
    -- The last sign of a connected CLI (a heartbeat while connected): a session without
    -- one for 10 minutes ends.
    ADD COLUMN listen_seen_at timestamptz,
    ADD COLUMN listen_connected boolean NOT NULL DEFAULT false;
CREATE UNIQUE INDEX endpoints_listen_name ON endpoints (project_id, listen_name)
    WHERE listen_name IS NOT NULL AND deleted_at IS NULL;
CREATE INDEX endpoints_listen ON endpoints (listen_seen_at)
    WHERE destination = 'listen' AND deleted_at IS NULL;
-- A session's claim takes its parked rows oldest first, a range of this index (the
-- endpoint's parked rows in time order) however many wait behind them.
CREATE INDEX delivery_queue_parked_due ON delivery_queue (endpoint_id, scheduled_at) WHERE parked;

-- Admission: a listen endpoint's attempts are parked as they are queued (test sends
-- too: only its session sends them); redirects still go to their bin.
CREATE OR REPLACE FUNCTION posthorn_queue_admit() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    held bigint[];
BEGIN
    SELECT array_agg(DISTINCT n.endpoint_id) INTO held
      FROM admitted n
     WHERE n.status = 'pending' AND NOT n.parked AND n.trigger <> 'redirect'
       AND (SELECT NOT (e.enabled AND e.deleted_at IS NULL AND e.destination = 'http')
                   AND (n.trigger <> 'test' OR e.destination = 'listen')
              FROM endpoints e WHERE e.id = n.endpoint_id);
    IF held IS NULL THEN
        RETURN NULL;
    END IF;
    PERFORM posthorn_settle_held(held, ARRAY(
        SELECT n.id FROM admitted n
         WHERE n.endpoint_id = ANY (held) AND n.status = 'pending' AND NOT n.parked
           AND n.trigger <> 'redirect'
           AND (n.trigger <> 'test'
                OR (SELECT e.destination = 'listen' FROM endpoints e WHERE e.id = n.endpoint_id))));
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION posthorn_settle_held(endpoint_ids bigint[], row_ids bigint[]) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    moved bigint;
    parked_now bigint;
BEGIN
    WITH gone AS (
        DELETE FROM delivery_queue q USING endpoints e
         WHERE q.id = ANY (row_ids) AND e.id = q.endpoint_id AND e.id = ANY (endpoint_ids)
           AND e.deleted_at IS NOT NULL AND q.status = 'pending'
        RETURNING q.*)
    INSERT INTO delivery_log (id, created_at, project_id, event_id, event_type, endpoint_id,
           target_url, attempt, trigger, triggered_by, status, scheduled_at, finished_at,
           chain_started_at, request_id, error_kind, error, ordering_key, lane_seq)
    SELECT id, created_at, project_id, event_id, event_type, endpoint_id, target_url,
           attempt, trigger, triggered_by, 'dead_letter', scheduled_at, now(),
           chain_started_at, request_id, 'endpoint_deleted', 'endpoint deleted',
           ordering_key, lane_seq
      FROM gone;
    GET DIAGNOSTICS moved = ROW_COUNT;
    UPDATE delivery_queue q SET parked = true FROM endpoints e
     WHERE q.id = ANY (row_ids) AND e.id = q.endpoint_id AND e.id = ANY (endpoint_ids)
       AND (NOT e.enabled OR e.destination = 'listen') AND q.status = 'pending' AND NOT q.parked
       AND (q.trigger NOT IN ('redirect', 'test') OR (q.trigger = 'test' AND e.destination = 'listen'));
    GET DIAGNOSTICS parked_now = ROW_COUNT;
    RETURN moved + parked_now;
END $$;

-- Strays, as before, and a listen session's rows outside its claim: rows whose lease
-- expired come back unparked (parked again here, out of the dispatchers' index), and rows
-- of a session that ended (handed back by its server, or recovered from a lease, after
-- the endpoint was deleted; or inserted while it was being deleted) become dead letters.
-- Ended sessions are looked at for an hour: every lease expires well within it.
CREATE OR REPLACE FUNCTION posthorn_settle_strays() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    ids bigint[];
    rows bigint[];
BEGIN
    SELECT array_agg(e.id) INTO ids FROM endpoints e
     WHERE (NOT e.enabled AND e.destination = 'http'
            AND EXISTS (SELECT 1 FROM delivery_queue q
                         WHERE q.endpoint_id = e.id AND NOT q.parked AND q.status = 'pending'
                           AND q.trigger NOT IN ('redirect', 'test')))
        OR (e.destination = 'listen'
            AND (e.deleted_at IS NULL OR e.deleted_at > now() - interval '1 hour')
            AND EXISTS (SELECT 1 FROM delivery_queue q
                         WHERE q.endpoint_id = e.id AND q.status = 'pending' AND q.trigger <> 'redirect'
                           AND (NOT q.parked OR e.deleted_at IS NOT NULL)));
    IF ids IS NULL THEN
        RETURN 0;
    END IF;
    rows := ARRAY(SELECT q.id FROM delivery_queue q JOIN endpoints e ON e.id = q.endpoint_id
                   WHERE q.endpoint_id = ANY (ids) AND q.status = 'pending'
                     AND CASE WHEN e.destination = 'listen'
                              THEN q.trigger <> 'redirect' AND (NOT q.parked OR e.deleted_at IS NOT NULL)
                              ELSE NOT q.parked AND q.trigger NOT IN ('redirect', 'test') END);
    RETURN posthorn_settle_held(ids, rows);
END $$;

-- Enabling a listen endpoint unparks nothing: its session claims its rows where they are.
CREATE OR REPLACE FUNCTION posthorn_park_endpoint_backlog() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.enabled AND NEW.deleted_at IS NULL AND NEW.destination = 'http' THEN
        UPDATE delivery_queue SET parked = false
         WHERE endpoint_id = NEW.id AND status = 'pending' AND parked AND waits_for IS NULL;
    ELSIF NEW.destination = 'http' THEN
        -- Redirects and test sends go out whatever the endpoint's state.
        UPDATE delivery_queue SET parked = true
         WHERE endpoint_id = NEW.id AND status = 'pending' AND NOT parked
           AND trigger NOT IN ('redirect', 'test');
    END IF;
    RETURN NULL;
END $$;
