-- Waiting rows by endpoint, for the claim's endpoint-by-endpoint scan: it finds each
-- endpoint with work in one descent and takes that endpoint's oldest due rows, so rows
-- queued behind an endpoint at its share are never walked. Rows inserted already leased
-- (handed to a dispatcher at ingest) never enter it.
CREATE INDEX deliveries_ready ON deliveries (endpoint_id, scheduled_at)
    WHERE status = 'pending' AND NOT parked;
