-- Alert e-mail, one address at a time, to confirmed addresses only.
--
-- A notice used to be mailed to all its recipients or, at the first refusal, to none:
-- one bad address stopped every mail after it and repeated every mail before it. Now
-- each mail to one address is a row of its own with its own tries and fate.
--
-- An account's address was never proven to belong to the person who asked (anyone who
-- holds an invitation link picks the account's password), so an address gets alerts
-- only after whoever reads it followed a link mailed to it.

-- A member who asked for alert e-mail: the address, and whether it was confirmed.
CREATE TABLE alert_recipients (
    project_id       bigint NOT NULL,
    user_id          bigint NOT NULL,
    email            text NOT NULL,
    confirmed_at     timestamptz,
    -- SHA-256 of the latest confirmation link's token; cleared once used.
    token_hash       bytea UNIQUE,
    token_expires_at timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, user_id),
    FOREIGN KEY (project_id, user_id) REFERENCES memberships ON DELETE CASCADE
);

-- The outbox and its record: one row per mail to one address. `notice_id` is null for an
-- address confirmation. Rows outlive a membership on purpose: confirmations already
-- mailed to an address keep counting against its daily limit.
CREATE TABLE alert_mails (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id    bigint NOT NULL REFERENCES projects ON DELETE CASCADE,
    user_id       bigint NOT NULL REFERENCES users ON DELETE CASCADE,
    email         text NOT NULL,
    notice_id     bigint REFERENCES notices ON DELETE CASCADE,
    status        text NOT NULL DEFAULT 'waiting' CHECK (status IN ('waiting', 'sent', 'failed')),
    tries         integer NOT NULL DEFAULT 0,
    next_at       timestamptz NOT NULL DEFAULT now(),
    -- Being sent: claimed instead of locked, so no transaction spans an SMTP conversation.
    claimed_until timestamptz,
    tried_at      timestamptz,
    finished_at   timestamptz,
    -- The SMTP server's answer to the last failed try.
    reply         text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (notice_id, user_id)
);
CREATE INDEX alert_mails_due ON alert_mails (next_at) WHERE status = 'waiting';
CREATE INDEX alert_mails_tried ON alert_mails (project_id, tried_at) WHERE notice_id IS NOT NULL;
CREATE INDEX alert_mails_confirmations ON alert_mails (lower(email), created_at) WHERE notice_id IS NULL;
CREATE INDEX alert_mails_project ON alert_mails (project_id, created_at);

-- The notice was its own outbox; it no longer is.
DROP INDEX notices_to_mail;
ALTER TABLE notices DROP COLUMN emailed_at, DROP COLUMN mail_claimed_until;

-- Members who asked for e-mail before addresses were confirmed get one confirmation each
-- (they were being mailed alerts already) and no alerts until they follow it.
INSERT INTO alert_recipients (project_id, user_id, email)
SELECT m.project_id, m.user_id, u.email
  FROM memberships m JOIN users u ON u.id = m.user_id
 WHERE m.email_alerts;
INSERT INTO alert_mails (project_id, user_id, email)
SELECT project_id, user_id, email FROM alert_recipients;
