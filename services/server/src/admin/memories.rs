//! Memory history and the admin writes on it: show and diff (audited reads), delete and restore
//! (ordinary revisions through the sync engine), purge (erases content from history). Each write
//! and its audit row commit in one transaction.

use memsync_core::wire::{PushChange, PushOp, PushRequest, PushResponse};
use memsync_core::{MemoryPath, ProjectId, Sha256};
use serde_json::json;
use sqlx::{PgConnection, PgPool};

use super::audit::event as audit_event;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::idempotent::{self, Idem};
use crate::store::history::{self, Version};
use crate::store::memories;
use crate::sync::{self, PushMeta, SyncLimits};

pub(super) fn parse_path(path: &str) -> ApiResult<MemoryPath> {
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
pub(super) async fn stored_state(
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

/// Who acts, where, and why: what every admin write carries into its audit row.
pub struct AdminAct<'a> {
    pub principal: &'a Principal,
    pub project: &'a ProjectId,
    /// Why: required by delete, restore and purge; optional (may be empty) for disable, enable
    /// and rollback.
    pub reason: &'a str,
    pub request_id: Option<&'a str>,
    /// The request's `Idempotency-Key`: its answer is stored with the action.
    pub idem: Option<Idem>,
}

impl AdminAct<'_> {
    /// The answer of an earlier request with this key (a retry), if there was one.
    pub async fn replay(&self, pool: &PgPool) -> ApiResult<Option<(u16, serde_json::Value)>> {
        idempotent::lookup(
            pool,
            self.project.into(),
            &self.principal.claims.sub,
            self.idem.as_ref(),
        )
        .await
    }

    /// Stores the answer in the action's transaction.
    pub(super) async fn remember(
        &self,
        tx: &mut PgConnection,
        answer: &impl serde::Serialize,
    ) -> ApiResult<()> {
        idempotent::remember(
            tx,
            self.project.into(),
            &self.principal.claims.sub,
            self.idem.as_ref(),
            200,
            answer,
        )
        .await
    }

    /// The engine's view of the action: a revision of `kind`, with the reason (if one was
    /// given) as its note.
    pub(super) fn meta(&self, kind: &'static str) -> PushMeta<'_> {
        let reason = self.reason.trim();
        PushMeta {
            request_id: self.request_id,
            note: (!reason.is_empty()).then_some(reason),
            ..PushMeta::new(self.project, self.principal, kind)
        }
    }

    /// One admin write, whole: `req` through the sync engine as the revision `meta` describes
    /// (`refusal` rewords the engine's refusals for this action), the audit row `(action, path,
    /// details)` when it made a revision, and the answer kept for the request's
    /// `Idempotency-Key`, in one transaction.
    pub(super) async fn write(
        &self,
        pool: &PgPool,
        limits: SyncLimits,
        meta: &PushMeta<'_>,
        req: &PushRequest,
        audit: (&str, &MemoryPath, serde_json::Value),
        refusal: impl FnOnce(ApiError) -> ApiError,
    ) -> ApiResult<PushResponse> {
        let mut tx = pool.begin().await?;
        let resp = sync::push_in(&mut tx, pool, limits, meta, req)
            .await
            .map_err(refusal)?;
        if resp.created_revision {
            let (action, path, details) = audit;
            self.audit(&mut tx, action, path, Some(resp.revision), details)
                .await?;
        }
        self.remember(&mut tx, &resp).await?;
        tx.commit().await?;
        Ok(resp)
    }

    pub(super) async fn audit(
        &self,
        tx: &mut PgConnection,
        action: &str,
        path: &MemoryPath,
        revision: Option<i64>,
        details: serde_json::Value,
    ) -> ApiResult<()> {
        audit_event(
            &mut *tx,
            self.principal,
            self.project,
            action,
            Some(path.as_str()),
            revision,
            self.request_id,
            details,
        )
        .await
    }
}

/// An admin's batch of one memory: the mass-delete hold does not apply (one memory, the admin's
/// explicit choice); purged content comes back only where `allow_purged` says so (a restore).
pub(super) fn batch(change: PushChange, allow_purged: bool) -> PushRequest {
    PushRequest {
        changes: vec![change],
        allow_mass_delete: true,
        allow_purged,
        provenance: None,
    }
}

/// Writes through the sync engine inside `tx`, so a delete is one ordinary revision (indexes
/// kept consistent, guards applied), committed with whatever else the caller adds to `tx`.
async fn write_as_admin(
    tx: &mut PgConnection,
    pool: &PgPool,
    limits: SyncLimits,
    act: &AdminAct<'_>,
    kind: &'static str,
    change: PushChange,
) -> ApiResult<PushResponse> {
    sync::push_in(tx, pool, limits, &act.meta(kind), &batch(change, false)).await
}

/// The live version's hash of `path`, or "not found".
async fn live_sha(pool: &PgPool, project: &ProjectId, path: &MemoryPath) -> ApiResult<Sha256> {
    stored_state(pool, project, path)
        .await?
        .get(path.as_str())
        .filter(|s| !s.deleted)
        .and_then(|s| s.sha256)
        .ok_or_else(|| ApiError::NotFound(format!("{project} has no live {path}")))
}

/// A memory's path (not an index: those follow their memories, so no admin action targets one).
pub(super) fn memory_path(path: &str, what: &str) -> ApiResult<MemoryPath> {
    let path = parse_path(path)?;
    if path.is_index() {
        return Err(ApiError::bad_request(
            "invalid_path",
            format!(
                "an admin {what} cannot target {path}: it is the index of its directory, which the server derives from the memories there and keeps in step with them; {what} the memories instead (each one's entry in the index follows it in the same revision)"
            ),
        ));
    }
    Ok(path)
}

pub async fn delete(
    pool: &PgPool,
    limits: SyncLimits,
    act: &AdminAct<'_>,
    path: &str,
) -> ApiResult<PushResponse> {
    let reason = require_reason(act.reason)?;
    let path = memory_path(path, "delete")?;
    let sha = live_sha(pool, act.project, &path).await?;
    let change = PushChange {
        path: path.to_string(),
        op: PushOp::Delete,
        base_sha256: Some(sha),
        content: None,
        named_paths: Vec::new(),
    };
    act.write(
        pool,
        limits,
        &act.meta("delete"),
        &batch(change, false),
        ("admin_delete", &path, json!({ "reason": reason })),
        |e| e,
    )
    .await
}

pub async fn restore(
    pool: &PgPool,
    limits: SyncLimits,
    act: &AdminAct<'_>,
    path: &str,
    revision: i64,
) -> ApiResult<PushResponse> {
    let reason = require_reason(act.reason)?;
    let path = parse_path(path)?;
    let project = act.project;
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
    let base: Option<Sha256> = stored_state(pool, project, &path)
        .await?
        .get(path.as_str())
        .filter(|s| !s.deleted)
        .and_then(|s| s.sha256);
    let change = PushChange {
        path: path.to_string(),
        op: PushOp::Put,
        base_sha256: base,
        content: Some(content),
        named_paths: Vec::new(),
    };
    // Restoring an older version is the admin's explicit choice, purged content included.
    act.write(
        pool,
        limits,
        &act.meta("restore"),
        &batch(change, true),
        (
            "admin_restore",
            &path,
            json!({ "reason": reason, "from_revision": revision }),
        ),
        |e| e,
    )
    .await
}

/// What a committed purge did (the answer of the purge route).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Purged {
    pub project: String,
    pub path: String,
    #[serde(rename = "versions_purged")]
    pub versions: u64,
    /// False when the git export could not be rewritten yet: its history still holds the content
    /// until the exporter retries the rewrite.
    pub export_rewritten: bool,
}

/// Erases a path's content from every stored version (and every stored push answer), after
/// deleting it for everyone, in one transaction with its audit rows: either all of it happened
/// or none. The audit log keeps who purged which path and why, not the content.
pub async fn purge(
    pool: &PgPool,
    limits: SyncLimits,
    act: &AdminAct<'_>,
    path: &str,
) -> ApiResult<Purged> {
    let reason = require_reason(act.reason)?;
    let p = memory_path(path, "purge")?;
    let project = act.project;
    let stored = stored_state(pool, project, &p).await?;
    let Some(state) = stored.get(p.as_str()) else {
        return Err(ApiError::NotFound(format!("{project} never had {p}")));
    };
    let mut tx = pool.begin().await?;
    if !state.deleted {
        let resp = write_as_admin(
            &mut tx,
            pool,
            limits,
            act,
            "delete",
            PushChange {
                path: p.to_string(),
                op: PushOp::Delete,
                base_sha256: state.sha256,
                content: None,
                named_paths: Vec::new(),
            },
        )
        .await?;
        act.audit(
            &mut tx,
            "admin_delete",
            &p,
            Some(resp.revision),
            json!({ "reason": reason }),
        )
        .await?;
    }
    let n =
        history::purge_versions(&mut tx, project, p.as_str(), &act.principal.claims.sub).await?;
    // Once the purge is committed, the git export's rewrite cannot be forgotten.
    crate::export::request_rebuild(&mut tx, project).await?;
    act.audit(
        &mut tx,
        "purge",
        &p,
        None,
        json!({ "reason": reason, "versions": n }),
    )
    .await?;
    let mut answer = Purged {
        project: project.to_string(),
        path: p.to_string(),
        versions: n,
        export_rewritten: false,
    };
    act.remember(&mut tx, &answer).await?;
    tx.commit().await?;
    // The git export's history still holds the content: rewrite it from Postgres now. The purge
    // is done whatever happens here; a failed rewrite is retried from the rebuild request.
    match crate::export::rewrite_after_purge(pool, project).await {
        Ok(()) => {
            answer.export_rewritten = true;
            if let Some(idem) = &act.idem
                && let Ok(v) = serde_json::to_value(&answer)
            {
                // Best effort: a retry that reads `false` learns the rewrite is pending.
                let _ = crate::store::idempotency::update(
                    pool,
                    project.into(),
                    &act.principal.claims.sub,
                    &idem.key,
                    &v,
                )
                .await;
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, %project, "rewriting the git export after a purge failed; the exporter retries it");
        }
    }
    Ok(answer)
}
