-- Ordering keys. Per endpoint, the attempts of events sharing a key form a lane: one
-- chain at a time, in the order the events were accepted. A lane member carries
-- `lane_seq`, taken under the lane's advisory lock so it grows in acceptance order (a
-- chain's later attempts keep its first one's). A member queued behind an unfinished one
-- waits parked, out of the claim's indexes, with `waits_for` naming the event right ahead
-- of it; the end of that chain releases it.
ALTER TABLE events ADD COLUMN ordering_key text;
ALTER TABLE deliveries
    ADD COLUMN ordering_key text,
    ADD COLUMN lane_seq bigint,
    ADD COLUMN waits_for text;
CREATE SEQUENCE deliveries_lane_seq AS bigint;

-- A lane's unfinished members, head first: its tail for ingest, its head for release.
CREATE INDEX deliveries_lane ON deliveries (endpoint_id, ordering_key, lane_seq)
    WHERE lane_seq IS NOT NULL AND status IN ('pending', 'in_flight');
-- The dashboard's and the API's filter by key.
CREATE INDEX deliveries_project_key ON deliveries (project_id, ordering_key, created_at DESC, id DESC)
    WHERE ordering_key IS NOT NULL;

-- Enabling an endpoint again releases its parked backlog, but not the rows still waiting
-- their turn in a lane: those wait for the chain ahead of them.
CREATE OR REPLACE FUNCTION posthorn_park_endpoint_backlog() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.enabled AND NEW.deleted_at IS NULL THEN
        UPDATE deliveries SET parked = false
         WHERE endpoint_id = NEW.id AND status = 'pending' AND parked AND waits_for IS NULL;
    ELSE
        -- Redirects and test sends go out whatever the endpoint's state.
        UPDATE deliveries SET parked = true
         WHERE endpoint_id = NEW.id AND status = 'pending' AND NOT parked
           AND trigger NOT IN ('redirect', 'test');
    END IF;
    RETURN NULL;
END $$;
