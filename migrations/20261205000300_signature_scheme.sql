-- How an endpoint's deliveries are signed: HMAC-SHA256 with its secret (the default) or
-- ed25519 with a key pair whose private half is sealed like the secrets
-- (app/src/core/sealed.rs) and whose public half is shown. After a switch both schemes
-- sign for 24 hours, so receivers can move over as they do after a secret rotation.
ALTER TABLE endpoints
    ADD COLUMN signature_scheme text NOT NULL DEFAULT 'hmac-sha256'
        CHECK (signature_scheme IN ('hmac-sha256', 'ed25519')),
    ADD COLUMN signing_key text,
    ADD COLUMN public_key text,
    ADD COLUMN scheme_switched_at timestamptz;

DROP TRIGGER endpoints_version_update ON endpoints;
CREATE TRIGGER endpoints_version_update AFTER UPDATE OF
        project_id, url, event_types, enabled, deleted_at, secret, previous_secret,
        previous_secret_expires_at, custom_headers, rate_limit, client_cert, client_key,
        signature_scheme, signing_key, scheme_switched_at
    ON endpoints
    FOR EACH ROW WHEN (
        (OLD.project_id, OLD.url, OLD.event_types, OLD.enabled, OLD.deleted_at, OLD.secret,
         OLD.previous_secret, OLD.previous_secret_expires_at, OLD.custom_headers, OLD.rate_limit,
         OLD.client_cert, OLD.client_key, OLD.signature_scheme, OLD.signing_key,
         OLD.scheme_switched_at)
        IS DISTINCT FROM
        (NEW.project_id, NEW.url, NEW.event_types, NEW.enabled, NEW.deleted_at, NEW.secret,
         NEW.previous_secret, NEW.previous_secret_expires_at, NEW.custom_headers, NEW.rate_limit,
         NEW.client_cert, NEW.client_key, NEW.signature_scheme, NEW.signing_key,
         NEW.scheme_switched_at))
    EXECUTE FUNCTION posthorn_bump_endpoints_version();
