-- Notices to a project's operations endpoint go out with their own trigger, `notice`:
-- retried on the schedule and never filtered, where they were single `test` sends.
-- Earlier notices keep the `test` they were sent with.
ALTER TABLE delivery_queue DROP CONSTRAINT deliveries_trigger_check;
ALTER TABLE delivery_queue ADD CONSTRAINT deliveries_trigger_check
    CHECK (trigger IN ('auto', 'manual_retry', 'redirect', 'test', 'notice'));
ALTER TABLE delivery_log DROP CONSTRAINT deliveries_trigger_check;
ALTER TABLE delivery_log ADD CONSTRAINT deliveries_trigger_check
    CHECK (trigger IN ('auto', 'manual_retry', 'redirect', 'test', 'notice'));
