-- Controlled release: a project's release policy, reviewers, proposals and the review queue,
-- disabled memories, provenance of every version, and which scanner rule set checked it.

-- `review = required`: a push by a member who is not a reviewer becomes proposals.
ALTER TABLE projects ADD COLUMN review text NOT NULL DEFAULT 'off'
    CHECK (review IN ('off', 'required'));
-- Published memories not changed or confirmed for this many days are due for review.
ALTER TABLE projects ADD COLUMN review_after_days integer CHECK (review_after_days > 0);

-- Users granted the reviewer role for a team (team admins are reviewers without a grant).
CREATE TABLE team_reviewers (
    team        text NOT NULL REFERENCES teams (team),
    sub         text NOT NULL,
    added_by    text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (team, sub)
);

-- Where each version came from (wire::VersionProvenance; NULL for versions older than this),
-- the repository paths it named that existed when it was pushed, and whether a tombstone
-- disables the version before it rather than deleting it.
ALTER TABLE memory_versions ADD COLUMN provenance jsonb;
ALTER TABLE memory_versions ADD COLUMN named_paths text[] NOT NULL DEFAULT '{}';
ALTER TABLE memory_versions ADD COLUMN disabled boolean NOT NULL DEFAULT false;
ALTER TABLE memory_versions ADD CONSTRAINT memory_versions_disabled_is_tombstone
    CHECK (NOT disabled OR deleted);

-- A disabled memory is a tombstone to everyone who pulls (gone from the team dir and from every
-- MEMORY.md) that only `enable` (or a reviewer's deliberate write) brings back.
ALTER TABLE memories ADD COLUMN disabled boolean NOT NULL DEFAULT false;
ALTER TABLE memories ADD CONSTRAINT memories_disabled_is_tombstone CHECK (NOT disabled OR deleted);
ALTER TABLE memories ADD COLUMN named_paths text[] NOT NULL DEFAULT '{}';
-- When a reviewer last confirmed the live version (a write confirms it too: see updated_at).
ALTER TABLE memories ADD COLUMN confirmed_at timestamptz;
-- The scanner rule set that last checked the live version (NULL: none recorded yet).
ALTER TABLE memories ADD COLUMN rule_set text;

-- What made a revision (push, approve, disable, enable, rollback, restore, delete, rescan) and
-- the reason given, for history and the git export's commit message.
ALTER TABLE revisions ADD COLUMN kind text NOT NULL DEFAULT 'push';
ALTER TABLE revisions ADD COLUMN note text;

-- The review queue: proposed changes (kind `change`), published memories due for review
-- (`due`) and memories a rescan disabled (`flagged`). Visible to the author and the reviewers.
CREATE TABLE proposals (
    id                 bigserial PRIMARY KEY,
    team               text NOT NULL,
    project            text NOT NULL,
    path               text COLLATE "C" NOT NULL,
    kind               text NOT NULL CHECK (kind IN ('change', 'due', 'flagged')),
    op                 text NOT NULL CHECK (op IN ('put', 'delete')),
    status             text NOT NULL
        CHECK (status IN ('pending', 'due', 'flagged', 'approved', 'rejected', 'superseded')),
    base_sha256        text,                  -- the published version the author started from
    sha256             text,                  -- of `content`; NULL for a delete (or after a purge)
    content            text,                  -- NULL for a delete, a due/flagged item, or a purge
    named_paths        text[] NOT NULL DEFAULT '{}',
    author_sub         text NOT NULL,
    author_name        text NOT NULL,
    author_email       text,
    provenance         jsonb NOT NULL,        -- wire::VersionProvenance at proposal time
    findings           jsonb NOT NULL DEFAULT '[]', -- feedback findings (and rescan rule ids)
    reason             text,                  -- why rejected, flagged or due
    note               text,                  -- the approver's note
    reviewed_by        text,
    reviewed_at        timestamptz,
    published_revision bigint,
    created_at         timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (team, project) REFERENCES projects (team, project)
);
CREATE INDEX proposals_open ON proposals (team, project, created_at)
    WHERE status IN ('pending', 'due', 'flagged');
CREATE INDEX proposals_author ON proposals (author_sub, created_at DESC);
CREATE INDEX proposals_path ON proposals (team, project, path);
-- At most one open due or flagged item per memory.
CREATE UNIQUE INDEX proposals_one_open_review ON proposals (team, project, path)
    WHERE kind <> 'change' AND status IN ('due', 'flagged');
