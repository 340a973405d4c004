//! Feedback consistency on team writes: a team feedback memory that contradicts another team
//! feedback memory is refused unless it says `supersedes: <path>`; the superseded memory is then
//! deleted in the same revision.

use memsync_core::ProjectId;
use memsync_core::feedback::{self, Kind, Note};
use memsync_core::policy::{self, CheckedChange, FeedbackConflict};
use memsync_core::wire::PushOp;
use sqlx::PgConnection;

use crate::store::memories;

fn is_feedback(text: &str) -> bool {
    policy::is_feedback(text)
}

/// Checks every feedback memory the batch writes against the project's other team feedback
/// (and against each other), by `memsync_core::policy::team_feedback`. A memory the batch
/// deletes is no longer team feedback. Ok: the paths superseded (to delete in this revision);
/// Err: the contradictions.
pub async fn check(
    conn: &mut PgConnection,
    project: &ProjectId,
    checked: &[CheckedChange],
) -> sqlx::Result<Result<Vec<String>, Vec<FeedbackConflict>>> {
    let batch: Vec<(&str, &str)> = checked
        .iter()
        .filter(|c| c.op == PushOp::Put)
        .filter_map(|c| Some((c.path.as_str(), c.content.as_deref()?)))
        .collect();
    if !batch.iter().any(|(_, t)| is_feedback(t)) {
        return Ok(Ok(Vec::new()));
    }
    let deleted: Vec<&str> = checked
        .iter()
        .filter(|c| c.op == PushOp::Delete)
        .map(|c| c.path.as_str())
        .collect();
    let live = memories::live_feedback_candidates(conn, project).await?;
    let team: Vec<(&str, &str)> = live
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .filter(|(p, _)| !deleted.contains(p))
        .collect();
    Ok(policy::team_feedback(&batch, &team))
}

/// The stateless check: a candidate against the project's team feedback. Reads only.
pub async fn check_candidate(
    conn: &mut PgConnection,
    project: &ProjectId,
    path: &str,
    text: &str,
) -> sqlx::Result<Vec<memsync_core::wire::FeedbackFinding>> {
    findings(conn, project, path, text, None).await
}

/// A proposed version of team memory `path` against the project's other team feedback (its own
/// published version is what it replaces, not a rule it could contradict). Reads only.
pub async fn proposal_findings(
    conn: &mut PgConnection,
    project: &ProjectId,
    path: &str,
    text: &str,
) -> sqlx::Result<Vec<memsync_core::wire::FeedbackFinding>> {
    findings(conn, project, path, text, Some(path)).await
}

async fn findings(
    conn: &mut PgConnection,
    project: &ProjectId,
    path: &str,
    text: &str,
    skip: Option<&str>,
) -> sqlx::Result<Vec<memsync_core::wire::FeedbackFinding>> {
    if !is_feedback(text) {
        return Ok(Vec::new());
    }
    let team: Vec<(String, String)> = memories::live_feedback_candidates(conn, project).await?;
    let against: Vec<Note<'_>> = team
        .iter()
        .filter(|(p, t)| Some(p.as_str()) != skip && is_feedback(t))
        .map(|(p, t)| Note {
            path: p.as_str(),
            text: t.as_str(),
        })
        .collect();
    Ok(feedback::check_one(&Note { path, text }, &against)
        .into_iter()
        .map(|f| memsync_core::wire::FeedbackFinding {
            team: f.b,
            kind: match f.kind {
                Kind::Contradiction => "contradiction".into(),
                Kind::Related => "related".into(),
            },
            reason: f.reason,
        })
        .collect())
}
