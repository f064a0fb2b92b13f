-- Sessions carry the epoch their user had at sign-in; changing the password bumps it,
-- which ends every other session of that user at once.
ALTER TABLE users ADD COLUMN session_epoch integer NOT NULL DEFAULT 0;
