-- A client push announces its revision after its transaction commits (see the server's
-- `bus::announce`): a transaction that calls pg_notify holds the database-wide notification lock
-- through its commit's flush, so notifying pushes committed one at a time. A transaction that
-- sets `memsync.notify_after_commit` to 'on' (locally) takes the announcements upon itself, and
-- the revision and export triggers stay silent in it; every other writer is announced here, as
-- before. The outbox row is still written in the transaction: the export never depends on a
-- notification, only wakes sooner for one. Its `created_at` is now the time the revision was
-- written (`clock_timestamp()`), not the time its transaction began: a push that waited in the
-- project's lock queue made its revision look older than it was, and the export's lag with it.
CREATE OR REPLACE FUNCTION projects_revision_announce() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF coalesce(current_setting('memsync.notify_after_commit', true), '') <> 'on' THEN
        PERFORM pg_notify('memsync_revision', NEW.project || ' ' || NEW.revision);
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION export_outbox_enqueue() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO export_outbox (team, project, revision, created_at)
        VALUES (NEW.team, NEW.project, NEW.revision, clock_timestamp());
    IF coalesce(current_setting('memsync.notify_after_commit', true), '') <> 'on' THEN
        -- Delivered at commit; wakes the exporter (the payload is only a hint).
        PERFORM pg_notify('memsync_export', NEW.project);
    END IF;
    RETURN NULL;
END;
$$;
