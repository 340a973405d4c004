//! Feedback consistency on team writes: a team feedback memory that contradicts another team
//! feedback memory is refused unless it says `supersedes: <path>`; the superseded memory is then
//! deleted in the same revision.

use std::collections::{BTreeMap, BTreeSet};

use memsync_core::feedback::{self, Kind, Note};
use memsync_core::wire::PushOp;
use memsync_core::{MemoryDoc, MemoryType, ProjectId};
use serde::Serialize;
use sqlx::PgConnection;

use super::validate::CheckedChange;
use crate::store::memories;

#[derive(Debug, Clone, Serialize)]
pub struct FeedbackConflict {
    /// The pushed memory.
    pub path: String,
    /// The team memory it contradicts.
    pub other: String,
    pub reason: String,
}

fn is_feedback(text: &str) -> Option<MemoryDoc> {
    MemoryDoc::parse(text)
        .ok()
        .filter(|d| d.memory_type() == Some(MemoryType::Feedback))
}

/// Checks every feedback memory the batch writes against the project's other team feedback
/// (and against each other). Ok: the paths superseded (to delete in this revision); Err: the
/// contradictions.
pub async fn check(
    conn: &mut PgConnection,
    project: &ProjectId,
    checked: &[CheckedChange],
) -> sqlx::Result<Result<Vec<String>, Vec<FeedbackConflict>>> {
    let candidates: Vec<(&str, &str, Option<String>)> = checked
        .iter()
        .filter(|c| c.op == PushOp::Put && !c.path.is_index())
        .filter_map(|c| {
            let text = c.content.as_deref()?;
            let doc = is_feedback(text)?;
            Some((
                c.path.as_str(),
                text,
                doc.get_str("supersedes").map(|s| s.trim().to_owned()),
            ))
        })
        .collect();
    if candidates.is_empty() {
        return Ok(Ok(Vec::new()));
    }
    let touched: BTreeSet<&str> = checked.iter().map(|c| c.path.as_str()).collect();
    let existing: Vec<(String, String)> = memories::live_feedback_candidates(conn, project)
        .await?
        .into_iter()
        .filter(|(p, text)| !touched.contains(p.as_str()) && is_feedback(text).is_some())
        .collect();
    let mut superseded = BTreeSet::new();
    let mut conflicts = Vec::new();
    let supersedes: BTreeMap<&str, Option<&str>> = candidates
        .iter()
        .map(|(p, _, s)| (*p, s.as_deref()))
        .collect();
    for (path, text, sup) in &candidates {
        let mut against: Vec<Note<'_>> = existing
            .iter()
            .map(|(p, t)| Note {
                path: p.as_str(),
                text: t.as_str(),
            })
            .collect();
        against.extend(
            candidates
                .iter()
                .filter(|(p, _, _)| p != path)
                .map(|(p, t, _)| Note { path: p, text: t }),
        );
        for f in feedback::check_one(&Note { path, text }, &against) {
            if f.kind != Kind::Contradiction {
                continue;
            }
            if sup.as_deref() == Some(f.b.as_str()) {
                if existing.iter().any(|(p, _)| *p == f.b) {
                    superseded.insert(f.b.clone());
                }
                continue;
            }
            // Two memories of one batch that contradict each other pass when either supersedes
            // the other.
            if supersedes.get(f.b.as_str()).copied().flatten() == Some(*path) {
                continue;
            }
            conflicts.push(FeedbackConflict {
                path: (*path).to_owned(),
                other: f.b.clone(),
                reason: f.reason.clone(),
            });
        }
    }
    Ok(if conflicts.is_empty() {
        Ok(superseded.into_iter().collect())
    } else {
        Err(conflicts)
    })
}

/// The stateless check: a candidate against the project's team feedback. Reads only.
pub async fn check_candidate(
    conn: &mut PgConnection,
    project: &ProjectId,
    path: &str,
    text: &str,
) -> sqlx::Result<Vec<memsync_core::wire::FeedbackFinding>> {
    if is_feedback(text).is_none() {
        return Ok(Vec::new());
    }
    let team: Vec<(String, String)> = memories::live_feedback_candidates(conn, project).await?;
    let against: Vec<Note<'_>> = team
        .iter()
        .filter(|(_, t)| is_feedback(t).is_some())
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
