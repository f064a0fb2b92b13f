-- What an attempt carries while it waits, apart from what it carries once finished.
--
-- Waiting and in-flight attempts live in `delivery_queue`: a plain table whose indexes
-- never name the columns a claim or a release changes (status, lease, worker), so those
-- updates are HOT (no index entry written), and whose rows are deleted when the attempt
-- ends. A finished attempt is written once, whole, into `delivery_log` (the partitioned
-- table that was `deliveries`), which keeps the dashboard's indexes and no queue indexes.
-- Before, every claim and every outcome rewrote a new version of the wide row with an
-- entry in each of its ten indexes.
--
-- `deliveries` stays the name everything reads: a view over both. Writes through the
-- view (tools, fixtures, rare paths) are routed by status; the dispatcher and ingest
-- write to the tables themselves.

ALTER TABLE deliveries RENAME TO delivery_log;
ALTER TABLE delivery_log RENAME CONSTRAINT deliveries_pkey TO delivery_log_pkey;
DROP TRIGGER deliveries_notify ON delivery_log;
DROP INDEX deliveries_due, deliveries_parked, deliveries_ready, deliveries_leased, deliveries_lane;

CREATE TABLE delivery_queue (LIKE delivery_log INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
    -- Room on each page for a new version of every row on it: a claim takes the oldest
    -- rows, which sit together, so it updates pages whole, and a version that does not
    -- fit on its page is not HOT.
    WITH (fillfactor = 40);
ALTER TABLE delivery_queue ADD PRIMARY KEY (id);
ALTER TABLE delivery_queue ADD CONSTRAINT delivery_queue_waiting CHECK (status IN ('pending', 'in_flight'));

-- The claim's two walks (in-flight rows stay in them: at most the slots' worth, passed
-- over by the claim's filter, where a status in the predicate would cost every claim and
-- every release a new index entry).
CREATE INDEX delivery_queue_due ON delivery_queue (scheduled_at) WHERE NOT parked;
CREATE INDEX delivery_queue_ready ON delivery_queue (endpoint_id, scheduled_at) WHERE NOT parked;
CREATE INDEX delivery_queue_parked ON delivery_queue (endpoint_id) WHERE parked;
-- A lane's unfinished members, head first.
CREATE INDEX delivery_queue_lane ON delivery_queue (endpoint_id, ordering_key, lane_seq)
    WHERE lane_seq IS NOT NULL;
-- What the dashboard and the API read through the view, so a project with a large
-- backlog is not sorted whole to show its newest page. (Not one by endpoint and time:
-- the claim's generic plan took it over `delivery_queue_ready` and read a busy
-- endpoint's 100,000 rows to take 7.)
CREATE INDEX delivery_queue_project_recent ON delivery_queue (project_id, created_at DESC, id DESC);
CREATE INDEX delivery_queue_event ON delivery_queue (event_id, endpoint_id);
CREATE INDEX delivery_queue_request ON delivery_queue (request_id);

INSERT INTO delivery_queue SELECT * FROM delivery_log WHERE status IN ('pending', 'in_flight');
DELETE FROM delivery_log WHERE status IN ('pending', 'in_flight');

CREATE TRIGGER delivery_queue_notify AFTER INSERT ON delivery_queue
    FOR EACH STATEMENT EXECUTE FUNCTION posthorn_notify_pending();

CREATE VIEW deliveries AS
    SELECT * FROM delivery_log
    UNION ALL
    SELECT * FROM delivery_queue;
ALTER VIEW deliveries ALTER COLUMN id SET DEFAULT nextval('deliveries_id_seq');
ALTER VIEW deliveries ALTER COLUMN created_at SET DEFAULT now();
ALTER VIEW deliveries ALTER COLUMN scheduled_at SET DEFAULT now();
ALTER VIEW deliveries ALTER COLUMN parked SET DEFAULT false;

-- A write through the view lands where the row's status says. An update is a move: the
-- row as read must still be there unchanged (a concurrent writer got there first
-- otherwise, and this row is skipped, as a locked-and-changed row would be).
CREATE FUNCTION posthorn_deliveries_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        DELETE FROM delivery_queue q WHERE q.id = OLD.id AND ROW(q.*) IS NOT DISTINCT FROM ROW(OLD.*);
        IF NOT FOUND THEN
            DELETE FROM delivery_log l
             WHERE l.id = OLD.id AND l.created_at = OLD.created_at
               AND ROW(l.*) IS NOT DISTINCT FROM ROW(OLD.*);
            IF NOT FOUND THEN
                RETURN NULL;
            END IF;
        END IF;
        IF TG_OP = 'DELETE' THEN
            RETURN OLD;
        END IF;
    END IF;
    IF NEW.status IN ('pending', 'in_flight') THEN
        INSERT INTO delivery_queue SELECT NEW.*;
    ELSE
        INSERT INTO delivery_log SELECT NEW.*;
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER deliveries_write INSTEAD OF INSERT OR UPDATE OR DELETE ON deliveries
    FOR EACH ROW EXECUTE FUNCTION posthorn_deliveries_write();

-- Parking moves to the queue: only waiting rows are ever parked.
CREATE OR REPLACE FUNCTION posthorn_park_endpoint_backlog() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.enabled AND NEW.deleted_at IS NULL THEN
        UPDATE delivery_queue SET parked = false
         WHERE endpoint_id = NEW.id AND status = 'pending' AND parked AND waits_for IS NULL;
    ELSE
        -- Redirects and test sends go out whatever the endpoint's state.
        UPDATE delivery_queue SET parked = true
         WHERE endpoint_id = NEW.id AND status = 'pending' AND NOT parked
           AND trigger NOT IN ('redirect', 'test');
    END IF;
    RETURN NULL;
END $$;

-- The log's days. Waiting rows are never in the log, so a day is dropped whole; an
-- attempt that finishes after its day was dropped lands in DEFAULT.
CREATE OR REPLACE FUNCTION posthorn_drop_delivery_partitions(keep_days integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    part record;
    dropped integer := 0;
    cutoff date := (now() AT TIME ZONE 'UTC')::date - keep_days;
BEGIN
    FOR part IN
        SELECT c.relname FROM pg_inherits i
        JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'delivery_log'::regclass AND c.relname ~ '^deliveries_[0-9]{8}$'
    LOOP
        IF to_date(substr(part.relname, 12), 'YYYYMMDD') < cutoff THEN
            EXECUTE format('DROP TABLE %I', part.relname);
            dropped := dropped + 1;
        END IF;
    END LOOP;
    RETURN dropped;
END $$;

CREATE OR REPLACE FUNCTION posthorn_ensure_delivery_partitions(from_day date, to_day date) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    d date := from_day;
    made integer := 0;
    name text;
BEGIN
    WHILE d <= to_day LOOP
        name := 'deliveries_' || to_char(d, 'YYYYMMDD');
        IF to_regclass(name) IS NULL THEN
            BEGIN
                EXECUTE format(
                    'CREATE TABLE %I PARTITION OF delivery_log FOR VALUES FROM (%L) TO (%L)',
                    name, (d::timestamp AT TIME ZONE 'UTC'), ((d + 1)::timestamp AT TIME ZONE 'UTC'));
                made := made + 1;
            EXCEPTION WHEN check_violation THEN
                RAISE NOTICE 'deliveries for % stay in the default partition', d;
            END;
        END IF;
        d := d + 1;
    END LOOP;
    RETURN made;
END $$;
