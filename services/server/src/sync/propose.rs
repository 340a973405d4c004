//! A push under `review = required` by a member who is not a reviewer publishes nothing: after
//! the same screening and rules as any push up to the plan (layout, purged content, disabled
//! memories, conflicts, the mass-delete hold), each memory change becomes a proposal for a
//! reviewer. Pushed `MEMORY.md` files are ignored: the index is derived from what is published.
//!
//! Dedupe, per path and author: the same change as the author's pending proposal is that
//! proposal; the same change as one of theirs already rejected is that rejection (with its
//! reason); anything else supersedes their pending proposal.

use std::collections::HashMap;

use memsync_core::policy::CheckedChange;
use memsync_core::wire::{ProposalStatus, Proposed, PushOp, PushRequest, PushResponse};
use memsync_core::{ProjectId, Sha256};
use serde_json::json;
use sqlx::PgConnection;

use super::layout::layout_rules;
use super::push::{Reviewer, Stop, hold_mass_delete, plan, provenance_of};
use super::{PushMeta, SyncLimits, feedback};
use crate::error::{ApiError, ApiResult};
use crate::store::audit::{self, AuditEvent};
use crate::store::memories::{LockedProject, PushSnapshot};
use crate::store::proposals::{self, NewProposal};

pub(super) async fn propose(
    tx: &mut PgConnection,
    limits: SyncLimits,
    meta: &PushMeta<'_>,
    locked: &LockedProject,
    (checked, snapshot, judged): (Vec<CheckedChange>, PushSnapshot, feedback::Judged),
    req: &PushRequest,
    reviewer: &mut Reviewer<'_>,
) -> Result<PushResponse, Stop> {
    let project = meta.project;
    let failures = layout_rules(meta, &checked, req.allow_purged, &snapshot);
    if !failures.is_empty() {
        return Err(Stop::refused(failures));
    }
    // What would change if this were published now: unchanged files and deletes of what is
    // gone propose nothing; a conflict is answered now, as to any push.
    let plan = plan(
        &mut *tx,
        project,
        &checked,
        snapshot.current,
        limits.file.max_file_bytes,
        reviewer,
    )
    .await?;
    let deletes = plan.writes.values().filter(|w| w.content.is_none()).count();
    hold_mass_delete(&mut *tx, project, locked, deletes, req.allow_mass_delete).await?;

    let provenance = serde_json::to_value(provenance_of(meta, req.provenance.as_ref()))
        .map_err(|e| ApiError::Internal(e.into()))?;
    let by_path: HashMap<&str, &CheckedChange> =
        checked.iter().map(|c| (c.path.as_str(), c)).collect();
    let mut proposed = Vec::new();
    let mut trail = Trail::default();
    for path in plan.writes.keys() {
        let Some(change) = by_path.get(path.as_str()) else {
            continue;
        };
        proposed.push(propose_one(&mut *tx, meta, change, &provenance, &judged, &mut trail).await?);
    }
    let event = AuditEvent {
        team: Some(project.team()),
        project: Some(project.as_str()),
        actor_sub: &meta.principal.claims.sub,
        actor_name: Some(&meta.principal.claims.name),
        action: "",
        path: None,
        revision: None,
        request_id: meta.request_id,
        details: json!({}),
    };
    if !trail.paths.is_empty() {
        audit::record_paths(
            &mut *tx,
            &event,
            &trail.paths,
            &trail.actions,
            &trail.details,
        )
        .await?;
    }
    Ok(PushResponse {
        project: project.to_string(),
        revision: locked.revision,
        created_revision: false,
        changes: Vec::new(),
        merged: Vec::new(),
        proposed,
    })
}

/// The audit rows of the proposals a push made or matched (never their content).
#[derive(Default)]
struct Trail {
    paths: Vec<String>,
    actions: Vec<&'static str>,
    details: Vec<serde_json::Value>,
}

impl Trail {
    fn add(&mut self, path: &str, action: &'static str, details: serde_json::Value) {
        self.paths.push(path.to_owned());
        self.actions.push(action);
        self.details.push(details);
    }
}

async fn propose_one(
    tx: &mut PgConnection,
    meta: &PushMeta<'_>,
    change: &CheckedChange,
    provenance: &serde_json::Value,
    judged: &feedback::Judged,
    trail: &mut Trail,
) -> ApiResult<Proposed> {
    let project: &ProjectId = meta.project;
    let actor = &meta.principal.claims;
    let path = change.path.as_str();
    let sha = change.content.as_deref().map(|c| Sha256::of(c.as_bytes()));
    let size = change.content.as_ref().map_or(0, String::len);
    let answer = |id: i64, status: ProposalStatus, reason: Option<String>| Proposed {
        path: path.to_owned(),
        id,
        op: change.op,
        status,
        reason,
    };

    let pending = proposals::pending_of(&mut *tx, project, path, &actor.sub).await?;
    if let Some(p) = &pending
        && p.op == change.op
        && p.sha256 == sha
        && (change.op == PushOp::Put || p.base_sha256 == change.base)
    {
        trail.add(
            path,
            "proposed",
            json!({ "proposal_id": p.id, "op": change.op, "status": "pending", "size": size, "deduped": true }),
        );
        return Ok(answer(p.id, ProposalStatus::Pending, None));
    }
    if let Some(r) = proposals::rejected_like(
        &mut *tx,
        project,
        path,
        &actor.sub,
        change.op,
        sha.as_ref(),
        change.base.as_ref(),
    )
    .await?
    {
        trail.add(
            path,
            "proposed",
            json!({ "proposal_id": r.id, "op": change.op, "status": "rejected", "size": size, "deduped": true }),
        );
        return Ok(answer(r.id, ProposalStatus::Rejected, r.reason));
    }

    let findings = match change.content.as_deref() {
        Some(text) => feedback::proposal_findings(&mut *tx, project, path, text)
            .await?
            .with(judged),
        None => Vec::new(),
    };
    let findings = serde_json::to_value(findings).map_err(|e| ApiError::Internal(e.into()))?;
    if let Some(p) = &pending {
        proposals::supersede(&mut *tx, p.id).await?;
    }
    let id = proposals::insert(
        &mut *tx,
        &NewProposal {
            project,
            path,
            op: change.op,
            base_sha256: change.base,
            content: change.content.as_deref(),
            named_paths: &change.named_paths,
            author_sub: &actor.sub,
            author_name: &actor.name,
            author_email: actor.email.as_deref(),
            provenance,
            findings: &findings,
        },
    )
    .await?;
    if let Some(p) = &pending {
        trail.add(
            path,
            "proposal_superseded",
            json!({ "proposal_id": p.id, "by": id }),
        );
    }
    trail.add(
        path,
        "proposed",
        json!({
            "proposal_id": id,
            "op": change.op,
            "status": "pending",
            "size": size,
            "provenance": provenance,
        }),
    );
    Ok(answer(id, ProposalStatus::Pending, None))
}
