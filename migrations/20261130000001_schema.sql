-- Posthorn's whole schema. Ids are bigints inside; public ids (evt_, req_) are text.

CREATE TABLE projects (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    plan        text NOT NULL DEFAULT 'trial' CHECK (plan IN ('trial', 'business')),
    -- Where `endpoint.disabled` notices go (an endpoint of this project), if set.
    ops_endpoint_id bigint,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email         text NOT NULL CHECK (position('@' IN email) > 1),
    password_hash text NOT NULL,
    -- 'user' sees the projects they are a member of; 'support' reads every project.
    role          text NOT NULL DEFAULT 'user' CHECK (role IN ('user', 'support')),
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_email_key ON users (lower(email));

CREATE TABLE memberships (
    project_id bigint NOT NULL REFERENCES projects ON DELETE CASCADE,
    user_id    bigint NOT NULL REFERENCES users ON DELETE CASCADE,
    role       text NOT NULL DEFAULT 'owner' CHECK (role IN ('owner', 'member')),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, user_id)
);
CREATE INDEX memberships_user ON memberships (user_id);

CREATE TABLE invitations (
    token_hash  bytea PRIMARY KEY,
    project_id  bigint NOT NULL REFERENCES projects ON DELETE CASCADE,
    email       text NOT NULL,
    role        text NOT NULL DEFAULT 'member' CHECK (role IN ('owner', 'member')),
    created_by  bigint REFERENCES users ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz
);

CREATE TABLE api_keys (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id   bigint NOT NULL REFERENCES projects ON DELETE CASCADE,
    name         text NOT NULL DEFAULT '',
    prefix       text NOT NULL,
    key_hash     bytea NOT NULL UNIQUE, -- SHA-256 of the key; the key itself is shown once
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);
CREATE INDEX api_keys_project ON api_keys (project_id);

CREATE TABLE endpoints (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id   bigint NOT NULL REFERENCES projects ON DELETE CASCADE,
    url          text NOT NULL,
    description  text NOT NULL DEFAULT '',
    event_types  text[] NOT NULL DEFAULT '{*}',
    enabled      boolean NOT NULL DEFAULT true,
    disabled_reason text,
    secret       text NOT NULL,
    -- After a rotation the old secret keeps signing alongside the new one until it expires.
    previous_secret            text,
    previous_secret_expires_at timestamptz,
    custom_headers jsonb NOT NULL DEFAULT '[]',
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    -- Soft delete: the delivery history still names the endpoint.
    deleted_at   timestamptz
);
CREATE INDEX endpoints_project ON endpoints (project_id) WHERE deleted_at IS NULL;

CREATE TABLE events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id    text NOT NULL UNIQUE,          -- evt_ + 24
    project_id  bigint NOT NULL REFERENCES projects ON DELETE CASCADE,
    event_type  text NOT NULL,
    data        json NOT NULL,                 -- json, not jsonb: the client's bytes are kept
    client_id   text,                          -- the client's idempotency key
    deliveries  integer NOT NULL DEFAULT 0,    -- fan-out count, returned on repeats
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX events_client_id ON events (project_id, client_id) WHERE client_id IS NOT NULL;
CREATE INDEX events_project_created ON events (project_id, created_at, id);
CREATE INDEX events_project_type_created ON events (project_id, event_type, created_at, id);
CREATE INDEX events_created ON events (created_at);

-- One row per delivery attempt: the log and the queue. Partitioned by day so that
-- retention drops whole partitions instead of deleting rows.
CREATE SEQUENCE deliveries_id_seq AS bigint;
CREATE TABLE deliveries (
    id               bigint NOT NULL DEFAULT nextval('deliveries_id_seq'),
    created_at       timestamptz NOT NULL DEFAULT now(),
    project_id       bigint NOT NULL,
    event_id         text NOT NULL,
    event_type       text NOT NULL,
    endpoint_id      bigint NOT NULL,
    target_url       text NOT NULL,
    attempt          integer NOT NULL CHECK (attempt >= 1),
    trigger          text NOT NULL CHECK (trigger IN ('auto', 'manual_retry', 'redirect', 'test')),
    triggered_by     text,
    status           text NOT NULL CHECK (status IN ('pending', 'in_flight', 'succeeded', 'failed', 'dead_letter')),
    scheduled_at     timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    finished_at      timestamptz,
    duration_ms      integer,
    lease_expires_at timestamptz,
    claimed_by       text,
    chain_started_at timestamptz,
    request_id       text NOT NULL,
    request_headers  jsonb,
    response_status  smallint,
    response_headers jsonb,
    response_body    text,
    error_kind       text,
    error            text,
    PRIMARY KEY (id, created_at)
) PARTITION BY RANGE (created_at);
ALTER SEQUENCE deliveries_id_seq OWNED BY deliveries.id;

-- The dispatcher's claim: due pending rows, oldest first.
CREATE INDEX deliveries_due ON deliveries (scheduled_at) WHERE status = 'pending';
-- Lease recovery: in-flight rows whose worker went away.
CREATE INDEX deliveries_leased ON deliveries (lease_expires_at) WHERE status = 'in_flight';
-- The dashboard: one project's newest attempts, unfiltered or by status / type / endpoint.
CREATE INDEX deliveries_project_recent ON deliveries (project_id, created_at DESC, id DESC);
CREATE INDEX deliveries_project_status ON deliveries (project_id, status, created_at DESC, id DESC);
CREATE INDEX deliveries_project_type ON deliveries (project_id, event_type, created_at DESC, id DESC);
CREATE INDEX deliveries_endpoint_recent ON deliveries (endpoint_id, created_at DESC, id DESC);
-- Search, and "other attempts of this event".
CREATE INDEX deliveries_event ON deliveries (event_id, endpoint_id);
CREATE INDEX deliveries_request ON deliveries (request_id);

-- Rows must never be lost if a day's partition is missing; maintenance keeps this empty.
CREATE TABLE deliveries_default PARTITION OF deliveries DEFAULT;

CREATE FUNCTION posthorn_ensure_delivery_partitions(from_day date, to_day date) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    d date := from_day;
    made integer := 0;
    name text;
BEGIN
    WHILE d <= to_day LOOP
        name := 'deliveries_' || to_char(d, 'YYYYMMDD');
        IF to_regclass(name) IS NULL THEN
            EXECUTE format(
                'CREATE TABLE %I PARTITION OF deliveries FOR VALUES FROM (%L) TO (%L)',
                name, (d::timestamp AT TIME ZONE 'UTC'), ((d + 1)::timestamp AT TIME ZONE 'UTC'));
            made := made + 1;
        END IF;
        d := d + 1;
    END LOOP;
    RETURN made;
END $$;

-- Drops whole days older than the retention window; returns how many were dropped.
CREATE FUNCTION posthorn_drop_delivery_partitions(keep_days integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    part record;
    dropped integer := 0;
    cutoff date := (now() AT TIME ZONE 'UTC')::date - keep_days;
BEGIN
    FOR part IN
        SELECT c.relname FROM pg_inherits i
        JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'deliveries'::regclass AND c.relname ~ '^deliveries_[0-9]{8}$'
    LOOP
        IF to_date(substr(part.relname, 12), 'YYYYMMDD') < cutoff THEN
            EXECUTE format('DROP TABLE %I', part.relname);
            dropped := dropped + 1;
        END IF;
    END LOOP;
    RETURN dropped;
END $$;

SELECT posthorn_ensure_delivery_partitions(
    ((now() AT TIME ZONE 'UTC')::date - 15), ((now() AT TIME ZONE 'UTC')::date + 7));

-- Wakes dispatchers the moment work is queued; the payload is unused.
CREATE FUNCTION posthorn_notify_pending() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('posthorn_pending', '');
    RETURN NULL;
END $$;
CREATE TRIGGER deliveries_notify AFTER INSERT ON deliveries
    FOR EACH STATEMENT EXECUTE FUNCTION posthorn_notify_pending();

CREATE TABLE bins (
    id          text PRIMARY KEY,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    remote_addr text
);
CREATE INDEX bins_expires ON bins (expires_at);

CREATE TABLE bin_requests (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    bin_id      text NOT NULL REFERENCES bins ON DELETE CASCADE,
    method      text NOT NULL,
    path        text NOT NULL,
    query       text NOT NULL DEFAULT '',
    headers     jsonb NOT NULL,
    body        bytea NOT NULL,
    size        bigint NOT NULL,
    status      smallint NOT NULL DEFAULT 200,
    remote_addr text,
    received_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX bin_requests_bin ON bin_requests (bin_id, id DESC);

-- Fixed-window counters (API rate limits, login slow-down); shared by every server process.
CREATE UNLOGGED TABLE rate_counters (
    bucket       text NOT NULL,
    window_start bigint NOT NULL,
    count        integer NOT NULL,
    PRIMARY KEY (bucket, window_start)
);

CREATE TABLE audit_log (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id  bigint REFERENCES projects ON DELETE CASCADE,
    user_id     bigint REFERENCES users ON DELETE SET NULL,
    actor       text NOT NULL,
    action      text NOT NULL,
    target      text NOT NULL DEFAULT '',
    detail      jsonb NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_log_project ON audit_log (project_id, created_at DESC);
