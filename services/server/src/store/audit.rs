//! The append-only audit log. It records who did what to which path, never memory content or
//! secrets (refusals carry rule ids only). The database refuses UPDATE, DELETE and TRUNCATE on it.

use serde_json::Value;
use sqlx::PgExecutor;

/// One audit event.
#[derive(Debug, Clone)]
pub struct AuditEvent<'a> {
    pub team: Option<&'a str>,
    pub project: Option<&'a str>,
    pub actor_sub: &'a str,
    pub actor_name: Option<&'a str>,
    pub action: &'a str,
    pub path: Option<&'a str>,
    pub revision: Option<i64>,
    pub request_id: Option<&'a str>,
    pub details: Value,
}

pub async fn record<'e>(db: impl PgExecutor<'e>, e: &AuditEvent<'_>) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO audit_log (team, project, actor_sub, actor_name, action, path, revision, request_id, details)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(e.team)
    .bind(e.project)
    .bind(e.actor_sub)
    .bind(e.actor_name)
    .bind(e.action)
    .bind(e.path)
    .bind(e.revision)
    .bind(e.request_id)
    .bind(&e.details)
    .execute(db)
    .await?;
    Ok(())
}

/// One event per path of a revision, in one statement.
pub async fn record_paths<'e>(
    db: impl PgExecutor<'e>,
    base: &AuditEvent<'_>,
    paths: &[String],
    actions: &[&str],
    details: &[Value],
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO audit_log (team, project, actor_sub, actor_name, action, path, revision, request_id, details)
         SELECT $1, $2, $3, $4, a, p, $5, $6, d
         FROM UNNEST($7::text[], $8::text[], $9::jsonb[]) AS t(p, a, d)",
    )
    .bind(base.team)
    .bind(base.project)
    .bind(base.actor_sub)
    .bind(base.actor_name)
    .bind(base.revision)
    .bind(base.request_id)
    .bind(paths)
    .bind(actions)
    .bind(details)
    .execute(db)
    .await?;
    Ok(())
}
