//! Deciding a queue item. Approving a proposed change publishes it through the sync engine (a
//! revision of kind `approve` carrying the author's provenance and who approved it; a stale base
//! merges three-way or answers 409); approving a due memory confirms it; approving a flagged one
//! enables it. Rejecting closes the item with a reason (an author may withdraw their own pending
//! proposal the same way); rejecting a due memory disables it, a flagged one stays disabled.
//! Each decision commits with its audit row (and, for a revision, with the revision).

use memsync_core::policy;
use memsync_core::wire::{
    Conflict, ConflictDetails, ProposalApprove, ProposalDecision, ProposalReject, ProposalStatus,
    PushChange, PushOp, PushRequest, VersionProvenance,
};
use memsync_core::{MemoryPath, ProjectId};
use serde_json::json;
use sqlx::{PgConnection, PgPool};

use super::supersedes::with_supersedes;
use super::{Seen, seen, summary};
use crate::admin::audit::event as audit_event;
use crate::admin::{self, memories::AdminAct};
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::idempotent::{self, Idem};
use crate::store::memories;
use crate::store::proposals::{self, Decision, Kind, Proposal};
use crate::sync::{self, PushMeta, SyncLimits};

/// The longest note or reason, in characters.
pub const MAX_REASON_CHARS: usize = 1000;
/// At most this many paths in one approval's `supersedes`.
pub const MAX_SUPERSEDES: usize = 16;

/// Who decides, and the request's `Idempotency-Key`.
pub struct Actor<'a> {
    pub principal: &'a Principal,
    pub request_id: Option<&'a str>,
    pub idem: Option<Idem>,
}

pub enum Answer {
    Decided(Box<ProposalDecision>),
    /// The stored answer (status, body) of an earlier request with the same key.
    Replayed(u16, serde_json::Value),
}

/// The item `id` as the caller sees it, or the stored answer of a retry.
async fn load(
    pool: &PgPool,
    actor: &Actor<'_>,
    id: i64,
) -> ApiResult<Result<(Proposal, Seen), Answer>> {
    let p = proposals::get(pool, id)
        .await?
        .ok_or_else(|| super::not_found(id))?;
    let seen = seen(pool, actor.principal, &p).await?;
    let sub = &actor.principal.claims.sub;
    if let Some((status, body)) =
        idempotent::lookup(pool, (&seen.project).into(), sub, actor.idem.as_ref()).await?
    {
        return Ok(Err(Answer::Replayed(status, body)));
    }
    Ok(Ok((p, seen)))
}

fn closed(p: &Proposal) -> ApiError {
    let status = proposals::status_str(p.status);
    ApiError::Conflict {
        message: format!(
            "proposal #{} is {status} already; only pending, due and flagged items can be decided",
            p.id
        ),
        details: json!({ "status": status }),
    }
}

/// A reason or note: trimmed, 1-1000 characters.
fn bounded(text: &str, code: &'static str, what: &str) -> ApiResult<String> {
    let t = text.trim();
    if t.is_empty() || t.chars().count() > MAX_REASON_CHARS {
        return Err(ApiError::bad_request(
            code,
            format!("give {what} of 1-{MAX_REASON_CHARS} characters; it goes into the audit log"),
        ));
    }
    Ok(t.to_owned())
}

/// The item, locked, still open.
async fn lock_open(tx: &mut PgConnection, p: &Proposal) -> ApiResult<Proposal> {
    let locked = proposals::lock(&mut *tx, p.id)
        .await?
        .ok_or_else(|| super::not_found(p.id))?;
    if !locked.status.is_open() {
        return Err(closed(&locked));
    }
    Ok(locked)
}

/// Records the decision, its audit row and the answer (for retries), and commits.
async fn finish(
    mut tx: sqlx::Transaction<'_, sqlx::Postgres>,
    actor: &Actor<'_>,
    project: &ProjectId,
    p: &Proposal,
    d: Decision<'_>,
    audit: (&str, Option<i64>, serde_json::Value),
    push: Option<memsync_core::wire::PushResponse>,
) -> ApiResult<Answer> {
    let decided = proposals::decide(&mut tx, p.id, &d).await?;
    let (action, revision, details) = audit;
    audit_event(
        &mut *tx,
        actor.principal,
        project,
        action,
        Some(&p.path),
        revision,
        actor.request_id,
        details,
    )
    .await?;
    let answer = ProposalDecision {
        proposal: summary(&decided),
        push,
    };
    idempotent::remember(
        &mut tx,
        project.into(),
        &actor.principal.claims.sub,
        actor.idem.as_ref(),
        200,
        &answer,
    )
    .await?;
    tx.commit().await?;
    Ok(Answer::Decided(Box::new(answer)))
}

pub async fn approve(
    pool: &PgPool,
    limits: SyncLimits,
    actor: &Actor<'_>,
    id: i64,
    body: ProposalApprove,
) -> ApiResult<Answer> {
    let (p, seen) = match load(pool, actor, id).await? {
        Ok(found) => found,
        Err(replayed) => return Ok(replayed),
    };
    let project = &seen.project;
    if !seen.reviewer {
        return Err(ApiError::Forbidden(format!(
            "only reviewers of team `{}` approve proposals (its team admins and the users they granted the reviewer role); ask one of them",
            project.team()
        )));
    }
    if seen.author && !actor.principal.is_team_admin(project) {
        return Err(ApiError::Forbidden(format!(
            "you proposed #{id} yourself, and a granted reviewer may not approve their own proposal; ask another reviewer or a team admin of `{}`",
            project.team()
        )));
    }
    if !p.status.is_open() {
        return Err(closed(&p));
    }
    let note = body
        .note
        .as_deref()
        .map(|n| bounded(n, "invalid_note", "a note"))
        .transpose()?;
    if !body.supersedes.is_empty() && (p.kind != Kind::Change || p.op != PushOp::Put) {
        return Err(ApiError::bad_request(
            "invalid_supersedes",
            "`supersedes` is for approving a proposed feedback memory; this item proposes no content",
        ));
    }
    match p.kind {
        Kind::Change => publish(pool, limits, actor, project, &p, note, &body.supersedes).await,
        Kind::Due => confirm(pool, actor, project, &p, note).await,
        Kind::Flagged => release(pool, limits, actor, project, &p, Release::Enable, note).await,
    }
}

/// The live state of `paths` in the project.
async fn live_states(
    pool: &PgPool,
    project: &ProjectId,
    paths: &[String],
) -> ApiResult<std::collections::HashMap<String, memories::Stored>> {
    let mut conn = pool.acquire().await?;
    Ok(memories::current(&mut conn, project, paths)
        .await?
        .into_iter()
        .filter(|(_, s)| !s.deleted)
        .collect())
}

/// Publishes a proposed change as a revision of kind `approve`.
async fn publish(
    pool: &PgPool,
    limits: SyncLimits,
    actor: &Actor<'_>,
    project: &ProjectId,
    p: &Proposal,
    note: Option<String>,
    supersedes: &[String],
) -> ApiResult<Answer> {
    let mut content = match p.op {
        PushOp::Put => Some(p.content.clone().ok_or_else(|| ApiError::Gone {
            code: "purged",
            message: format!(
                "the content of proposal #{} was purged by an admin; it cannot be published. Reject it to close it",
                p.id
            ),
        })?),
        PushOp::Delete => None,
    };
    let mut paths = vec![p.path.clone()];
    paths.extend(supersedes.iter().cloned());
    let live = live_states(pool, project, &paths).await?;
    if p.op == PushOp::Delete && !live.contains_key(&p.path) {
        let mut conn = pool.acquire().await?;
        let now = memories::current(&mut conn, project, std::slice::from_ref(&p.path)).await?;
        return Err(ApiError::Conflict {
            message: format!(
                "{} is gone from {project} already (deleted or disabled since it was proposed): there is nothing left for proposal #{} to delete. Reject it to close it",
                p.path, p.id
            ),
            details: serde_json::to_value(ConflictDetails {
                conflicts: vec![Conflict {
                    path: p.path.clone(),
                    reason: "deleted_on_server".into(),
                    base_sha256: p.base_sha256,
                    server: now.get(&p.path).map(|s| s.to_file_state(&p.path)),
                }],
            })
            .unwrap_or_default(),
        });
    }
    let superseded = checked_supersedes(p, content.as_deref(), supersedes, &live)?;
    if let Some(text) = content.as_deref()
        && !superseded.is_empty()
    {
        content = Some(with_supersedes(text, &superseded).map_err(|why| {
            ApiError::bad_request(
                "invalid_supersedes",
                format!("{} cannot name what it supersedes: {why}", p.path),
            )
        })?);
    }

    let mut changes = vec![PushChange {
        path: p.path.clone(),
        op: p.op,
        base_sha256: p.base_sha256,
        content,
        named_paths: p.named_paths.clone(),
    }];
    // The superseded rules go in the same revision.
    for s in &superseded {
        changes.push(PushChange {
            path: s.clone(),
            op: PushOp::Delete,
            base_sha256: live.get(s).and_then(|l| l.sha256),
            content: None,
            named_paths: Vec::new(),
        });
    }
    let req = PushRequest {
        changes,
        allow_mass_delete: true,
        allow_purged: false,
        provenance: None,
    };
    let name = &actor.principal.claims.name;
    let mut provenance: VersionProvenance = serde_json::from_value(p.provenance.clone())
        .unwrap_or_else(|_| VersionProvenance {
            author: p.author_name.clone(),
            author_sub: p.author_sub.clone(),
            pushed_at: memories::rfc3339(p.created_at),
            ..VersionProvenance::default()
        });
    provenance.approved_by = Some(name.clone());
    provenance.proposal_id = Some(p.id);
    let meta = PushMeta {
        request_id: actor.request_id,
        note: note.as_deref(),
        provenance: Some(provenance),
        ..PushMeta::new(project, actor.principal, "approve")
    };

    let mut tx = pool.begin().await?;
    // The project first, as every push takes it, then the item: no deadlock with a push that
    // supersedes this proposal.
    memories::lock_project(&mut tx, project, false).await?;
    lock_open(&mut tx, p).await?;
    let resp = sync::push_in(&mut tx, pool, limits, &meta, &req).await?;
    let revision = resp.created_revision.then_some(resp.revision);
    let details = json!({
        "proposal_id": p.id,
        "op": p.op,
        "note": note,
        "supersedes": superseded,
        "merged": resp.merged.contains(&p.path),
    });
    finish(
        tx,
        actor,
        project,
        p,
        Decision {
            status: ProposalStatus::Approved,
            reviewed_by: name,
            reason: None,
            note: note.as_deref(),
            published_revision: revision,
        },
        ("proposal_approved", revision, details),
        Some(resp),
    )
    .await
}

/// The paths an approval supersedes: live team feedback memories other than the proposal's own,
/// for a proposed feedback memory.
fn checked_supersedes(
    p: &Proposal,
    content: Option<&str>,
    supersedes: &[String],
    live: &std::collections::HashMap<String, memories::Stored>,
) -> ApiResult<Vec<String>> {
    if supersedes.is_empty() {
        return Ok(Vec::new());
    }
    let bad = |why: String| Err(ApiError::bad_request("invalid_supersedes", why));
    if supersedes.len() > MAX_SUPERSEDES {
        return bad(format!(
            "`supersedes` names {} paths; at most {MAX_SUPERSEDES}",
            supersedes.len()
        ));
    }
    if !content.is_some_and(policy::is_feedback) {
        return bad(format!(
            "{} is not a feedback memory: `supersedes` replaces team feedback rules with a feedback memory",
            p.path
        ));
    }
    let mut out: Vec<String> = Vec::new();
    for s in supersedes {
        let parsed = match MemoryPath::parse(s) {
            Ok(path) => path,
            Err(e) => return bad(format!("`supersedes` holds an invalid path: {e}")),
        };
        let path = parsed.to_string();
        if path == p.path || parsed.is_index() {
            return bad(format!(
                "`supersedes` names {path}: a proposal supersedes other memories, not itself or an index"
            ));
        }
        let Some(l) = live.get(&path) else {
            return bad(format!(
                "`supersedes` names {path}, which is not a live memory of {}",
                p.project
            ));
        };
        if !l.content.as_deref().is_some_and(policy::is_feedback) {
            return bad(format!(
                "`supersedes` names {path}, which is not a feedback memory"
            ));
        }
        if !out.contains(&path) {
            out.push(path);
        }
    }
    Ok(out)
}

/// A due memory a reviewer read and keeps: confirmed now, no revision.
async fn confirm(
    pool: &PgPool,
    actor: &Actor<'_>,
    project: &ProjectId,
    p: &Proposal,
    note: Option<String>,
) -> ApiResult<Answer> {
    let mut tx = pool.begin().await?;
    lock_open(&mut tx, p).await?;
    if !proposals::confirm_memory(&mut tx, project, &p.path).await? {
        return Err(ApiError::Conflict {
            message: format!(
                "{} is no longer published in {project}; there is nothing to confirm",
                p.path
            ),
            details: json!({ "status": proposals::status_str(p.status) }),
        });
    }
    let details = json!({ "proposal_id": p.id, "note": note });
    finish(
        tx,
        actor,
        project,
        p,
        Decision {
            status: ProposalStatus::Approved,
            reviewed_by: &actor.principal.claims.name,
            reason: None,
            note: note.as_deref(),
            published_revision: None,
        },
        ("memory_confirmed", None, details),
        None,
    )
    .await
}

pub async fn reject(
    pool: &PgPool,
    limits: SyncLimits,
    actor: &Actor<'_>,
    id: i64,
    body: ProposalReject,
) -> ApiResult<Answer> {
    let reason = bounded(&body.reason, "invalid_reason", "a reason")?;
    let (p, seen) = match load(pool, actor, id).await? {
        Ok(found) => found,
        Err(replayed) => return Ok(replayed),
    };
    let project = &seen.project;
    // Seen by a non-reviewer means its author: they may withdraw their own proposal.
    let withdrawn = !seen.reviewer;
    if !p.status.is_open() {
        return Err(closed(&p));
    }
    if p.kind == Kind::Due {
        return release(
            pool,
            limits,
            actor,
            project,
            &p,
            Release::Disable,
            Some(reason),
        )
        .await;
    }
    let mut tx = pool.begin().await?;
    lock_open(&mut tx, &p).await?;
    let details = json!({
        "proposal_id": p.id,
        "kind": p.kind.as_str(),
        "reason": reason,
        "withdrawn": withdrawn,
    });
    finish(
        tx,
        actor,
        project,
        &p,
        Decision {
            status: ProposalStatus::Rejected,
            reviewed_by: &actor.principal.claims.name,
            reason: Some(&reason),
            note: None,
            published_revision: None,
        },
        ("proposal_rejected", None, details),
        None,
    )
    .await
}

enum Release {
    Enable,
    Disable,
}

/// Approving a flagged item enables its memory; rejecting a due item disables it. Both are
/// `admin::release` actions: their revision closes the item (approved, or rejected with the
/// reason) and audits that, in the revision's transaction.
async fn release(
    pool: &PgPool,
    limits: SyncLimits,
    actor: &Actor<'_>,
    project: &ProjectId,
    p: &Proposal,
    what: Release,
    why: Option<String>,
) -> ApiResult<Answer> {
    let act = AdminAct {
        principal: actor.principal,
        project,
        reason: why.as_deref().unwrap_or(""),
        request_id: actor.request_id,
        // The answer stored for a retry is the decision, below.
        idem: None,
    };
    let push = match what {
        Release::Enable => admin::release::enable(pool, limits, &act, &p.path).await?,
        Release::Disable => admin::release::disable(pool, limits, &act, &p.path).await?,
    };
    let now = proposals::get(pool, p.id)
        .await?
        .ok_or_else(|| super::not_found(p.id))?;
    let answer = ProposalDecision {
        proposal: summary(&now),
        push: Some(push),
    };
    if actor.idem.is_some() {
        let mut tx = pool.begin().await?;
        idempotent::remember(
            &mut tx,
            project.into(),
            &actor.principal.claims.sub,
            actor.idem.as_ref(),
            200,
            &answer,
        )
        .await?;
        tx.commit().await?;
    }
    Ok(Answer::Decided(Box::new(answer)))
}
