-- Purge: a version's content (and hash) erased for good; the row stays so history shows that
-- something was there, when and by whom.
ALTER TABLE memory_versions ADD COLUMN purged boolean NOT NULL DEFAULT false;
ALTER TABLE memory_versions DROP CONSTRAINT memory_versions_check;
ALTER TABLE memory_versions ADD CONSTRAINT memory_versions_check
    CHECK (purged OR deleted = (sha256 IS NULL));

CREATE INDEX audit_log_actor_at ON audit_log (actor_sub, at DESC);
