-- Review events for the event stream: every new proposal and every change of a proposal's
-- status (approved, rejected, superseded, …) is announced on `memsync_review` as
-- `<team/name> <proposal id> <status>` when its transaction commits, so every replica can tell
-- the team's reviewers watching the project.
CREATE FUNCTION proposals_review_announce() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('memsync_review', NEW.project || ' ' || NEW.id || ' ' || NEW.status);
    RETURN NULL;
END $$;

CREATE TRIGGER proposals_review_bus
    AFTER INSERT OR UPDATE OF status ON proposals
    FOR EACH ROW EXECUTE FUNCTION proposals_review_announce();
