-- An endpoint's filter: a CEL expression over the event (app/src/core/filter.rs), checked
-- when saved. An event it does not match makes no attempt for the endpoint; the event
-- keeps which endpoints it skipped and why, for the dashboard and the API.
ALTER TABLE endpoints
    ADD COLUMN filter text CHECK (filter IS NULL OR octet_length(filter) <= 1024);
ALTER TABLE events ADD COLUMN filtered_out jsonb;

DROP TRIGGER endpoints_version_update ON endpoints;
CREATE TRIGGER endpoints_version_update AFTER UPDATE OF
        project_id, url, event_types, enabled, deleted_at, secret, previous_secret,
        previous_secret_expires_at, custom_headers, rate_limit, client_cert, client_key,
        signature_scheme, signing_key, scheme_switched_at, filter
    ON endpoints
    FOR EACH ROW WHEN (
        (OLD.project_id, OLD.url, OLD.event_types, OLD.enabled, OLD.deleted_at, OLD.secret,
         OLD.previous_secret, OLD.previous_secret_expires_at, OLD.custom_headers, OLD.rate_limit,
         OLD.client_cert, OLD.client_key, OLD.signature_scheme, OLD.signing_key,
         OLD.scheme_switched_at, OLD.filter)
        IS DISTINCT FROM
        (NEW.project_id, NEW.url, NEW.event_types, NEW.enabled, NEW.deleted_at, NEW.secret,
         NEW.previous_secret, NEW.previous_secret_expires_at, NEW.custom_headers, NEW.rate_limit,
         NEW.client_cert, NEW.client_key, NEW.signature_scheme, NEW.signing_key,
         NEW.scheme_switched_at, NEW.filter))
    EXECUTE FUNCTION posthorn_bump_endpoints_version();
