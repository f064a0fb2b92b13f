-- A project's endpoints, as ingest fans events out to them, carry a version: any change
-- to what decides where and how an event is sent (which endpoints are live, what they
-- subscribe to, their URL, secrets, headers, throttle) moves it on, in the same
-- transaction as the change. The API key's lookup reads it with the key, so a server
-- process may reuse the endpoints it read for that version instead of reading them again
-- for every event, and still never uses endpoints older than the key's lookup saw.
-- Columns the dispatcher keeps up to date (health, throttle slots, notices) leave it be.
ALTER TABLE projects ADD COLUMN endpoints_version bigint NOT NULL DEFAULT 0;

CREATE FUNCTION posthorn_bump_endpoints_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- OLD is null on insert, NEW on delete.
    UPDATE projects SET endpoints_version = endpoints_version + 1
     WHERE id IN (OLD.project_id, NEW.project_id);
    RETURN NULL;
END $$;

CREATE TRIGGER endpoints_version_insert_delete AFTER INSERT OR DELETE ON endpoints
    FOR EACH ROW EXECUTE FUNCTION posthorn_bump_endpoints_version();

CREATE TRIGGER endpoints_version_update AFTER UPDATE OF
        project_id, url, event_types, enabled, deleted_at, secret, previous_secret,
        previous_secret_expires_at, custom_headers, rate_limit
    ON endpoints
    FOR EACH ROW WHEN (
        (OLD.project_id, OLD.url, OLD.event_types, OLD.enabled, OLD.deleted_at, OLD.secret,
         OLD.previous_secret, OLD.previous_secret_expires_at, OLD.custom_headers, OLD.rate_limit)
        IS DISTINCT FROM
        (NEW.project_id, NEW.url, NEW.event_types, NEW.enabled, NEW.deleted_at, NEW.secret,
         NEW.previous_secret, NEW.previous_secret_expires_at, NEW.custom_headers, NEW.rate_limit))
    EXECUTE FUNCTION posthorn_bump_endpoints_version();
