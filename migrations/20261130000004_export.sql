-- The git export's outbox: one row per revision not yet exported. A trigger writes it in the
-- transaction that records the revision, so no revision can be committed without its row; the
-- exporter deletes the rows once the repository has the commits. Never holds memory content.
CREATE TABLE export_outbox (
    team        text NOT NULL,
    project     text NOT NULL,
    revision    bigint NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (team, project, revision)
);
CREATE INDEX export_outbox_age ON export_outbox (created_at);

CREATE FUNCTION export_outbox_enqueue() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO export_outbox (team, project, revision) VALUES (NEW.team, NEW.project, NEW.revision);
    -- Delivered at commit; wakes the exporter (the payload is only a hint).
    PERFORM pg_notify('memsync_export', NEW.project);
    RETURN NULL;
END;
$$;

CREATE TRIGGER revisions_export_outbox
    AFTER INSERT ON revisions
    FOR EACH ROW EXECUTE FUNCTION export_outbox_enqueue();

-- Revisions made before the export existed are exported too.
INSERT INTO export_outbox (team, project, revision, created_at)
    SELECT team, project, revision, created_at FROM revisions;

-- Projects whose repository must be rewritten from scratch (after a purge, or asked for by
-- `memsync-server export rebuild`). `rebuilt_at` is set once the repository is rewritten; the row
-- then stays until a configured mirror has been force-updated with it.
CREATE TABLE export_rebuilds (
    team          text NOT NULL,
    project       text NOT NULL,
    requested_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    rebuilt_at    timestamptz,
    PRIMARY KEY (team, project)
);
