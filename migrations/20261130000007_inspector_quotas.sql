-- What each capture occupies (body and headers), and the inspector's total, kept by
-- statement triggers so a capture can be refused (507) once the machine's budget is
-- spent instead of evicting other people's bins.
ALTER TABLE bin_requests ADD COLUMN stored_bytes bigint NOT NULL DEFAULT 0;
UPDATE bin_requests SET stored_bytes = octet_length(body) + octet_length(headers::text);

CREATE TABLE inspector_usage (
    id    integer PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    bytes bigint NOT NULL
);
INSERT INTO inspector_usage (bytes) SELECT coalesce(sum(stored_bytes), 0) FROM bin_requests;

CREATE FUNCTION inspector_usage_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE inspector_usage SET bytes = bytes + (SELECT coalesce(sum(stored_bytes), 0) FROM added);
    RETURN NULL;
END $$;

CREATE FUNCTION inspector_usage_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE inspector_usage SET bytes = greatest(bytes - (SELECT coalesce(sum(stored_bytes), 0) FROM removed), 0);
    RETURN NULL;
END $$;

CREATE TRIGGER bin_requests_added AFTER INSERT ON bin_requests
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION inspector_usage_added();
CREATE TRIGGER bin_requests_removed AFTER DELETE ON bin_requests
    REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION inspector_usage_removed();
