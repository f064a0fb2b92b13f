-- Failures only: the response-code (non-2xx) and error-kind filters read this index, so
-- their cost follows a project's failures, not its whole history.
CREATE INDEX deliveries_project_failures ON deliveries (project_id, created_at DESC, id DESC)
    WHERE status IN ('failed', 'dead_letter');
