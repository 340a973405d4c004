//! Controlled release: who reviews (here, and `reviewers`), a project's release policy
//! (`settings`), the review queue (`queue`: listing, due items, one item with its diff) and the
//! decisions on it (`decision`: approve, reject). Proposals are made by the sync engine
//! (`sync::propose`) and published through it (`sync::push_in`). `docs/review.md` tells the
//! whole story.

pub mod decision;
pub mod queue;
pub mod reviewers;
pub mod settings;
mod supersedes;

use memsync_core::ProjectId;
use memsync_core::wire::{Lifecycle, ProposalSummary, TeamRole};
use sqlx::PgExecutor;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::store::memories::rfc3339;
use crate::store::proposals::Proposal;

/// Reviewers of a team: its team admins, users granted the role for it (who must be members to
/// reach its projects), and server admins.
pub async fn is_reviewer<'e>(
    db: impl PgExecutor<'e>,
    principal: &Principal,
    team: &str,
) -> sqlx::Result<bool> {
    let c = &principal.claims;
    if c.admin {
        return Ok(true);
    }
    match c.teams.get(team) {
        Some(TeamRole::Admin) => Ok(true),
        Some(TeamRole::Member) => crate::store::reviewers::is_granted(db, team, &c.sub).await,
        None => Ok(false),
    }
}

/// The teams whose review queue the caller sees (None: every team, for a server admin).
pub async fn reviewed_teams<'e>(
    db: impl PgExecutor<'e>,
    principal: &Principal,
) -> sqlx::Result<Option<Vec<String>>> {
    let c = &principal.claims;
    if c.admin {
        return Ok(None);
    }
    let granted = crate::store::reviewers::teams_of(db, &c.sub).await?;
    Ok(Some(
        c.teams
            .iter()
            .filter(|(t, role)| **role == TeamRole::Admin || granted.contains(t))
            .map(|(t, _)| t.clone())
            .collect(),
    ))
}

/// The teams the caller reaches (None: every team, for a server admin).
fn reachable_teams(principal: &Principal) -> Option<Vec<String>> {
    let c = &principal.claims;
    (!c.admin).then(|| c.teams.keys().cloned().collect())
}

/// The project a stored item belongs to.
fn project_of(p: &Proposal) -> ApiResult<ProjectId> {
    p.project.parse().map_err(|_| {
        ApiError::Internal(anyhow::anyhow!(
            "proposal {} names an invalid project",
            p.id
        ))
    })
}

fn not_found(id: i64) -> ApiError {
    ApiError::NotFound(format!(
        "no proposal #{id} that you can see (reviewers see their teams' queues, members their own proposals; `GET /v1/proposals` lists them)"
    ))
}

pub fn summary(p: &Proposal) -> ProposalSummary {
    ProposalSummary {
        id: p.id,
        project: p.project.clone(),
        path: p.path.clone(),
        op: p.op,
        author: p.author_name.clone(),
        created_at: rfc3339(p.created_at),
        status: p.status,
        sha256: p.sha256,
        reason: p.reason.clone(),
        lifecycle: Lifecycle::of_path(&p.path),
    }
}

/// What the caller may do with an item: see it (as a reviewer of its team, or as the author of
/// a proposed change), and whether as a reviewer. Anything else is "not found".
struct Seen {
    project: ProjectId,
    reviewer: bool,
    author: bool,
}

async fn seen<'e>(db: impl PgExecutor<'e>, principal: &Principal, p: &Proposal) -> ApiResult<Seen> {
    let project = project_of(p)?;
    if !principal.can_access(&project) {
        return Err(not_found(p.id));
    }
    let reviewer = is_reviewer(db, principal, project.team()).await?;
    let author =
        p.author_sub == principal.claims.sub && p.kind == crate::store::proposals::Kind::Change;
    if !reviewer && !author {
        return Err(not_found(p.id));
    }
    Ok(Seen {
        project,
        reviewer,
        author,
    })
}
