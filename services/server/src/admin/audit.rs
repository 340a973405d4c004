//! The audit log: admin reads of it, scoped to the teams the caller administers, and the one
//! helper every admin action uses to write its row (in the action's own transaction).

use memsync_core::ProjectId;
use sqlx::PgPool;

use super::audit_scope;
use crate::auth::Principal;
use crate::error::ApiResult;
use crate::store::audit::{self, AuditEvent};
use crate::store::history::{self, AuditFilter, AuditRow};

pub async fn audit_page(
    pool: &PgPool,
    principal: &Principal,
    mut filter: AuditFilter,
) -> ApiResult<(Vec<AuditRow>, Option<i64>)> {
    filter.teams = audit_scope(principal)?;
    filter.limit = filter.limit.clamp(1, 1000);
    let limit = filter.limit;
    filter.limit += 1;
    let mut rows = history::audit(pool, &filter).await?;
    let next = if rows.len() as i64 > limit {
        rows.truncate(limit as usize);
        rows.last().map(|r| r.id)
    } else {
        None
    };
    Ok((rows, next))
}

/// Audits an action of `principal` on `project`.
#[allow(clippy::too_many_arguments)]
pub async fn event<'e>(
    db: impl sqlx::PgExecutor<'e>,
    principal: &Principal,
    project: &ProjectId,
    action: &str,
    path: Option<&str>,
    revision: Option<i64>,
    request_id: Option<&str>,
    details: serde_json::Value,
) -> ApiResult<()> {
    audit::record(
        db,
        &AuditEvent {
            team: Some(project.team()),
            project: Some(project.as_str()),
            actor_sub: &principal.claims.sub,
            actor_name: Some(&principal.claims.name),
            action,
            path,
            revision,
            request_id,
            details,
        },
    )
    .await?;
    Ok(())
}
