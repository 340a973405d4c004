-- The revision bus: every change of a project's revision (a push, an approval, an admin write)
-- is announced on `memsync_revision` as `<team/name> <revision>` when its transaction commits, so
-- every replica can keep each project's current revision in memory and answer "nothing new"
-- without asking the database.
CREATE FUNCTION projects_revision_announce() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('memsync_revision', NEW.project || ' ' || NEW.revision);
    RETURN NULL;
END $$;

CREATE TRIGGER projects_revision_bus
    AFTER INSERT OR UPDATE OF revision ON projects
    FOR EACH ROW EXECUTE FUNCTION projects_revision_announce();
