//! Stored answers of pushes, by `Idempotency-Key`, so that a retried push applies once.

use sqlx::PgExecutor;

use memsync_core::ProjectId;

pub struct Stored {
    pub request_hash: String,
    pub status: i16,
    pub response: serde_json::Value,
    /// The push's answer carried content that an admin purged since: it is not replayed.
    pub purged: bool,
}

pub async fn find<'e>(
    db: impl PgExecutor<'e>,
    project: &ProjectId,
    sub: &str,
    key: &str,
) -> sqlx::Result<Option<Stored>> {
    let row: Option<(String, i16, serde_json::Value, bool)> = sqlx::query_as(
        "SELECT request_hash, status, response, purged FROM idempotency_keys
         WHERE team = $1 AND project = $2 AND sub = $3 AND key = $4",
    )
    .bind(project.team())
    .bind(project.as_str())
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

pub async fn store<'e>(
    db: impl PgExecutor<'e>,
    project: &ProjectId,
    sub: &str,
    key: &str,
    request_hash: &str,
    status: i16,
    response: &serde_json::Value,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO idempotency_keys (team, project, sub, key, request_hash, status, response)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(sub)
    .bind(key)
    .bind(request_hash)
    .bind(status)
    .bind(response)
    .execute(db)
    .await?;
    Ok(())
}

/// Forgets answers older than `days`; a retry that late is a new push.
pub async fn expire<'e>(db: impl PgExecutor<'e>, days: i32) -> sqlx::Result<u64> {
    let r = sqlx::query(
        "DELETE FROM idempotency_keys WHERE created_at < now() - make_interval(days => $1)",
    )
    .bind(days)
    .execute(db)
    .await?;
    Ok(r.rows_affected())
}
