-- Per-project limits (SPEC "Limits"): the operator's overrides of the defaults in
-- `app/src/core/limits.rs`, by name; a name left out keeps its default.
ALTER TABLE projects ADD COLUMN limits jsonb NOT NULL DEFAULT '{}'
    CHECK (jsonb_typeof(limits) = 'object');

-- Admission to the queue. Whatever statement writes a waiting attempt (fan-out, a
-- follow-up, Retry, bulk replay, a plain SQL INSERT), an attempt for a disabled endpoint
-- is parked, out of the claim's indexes, and one for a deleted endpoint is a dead letter
-- at once. Before, only the endpoint's own UPDATE parked its backlog, so rows made later
-- by a replay or a Retry sat in the claim's index and every claim filtered them row by
-- row. Redirects and test sends go out whatever the endpoint's state, as before.
--
-- One statement-level trigger: the common insert (every endpoint enabled) costs one
-- key lookup per row it inserts as waiting, and nothing else.
CREATE FUNCTION posthorn_queue_admit() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    held bigint[];
BEGIN
    -- A scalar subquery, not a join: a transition table has no statistics, and a hash
    -- join would read every endpoint for a fan-out of one.
    SELECT array_agg(DISTINCT n.endpoint_id) INTO held
      FROM admitted n
     WHERE n.status = 'pending' AND NOT n.parked AND n.trigger NOT IN ('redirect', 'test')
       AND (SELECT NOT (e.enabled AND e.deleted_at IS NULL) FROM endpoints e WHERE e.id = n.endpoint_id);
    IF held IS NULL THEN
        RETURN NULL;
    END IF;
    PERFORM posthorn_settle_held(held, ARRAY(
        SELECT n.id FROM admitted n
         WHERE n.endpoint_id = ANY (held) AND n.status = 'pending' AND NOT n.parked
           AND n.trigger NOT IN ('redirect', 'test')));
    RETURN NULL;
END $$;

-- Waiting rows (by id) of endpoints that are disabled or deleted: a deleted endpoint's
-- become dead letters ("endpoint deleted", as its DELETE does to its backlog), a
-- disabled one's are parked. Returns how many rows it settled.
CREATE FUNCTION posthorn_settle_held(endpoint_ids bigint[], row_ids bigint[]) RETURNS bigint
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
       AND NOT e.enabled AND q.status = 'pending' AND NOT q.parked;
    GET DIAGNOSTICS parked_now = ROW_COUNT;
    RETURN moved + parked_now;
END $$;

CREATE TRIGGER delivery_queue_admit AFTER INSERT ON delivery_queue
    REFERENCING NEW TABLE AS admitted
    FOR EACH STATEMENT EXECUTE FUNCTION posthorn_queue_admit();

-- What the trigger cannot see: a row inserted by a transaction that had read its
-- endpoint as enabled while another was disabling or deleting it (each commits without
-- seeing the other's row). Housekeeping settles such rows; until then the claim's own
-- check keeps them from being sent.
CREATE FUNCTION posthorn_settle_strays() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    ids bigint[];
    rows bigint[];
BEGIN
    SELECT array_agg(e.id) INTO ids FROM endpoints e
     WHERE NOT e.enabled
       AND EXISTS (SELECT 1 FROM delivery_queue q
                    WHERE q.endpoint_id = e.id AND NOT q.parked AND q.status = 'pending'
                      AND q.trigger NOT IN ('redirect', 'test'));
    IF ids IS NULL THEN
        RETURN 0;
    END IF;
    rows := ARRAY(SELECT q.id FROM delivery_queue q
                   WHERE q.endpoint_id = ANY (ids) AND NOT q.parked AND q.status = 'pending'
                     AND q.trigger NOT IN ('redirect', 'test'));
    RETURN posthorn_settle_held(ids, rows);
END $$;

-- Lanes whose head chain ended while their lock was held by someone else (a tenant's
-- batch in its transaction): the outcome writer never waits for a tenant's lock, so it
-- leaves the lane here, in its own transaction, and a later pass releases the next
-- member (`app::db::lanes::release_deferred`). Not unique per lane: a writer never waits
-- on another's row, and releasing a lane twice releases nothing the second time.
CREATE TABLE lane_releases (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id   bigint NOT NULL,
    endpoint_id  bigint NOT NULL,
    ordering_key text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);

-- A replay's next items endpoint by endpoint, in event order: the tick takes a few per
-- endpoint without ranking every item left (100,000 of them, every second, before).
CREATE INDEX replay_items_next ON replay_items (replay_id, endpoint_id, event_id)
    WHERE delivery_id IS NULL;
DROP INDEX replay_items_todo;
