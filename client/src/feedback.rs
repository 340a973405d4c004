//! Feedback consistency on this machine: private feedback that contradicts team feedback must
//! say `overrides: <team path>`, and a team feedback memory must not contradict another team one
//! unless it says `supersedes: <path>`. Private memories are read here, locally, and never sent
//! to the memsync server (only to a model judge the user configured on this machine).

use std::path::{Path, PathBuf};

use memsync_core::MemoryDoc;
use memsync_core::feedback::{self, Kind, Note};
use serde::Serialize;

/// A private/team pair, as `memsync check --json` prints it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct PrivateConflict {
    /// Relative to the private dir.
    pub private: String,
    /// Relative to the team dir.
    pub team: String,
    /// `contradiction` or `related`.
    pub kind: String,
    pub reason: String,
    /// How likely the pair is to contradict, 0–1000 (1000 for a contradiction; for a related
    /// pair, how much of the two rules is shared): orders the session-start notice.
    pub likelihood: u32,
}

/// Every `.md` file under `dir` (relative path, text), skipping `skip` (the team dir inside the
/// private dir), hidden entries and symlinks.
pub fn read_memories(dir: &Path, skip: Option<&Path>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    walk(dir, dir, skip, &mut out);
    out.sort();
    out
}

fn walk(root: &Path, dir: &Path, skip: Option<&Path>, out: &mut Vec<(String, String)>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p: PathBuf = e.path();
        if skip.is_some_and(|s| p == s) || e.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() {
            walk(root, &p, skip, out);
        } else if ft.is_file()
            && p.extension().is_some_and(|x| x == "md")
            && !p.ends_with("MEMORY.md")
            && let (Ok(text), Ok(rel)) = (std::fs::read_to_string(&p), p.strip_prefix(root))
        {
            out.push((rel.to_string_lossy().replace('\\', "/"), text));
        }
    }
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Contradiction => "contradiction",
        Kind::Related => "related",
    }
}

/// Private feedback against team feedback. A contradiction the private memory declares with
/// `overrides: <team path>` is not reported.
pub fn private_vs_team(
    private: &[(String, String)],
    team: &[(String, String)],
) -> Vec<PrivateConflict> {
    conflicts(private, detect(private, team))
}

/// Same, with the model judge the user configured on this machine ([`crate::judge`]) asked
/// about the detector's pairs within `min(its timeout, limit)`: private memories go to that
/// endpoint and nowhere else. The `String`: one line to tell the user when the judge was
/// unavailable for some pairs (their verdicts are the detector's).
pub fn private_vs_team_judged(
    private: &[(String, String)],
    team: &[(String, String)],
    judge: &crate::judge::Judge,
    limit: std::time::Duration,
) -> (Vec<PrivateConflict>, Option<String>) {
    let found = detect(private, team);
    let text = |set: &[(String, String)], p: &str| {
        set.iter()
            .find(|(q, _)| q == p)
            .map(|(_, t)| t.clone())
            .unwrap_or_default()
    };
    let (judged, note) =
        judge.judge_blocking(found, |f| (text(private, &f.a), text(team, &f.b)), limit);
    (conflicts(private, judged), note)
}

fn detect(private: &[(String, String)], team: &[(String, String)]) -> Vec<feedback::Finding> {
    let a: Vec<Note<'_>> = private
        .iter()
        .map(|(p, t)| Note { path: p, text: t })
        .collect();
    let b: Vec<Note<'_>> = team
        .iter()
        .map(|(p, t)| Note { path: p, text: t })
        .collect();
    feedback::compare(&a, &b)
}

fn conflicts(
    private: &[(String, String)],
    findings: Vec<feedback::Finding>,
) -> Vec<PrivateConflict> {
    findings
        .into_iter()
        .filter(|f| {
            let overrides = private
                .iter()
                .find(|(p, _)| *p == f.a)
                .and_then(|(_, t)| MemoryDoc::parse(t).ok())
                .and_then(|d| {
                    d.get_str("overrides")
                        .map(|s| s.trim().trim_start_matches("team/").to_owned())
                });
            !(f.kind == Kind::Contradiction && overrides.as_deref() == Some(f.b.as_str()))
        })
        .map(|f| PrivateConflict {
            private: f.a,
            team: f.b,
            kind: kind_name(f.kind).into(),
            reason: f.reason,
            likelihood: f.likelihood,
        })
        .collect()
}
