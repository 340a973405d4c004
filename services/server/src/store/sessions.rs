//! The admin console's sessions: opened by signing in with a token, found by the SHA-256 of the
//! cookie's secret, ended by signing out, by expiry, or by revoking the token they were opened with.

use chrono::{DateTime, Utc};
use sqlx::{PgExecutor, PgPool};
use uuid::Uuid;

use crate::auth::Claims;

/// A live session as a request sees it.
#[derive(Debug, Clone)]
pub struct Session {
    pub id_hash: String,
    pub claims: Claims,
    pub csrf: String,
    /// The message the previous action left for this page (taken: the next page won't see it).
    pub flash: Option<serde_json::Value>,
}

pub struct NewSession<'a> {
    pub id_hash: &'a str,
    pub claims: &'a Claims,
    pub csrf: &'a str,
    pub idle: chrono::Duration,
    pub hard_expires_at: DateTime<Utc>,
}

/// Opens a session (and drops sessions that have expired, so the table doesn't grow).
pub async fn open(pool: &PgPool, s: &NewSession<'_>) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM console_sessions WHERE expires_at < now()")
        .execute(pool)
        .await?;
    let claims = serde_json::to_value(s.claims).map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
    let expires_at = (Utc::now() + s.idle).min(s.hard_expires_at);
    sqlx::query(
        "INSERT INTO console_sessions (id_hash, jti, claims, csrf, expires_at, hard_expires_at)
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(s.id_hash)
    .bind(s.claims.jti)
    .bind(claims)
    .bind(s.csrf)
    .bind(expires_at)
    .bind(s.hard_expires_at)
    .execute(pool)
    .await?;
    Ok(())
}

/// The session, if it exists and has not expired: its idle expiry moves forward by `idle`
/// (capped by its absolute expiry), and its flash message is taken, in the same statement.
pub async fn touch<'e>(
    db: impl PgExecutor<'e>,
    id_hash: &str,
    idle: chrono::Duration,
) -> sqlx::Result<Option<Session>> {
    type Row = (serde_json::Value, String, Option<serde_json::Value>);
    let row: Option<Row> = sqlx::query_as(
        "WITH old AS (
             SELECT id_hash, flash FROM console_sessions
             WHERE id_hash = $1 AND expires_at > now() AND hard_expires_at > now()
             FOR UPDATE
         )
         UPDATE console_sessions s
         SET expires_at = least(now() + $2 * interval '1 second', s.hard_expires_at), flash = NULL
         FROM old WHERE s.id_hash = old.id_hash
         RETURNING s.claims, s.csrf, old.flash",
    )
    .bind(id_hash)
    .bind(idle.num_seconds() as f64)
    .fetch_optional(db)
    .await?;
    let Some((claims, csrf, flash)) = row else {
        return Ok(None);
    };
    let claims: Claims =
        serde_json::from_value(claims).map_err(|e| sqlx::Error::Decode(Box::new(e)))?;
    Ok(Some(Session {
        id_hash: id_hash.to_owned(),
        claims,
        csrf,
        flash,
    }))
}

/// Leaves a one-time message for the session's next page.
pub async fn set_flash<'e>(
    db: impl PgExecutor<'e>,
    id_hash: &str,
    flash: &serde_json::Value,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE console_sessions SET flash = $2 WHERE id_hash = $1")
        .bind(id_hash)
        .bind(flash)
        .execute(db)
        .await?;
    Ok(())
}

/// Signs out: the session is gone.
pub async fn close<'e>(db: impl PgExecutor<'e>, id_hash: &str) -> sqlx::Result<bool> {
    let r = sqlx::query("DELETE FROM console_sessions WHERE id_hash = $1")
        .bind(id_hash)
        .execute(db)
        .await?;
    Ok(r.rows_affected() == 1)
}

/// Ends every session opened with the token `jti` (its revocation); how many there were.
pub async fn close_for_token<'e>(db: impl PgExecutor<'e>, jti: Uuid) -> sqlx::Result<u64> {
    let r = sqlx::query("DELETE FROM console_sessions WHERE jti = $1")
        .bind(jti)
        .execute(db)
        .await?;
    Ok(r.rows_affected())
}
