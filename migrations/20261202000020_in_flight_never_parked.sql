-- A row in flight is never parked: claims take unparked rows only, ingest leases only
-- rows that wait for nothing, and parking touches pending rows only. Stated here so
-- that lease recovery may look for expired leases through the unparked rows' index
-- alone, and a held backlog (parked rows) is never read by it.
ALTER TABLE delivery_queue
    ADD CONSTRAINT delivery_queue_in_flight_not_parked CHECK (status <> 'in_flight' OR NOT parked);
