-- Scoped tokens: what a token may do (`pull`, `push`, `admin`, space-separated; NULL is everything
-- its teams allow), the projects it is limited to (empty: all of its teams' projects), and its own
-- request rate ({"rps": n, "burst": n}; NULL is the server's default for tokens).
ALTER TABLE tokens
    ADD COLUMN scope text,
    ADD COLUMN projects text[] NOT NULL DEFAULT '{}',
    ADD COLUMN rate jsonb;
