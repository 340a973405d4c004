-- Where the process that runs the git export can be reached: the URL it advertises, keyed by
-- the backend pid of the session that holds the export lock. Replicas without the export
-- forward `git clone` requests there. A row counts only while its session holds the lock
-- (queries join pg_locks), so a dead exporter's row is never used; the next exporter removes it.
CREATE TABLE export_leader (
    pid integer PRIMARY KEY,
    url text NOT NULL,
    since timestamptz NOT NULL DEFAULT now()
);
