//! Stored answers of writes, by `Idempotency-Key`, so that a retried push or admin write applies
//! once. Keys are per user and per scope: a project, or `*`/`*tokens` for token issue.

use sqlx::PgExecutor;

use memsync_core::ProjectId;

/// Where a key lives: a project's pushes and admin writes, or the server's tokens.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    pub team: &'a str,
    pub project: &'a str,
}

impl<'a> From<&'a ProjectId> for Scope<'a> {
    fn from(p: &'a ProjectId) -> Scope<'a> {
        Scope {
            team: p.team(),
            project: p.as_str(),
        }
    }
}

/// The scope of token issue (no team can be named `*`).
pub const TOKENS: Scope<'static> = Scope {
    team: "*",
    project: "*tokens",
};

pub struct Stored {
    pub request_hash: String,
    pub status: i16,
    pub response: serde_json::Value,
    /// The push's answer carried content that an admin purged since: it is not replayed.
    pub purged: bool,
}

pub async fn find<'e>(
    db: impl PgExecutor<'e>,
    scope: Scope<'_>,
    sub: &str,
    key: &str,
) -> sqlx::Result<Option<Stored>> {
    let row: Option<(String, i16, serde_json::Value, bool)> = sqlx::query_as(
        "SELECT request_hash, status, response, purged FROM idempotency_keys
         WHERE team = $1 AND project = $2 AND sub = $3 AND key = $4",
    )
    .bind(scope.team)
    .bind(scope.project)
    .bind(sub)
    .bind(key)
    .fetch_optional(db)
    .await?;
    Ok(row.map(|(request_hash, status, response, purged)| Stored {
        request_hash,
        status,
        response,
        purged,
    }))
}

/// Stores an answer; false when the key was taken meanwhile (a concurrent retry committed first).
#[allow(clippy::too_many_arguments)]
pub async fn store<'e>(
    db: impl PgExecutor<'e>,
    scope: Scope<'_>,
    sub: &str,
    key: &str,
    request_hash: &str,
    status: i16,
    response: &serde_json::Value,
) -> sqlx::Result<bool> {
    let r = sqlx::query(
        "INSERT INTO idempotency_keys (team, project, sub, key, request_hash, status, response)
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
    )
    .bind(scope.team)
    .bind(scope.project)
    .bind(sub)
    .bind(key)
    .bind(request_hash)
    .bind(status)
    .bind(response)
    .execute(db)
    .await?;
    Ok(r.rows_affected() == 1)
}

/// Replaces a stored answer (what a committed action learned after its commit).
pub async fn update<'e>(
    db: impl PgExecutor<'e>,
    scope: Scope<'_>,
    sub: &str,
    key: &str,
    response: &serde_json::Value,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE idempotency_keys SET response = $5
         WHERE team = $1 AND project = $2 AND sub = $3 AND key = $4 AND NOT purged",
    )
    .bind(scope.team)
    .bind(scope.project)
    .bind(sub)
    .bind(key)
    .bind(response)
    .execute(db)
    .await?;
    Ok(())
}

/// Forgets answers older than `days`; a retry that late is a new request.
pub async fn expire<'e>(db: impl PgExecutor<'e>, days: i32) -> sqlx::Result<u64> {
    let r = sqlx::query(
        "DELETE FROM idempotency_keys WHERE created_at < now() - make_interval(days => $1)",
    )
    .bind(days)
    .execute(db)
    .await?;
    Ok(r.rows_affected())
}
