-- A disabled endpoint's waiting attempts are "parked": still pending (they go out when
-- the endpoint is enabled again), but out of the claim's index, so a backlog of any
-- size held by one customer costs the claim nothing. The endpoint's own UPDATE parks and
-- unparks them, in the same transaction, whoever disables it (a user, the API, the
-- automatic disabling of failing endpoints).
ALTER TABLE deliveries ADD COLUMN parked boolean NOT NULL DEFAULT false;

DROP INDEX deliveries_due;
CREATE INDEX deliveries_due ON deliveries (scheduled_at) WHERE status = 'pending' AND NOT parked;
CREATE INDEX deliveries_parked ON deliveries (endpoint_id) WHERE status = 'pending' AND parked;

CREATE FUNCTION posthorn_park_endpoint_backlog() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.enabled AND NEW.deleted_at IS NULL THEN
        UPDATE deliveries SET parked = false
         WHERE endpoint_id = NEW.id AND status = 'pending' AND parked;
    ELSE
        -- Redirects and test sends go out whatever the endpoint's state.
        UPDATE deliveries SET parked = true
         WHERE endpoint_id = NEW.id AND status = 'pending' AND NOT parked
           AND trigger NOT IN ('redirect', 'test');
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER endpoints_park_backlog AFTER UPDATE OF enabled, deleted_at ON endpoints
    FOR EACH ROW WHEN (OLD.enabled IS DISTINCT FROM NEW.enabled OR OLD.deleted_at IS DISTINCT FROM NEW.deleted_at)
    EXECUTE FUNCTION posthorn_park_endpoint_backlog();

UPDATE deliveries d SET parked = true FROM endpoints e
 WHERE e.id = d.endpoint_id AND d.status = 'pending' AND NOT (e.enabled AND e.deleted_at IS NULL)
   AND d.trigger NOT IN ('redirect', 'test');
