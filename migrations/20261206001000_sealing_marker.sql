-- Whether this database's secrets are sealed (app/src/core/sealed.rs, app/src/db/sealing.rs).
--
-- The row appears once a process with POSTHORN_ENCRYPTION_KEY has run against the
-- database. From then on a process without the key does not start (it would write
-- secrets in plain text beside sealed ones), and a plain value is refused where it is
-- used instead of being taken in: anyone able to write a row could have put it there.
-- A database that never had a key has no row and keeps working without one (local use).
--
-- `bound_since`: every value has been sealed bound to its endpoint and project (`ph2:`)
-- once; from then on values of the earlier `ph1:` format, bound to their purpose only
-- and so movable between endpoints, are refused and no longer converted.
CREATE TABLE sealing (
    only_row     boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    sealed_since timestamptz NOT NULL DEFAULT now(),
    bound_since  timestamptz
);
