-- Whom each capture's storage counts against: its source address's bucket
-- (`addr:203.0.113.7`, `addr:2001:db8:1:2::/64`) or, for Posthorn's own deliveries to
-- bins, the project that sent them (`project:42`). Each source may hold a share of the
-- inspector's budget, so one address cannot fill it for everyone. Captures made before
-- this have no source: they count in the total only, until their bins expire.
ALTER TABLE bin_requests ADD COLUMN source text NOT NULL DEFAULT '';

CREATE TABLE inspector_source_usage (
    source text PRIMARY KEY,
    bytes  bigint NOT NULL
);

-- Kept by statement triggers beside the total's. Every statement on bin_requests takes
-- the total's row first (its triggers sort first by name), so these rows are only ever
-- changed one statement at a time and never deadlock.
CREATE FUNCTION inspector_source_usage_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO inspector_source_usage (source, bytes)
    SELECT source, sum(stored_bytes) FROM added WHERE source <> '' GROUP BY source
    ON CONFLICT (source) DO UPDATE SET bytes = inspector_source_usage.bytes + excluded.bytes;
    RETURN NULL;
END $$;

CREATE FUNCTION inspector_source_usage_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE inspector_source_usage u SET bytes = greatest(u.bytes - gone.bytes, 0)
      FROM (SELECT source, sum(stored_bytes) AS bytes FROM removed WHERE source <> '' GROUP BY source) gone
     WHERE u.source = gone.source;
    -- A source holding nothing needs no row (addresses come and go).
    DELETE FROM inspector_source_usage
     WHERE bytes = 0 AND source IN (SELECT DISTINCT source FROM removed);
    RETURN NULL;
END $$;

CREATE TRIGGER bin_requests_added_by_source AFTER INSERT ON bin_requests
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION inspector_source_usage_added();
CREATE TRIGGER bin_requests_removed_by_source AFTER DELETE ON bin_requests
    REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION inspector_source_usage_removed();

-- Keys the installation's processes share (each reaches the database; no one outside
-- does): `dispatch` signs the passes of the dispatcher's own deliveries to bins.
CREATE TABLE server_keys (
    name       text PRIMARY KEY,
    key        bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
