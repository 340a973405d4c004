-- The admin web console's sessions. A session is opened by signing in with a token; the cookie
-- holds a random secret and only its SHA-256 is kept here. The token itself is never stored:
-- its claims are (they say who the session acts as), with its jti, so that revoking the token
-- ends every session opened with it.
CREATE TABLE console_sessions (
    id_hash         text PRIMARY KEY,
    jti             uuid NOT NULL,
    claims          jsonb NOT NULL,
    -- The CSRF token every state-changing form of this session must carry.
    csrf            text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    -- Idle expiry: pushed forward while the session is used, never past hard_expires_at.
    expires_at      timestamptz NOT NULL,
    -- Absolute expiry: the session's maximum lifetime, never past the token's own expiry.
    hard_expires_at timestamptz NOT NULL,
    -- A one-time message for the next page (what the last action did), as JSON.
    flash           jsonb,
    CHECK (expires_at <= hard_expires_at)
);
CREATE INDEX console_sessions_jti ON console_sessions (jti);
CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);
