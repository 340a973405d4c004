//! Feedback consistency on team writes: a team feedback memory that contradicts another team
//! feedback memory is refused unless it says `supersedes: <path>`; the superseded memory is then
//! deleted in the same revision.
//!
//! With a model judge configured (`super::judge`), the detector's candidate pairs are judged
//! before any lock is taken: a push reads the team's feedback, asks the judge ([`prejudge`]) and
//! only then opens its transaction, where the pairs it meets are looked up in what the judge
//! said ([`Judged`], keyed by both paths and both texts). A pair that changed in between (a
//! concurrent push wrote one of the two memories) is decided by the detector: the project lock
//! is never held while waiting on the judge.

use std::collections::{BTreeSet, HashMap};

use memsync_core::feedback::{self, Finding, Kind, Note};
use memsync_core::policy::{self, CheckedChange, FeedbackConflict};
use memsync_core::wire::{FeedbackFinding, PushOp};
use memsync_core::{ProjectId, Sha256};
use sqlx::{PgConnection, PgPool};

use super::judge;
use crate::store::memories;

fn is_feedback(text: &str) -> bool {
    policy::is_feedback(text)
}

/// A pair as the judge saw it: both paths and both texts.
type PairKey = (String, Sha256, String, Sha256);

fn key_of(f: &Finding, a: &str, b: &str) -> PairKey {
    (
        f.a.clone(),
        Sha256::of(a.as_bytes()),
        f.b.clone(),
        Sha256::of(b.as_bytes()),
    )
}

/// What the judge said of the pairs a push may decide on, before the push took its lock.
#[derive(Default)]
pub struct Judged {
    /// The judged finding of each pair (`None`: the judge found them unrelated). Pairs without
    /// a usable answer are not here.
    pairs: HashMap<PairKey, Option<Finding>>,
    /// Pairs that were asked about (answered or not).
    asked: BTreeSet<PairKey>,
}

impl Judged {
    /// The findings after what the judge said; `text` gives each path's text as this check
    /// reads it. A pair it was not asked about (changed since) keeps the detector's verdict.
    fn apply(&self, findings: Vec<Finding>, text: impl Fn(&str) -> Option<String>) -> Vec<Finding> {
        if self.asked.is_empty() {
            return findings;
        }
        let mut unasked = 0usize;
        let out: Vec<Finding> = findings
            .into_iter()
            .filter_map(|f| {
                let (Some(a), Some(b)) = (text(&f.a), text(&f.b)) else {
                    return Some(f);
                };
                let key = key_of(&f, &a, &b);
                match self.pairs.get(&key) {
                    Some(judged) => judged.clone(),
                    None => {
                        unasked += usize::from(!self.asked.contains(&key));
                        Some(f)
                    }
                }
            })
            .collect();
        if unasked > 0 {
            tracing::warn!(
                pairs = unasked,
                "team feedback changed while the feedback judge was asked (a concurrent push); the detector decided those pairs"
            );
        }
        out
    }
}

/// The feedback memories a batch writes, and the project's team feedback it is compared with.
fn batch_of(checked: &[CheckedChange]) -> Vec<(&str, &str)> {
    checked
        .iter()
        .filter(|c| c.op == PushOp::Put)
        .filter_map(|c| Some((c.path.as_str(), c.content.as_deref()?)))
        .collect()
}

fn deleted_of(checked: &[CheckedChange]) -> Vec<&str> {
    checked
        .iter()
        .filter(|c| c.op == PushOp::Delete)
        .map(|c| c.path.as_str())
        .collect()
}

/// Before the push's transaction: asks the judge (if one is configured) about every pair the
/// push may decide on, whether it publishes ([`check`]) or proposes ([`Found::with`]). Reads the
/// team's feedback on a connection of its own, returned to the pool before the judge is asked.
pub async fn prejudge(
    pool: &PgPool,
    project: &ProjectId,
    checked: &[CheckedChange],
) -> sqlx::Result<Judged> {
    let Some(judge) = judge::get() else {
        return Ok(Judged::default());
    };
    let batch = batch_of(checked);
    if !batch.iter().any(|(_, t)| is_feedback(t)) {
        return Ok(Judged::default());
    }
    let live = {
        let mut conn = pool.acquire().await?;
        memories::live_feedback_candidates(&mut conn, project).await?
    };
    let deleted = deleted_of(checked);
    let team: Vec<(&str, &str)> = live
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .filter(|(p, _)| !deleted.contains(p))
        .collect();
    let mut findings = policy::team_feedback_findings(&batch, &team);
    // A proposal is compared with the published team feedback but itself: one comparison, so
    // that every memory is read once, less the pairs of a memory with its published version.
    let proposed: Vec<Note<'_>> = batch
        .iter()
        .filter(|(_, t)| is_feedback(t))
        .map(|(p, t)| Note { path: p, text: t })
        .collect();
    let published: Vec<Note<'_>> = team
        .iter()
        .filter(|(_, t)| is_feedback(t))
        .map(|(p, t)| Note { path: p, text: t })
        .collect();
    findings.extend(
        feedback::compare(&proposed, &published)
            .into_iter()
            .filter(|f| f.a != f.b),
    );
    // Batch texts first: a path the batch writes is judged as pushed.
    let text_of = |p: &str| -> Option<&str> {
        batch
            .iter()
            .chain(team.iter())
            .find(|(q, _)| *q == p)
            .map(|(_, t)| *t)
    };
    let proposal_text =
        |f: &Finding| -> Option<&str> { team.iter().find(|(q, _)| *q == f.b).map(|(_, t)| *t) };
    let mut seen = BTreeSet::new();
    let mut pairs: Vec<(Finding, &str, &str)> = Vec::new();
    for f in findings {
        let Some(a) = text_of(&f.a) else { continue };
        // `b` may be a batch memory (against the batch) or its published version (a proposal).
        for b in [text_of(&f.b), proposal_text(&f)].into_iter().flatten() {
            if seen.insert(key_of(&f, a, b)) {
                pairs.push((f.clone(), a, b));
            }
        }
    }
    // A pair is only judged with the finding the detector made of those very texts.
    pairs.retain(|(f, a, b)| {
        feedback::check_one(
            &Note {
                path: &f.a,
                text: a,
            },
            &[Note {
                path: &f.b,
                text: b,
            }],
        )
        .first()
        .is_some_and(|g| g == f)
    });
    let refs: Vec<(&Finding, &str, &str)> = pairs.iter().map(|(f, a, b)| (f, *a, *b)).collect();
    let answers = judge.answers(&refs, "push").await;
    let mut judged = Judged::default();
    for ((f, a, b), answer) in pairs.iter().zip(answers) {
        let key = key_of(f, a, b);
        judged.asked.insert(key.clone());
        if let Some(answer) = answer {
            let out = memsync_core::feedback_judge::apply(
                vec![f.clone()],
                &[Some(answer)],
                judge.model(),
            )
            .pop();
            judged.pairs.insert(key, out);
        }
    }
    Ok(judged)
}

/// Checks every feedback memory the batch writes against the project's other team feedback
/// (and against each other), by `memsync_core::policy::team_feedback`, with what the judge said
/// of each pair before the lock. A memory the batch deletes is no longer team feedback. Ok: the
/// paths superseded (to delete in this revision); Err: the contradictions.
pub async fn check(
    conn: &mut PgConnection,
    project: &ProjectId,
    checked: &[CheckedChange],
    judged: &Judged,
) -> sqlx::Result<Result<Vec<String>, Vec<FeedbackConflict>>> {
    let batch = batch_of(checked);
    if !batch.iter().any(|(_, t)| is_feedback(t)) {
        return Ok(Ok(Vec::new()));
    }
    let deleted = deleted_of(checked);
    let live = memories::live_feedback_candidates(conn, project).await?;
    let team: Vec<(&str, &str)> = live
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .filter(|(p, _)| !deleted.contains(p))
        .collect();
    let findings = judged.apply(policy::team_feedback_findings(&batch, &team), |p| {
        batch
            .iter()
            .chain(team.iter())
            .find(|(q, _)| *q == p)
            .map(|(_, t)| (*t).to_owned())
    });
    Ok(policy::team_feedback_decide(&batch, &team, &findings))
}

/// A candidate's findings against the project's team feedback as the detector makes them, with
/// the texts the judge needs: judged after the connection is given back ([`Found::judged`]), or
/// with what a push's [`prejudge`] said ([`Found::with`]).
pub struct Found {
    text: String,
    team: Vec<(String, String)>,
    findings: Vec<Finding>,
}

impl Found {
    fn text_of(&self, p: &str, a: &str) -> Option<String> {
        if p == a {
            return Some(self.text.clone());
        }
        self.team
            .iter()
            .find(|(q, _)| q == p)
            .map(|(_, t)| t.clone())
    }

    /// Asks the judge (if one is configured; `what` names the check in its warning).
    pub async fn judged(self, what: &str) -> Vec<FeedbackFinding> {
        let findings = match judge::get() {
            Some(judge) if !self.findings.is_empty() => {
                let team_text = |p: &str| {
                    self.team
                        .iter()
                        .find(|(q, _)| q == p)
                        .map_or("", |(_, t)| t.as_str())
                };
                let pairs: Vec<(&Finding, &str, &str)> = self
                    .findings
                    .iter()
                    .map(|f| (f, self.text.as_str(), team_text(&f.b)))
                    .collect();
                let answers = judge.answers(&pairs, what).await;
                memsync_core::feedback_judge::apply(self.findings.clone(), &answers, judge.model())
            }
            _ => self.findings,
        };
        to_wire(findings)
    }

    /// With what a push's [`prejudge`] said (under the push's lock: nothing is asked here).
    pub fn with(self, judged: &Judged) -> Vec<FeedbackFinding> {
        let a = self
            .findings
            .first()
            .map(|f| f.a.clone())
            .unwrap_or_default();
        let findings = judged.apply(self.findings.clone(), |p| self.text_of(p, &a));
        to_wire(findings)
    }
}

fn to_wire(findings: Vec<Finding>) -> Vec<FeedbackFinding> {
    findings
        .into_iter()
        .map(|f| FeedbackFinding {
            team: f.b,
            kind: match f.kind {
                Kind::Contradiction => "contradiction".into(),
                Kind::Related => "related".into(),
            },
            reason: f.reason,
        })
        .collect()
}

/// The stateless check: a candidate against the project's team feedback. Reads only; the
/// connection goes back to the pool before the judge is asked.
pub async fn check_candidate(
    pool: &PgPool,
    project: &ProjectId,
    path: &str,
    text: &str,
) -> sqlx::Result<Vec<FeedbackFinding>> {
    let found = {
        let mut conn = pool.acquire().await?;
        found(&mut conn, project, path, text, None).await?
    };
    Ok(found.judged("check").await)
}

/// A proposed version of team memory `path` against the project's other team feedback (its own
/// published version is what it replaces, not a rule it could contradict). Reads only; judge
/// with [`Found::judged`] or [`Found::with`].
pub async fn proposal_findings(
    conn: &mut PgConnection,
    project: &ProjectId,
    path: &str,
    text: &str,
) -> sqlx::Result<Found> {
    found(conn, project, path, text, Some(path)).await
}

async fn found(
    conn: &mut PgConnection,
    project: &ProjectId,
    path: &str,
    text: &str,
    skip: Option<&str>,
) -> sqlx::Result<Found> {
    if !is_feedback(text) {
        return Ok(Found {
            text: String::new(),
            team: Vec::new(),
            findings: Vec::new(),
        });
    }
    let team: Vec<(String, String)> = memories::live_feedback_candidates(conn, project)
        .await?
        .into_iter()
        .filter(|(p, t)| Some(p.as_str()) != skip && is_feedback(t))
        .collect();
    let against: Vec<Note<'_>> = team
        .iter()
        .map(|(p, t)| Note {
            path: p.as_str(),
            text: t.as_str(),
        })
        .collect();
    let findings = feedback::check_one(&Note { path, text }, &against);
    Ok(Found {
        text: text.to_owned(),
        team,
        findings,
    })
}
