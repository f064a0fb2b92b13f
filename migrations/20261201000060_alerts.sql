-- Operational alerts. The dispatcher keeps each endpoint's health as outcomes are
-- recorded (`failing_since`: the first failure since the last success) and tallies dead
-- letters per endpoint; the alert loop turns both into notices, each exactly once
-- (the state flip and the notice commit together), sent to the project's operations
-- endpoint and mailed to the members who asked for it.
ALTER TABLE endpoints
    ADD COLUMN failing_since timestamptz,
    -- An `endpoint.failing` notice went out and `endpoint.recovered` has not yet.
    ADD COLUMN failing_noticed boolean NOT NULL DEFAULT false,
    ADD COLUMN dead_letters_noticed_at timestamptz;

ALTER TABLE projects
    ADD COLUMN failing_alert_after interval NOT NULL DEFAULT interval '15 minutes'
        CHECK (failing_alert_after BETWEEN interval '1 second' AND interval '7 days');

ALTER TABLE memberships ADD COLUMN email_alerts boolean NOT NULL DEFAULT false;

-- Dead letters not yet told, per endpoint: how many, and the first few event ids.
CREATE TABLE dead_letter_tally (
    endpoint_id bigint PRIMARY KEY REFERENCES endpoints ON DELETE CASCADE,
    count       bigint NOT NULL,
    first_ids   text[] NOT NULL,
    since       timestamptz NOT NULL DEFAULT now()
);

-- Every notice sent, for the e-mail outbox and the record.
CREATE TABLE notices (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id  bigint NOT NULL REFERENCES projects ON DELETE CASCADE,
    endpoint_id bigint,
    kind        text NOT NULL,
    data        jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    -- Set once mailed, or at once when nobody asked for e-mail.
    emailed_at  timestamptz
);
CREATE INDEX notices_to_mail ON notices (id) WHERE emailed_at IS NULL;
CREATE INDEX notices_project ON notices (project_id, created_at DESC);
