//! The review queue: listing (which first queues the memories that became due) and one item
//! with its diff against what is published now.

use std::collections::BTreeMap;

use memsync_core::ProjectId;
use memsync_core::wire::{ProposalDetail, ProposalList, PushOp, VersionProvenance};
use serde_json::json;
use sqlx::PgPool;

use super::{reachable_teams, reviewed_teams, seen, summary};
use crate::admin::audit::event as audit_event;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::store::audit::{self, AuditEvent};
use crate::store::memories;
use crate::store::proposals::{self, Kind, ListFilter};

pub const DEFAULT_LIMIT: i64 = 100;
pub const MAX_LIMIT: i64 = 500;

/// Who the audit log names for what the server does by itself (queueing due memories).
pub const SERVER_ACTOR: &str = "memsync-server";

pub struct ListQuery {
    pub project: Option<ProjectId>,
    /// `open`, `all`, or a comma-separated list of statuses; None: the defaults.
    pub status: Option<String>,
    pub mine: bool,
    pub limit: Option<i64>,
}

const ALL: [&str; 6] = [
    "pending",
    "due",
    "flagged",
    "approved",
    "rejected",
    "superseded",
];

fn statuses(s: &str) -> ApiResult<Vec<&'static str>> {
    match s {
        "open" => return Ok(vec!["pending", "due", "flagged"]),
        "all" => return Ok(ALL.to_vec()),
        _ => {}
    }
    s.split(',')
        .map(|one| {
            ALL.iter().copied().find(|a| *a == one.trim()).ok_or_else(|| {
                ApiError::bad_request(
                    "invalid_status",
                    "`status` is `open` (pending, due and flagged), `all`, or a comma-separated list of pending, due, flagged, approved, rejected, superseded",
                )
            })
        })
        .collect()
}

/// The items the caller may see, newest first: reviewers every item of the projects of their
/// teams (by default the open ones), members their own proposals (by default pending and
/// rejected). `mine` narrows a reviewer's list to their own proposals.
pub async fn list(pool: &PgPool, principal: &Principal, q: ListQuery) -> ApiResult<ProposalList> {
    let statuses = q.status.as_deref().map(statuses).transpose()?;
    let limit = q.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
    let reviewed = reviewed_teams(pool, principal).await?;
    let reachable = reachable_teams(principal);
    let reviews = |team: &str| {
        reviewed
            .as_ref()
            .is_none_or(|t| t.iter().any(|x| x == team))
    };
    let due_for = match &q.project {
        _ if q.mine => None,
        Some(p) if reviews(p.team()) => Some(Some(vec![p.team().to_owned()])),
        Some(_) => None,
        None if reviewed.as_ref().is_some_and(Vec::is_empty) => None,
        None => Some(reviewed.clone()),
    };
    if let Some(teams) = due_for {
        queue_due(pool, teams.as_deref(), q.project.as_ref()).await?;
    }
    let rows = proposals::list(
        pool,
        &ListFilter {
            project: q.project.as_ref(),
            reachable: reachable.as_deref(),
            reviewed: reviewed.as_deref(),
            sub: &principal.claims.sub,
            mine: q.mine,
            statuses,
            limit,
        },
    )
    .await?;
    // A token limited to some projects sees only theirs.
    Ok(ProposalList {
        proposals: rows
            .iter()
            .filter(|p| super::project_of(p).is_ok_and(|project| principal.can_access(&project)))
            .map(summary)
            .collect(),
    })
}

/// Queues the memories that became due in these teams' projects, audited as the server's doing.
async fn queue_due(
    pool: &PgPool,
    teams: Option<&[String]>,
    project: Option<&ProjectId>,
) -> ApiResult<()> {
    let mut tx = pool.begin().await?;
    let made = proposals::materialise_due(&mut tx, teams, project).await?;
    // (team, project) → (id, path, reason) of each item made there.
    type Made = BTreeMap<(String, String), Vec<(i64, String, String)>>;
    let mut by_project: Made = BTreeMap::new();
    for (id, team, project, path, reason) in made {
        by_project
            .entry((team, project))
            .or_default()
            .push((id, path, reason));
    }
    for ((team, project), items) in &by_project {
        let paths: Vec<String> = items.iter().map(|(_, p, _)| p.clone()).collect();
        let actions = vec!["review_due"; items.len()];
        let details: Vec<serde_json::Value> = items
            .iter()
            .map(|(id, _, reason)| json!({ "proposal_id": id, "reason": reason }))
            .collect();
        let event = AuditEvent {
            team: Some(team),
            project: Some(project),
            actor_sub: SERVER_ACTOR,
            actor_name: None,
            action: "",
            path: None,
            revision: None,
            request_id: None,
            details: json!({}),
        };
        audit::record_paths(&mut *tx, &event, &paths, &actions, &details).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// One item with everything a reviewer needs: the diff from what is published now, whether
/// that changed since the author's base, the provenance, and the feedback findings against the
/// team's rules as they are now. A read of proposed content by anyone but its author is
/// audited.
pub async fn show(
    pool: &PgPool,
    principal: &Principal,
    id: i64,
    request_id: Option<&str>,
) -> ApiResult<ProposalDetail> {
    let p = proposals::get(pool, id)
        .await?
        .ok_or_else(|| super::not_found(id))?;
    let seen = seen(pool, principal, &p).await?;
    let project = &seen.project;
    let mut conn = pool.acquire().await?;
    let published = memories::current(&mut conn, project, std::slice::from_ref(&p.path))
        .await?
        .remove(&p.path)
        .filter(|s| !s.deleted);
    let published_text = published.as_ref().and_then(|s| s.content.clone());
    let published_sha = published.as_ref().and_then(|s| s.sha256);
    let (content, diff, stale) = match p.kind {
        Kind::Change => {
            let proposed = match p.op {
                PushOp::Put => p.content.as_deref().unwrap_or(""),
                PushOp::Delete => "",
            };
            let patch = memsync_core::merge::unified_diff(
                published_text.as_deref().unwrap_or(""),
                proposed,
            )
            .replacen("--- original", &format!("--- {} (published)", p.path), 1)
            .replacen(
                "+++ modified",
                &format!("+++ {} (proposal #{id})", p.path),
                1,
            );
            (
                p.content.clone(),
                patch,
                p.status.is_open() && published_sha != p.base_sha256,
            )
        }
        // Nothing is proposed: the item is about what is (or was) published.
        Kind::Due => (published_text, String::new(), false),
        Kind::Flagged => (p.content.clone(), String::new(), false),
    };
    let found = match (&content, p.kind, p.op) {
        (Some(text), Kind::Change, PushOp::Put) => {
            Some(crate::sync::feedback::proposal_findings(&mut conn, project, &p.path, text).await?)
        }
        _ => None,
    };
    drop(conn);
    // The model judge (if configured) is asked with the connection back in the pool.
    let feedback = match found {
        Some(found) => found.judged("proposal").await,
        None => Vec::new(),
    };
    if content.is_some() && !seen.author {
        audit_event(
            pool,
            principal,
            project,
            "content_read",
            Some(&p.path),
            None,
            request_id,
            json!({ "proposal_id": id }),
        )
        .await?;
    }
    let provenance: VersionProvenance = serde_json::from_value(p.provenance.clone())
        .unwrap_or_else(|_| VersionProvenance {
            author: p.author_name.clone(),
            author_sub: p.author_sub.clone(),
            pushed_at: memories::rfc3339(p.created_at),
            ..VersionProvenance::default()
        });
    Ok(ProposalDetail {
        summary: summary(&p),
        content,
        base_sha256: p.base_sha256,
        published_sha256: published_sha,
        diff,
        stale,
        provenance,
        feedback,
        reviewed_by: p.reviewed_by.clone(),
        reviewed_at: p.reviewed_at.map(memories::rfc3339),
        note: p.note.clone(),
        published_revision: p.published_revision,
    })
}
