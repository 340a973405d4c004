//! The admin API's domain: the audit log, memory history, deletes and restores for everyone,
//! purges, projects. Server admins act everywhere; team admins within their teams. Every admin
//! read of memory content is itself audited.

use memsync_core::wire::{PushChange, PushOp, PushRequest, PushResponse};
use memsync_core::{MemoryPath, ProjectId, Sha256};
use serde_json::json;
use sqlx::PgPool;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::store::audit::{self, AuditEvent};
use crate::store::history::{self, AuditFilter, AuditRow, ProjectRow, Version};
use crate::store::memories;
use crate::sync::{self, PushMeta, PushOutcome, SyncLimits};

/// The project, if the caller administers its team (otherwise "not found", like any project
/// the caller cannot reach).
pub fn administered(principal: &Principal, team: &str, name: &str) -> ApiResult<ProjectId> {
    let project = ProjectId::new(team, name)
        .map_err(|e| ApiError::bad_request("invalid_project", e.to_string()))?;
    if principal.is_team_admin(&project) {
        Ok(project)
    } else if principal.can_access(&project) {
        Err(ApiError::Forbidden(format!(
            "only admins of team `{}` (or server admins) can do this",
            project.team()
        )))
    } else {
        Err(sync::not_found(&project))
    }
}

/// The teams whose audit log the caller may read: None for a server admin (all).
pub fn audit_scope(principal: &Principal) -> ApiResult<Option<Vec<String>>> {
    if principal.claims.admin {
        return Ok(None);
    }
    let teams: Vec<String> = principal
        .claims
        .teams
        .iter()
        .filter(|(_, r)| **r == memsync_core::wire::TeamRole::Admin)
        .map(|(t, _)| t.clone())
        .collect();
    if teams.is_empty() {
        return Err(ApiError::Forbidden(
            "the audit log is for team admins and server admins".into(),
        ));
    }
    Ok(Some(teams))
}

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

fn parse_path(path: &str) -> ApiResult<MemoryPath> {
    MemoryPath::parse(path).map_err(|e| ApiError::bad_request("invalid_path", e.to_string()))
}

pub async fn history(pool: &PgPool, project: &ProjectId, path: &str) -> ApiResult<Vec<Version>> {
    let path = parse_path(path)?;
    let v = history::versions(pool, project, path.as_str()).await?;
    if v.is_empty() {
        return Err(ApiError::NotFound(format!("{project} never had {path}")));
    }
    Ok(v)
}

/// Audits an action of `principal` on `project`.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn audit_event(
    pool: &PgPool,
    principal: &Principal,
    project: &ProjectId,
    action: &str,
    path: Option<&str>,
    revision: Option<i64>,
    request_id: Option<&str>,
    details: serde_json::Value,
) -> ApiResult<()> {
    audit::record(
        pool,
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

/// One version with its content; the read is audited.
pub async fn show(
    pool: &PgPool,
    principal: &Principal,
    project: &ProjectId,
    path: &str,
    revision: i64,
    request_id: Option<&str>,
) -> ApiResult<(Version, Option<String>)> {
    let path = parse_path(path)?;
    let (v, content) = history::version_at(pool, project, path.as_str(), revision)
        .await?
        .ok_or_else(|| {
            ApiError::NotFound(format!(
                "{project} has no version of {path} at revision {revision}"
            ))
        })?;
    audit_event(
        pool,
        principal,
        project,
        "content_read",
        Some(path.as_str()),
        Some(revision),
        request_id,
        json!({}),
    )
    .await?;
    Ok((v, content))
}

/// A unified diff between two versions of a path; the read is audited.
pub async fn diff(
    pool: &PgPool,
    principal: &Principal,
    project: &ProjectId,
    path: &str,
    from: i64,
    to: i64,
    request_id: Option<&str>,
) -> ApiResult<String> {
    let p = parse_path(path)?;
    let get = |r: i64| {
        let p = p.clone();
        async move {
            history::version_at(pool, project, p.as_str(), r)
                .await?
                .ok_or_else(|| {
                    ApiError::NotFound(format!("{project} has no version of {p} at revision {r}"))
                })
        }
    };
    let (_, a) = get(from).await?;
    let (_, b) = get(to).await?;
    audit_event(
        pool,
        principal,
        project,
        "content_read",
        Some(p.as_str()),
        Some(to),
        request_id,
        json!({ "diff_from": from }),
    )
    .await?;
    let patch =
        memsync_core::merge::unified_diff(a.as_deref().unwrap_or(""), b.as_deref().unwrap_or(""));
    Ok(patch
        .replacen("--- original", &format!("--- {p}@{from}"), 1)
        .replacen("+++ modified", &format!("+++ {p}@{to}"), 1))
}

/// The stored state of one path (empty when the project never had it).
async fn stored_state(
    pool: &PgPool,
    project: &ProjectId,
    path: &MemoryPath,
) -> ApiResult<std::collections::HashMap<String, memories::Stored>> {
    let mut conn = pool.acquire().await?;
    Ok(memories::current(&mut conn, project, &[path.to_string()]).await?)
}

fn require_reason(reason: &str) -> ApiResult<&str> {
    let r = reason.trim();
    if r.is_empty() || r.len() > 1000 {
        return Err(ApiError::bad_request(
            "invalid_reason",
            "give a reason (1-1000 characters); it goes into the audit log",
        ));
    }
    Ok(r)
}

/// Writes through the sync engine, so a delete or restore is one ordinary revision: indexes kept
/// consistent, conflicts impossible (the base is the current version), audited.
async fn write_as_admin(
    pool: &PgPool,
    limits: SyncLimits,
    principal: &Principal,
    project: &ProjectId,
    change: PushChange,
    request_id: Option<&str>,
) -> ApiResult<PushResponse> {
    let req = PushRequest {
        changes: vec![change],
        allow_mass_delete: true,
    };
    let meta = PushMeta {
        project,
        principal,
        request_id,
        idempotency_key: None,
        request_hash: String::new(),
    };
    match sync::push(pool, limits, meta, req).await? {
        PushOutcome::Applied(r) => Ok(r),
        PushOutcome::Replayed(..) => Err(ApiError::Internal(anyhow::anyhow!(
            "an admin write was replayed"
        ))),
    }
}

pub async fn delete(
    pool: &PgPool,
    limits: SyncLimits,
    principal: &Principal,
    project: &ProjectId,
    path: &str,
    reason: &str,
    request_id: Option<&str>,
) -> ApiResult<PushResponse> {
    let reason = require_reason(reason)?;
    let path = parse_path(path)?;
    if path.is_index() {
        return Err(ApiError::bad_request(
            "invalid_path",
            "indexes follow their memories; delete the memory instead",
        ));
    }
    let current = stored_state(pool, project, &path).await?;
    let Some(sha) = current
        .get(path.as_str())
        .filter(|s| !s.deleted)
        .and_then(|s| s.sha256)
    else {
        return Err(ApiError::NotFound(format!("{project} has no live {path}")));
    };
    let resp = write_as_admin(
        pool,
        limits,
        principal,
        project,
        PushChange {
            path: path.to_string(),
            op: PushOp::Delete,
            base_sha256: Some(sha),
            content: None,
        },
        request_id,
    )
    .await?;
    audit_event(
        pool,
        principal,
        project,
        "admin_delete",
        Some(path.as_str()),
        Some(resp.revision),
        request_id,
        json!({ "reason": reason }),
    )
    .await?;
    Ok(resp)
}

#[allow(clippy::too_many_arguments)]
pub async fn restore(
    pool: &PgPool,
    limits: SyncLimits,
    principal: &Principal,
    project: &ProjectId,
    path: &str,
    revision: i64,
    reason: &str,
    request_id: Option<&str>,
) -> ApiResult<PushResponse> {
    let reason = require_reason(reason)?;
    let path = parse_path(path)?;
    let (_, content) = history::version_at(pool, project, path.as_str(), revision)
        .await?
        .ok_or_else(|| {
            ApiError::NotFound(format!(
                "{project} has no version of {path} at revision {revision}"
            ))
        })?;
    let Some(content) = content else {
        return Err(ApiError::bad_request(
            "nothing_to_restore",
            format!("the version of {path} at revision {revision} is a deletion or was purged"),
        ));
    };
    let current = stored_state(pool, project, &path).await?;
    let base: Option<Sha256> = current
        .get(path.as_str())
        .filter(|s| !s.deleted)
        .and_then(|s| s.sha256);
    let resp = write_as_admin(
        pool,
        limits,
        principal,
        project,
        PushChange {
            path: path.to_string(),
            op: PushOp::Put,
            base_sha256: base,
            content: Some(content),
        },
        request_id,
    )
    .await?;
    audit_event(
        pool,
        principal,
        project,
        "admin_restore",
        Some(path.as_str()),
        Some(resp.revision),
        request_id,
        json!({ "reason": reason, "from_revision": revision }),
    )
    .await?;
    Ok(resp)
}

/// Erases a path's content from every stored version (and every stored push answer), after
/// deleting it for everyone. The audit log keeps who purged which path and why, not the content.
pub async fn purge(
    pool: &PgPool,
    limits: SyncLimits,
    principal: &Principal,
    project: &ProjectId,
    path: &str,
    reason: &str,
    request_id: Option<&str>,
) -> ApiResult<u64> {
    let reason = require_reason(reason)?;
    let p = parse_path(path)?;
    if p.is_index() {
        return Err(ApiError::bad_request(
            "invalid_path",
            "indexes are rebuilt from the memories; purge the memory instead",
        ));
    }
    let live = stored_state(pool, project, &p).await?;
    if live.is_empty() {
        return Err(ApiError::NotFound(format!("{project} never had {p}")));
    }
    if live.get(p.as_str()).is_some_and(|s| !s.deleted) {
        delete(
            pool,
            limits,
            principal,
            project,
            p.as_str(),
            reason,
            request_id,
        )
        .await?;
    }
    let mut tx = pool.begin().await?;
    let n = history::purge_versions(&mut tx, project, p.as_str()).await?;
    // In the same transaction: once the purge is committed, the git export's rewrite cannot be
    // forgotten.
    crate::export::request_rebuild(&mut tx, project).await?;
    tx.commit().await?;
    audit_event(
        pool,
        principal,
        project,
        "purge",
        Some(p.as_str()),
        None,
        request_id,
        json!({ "reason": reason, "versions": n }),
    )
    .await?;
    // The git export's history still holds the content: rewrite it from Postgres now.
    crate::export::rewrite_after_purge(pool, project).await?;
    Ok(n)
}

pub async fn projects(pool: &PgPool, principal: &Principal) -> ApiResult<Vec<ProjectRow>> {
    let scope = audit_scope(principal)?;
    Ok(history::projects(pool, scope.as_deref()).await?)
}

pub async fn archive(
    pool: &PgPool,
    principal: &Principal,
    project: &ProjectId,
    archived: bool,
    request_id: Option<&str>,
) -> ApiResult<()> {
    if !history::set_archived(pool, project, archived).await? {
        return Err(sync::not_found(project));
    }
    audit_event(
        pool,
        principal,
        project,
        if archived {
            "project_archive"
        } else {
            "project_unarchive"
        },
        None,
        None,
        request_id,
        json!({}),
    )
    .await
}
