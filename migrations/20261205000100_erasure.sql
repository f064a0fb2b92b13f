-- Data subjects and erasure (SPEC "Data lifecycle").
--
-- An event may name up to ten data subjects (`user:42`); an erasure removes, for every
-- event of its project naming the subject, the event's data and subjects and every
-- attempt's response body and headers, keeping ids, types, times, statuses and codes.
-- An erased event keeps `data` as JSON `null` (the column stays NOT NULL for every
-- reader) and says when and by which erasure it was erased.
ALTER TABLE events
    ADD COLUMN subjects   text[],
    ADD COLUMN erased_at  timestamptz,
    ADD COLUMN erasure_id bigint;
-- Only events that name subjects are in it: the common event costs ingest nothing.
CREATE INDEX events_subjects ON events USING gin (subjects) WHERE subjects IS NOT NULL;
-- An erasure's events, for its last sweep.
CREATE INDEX events_erasure ON events (erasure_id) WHERE erasure_id IS NOT NULL;

-- One request to erase: a subject's events (run in bounded batches by any server
-- process) or one event (`DELETE /events/{id}/data`). The subject is kept as the record
-- that the request was honoured; it is the platform's own identifier, not the payload.
CREATE TABLE erasures (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id    bigint NOT NULL REFERENCES projects ON DELETE CASCADE,
    subject       text,
    event_id      text,
    status        text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'done')),
    requested_by  text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    -- When a runner last took it: runners take the one waiting longest, so one tenant's
    -- large erasure does not hold up another's.
    touched_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz,
    events        bigint NOT NULL DEFAULT 0,
    attempts      bigint NOT NULL DEFAULT 0,
    dead_lettered bigint NOT NULL DEFAULT 0,
    inspector_copies bigint NOT NULL DEFAULT 0,
    CHECK ((subject IS NULL) <> (event_id IS NULL))
);
CREATE INDEX erasures_running ON erasures (touched_at) WHERE status = 'running';
CREATE INDEX erasures_project ON erasures (project_id, id);

-- A Redirect's copy in an inspector bin, found by the attempt's request id (set only
-- when the capture carried the dispatcher's genuine pass), and erased with it.
ALTER TABLE bin_requests
    ADD COLUMN request_id text,
    ADD COLUMN erased_at  timestamptz;
CREATE INDEX bin_requests_request ON bin_requests (request_id) WHERE request_id IS NOT NULL;
