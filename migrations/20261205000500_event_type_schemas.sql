-- A JSON Schema per event type (app/src/core/schema.rs): `POST /events` validates `data`
-- against it. Kept as sent (text, checked JSON), at most 64 KiB and 200 per project.
-- A change moves the project's endpoints_version on, as an endpoint change does, so a
-- server process reuses a compiled schema until then; the project keeps how many it has,
-- which the API key's lookup reads (none: ingest looks for no schema at all).
CREATE TABLE event_type_schemas (
    project_id bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    event_type text NOT NULL,
    schema text NOT NULL CHECK (octet_length(schema) <= 65536),
    version int NOT NULL DEFAULT 1,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, event_type)
);

ALTER TABLE projects ADD COLUMN event_schemas int NOT NULL DEFAULT 0;

CREATE FUNCTION posthorn_event_schemas_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- OLD is null on insert, NEW on delete.
    UPDATE projects SET endpoints_version = endpoints_version + 1,
           event_schemas = (SELECT count(*) FROM event_type_schemas s WHERE s.project_id = projects.id)
     WHERE id IN (OLD.project_id, NEW.project_id);
    RETURN NULL;
END $$;

CREATE TRIGGER event_type_schemas_changed AFTER INSERT OR UPDATE OR DELETE ON event_type_schemas
    FOR EACH ROW EXECUTE FUNCTION posthorn_event_schemas_changed();
