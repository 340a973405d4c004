-- A purge must stay done: a client's retry of the original push, or a second push of the same
-- content, must not bring the purged text back.

-- The sha256 of every version a purge erased. A push whose content has one of these hashes is
-- refused unless a team admin explicitly overrides it (`allow_purged`). The hash is the one
-- clients already compute for every file; it is kept so that the purge can be enforced.
CREATE TABLE purged_content (
    team       text NOT NULL,
    project    text NOT NULL,
    sha256     text NOT NULL,
    path       text NOT NULL,
    purged_at  timestamptz NOT NULL DEFAULT now(),
    purged_by  text NOT NULL,
    PRIMARY KEY (team, project, sha256)
);

-- A stored push answer that carried purged content is emptied, not forgotten: a retry with its
-- Idempotency-Key is answered "purged" instead of being applied again.
ALTER TABLE idempotency_keys ADD COLUMN purged boolean NOT NULL DEFAULT false;
