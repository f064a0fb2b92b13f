-- Retention must never drop a delivery that is still waiting: rows of a disabled
-- endpoint may sit `pending` for longer than the 14-day window. Before a day is
-- dropped, its waiting rows move to the DEFAULT partition (the day's range no longer
-- exists once it is detached, so that is where they land), and only then is it dropped.
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
        WHERE i.inhparent = 'deliveries'::regclass AND c.relname ~ '^deliveries_[0-9]{8}$'
    LOOP
        IF to_date(substr(part.relname, 12), 'YYYYMMDD') < cutoff THEN
            EXECUTE format('ALTER TABLE deliveries DETACH PARTITION %I', part.relname);
            EXECUTE format(
                'INSERT INTO deliveries SELECT * FROM %I WHERE status IN (''pending'', ''in_flight'')',
                part.relname);
            EXECUTE format('DROP TABLE %I', part.relname);
            dropped := dropped + 1;
        END IF;
    END LOOP;
    RETURN dropped;
END $$;

-- A day whose rows already sit in DEFAULT (its partition was missing when they were
-- written, e.g. after a long outage) cannot get a partition of its own; it is skipped
-- instead of failing every later maintenance pass.
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
                    'CREATE TABLE %I PARTITION OF deliveries FOR VALUES FROM (%L) TO (%L)',
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
