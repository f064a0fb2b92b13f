-- Idempotency keys are stored as HMAC-SHA256, under the `idempotency` server key, of
-- the project id (8 bytes, big-endian) followed by the client's key, in hex
-- (app/src/core/idempotency.rs). Clients often choose user or order ids as keys: stored
-- this way the events table holds none of them, so an erasure has nothing of them to
-- clear, and a repeat still finds its first event. The keys stored before are converted
-- here, by the same computation (HMAC spelled out over sha256(), needing no extension).
INSERT INTO server_keys (name, key)
VALUES ('idempotency', sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text, 'UTF8')))
ON CONFLICT (name) DO NOTHING;

DO $$
DECLARE
    k bytea;
    ipad bytea;
    opad bytea;
BEGIN
    SELECT key INTO k FROM server_keys WHERE name = 'idempotency';
    -- The key padded to SHA-256's 64-byte block (it is 32 bytes), XORed with each pad.
    k := k || decode(repeat('00', 64 - length(k)), 'hex');
    ipad := k;
    opad := k;
    FOR i IN 0..63 LOOP
        ipad := set_byte(ipad, i, get_byte(k, i) # 54);
        opad := set_byte(opad, i, get_byte(k, i) # 92);
    END LOOP;
    UPDATE events
       SET client_id = encode(sha256(opad || sha256(ipad || int8send(project_id)
                                                     || convert_to(client_id, 'UTF8'))), 'hex')
     WHERE client_id IS NOT NULL;
END $$;
