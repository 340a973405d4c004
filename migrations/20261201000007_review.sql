-- Review: an author has at most one pending proposal per path (a newer one supersedes the
-- older), and `/v1/me` finds a user's reviewer grants by `sub`.
CREATE UNIQUE INDEX proposals_one_pending_per_author ON proposals (team, project, path, author_sub)
    WHERE kind = 'change' AND status = 'pending';
CREATE INDEX team_reviewers_sub ON team_reviewers (sub);
