-- W3C trace context: each event keeps the trace it was accepted under, so its attempts
-- (minutes or hours later, in any dispatcher) join that trace and pass it on.
ALTER TABLE events ADD COLUMN traceparent text, ADD COLUMN tracestate text;
-- A project may keep its trace context from its customers' receivers (sent by default).
ALTER TABLE projects ADD COLUMN trace_propagation boolean NOT NULL DEFAULT true;
