-- The operator (the platform that runs Posthorn for its customers) and the portal it
-- opens for them (SPEC "Operator API and portal").

-- Operator keys: stored hashed, shown once. A name is live once at a time.
CREATE TABLE operator_keys (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    prefix       text NOT NULL,
    key_hash     bytea NOT NULL UNIQUE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);
CREATE UNIQUE INDEX operator_keys_live_name ON operator_keys (name) WHERE revoked_at IS NULL;

-- The operator's own id for its customer, the brand and the origins that may frame the
-- portal. A deleted project is gone at once for every reader (`deleted_at`) and purged
-- in bounded batches afterwards; its `uid` is free again from the moment it is deleted.
ALTER TABLE projects
    ADD COLUMN uid text CHECK (length(uid) BETWEEN 1 AND 255),
    ADD COLUMN frame_ancestors text[] NOT NULL DEFAULT '{}',
    ADD COLUMN brand jsonb NOT NULL DEFAULT '{}',
    ADD COLUMN deleted_at timestamptz;
CREATE UNIQUE INDEX projects_uid ON projects (uid) WHERE deleted_at IS NULL;
CREATE INDEX projects_deleted ON projects (deleted_at) WHERE deleted_at IS NOT NULL;
CREATE INDEX projects_created ON projects (created_at, id) WHERE deleted_at IS NULL;

-- Single-use sign-in links: only the token's hash is kept.
CREATE TABLE portal_links (
    token_hash  bytea PRIMARY KEY,
    project_id  bigint NOT NULL REFERENCES projects ON DELETE CASCADE,
    user_uid    text NOT NULL,
    email       text,
    name        text,
    role        text NOT NULL CHECK (role IN ('owner', 'member', 'viewer')),
    created_by  text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz
);
CREATE INDEX portal_links_expires ON portal_links (expires_at);
CREATE INDEX portal_links_project ON portal_links (project_id);

-- A signed-in portal browser: one project, one portal user, an absolute end.
CREATE TABLE portal_sessions (
    token_hash  bytea PRIMARY KEY,
    project_id  bigint NOT NULL REFERENCES projects ON DELETE CASCADE,
    user_uid    text NOT NULL,
    email       text,
    name        text,
    role        text NOT NULL CHECK (role IN ('owner', 'member', 'viewer')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL
);
CREATE INDEX portal_sessions_project ON portal_sessions (project_id);
CREATE INDEX portal_sessions_expires ON portal_sessions (expires_at);

-- What was billed: events accepted and attempts finished, per project and UTC day. No
-- foreign key: retention and a project's deletion leave these rows alone. Kept by
-- statement triggers, so every path that writes an event or finishes an attempt counts,
-- once per statement rather than once per row.
-- Each connection adds to its own shard of a day's row (`pg_backend_pid() % 16`): the
-- row is locked until the writing transaction commits, so one row per project and day
-- would make concurrent ingest writers and dispatchers of a busy project wait for each
-- other's commits. Readers sum the shards.
CREATE TABLE usage_events (
    project_id bigint NOT NULL,
    day        date NOT NULL,
    shard      smallint NOT NULL,
    events     bigint NOT NULL,
    PRIMARY KEY (project_id, day, shard)
);
CREATE TABLE usage_attempts (
    project_id bigint NOT NULL,
    day        date NOT NULL,
    status     text NOT NULL,
    shard      smallint NOT NULL,
    attempts   bigint NOT NULL,
    PRIMARY KEY (project_id, day, status, shard)
);

CREATE FUNCTION posthorn_count_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO usage_events (project_id, day, shard, events)
    SELECT project_id, (created_at AT TIME ZONE 'UTC')::date, pg_backend_pid() % 16, count(*)
      FROM added GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (project_id, day, shard) DO UPDATE SET events = usage_events.events + excluded.events;
    RETURN NULL;
END $$;
CREATE TRIGGER events_usage AFTER INSERT ON events REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION posthorn_count_events();

-- An attempt is counted when it finishes, on the day it finished.
CREATE FUNCTION posthorn_count_attempts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO usage_attempts (project_id, day, status, shard, attempts)
    SELECT project_id, (now() AT TIME ZONE 'UTC')::date, status, pg_backend_pid() % 16, count(*)
      FROM added GROUP BY 1, 3 ORDER BY 1, 3
    ON CONFLICT (project_id, day, status, shard) DO UPDATE SET attempts = usage_attempts.attempts + excluded.attempts;
    RETURN NULL;
END $$;
CREATE TRIGGER delivery_log_usage AFTER INSERT ON delivery_log REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION posthorn_count_attempts();

-- Purges up to `batch` rows of a deleted project's data per call, the largest tables
-- first; once nothing is left, the project's row goes (taking the small tables with it
-- by their cascades). Returns the rows removed, 0 when the project is gone.
CREATE FUNCTION posthorn_purge_project(pid bigint, batch integer) RETURNS bigint
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
    DELETE FROM projects WHERE id = pid;
    RETURN 1;
END $$;
