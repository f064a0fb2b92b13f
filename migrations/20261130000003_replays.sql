-- Bulk replay ("Retry all matching"): one row per run, one item per event and endpoint,
-- so each pair gets exactly one new attempt however many failed attempts it had.
CREATE TABLE replays (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id  bigint NOT NULL REFERENCES projects ON DELETE CASCADE,
    created_by  text NOT NULL,
    filter      jsonb NOT NULL,
    per_second  integer NOT NULL CHECK (per_second > 0),
    total       integer NOT NULL DEFAULT 0,
    queued      integer NOT NULL DEFAULT 0,
    status      text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'done', 'cancelled')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz
);
CREATE INDEX replays_running ON replays (id) WHERE status = 'running';

CREATE TABLE replay_items (
    replay_id   bigint NOT NULL REFERENCES replays ON DELETE CASCADE,
    event_id    text NOT NULL,
    endpoint_id bigint NOT NULL,
    delivery_id bigint,
    PRIMARY KEY (replay_id, event_id, endpoint_id)
);
CREATE INDEX replay_items_todo ON replay_items (replay_id, endpoint_id) WHERE delivery_id IS NULL;
