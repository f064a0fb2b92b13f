-- Destinations beyond HTTP (SPEC "Destinations"): an endpoint may publish to a broker
-- (Redis Streams, NATS JetStream, …) instead of POSTing to a URL. The dispatcher sends
-- those exactly as it sends HTTP endpoints' attempts; only a listen session's endpoint is
-- sent by someone else (its CLI). Every rule below that read "the dispatcher sends it" as
-- `destination = 'http'` now reads `destination <> 'listen'`.
ALTER TABLE endpoints DROP CONSTRAINT IF EXISTS endpoints_destination_check;
ALTER TABLE endpoints
    ADD CONSTRAINT endpoints_destination_check CHECK (destination IN
        ('http', 'listen', 'redis', 'nats', 'rabbitmq', 'mqtt', 'sqs', 'sns', 'eventbridge',
         'kinesis', 's3')),
    -- The destination's settings, checked when saved (`core::destination`); never a
    -- credential. NULL for `http` and `listen`.
    ADD COLUMN destination_settings jsonb
        CHECK (destination_settings IS NULL OR octet_length(destination_settings::text) <= 4096),
    -- Its credentials (JSON), sealed like the endpoint's secret; never read back out.
    ADD COLUMN destination_credentials text
        CHECK (destination_credentials IS NULL OR octet_length(destination_credentials) <= 8192),
    ADD CONSTRAINT endpoints_destination_has_settings
        CHECK ((destination IN ('http', 'listen')) = (destination_settings IS NULL));

CREATE OR REPLACE FUNCTION posthorn_queue_admit() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    held bigint[];
BEGIN
    SELECT array_agg(DISTINCT n.endpoint_id) INTO held
      FROM admitted n
     WHERE n.status = 'pending' AND NOT n.parked AND n.trigger <> 'redirect'
       AND (SELECT NOT (e.enabled AND e.deleted_at IS NULL AND e.destination <> 'listen')
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

CREATE OR REPLACE FUNCTION posthorn_settle_strays() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    ids bigint[];
    rows bigint[];
BEGIN
    SELECT array_agg(e.id) INTO ids FROM endpoints e
     WHERE (NOT e.enabled AND e.destination <> 'listen'
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

CREATE OR REPLACE FUNCTION posthorn_park_endpoint_backlog() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.enabled AND NEW.deleted_at IS NULL AND NEW.destination <> 'listen' THEN
        UPDATE delivery_queue SET parked = false
         WHERE endpoint_id = NEW.id AND status = 'pending' AND parked AND waits_for IS NULL;
    ELSIF NEW.destination <> 'listen' THEN
        -- Redirects and test sends go out whatever the endpoint's state.
        UPDATE delivery_queue SET parked = true
         WHERE endpoint_id = NEW.id AND status = 'pending' AND NOT parked
           AND trigger NOT IN ('redirect', 'test');
    END IF;
    RETURN NULL;
END $$;
