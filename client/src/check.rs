//! Local checks that need no server: the team-write guards (`memsync scan`) and everything that
//! makes a team dir healthy (`memsync check`): guards, the memory format, and every index.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use memsync_core::wire::Failure;
use memsync_core::{MemoryPath, MemoryType};
use serde::Serialize;

use crate::fsops::TeamDir;

/// One guard finding, as `memsync scan --json` prints it.
#[derive(Debug, Clone, Serialize)]
pub struct ScanFinding {
    pub path: String,
    pub line: u32,
    pub column: u32,
    pub rule: String,
    pub category: String,
    pub preview: String,
    pub fingerprint: String,
}

impl ScanFinding {
    fn from_failure(path: &str, f: Failure) -> ScanFinding {
        ScanFinding {
            path: path.to_owned(),
            line: f.line.unwrap_or(1),
            column: f.column.unwrap_or(1),
            rule: f.rule,
            category: f.category.unwrap_or_else(|| "policy".into()),
            preview: f.preview.unwrap_or_default(),
            fingerprint: f.fingerprint.unwrap_or_default(),
        }
    }
}

/// Guard findings of one file's text: secrets and injection payloads, and for a memory file
/// the team policy (`type: user` is private).
pub fn guard_findings(path: &str, text: &str) -> Vec<ScanFinding> {
    let mut out: Vec<ScanFinding> = memsync_core::guard::scan_text(path, text)
        .into_iter()
        .map(|f| ScanFinding::from_failure(path, f))
        .collect();
    if path.ends_with(".md")
        && let Ok(doc) = memsync_core::MemoryDoc::parse(text)
        && doc.memory_type() == Some(MemoryType::User)
    {
        out.push(ScanFinding {
            path: path.to_owned(),
            line: 1,
            column: 1,
            rule: "type_user_in_team".into(),
            category: "policy".into(),
            preview: "type: user".into(),
            fingerprint: String::new(),
        });
    }
    out
}

#[derive(Debug, Default, Serialize)]
pub struct ScanReport {
    pub findings: Vec<ScanFinding>,
    /// Paths that could not be scanned, with why.
    pub errors: Vec<(String, String)>,
    pub files: usize,
}

/// Scans files and directories (recursively; `.git` and other hidden dirs are skipped; symlinks
/// are not followed).
pub fn scan_paths(paths: &[PathBuf]) -> ScanReport {
    let mut report = ScanReport::default();
    for p in paths {
        scan_one(p, &mut report, true);
    }
    report
}

fn scan_one(p: &Path, report: &mut ScanReport, top: bool) {
    let shown = p.display().to_string();
    let meta = match std::fs::symlink_metadata(p) {
        Ok(m) => m,
        Err(e) => {
            report.errors.push((shown, e.to_string()));
            return;
        }
    };
    if meta.file_type().is_symlink() {
        if top {
            report
                .errors
                .push((shown, "a symlink; not followed".into()));
        }
        return;
    }
    if meta.is_dir() {
        let hidden = p
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'));
        if hidden && !top {
            return;
        }
        let mut entries: Vec<PathBuf> = match std::fs::read_dir(p) {
            Ok(rd) => rd.flatten().map(|e| e.path()).collect(),
            Err(e) => {
                report.errors.push((shown, e.to_string()));
                return;
            }
        };
        entries.sort();
        for e in entries {
            scan_one(&e, report, false);
        }
        return;
    }
    match std::fs::read(p) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => {
                report.files += 1;
                report.findings.extend(guard_findings(&shown, &text));
            }
            Err(_) if top => report.errors.push((shown, "not UTF-8 text".into())),
            Err(_) => {}
        },
        Err(e) => report.errors.push((shown, e.to_string())),
    }
}

/// A problem `memsync check` found that is not a guard finding.
#[derive(Debug, Clone, Serialize)]
pub struct Problem {
    pub path: String,
    pub rule: String,
    pub message: String,
    pub line: Option<u32>,
    /// Errors block a push; warnings don't.
    pub error: bool,
}

#[derive(Debug, Default, Serialize)]
pub struct CheckReport {
    pub team_dir: PathBuf,
    pub findings: Vec<ScanFinding>,
    pub problems: Vec<Problem>,
    /// Private feedback against team feedback (contradictions without `overrides:`, and
    /// related pairs for information).
    pub conflicts: Vec<crate::feedback::PrivateConflict>,
    /// Team and private memories that name repository paths gone from the working tree.
    pub stale: Vec<crate::stale::Stale>,
    pub files: usize,
}

impl CheckReport {
    pub fn has_errors(&self) -> bool {
        !self.findings.is_empty()
            || self.problems.iter().any(|p| p.error)
            || self.conflicts.iter().any(|c| c.kind == "contradiction")
            || !self.stale.is_empty()
    }
}

/// Every local check of a team dir: the guards, the memory format of every memory, and the
/// lint of every directory's `MEMORY.md` against the files it should index.
pub fn check_team_dir(
    team: &TeamDir,
    private_dir: Option<&Path>,
    max_file_bytes: usize,
) -> Result<CheckReport, crate::fsops::FsError> {
    let scan = team.scan()?;
    let mut report = CheckReport {
        team_dir: team.root().to_owned(),
        files: scan.files.len(),
        ..CheckReport::default()
    };
    for (path, reason) in &scan.skipped {
        report.problems.push(Problem {
            path: path.clone(),
            rule: "skipped".into(),
            message: reason.clone(),
            line: None,
            error: false,
        });
    }
    // Expected index targets per dir: memory files directly in it, and subdirs holding memories.
    let mut expected: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, lf) in &scan.files {
        let Ok(mp) = MemoryPath::parse(path) else {
            continue;
        };
        let text = String::from_utf8_lossy(lf.read_bytes());
        report.findings.extend(guard_findings(path, &text));
        if mp.is_index() {
            continue;
        }
        if let Err(problems) = memsync_core::memory::validate(lf.read_bytes(), max_file_bytes) {
            for p in problems {
                report.problems.push(Problem {
                    path: path.clone(),
                    rule: p.rule.into(),
                    message: p.message,
                    line: p.line,
                    error: true,
                });
            }
        }
        let mut dir = mp.dir().to_owned();
        let mut target = mp.file_name().to_owned();
        loop {
            expected
                .entry(dir.clone())
                .or_default()
                .insert(target.clone());
            if dir.is_empty() {
                break;
            }
            let (parent, name) = dir
                .rsplit_once('/')
                .map_or(("", dir.as_str()), |(p, n)| (p, n));
            target = format!("{name}/MEMORY.md");
            dir = parent.to_owned();
        }
    }
    let team_texts: Vec<(String, String)> = scan
        .files
        .iter()
        .filter(|(p, _)| !p.ends_with("MEMORY.md"))
        .map(|(p, f)| {
            (
                p.clone(),
                String::from_utf8_lossy(f.read_bytes()).into_owned(),
            )
        })
        .collect();
    // Every team memory against the others, as if pushed in one batch (memsync_core::policy):
    // two that contradict pass when one supersedes the other or declares it `compatible-with:`.
    let all: Vec<(&str, &str)> = team_texts
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    if let Err(conflicts) = memsync_core::policy::team_feedback(&all, &[]) {
        for c in conflicts.into_iter().filter(|c| c.path < c.other) {
            report.problems.push(Problem {
                message: format!(
                    "contradicts the team's {} ({}); reconcile them, mark one `supersedes:` the other, or `compatible-with:` it if both rules hold",
                    c.other, c.reason
                ),
                path: c.path,
                rule: "feedback_conflict".into(),
                line: None,
                error: true,
            });
        }
    }
    if let Some(private) = private_dir {
        let private_notes = crate::feedback::read_memories(private, Some(team.root()));
        report.conflicts = crate::feedback::private_vs_team(&private_notes, &team_texts);
    }
    for (dir, targets) in &expected {
        let index_path = MemoryPath::index_of_dir(dir);
        let text = scan
            .files
            .get(index_path.as_str())
            .map(|f| String::from_utf8_lossy(f.read_bytes()).into_owned());
        match text {
            None => report.problems.push(Problem {
                path: index_path.to_string(),
                rule: "index_missing".into(),
                message: format!(
                    "{} holds memories but no MEMORY.md; the server creates one on the next push",
                    if dir.is_empty() { "the team dir" } else { dir }
                ),
                line: None,
                error: false,
            }),
            Some(text) => {
                for f in memsync_core::index::lint(&text, targets) {
                    // The server drops dangling entries and adds missing ones on every push.
                    let repaired = matches!(f.rule, "index_missing_entry" | "index_dangling_link");
                    report.problems.push(Problem {
                        path: index_path.to_string(),
                        rule: f.rule.into(),
                        message: if repaired {
                            format!("{} (the server repairs this on the next push)", f.message)
                        } else {
                            f.message
                        },
                        line: f.line,
                        error: f.error && !repaired,
                    });
                }
            }
        }
    }
    Ok(report)
}
