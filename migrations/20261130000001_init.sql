-- memsync schema. Every table carries the team key (and the project where one applies) so the
-- data can later be sharded by team.

CREATE TABLE teams (
    team        text PRIMARY KEY,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE projects (
    team        text NOT NULL REFERENCES teams (team),
    project     text NOT NULL,             -- full id, "<team>/<name>"
    revision    bigint NOT NULL DEFAULT 0, -- last revision; bumped once per accepted push
    files       integer NOT NULL DEFAULT 0,-- live (not deleted) files
    bytes       bigint NOT NULL DEFAULT 0, -- size of the live files
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    archived_at timestamptz,
    PRIMARY KEY (team, project),
    CHECK (project LIKE team || '/%')
);

-- One row per accepted push: who made it and when. The git export reads these in order.
CREATE TABLE revisions (
    team         text NOT NULL,
    project      text NOT NULL,
    revision     bigint NOT NULL,
    author_sub   text NOT NULL,
    author_name  text NOT NULL,
    author_email text,
    request_id   text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (team, project, revision),
    FOREIGN KEY (team, project) REFERENCES projects (team, project)
);

-- Every version of every path ever written, tombstones included.
CREATE TABLE memory_versions (
    team        text NOT NULL,
    project     text NOT NULL,
    path        text COLLATE "C" NOT NULL,
    revision    bigint NOT NULL,
    deleted     boolean NOT NULL,
    sha256      text,                      -- NULL for a tombstone
    content     text,                      -- NULL for a tombstone (or after a purge)
    size        integer NOT NULL DEFAULT 0,
    merged      boolean NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (team, project, path, revision),
    FOREIGN KEY (team, project, revision) REFERENCES revisions (team, project, revision),
    CHECK (deleted = (sha256 IS NULL))
);
CREATE INDEX memory_versions_by_sha ON memory_versions (team, project, path, sha256);

-- The current state of every path: the latest version, or its tombstone.
CREATE TABLE memories (
    team        text NOT NULL,
    project     text NOT NULL,
    path        text COLLATE "C" NOT NULL,
    revision    bigint NOT NULL,           -- revision that last changed this path
    deleted     boolean NOT NULL,
    sha256      text,
    content     text,
    size        integer NOT NULL DEFAULT 0,
    author_name text NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (team, project, path),
    FOREIGN KEY (team, project) REFERENCES projects (team, project),
    CHECK (deleted = (sha256 IS NULL))
);
-- "What changed since revision N" is one range scan on this index.
CREATE INDEX memories_by_revision ON memories (team, project, revision);

-- Issued tokens, by jti. The token itself is never stored: it is a signed JWT.
CREATE TABLE tokens (
    jti         uuid PRIMARY KEY,
    sub         text NOT NULL,
    name        text NOT NULL,
    email       text,
    teams       jsonb NOT NULL DEFAULT '{}',
    admin       boolean NOT NULL DEFAULT false,
    issued_at   timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    issued_by   text NOT NULL,
    revoked_at  timestamptz,
    revoked_by  text
);
CREATE INDEX tokens_revoked ON tokens (revoked_at) WHERE revoked_at IS NOT NULL;

-- A retried push with the same Idempotency-Key gets the stored answer instead of applying twice.
CREATE TABLE idempotency_keys (
    team         text NOT NULL,
    project      text NOT NULL,
    sub          text NOT NULL,
    key          text NOT NULL,
    request_hash text NOT NULL,
    status       smallint NOT NULL,
    response     jsonb NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (team, project, sub, key)
);
CREATE INDEX idempotency_keys_age ON idempotency_keys (created_at);

-- Append-only audit log. Never holds memory content or secrets: rule ids and paths only.
CREATE TABLE audit_log (
    id          bigserial PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT now(),
    team        text,
    project     text,
    actor_sub   text NOT NULL,
    actor_name  text,
    action      text NOT NULL,
    path        text,
    revision    bigint,
    request_id  text,
    details     jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_team_at ON audit_log (team, at DESC);
CREATE INDEX audit_log_project_at ON audit_log (team, project, at DESC);

CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only: % refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;

CREATE TRIGGER audit_log_no_update_delete
    BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();

CREATE TRIGGER audit_log_no_truncate
    BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();
