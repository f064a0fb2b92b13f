-- Client certificates per endpoint (the certificate in the clear, its key sealed like the
-- endpoint's secrets, see app/src/core/sealed.rs), what is shown of them, and which
-- expiry the "certificate expiring" notice was last sent for (one notice per certificate).
ALTER TABLE endpoints
    ADD COLUMN client_cert text,
    ADD COLUMN client_key text,
    ADD COLUMN client_cert_subject text,
    ADD COLUMN client_cert_not_after timestamptz,
    ADD COLUMN client_cert_noticed_for timestamptz;

-- A certificate changes how deliveries are sent: it moves the endpoints version on, as
-- secrets and headers do.
DROP TRIGGER endpoints_version_update ON endpoints;
CREATE TRIGGER endpoints_version_update AFTER UPDATE OF
        project_id, url, event_types, enabled, deleted_at, secret, previous_secret,
        previous_secret_expires_at, custom_headers, rate_limit, client_cert, client_key
    ON endpoints
    FOR EACH ROW WHEN (
        (OLD.project_id, OLD.url, OLD.event_types, OLD.enabled, OLD.deleted_at, OLD.secret,
         OLD.previous_secret, OLD.previous_secret_expires_at, OLD.custom_headers, OLD.rate_limit,
         OLD.client_cert, OLD.client_key)
        IS DISTINCT FROM
        (NEW.project_id, NEW.url, NEW.event_types, NEW.enabled, NEW.deleted_at, NEW.secret,
         NEW.previous_secret, NEW.previous_secret_expires_at, NEW.custom_headers, NEW.rate_limit,
         NEW.client_cert, NEW.client_key))
    EXECUTE FUNCTION posthorn_bump_endpoints_version();

-- The notice loop's scan: certificates that run out soon.
CREATE INDEX endpoints_client_cert_not_after ON endpoints (client_cert_not_after)
    WHERE client_cert_not_after IS NOT NULL AND deleted_at IS NULL;
