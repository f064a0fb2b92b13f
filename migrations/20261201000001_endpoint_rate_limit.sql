-- Per-endpoint throttle: at most `rate_limit` attempts per second start to the endpoint
-- (NULL: unlimited). `next_start_at` is the earliest moment the next attempt may start;
-- dispatchers reserve start slots by advancing it under the endpoint row's lock, so the
-- spacing holds however many dispatchers run.
ALTER TABLE endpoints
    ADD COLUMN rate_limit integer CHECK (rate_limit BETWEEN 1 AND 10000),
    ADD COLUMN next_start_at timestamptz;
