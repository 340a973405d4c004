//! The per-project allowlist of scanner findings (by fingerprint).

use chrono::{DateTime, Utc};
use memsync_core::ProjectId;
use memsync_core::wire::AllowlistEntry;
use sqlx::PgExecutor;

use super::memories::rfc3339;

pub async fn fingerprints<'e>(
    db: impl PgExecutor<'e>,
    project: &ProjectId,
) -> sqlx::Result<std::collections::BTreeSet<String>> {
    let rows: Vec<String> = sqlx::query_scalar(
        "SELECT fingerprint FROM scan_allowlist WHERE team = $1 AND project = $2",
    )
    .bind(project.team())
    .bind(project.as_str())
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().collect())
}

pub async fn list<'e>(
    db: impl PgExecutor<'e>,
    project: &ProjectId,
) -> sqlx::Result<Vec<AllowlistEntry>> {
    let rows: Vec<(String, String, String, String, DateTime<Utc>)> = sqlx::query_as(
        "SELECT fingerprint, rule, reason, added_by, created_at FROM scan_allowlist
         WHERE team = $1 AND project = $2 ORDER BY created_at",
    )
    .bind(project.team())
    .bind(project.as_str())
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(fingerprint, rule, reason, added_by, at)| AllowlistEntry {
            fingerprint,
            rule,
            reason,
            added_by,
            created_at: rfc3339(at),
        })
        .collect())
}

/// Adds an entry; false when it was already there.
pub async fn add<'e>(
    db: impl PgExecutor<'e>,
    project: &ProjectId,
    fingerprint: &str,
    rule: &str,
    reason: &str,
    added_by: &str,
) -> sqlx::Result<bool> {
    let r = sqlx::query(
        "INSERT INTO scan_allowlist (team, project, fingerprint, rule, reason, added_by)
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(fingerprint)
    .bind(rule)
    .bind(reason)
    .bind(added_by)
    .execute(db)
    .await?;
    Ok(r.rows_affected() == 1)
}

pub async fn remove<'e>(
    db: impl PgExecutor<'e>,
    project: &ProjectId,
    fingerprint: &str,
) -> sqlx::Result<bool> {
    let r = sqlx::query(
        "DELETE FROM scan_allowlist WHERE team = $1 AND project = $2 AND fingerprint = $3",
    )
    .bind(project.team())
    .bind(project.as_str())
    .bind(fingerprint)
    .execute(db)
    .await?;
    Ok(r.rows_affected() == 1)
}
