-- A project's count of event-type schemas, moved by step rather than recounted: under
-- READ COMMITTED a count(*) in the trigger could read a snapshot older than a concurrent
-- change it waited for. The statements lock the project's row first
-- (app/src/db/schemas.rs), so they take turns and each step is exact.
CREATE OR REPLACE FUNCTION posthorn_event_schemas_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- OLD is null on insert, NEW on delete.
    UPDATE projects SET endpoints_version = endpoints_version + 1,
           event_schemas = event_schemas
               + CASE TG_OP WHEN 'INSERT' THEN 1 WHEN 'DELETE' THEN -1 ELSE 0 END
     WHERE id IN (OLD.project_id, NEW.project_id);
    RETURN NULL;
END $$;

UPDATE projects p SET event_schemas =
    (SELECT count(*) FROM event_type_schemas s WHERE s.project_id = p.id)
 WHERE event_schemas <> (SELECT count(*) FROM event_type_schemas s WHERE s.project_id = p.id);
