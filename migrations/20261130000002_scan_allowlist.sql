-- Findings of the team-write scanner that a team admin let through for one project, by
-- fingerprint (sha256 of rule id + the matched value: never the value itself).
CREATE TABLE scan_allowlist (
    team        text NOT NULL,
    project     text NOT NULL,
    fingerprint text NOT NULL CHECK (fingerprint ~ '^[0-9a-f]{64}$'),
    rule        text NOT NULL,
    reason      text NOT NULL,
    added_by    text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (team, project, fingerprint),
    FOREIGN KEY (team, project) REFERENCES projects (team, project)
);
