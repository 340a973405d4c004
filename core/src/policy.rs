//! What a team write may be: every rule the client predicts and the server enforces, in one
//! place, so that `memsync check`/`push` never say "fine" about a push the server then refuses.
//!
//! - the batch's static rules: paths, sizes, encodings, the memory format, the team-scope type
//!   policy, and a pushed `MEMORY.md`'s own limits ([`check_batch`], [`check_file`]);
//! - the guards: secret and injection findings, less those the project's allowlist names
//!   ([`scan_batch`], [`allowlisted`]);
//! - the on-disk layout: no path may collide with another as file and directory or by letter
//!   case ([`crate::tree`]);
//! - feedback consistency between team feedback memories, `supersedes:` and `compatible-with:`
//!   ([`team_feedback`]);
//! - the mass-delete hold ([`mass_delete`]).
//!
//! The server runs them in this order over its stored state; the client runs the same functions
//! over what it knows of that state, before anything leaves the machine.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde::{Deserialize, Serialize};

use crate::feedback::{self, Finding, Kind, Note};
use crate::memory::{self, MemoryDoc, MemoryType};
use crate::path::MemoryPath;
use crate::sha::Sha256;
use crate::wire::{Failure, PushChange, PushOp, PushRequest};

/// Limits every file and batch is held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_file_bytes: usize,
    pub max_changes_per_push: usize,
}

/// A push deletes at most this many memory files, or 10 % of the project's live memory files if
/// that is more, without `allow_mass_delete`.
pub const MASS_DELETE_FLOOR: usize = 50;

/// One change that passed the static rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedChange {
    pub path: MemoryPath,
    pub op: PushOp,
    pub base: Option<Sha256>,
    pub content: Option<String>,
    /// For a put: the repository paths it names (checked by `check_named_paths`).
    pub named_paths: Vec<String>,
}

/// At most this many `named_paths` per change.
pub const MAX_NAMED_PATHS: usize = 64;

/// `named_paths` are relative `/`-separated repository paths: no empty, `.` or `..` segment, no
/// control characters, at most 255 bytes each and `MAX_NAMED_PATHS` in all; only on a put.
fn check_named_paths(change: &PushChange) -> Option<Failure> {
    let bad = |why: String| {
        Some(failure(
            &change.path,
            "named_paths_invalid",
            format!(
                "`named_paths` {why}; it lists repository paths the memory names, relative to the repository root"
            ),
            None,
        ))
    };
    if change.named_paths.is_empty() {
        return None;
    }
    if change.op == PushOp::Delete {
        return bad("is only taken with a put".into());
    }
    if change.named_paths.len() > MAX_NAMED_PATHS {
        return bad(format!(
            "has {} entries; at most {MAX_NAMED_PATHS} are kept",
            change.named_paths.len()
        ));
    }
    for p in &change.named_paths {
        let ok = !p.is_empty()
            && p.len() <= 255
            && !p.starts_with('/')
            && !p.chars().any(|c| c.is_control() || c == '\\')
            && p.split('/')
                .all(|seg| !seg.is_empty() && seg != "." && seg != "..");
        if !ok {
            return bad(format!(
                "holds `{}`, which is not a relative path",
                shown(p)
            ));
        }
    }
    None
}

/// A push's `provenance`: each field at most 200 characters without control characters; `head`
/// a hex commit id.
fn check_provenance(p: &crate::wire::Provenance) -> Option<Failure> {
    let fields = [
        ("client_version", &p.client_version),
        ("session_id", &p.session_id),
        ("head", &p.head),
        ("branch", &p.branch),
    ];
    for (name, value) in fields {
        let Some(v) = value else { continue };
        let bad = if v.is_empty() || v.chars().count() > 200 || v.chars().any(char::is_control) {
            Some("must be 1-200 characters without control characters")
        } else if name == "head"
            && !(v.len() >= 7 && v.len() <= 64 && v.bytes().all(|b| b.is_ascii_hexdigit()))
        {
            Some("must be a hex commit id (7-64 hex digits)")
        } else {
            None
        };
        if let Some(why) = bad {
            return Some(failure(
                "",
                "provenance_invalid",
                format!("`provenance.{name}` {why}; leave it out if the client does not know it"),
                None,
            ));
        }
    }
    None
}

/// Shortens what a client sent before it goes back into a message.
pub fn shown(path: &str) -> String {
    let mut s: String = path.chars().filter(|c| !c.is_control()).take(120).collect();
    if s.len() < path.len() {
        s.push('…');
    }
    s
}

fn failure(path: &str, rule: &str, message: impl Into<String>, line: Option<u32>) -> Failure {
    Failure::new(shown(path), rule, message, line)
}

/// The static rules of a whole batch; every failure of the batch at once.
pub fn check_batch(req: &PushRequest, limits: Limits) -> Result<Vec<CheckedChange>, Vec<Failure>> {
    if req.changes.len() > limits.max_changes_per_push {
        return Err(vec![failure(
            "",
            "too_many_changes",
            format!(
                "the push carries {} changes; at most {} are accepted per push: split it into smaller pushes",
                req.changes.len(),
                limits.max_changes_per_push
            ),
            None,
        )]);
    }
    let mut failures = Vec::new();
    if let Some(p) = &req.provenance {
        failures.extend(check_provenance(p));
    }
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(req.changes.len());
    for change in &req.changes {
        match check_change(change, limits) {
            Ok(c) if !seen.insert(c.path.clone()) => failures.push(failure(
                &change.path,
                "duplicate_path",
                "the same path appears twice in one push; send each path once",
                None,
            )),
            Ok(c) => out.push(c),
            Err(mut f) => failures.append(&mut f),
        }
    }
    if failures.is_empty() {
        Ok(out)
    } else {
        Err(failures)
    }
}

fn check_change(change: &PushChange, limits: Limits) -> Result<CheckedChange, Vec<Failure>> {
    let path = MemoryPath::parse(&change.path)
        .map_err(|e| vec![failure(&change.path, e.rule(), e.to_string(), None)])?;
    if let Some(f) = check_named_paths(change) {
        return Err(vec![f]);
    }
    match (change.op, &change.content) {
        (PushOp::Delete, Some(_)) => Err(vec![failure(
            &change.path,
            "delete_with_content",
            "a delete carries no content; drop `content` or use op `put`",
            None,
        )]),
        (PushOp::Delete, None) => Ok(CheckedChange {
            path,
            op: PushOp::Delete,
            base: change.base_sha256,
            content: None,
            named_paths: Vec::new(),
        }),
        (PushOp::Put, None) => Err(vec![failure(
            &change.path,
            "content_missing",
            "a `put` needs `content` (the whole file)",
            None,
        )]),
        (PushOp::Put, Some(content)) => {
            check_file(&path, content.as_bytes(), limits.max_file_bytes)?;
            Ok(CheckedChange {
                path,
                op: PushOp::Put,
                base: change.base_sha256,
                content: Some(content.clone()),
                named_paths: change.named_paths.clone(),
            })
        }
    }
}

/// The rules for one team file's bytes: an index's size, encoding and NUL bytes; a memory's
/// format and the team-scope type policy.
pub fn check_file(
    path: &MemoryPath,
    bytes: &[u8],
    max_file_bytes: usize,
) -> Result<(), Vec<Failure>> {
    let p = path.as_str();
    if path.is_index() {
        return check_index_bytes(p, bytes, max_file_bytes);
    }
    let doc = memory::validate(bytes, max_file_bytes).map_err(|problems| {
        problems
            .into_iter()
            .map(|pr| failure(p, pr.rule, pr.message, pr.line))
            .collect::<Vec<_>>()
    })?;
    check_team_type(p, &doc)
}

fn check_index_bytes(path: &str, bytes: &[u8], max_file_bytes: usize) -> Result<(), Vec<Failure>> {
    let mut f = Vec::new();
    if bytes.len() > max_file_bytes {
        f.push(failure(
            path,
            "too_large",
            format!(
                "the file is {} bytes; the limit is {max_file_bytes} bytes",
                bytes.len()
            ),
            None,
        ));
    }
    match std::str::from_utf8(bytes) {
        Err(e) => f.push(failure(
            path,
            "not_utf8",
            format!(
                "the file is not UTF-8 text (first bad byte at offset {})",
                e.valid_up_to()
            ),
            None,
        )),
        Ok(text) => {
            if let Some(pos) = text.find('\0') {
                let line = text[..pos].matches('\n').count() as u32 + 1;
                f.push(failure(
                    path,
                    "nul_byte",
                    "the file contains a NUL byte; memories are text",
                    Some(line),
                ));
            }
        }
    }
    if f.is_empty() { Ok(()) } else { Err(f) }
}

/// Team-scope policy: `type: user` memories are always private.
fn check_team_type(path: &str, doc: &MemoryDoc) -> Result<(), Vec<Failure>> {
    if doc.memory_type() == Some(MemoryType::User) {
        let mut f = failure(
            path,
            "type_user_in_team",
            "`type: user` memories describe one person and are always private; keep it in your private memory dir",
            Some(1),
        );
        f.category = Some("policy".into());
        return Err(vec![f]);
    }
    Ok(())
}

/// The secret and injection findings of every file a batch writes. CPU-bound.
pub fn scan_batch(checked: &[CheckedChange]) -> Vec<Failure> {
    checked
        .iter()
        .filter_map(|c| Some((c.path.as_str(), c.content.as_deref()?)))
        .flat_map(|(path, text)| crate::guard::scan_text(&shown(path), text))
        .collect()
}

/// The findings that still stop the push: those whose fingerprint the project's allowlist does
/// not name (a finding without a fingerprint always stops it).
pub fn allowlisted(mut findings: Vec<Failure>, allowed: &BTreeSet<String>) -> Vec<Failure> {
    findings.retain(|f| {
        f.fingerprint
            .as_ref()
            .is_none_or(|fp| !allowed.contains(fp))
    });
    findings
}

/// Whether a path is a memory (not an index) for the mass-delete count.
pub fn counts_as_memory(path: &str) -> bool {
    path.rsplit('/').next() != Some(crate::path::INDEX_FILE)
}

/// The mass-delete hold: deleting more than max(50, 10 %) of the project's live memory files
/// (indexes follow their memories and are not counted) is almost always a wiped folder.
pub fn mass_delete(memory_deletes: usize, live_memories: usize, allowed: bool) -> Option<Failure> {
    let threshold = MASS_DELETE_FLOOR.max(live_memories / 10);
    if memory_deletes <= threshold || allowed {
        return None;
    }
    Some(Failure::new(
        String::new(),
        "mass_delete",
        format!(
            "this push deletes {memory_deletes} of the project's {live_memories} memory files (more than {threshold}); that is almost always a wiped folder. \
             Nothing was applied; push with --allow-mass-delete if it is deliberate"
        ),
        None,
    ))
}

/// A team feedback memory of a batch that contradicts another team feedback memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeedbackConflict {
    /// The pushed memory.
    pub path: String,
    /// The team memory it contradicts.
    pub other: String,
    pub reason: String,
}

impl FeedbackConflict {
    pub fn message(&self) -> String {
        format!(
            "{} contradicts the team's {} ({}); reconcile them, add `supersedes: {}` to its frontmatter to replace that rule, or `compatible-with: {}` if both rules hold",
            self.path, self.other, self.reason, self.other, self.other
        )
    }
}

fn feedback_doc(text: &str) -> Option<MemoryDoc> {
    MemoryDoc::parse(text)
        .ok()
        .filter(|d| d.memory_type() == Some(MemoryType::Feedback))
}

/// Whether a text is a feedback memory (what [`team_feedback`] compares).
pub fn is_feedback(text: &str) -> bool {
    feedback_doc(text).is_some()
}

/// Feedback consistency of a batch. `batch` holds what the batch writes (path, text); `team`
/// holds the project's live team memories the batch does not touch (non-feedback ones are
/// ignored). Every pushed feedback memory is compared with those and with the batch's other
/// feedback memories.
///
/// `supersedes: <path>` is honoured in the memory being pushed, and only there: the pushed
/// memory replaces the one it names, which is deleted in the same revision (Ok lists those
/// paths). A `supersedes:` in a memory the batch does not write changes nothing. Two memories of
/// one batch that contradict each other pass when either supersedes the other.
///
/// `compatible-with: <path>` (one path, or a list) is the pusher's word that a pair the detector
/// calls a contradiction is not one: the pushed memory passes and both stay. Like
/// `supersedes:`, it counts only in a memory the batch writes (so it was written against the
/// rule as it stands), and only for the pairs it names.
pub fn team_feedback(
    batch: &[(&str, &str)],
    team: &[(&str, &str)],
) -> Result<Vec<String>, Vec<FeedbackConflict>> {
    team_feedback_decide(batch, team, &team_feedback_findings(batch, team))
}

/// The batch's feedback memories and what each is compared with, as [`team_feedback`] reads them.
struct FeedbackBatch<'a> {
    /// Pushed feedback memories: path, text, `supersedes:`.
    candidates: Vec<(&'a str, &'a str, Option<String>)>,
    /// The paths each pushed feedback memory names in `compatible-with:`.
    compatible: BTreeMap<&'a str, Vec<String>>,
    /// Live team feedback the batch does not touch.
    existing: Vec<(&'a str, &'a str)>,
}

impl<'a> FeedbackBatch<'a> {
    fn of(batch: &[(&'a str, &'a str)], team: &[(&'a str, &'a str)]) -> FeedbackBatch<'a> {
        let mut compatible = BTreeMap::new();
        let candidates: Vec<(&str, &str, Option<String>)> = batch
            .iter()
            .filter(|(p, _)| counts_as_memory(p))
            .filter_map(|(p, text)| {
                let doc = feedback_doc(text)?;
                compatible.insert(*p, doc.get_paths("compatible-with").unwrap_or_default());
                Some((
                    *p,
                    *text,
                    doc.get_str("supersedes").map(|s| s.trim().to_owned()),
                ))
            })
            .collect();
        let touched: BTreeSet<&str> = batch.iter().map(|(p, _)| *p).collect();
        let existing = if candidates.is_empty() {
            Vec::new()
        } else {
            team.iter()
                .filter(|(p, t)| !touched.contains(p) && counts_as_memory(p) && is_feedback(t))
                .copied()
                .collect()
        };
        FeedbackBatch {
            candidates,
            compatible,
            existing,
        }
    }

    /// Whether pushed memory `a` names `b` in its `compatible-with:`.
    fn declares_compatible(&self, a: &str, b: &str) -> bool {
        self.compatible
            .get(a)
            .is_some_and(|named| named.iter().any(|p| p == b))
    }
}

/// Every pair [`team_feedback`] decides on, as the detector finds it: `a` is a pushed feedback
/// memory, `b` a live team one or another of the batch (both kinds, in the order of the batch).
/// A caller with a model judge (`crate::feedback_judge`) judges these and decides with
/// [`team_feedback_decide`].
pub fn team_feedback_findings(batch: &[(&str, &str)], team: &[(&str, &str)]) -> Vec<Finding> {
    let fb = FeedbackBatch::of(batch, team);
    // Each candidate against the live memories, then against the other candidates: one
    // comparison, so that every memory is read once (not once per candidate), less the pairs of
    // a candidate with itself.
    let candidates: Vec<Note<'_>> = fb
        .candidates
        .iter()
        .map(|(p, t, _)| Note { path: p, text: t })
        .collect();
    let against: Vec<Note<'_>> = fb
        .existing
        .iter()
        .map(|(p, t)| Note { path: p, text: t })
        .chain(candidates.iter().copied())
        .collect();
    let mut out = feedback::compare(&candidates, &against);
    out.retain(|f| f.a != f.b);
    out
}

/// [`team_feedback`]'s decision over given findings (the detector's, or the judge's): each
/// contradiction refuses the batch unless one of the two supersedes the other or a pushed one
/// declares the other compatible.
pub fn team_feedback_decide(
    batch: &[(&str, &str)],
    team: &[(&str, &str)],
    findings: &[Finding],
) -> Result<Vec<String>, Vec<FeedbackConflict>> {
    let fb = FeedbackBatch::of(batch, team);
    let supersedes: BTreeMap<&str, Option<&str>> = fb
        .candidates
        .iter()
        .map(|(p, _, s)| (*p, s.as_deref()))
        .collect();
    let mut superseded = BTreeSet::new();
    let mut conflicts = Vec::new();
    for f in findings.iter().filter(|f| f.kind == Kind::Contradiction) {
        let Some(sup) = supersedes.get(f.a.as_str()) else {
            continue;
        };
        if *sup == Some(f.b.as_str()) {
            if fb.existing.iter().any(|(p, _)| *p == f.b) {
                superseded.insert(f.b.clone());
            }
            continue;
        }
        if supersedes.get(f.b.as_str()).copied().flatten() == Some(f.a.as_str()) {
            continue;
        }
        if fb.declares_compatible(&f.a, &f.b) || fb.declares_compatible(&f.b, &f.a) {
            continue;
        }
        conflicts.push(FeedbackConflict {
            path: f.a.clone(),
            other: f.b.clone(),
            reason: f.reason.clone(),
        });
    }
    if conflicts.is_empty() {
        Ok(superseded.into_iter().collect())
    } else {
        Err(conflicts)
    }
}

/// What the policy says of a batch, given everything about the project it depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every rule passes; the listed memories are superseded (deleted in the same revision).
    Accepted { superseded: Vec<String> },
    /// Refused (422), with every failure of the first rule that failed.
    Refused(Vec<Failure>),
    /// Refused (409) because team feedback contradicts.
    FeedbackConflict(Vec<FeedbackConflict>),
}

impl Verdict {
    /// The rule ids, as the server reports them.
    pub fn rules(&self) -> Vec<String> {
        let mut r: Vec<String> = match self {
            Verdict::Accepted { .. } => Vec::new(),
            Verdict::Refused(f) => f.iter().map(|f| f.rule.clone()).collect(),
            Verdict::FeedbackConflict(_) => vec!["feedback_conflict".to_owned()],
        };
        r.sort();
        r.dedup();
        r
    }
}

/// The project as far as the policy needs it: its live files and its allowlist.
#[derive(Debug, Clone, Default)]
pub struct ProjectState {
    /// Live path → content (indexes included).
    pub live: BTreeMap<String, String>,
    pub allowlist: BTreeSet<String>,
}

/// Every rule the server applies to a batch that has no edit conflicts, in the server's order,
/// over a project state the caller knows. This is the client's prediction of the server's answer
/// (and what the agreement test holds the server to).
pub fn judge(req: &PushRequest, project: &ProjectState, limits: Limits) -> Verdict {
    let checked = match check_batch(req, limits) {
        Ok(c) => c,
        Err(f) => return Verdict::Refused(f),
    };
    let findings = allowlisted(scan_batch(&checked), &project.allowlist);
    if !findings.is_empty() {
        return Verdict::Refused(findings);
    }
    let layout = layout_failures(&checked, project.live.keys().map(String::as_str));
    if !layout.is_empty() {
        return Verdict::Refused(layout);
    }
    let batch: Vec<(&str, &str)> = checked
        .iter()
        .filter_map(|c| Some((c.path.as_str(), c.content.as_deref()?)))
        .collect();
    let team: Vec<(&str, &str)> = project
        .live
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let superseded = match team_feedback(&batch, &team) {
        Ok(s) => s,
        Err(c) => return Verdict::FeedbackConflict(c),
    };
    let deletes: BTreeSet<&str> = checked
        .iter()
        .filter(|c| c.op == PushOp::Delete && project.live.contains_key(c.path.as_str()))
        .map(|c| c.path.as_str())
        .chain(superseded.iter().map(String::as_str))
        .filter(|p| counts_as_memory(p))
        .collect();
    let live_memories = project.live.keys().filter(|p| counts_as_memory(p)).count();
    if let Some(f) = mass_delete(deletes.len(), live_memories, req.allow_mass_delete) {
        return Verdict::Refused(vec![f]);
    }
    Verdict::Accepted { superseded }
}

/// The layout rule over a batch: every `put` must be able to live beside the live paths the batch
/// keeps, and beside the batch's other files.
pub fn layout_failures<'a>(
    checked: &[CheckedChange],
    live: impl IntoIterator<Item = &'a str>,
) -> Vec<Failure> {
    let removed: BTreeSet<&str> = checked.iter().map(|c| c.path.as_str()).collect();
    let (mut tree, _) =
        crate::tree::PathTree::build(live.into_iter().filter(|p| !removed.contains(p)));
    checked
        .iter()
        .filter(|c| c.op == PushOp::Put)
        .filter_map(|c| tree.insert(c.path.as_str()).err())
        .map(|clash| Failure::new(clash.path.clone(), clash.rule(), clash.message(), None))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_file_bytes: 102_400,
        max_changes_per_push: 2000,
    };

    fn mem(name: &str, kind: &str, body: &str, extra: &str) -> String {
        format!("---\nname: {name}\ndescription: about {name}\ntype: {kind}\n{extra}---\n{body}\n")
    }

    fn put(path: &str, content: &str) -> PushChange {
        PushChange {
            path: path.into(),
            op: PushOp::Put,
            base_sha256: None,
            content: Some(content.into()),
            named_paths: Vec::new(),
        }
    }

    fn del(path: &str) -> PushChange {
        PushChange {
            path: path.into(),
            op: PushOp::Delete,
            base_sha256: None,
            content: None,
            named_paths: Vec::new(),
        }
    }

    fn req(changes: Vec<PushChange>) -> PushRequest {
        PushRequest {
            changes,
            allow_mass_delete: false,
            allow_purged: false,
            provenance: None,
        }
    }

    #[test]
    fn index_rules_cover_size_utf8_and_nul() {
        let p = MemoryPath::parse("MEMORY.md").unwrap();
        assert!(check_file(&p, b"- [a](a.md) - a\n", 100).is_ok());
        let rules = |b: &[u8], max| {
            check_file(&p, b, max)
                .unwrap_err()
                .into_iter()
                .map(|f| f.rule)
                .collect::<Vec<_>>()
        };
        assert_eq!(rules(b"a\0b", 100), ["nul_byte"]);
        assert_eq!(rules(b"\xff\xfe", 100), ["not_utf8"]);
        assert_eq!(rules(b"0123456789", 5), ["too_large"]);
    }

    #[test]
    fn mass_delete_counts_memories_against_memories() {
        assert!(mass_delete(50, 100, false).is_none());
        assert_eq!(mass_delete(51, 100, false).unwrap().rule, "mass_delete");
        assert!(mass_delete(51, 100, true).is_none());
        assert!(mass_delete(100, 1000, false).is_none());
        assert!(mass_delete(101, 1000, false).is_some());
    }

    #[test]
    fn supersedes_counts_only_in_the_pushed_memory() {
        let old = mem("tabs", "feedback", "Always indent with tabs.", "");
        let new = mem(
            "spaces",
            "feedback",
            "Never indent with tabs; use spaces.",
            "supersedes: tabs.md\n",
        );
        let unmarked = mem(
            "spaces",
            "feedback",
            "Never indent with tabs; use spaces.",
            "",
        );
        // The new rule supersedes the old: accepted, and the old one goes.
        assert_eq!(
            team_feedback(&[("spaces.md", &new)], &[("tabs.md", &old)]),
            Ok(vec!["tabs.md".to_owned()])
        );
        // Without the marker it is a conflict.
        assert!(team_feedback(&[("spaces.md", &unmarked)], &[("tabs.md", &old)]).is_err());
        // A `supersedes:` in an unchanged team memory changes nothing for the pushed one.
        let old_marked = mem(
            "tabs",
            "feedback",
            "Always indent with tabs.",
            "supersedes: spaces.md\n",
        );
        assert!(team_feedback(&[("spaces.md", &unmarked)], &[("tabs.md", &old_marked)]).is_err());
    }

    #[test]
    fn compatible_with_lets_a_named_pair_through_and_keeps_both() {
        let old = mem("tabs", "feedback", "Always indent with tabs.", "");
        let text = "Never indent with tabs; use spaces.";
        let declared = mem("spaces", "feedback", text, "compatible-with: tabs.md\n");
        let listed = mem(
            "spaces",
            "feedback",
            text,
            "compatible-with: [other.md, tabs.md]\n",
        );
        let elsewhere = mem("spaces", "feedback", text, "compatible-with: other.md\n");
        // Declared (one path or in a list): accepted, and nothing is deleted.
        for pushed in [&declared, &listed] {
            assert_eq!(
                team_feedback(&[("spaces.md", pushed)], &[("tabs.md", &old)]),
                Ok(vec![])
            );
        }
        // Naming another memory does not let this pair through, and the refusal says how.
        let refused =
            team_feedback(&[("spaces.md", &elsewhere)], &[("tabs.md", &old)]).unwrap_err();
        assert_eq!(refused.len(), 1);
        assert!(
            refused[0].message().contains("`compatible-with: tabs.md`"),
            "{}",
            refused[0].message()
        );
        // A declaration in an unchanged team memory counts for nothing.
        let old_declared = mem(
            "tabs",
            "feedback",
            "Always indent with tabs.",
            "compatible-with: spaces.md\n",
        );
        let plain = mem("spaces", "feedback", text, "");
        assert!(team_feedback(&[("spaces.md", &plain)], &[("tabs.md", &old_declared)]).is_err());
        // Within one batch, either side's declaration covers the pair.
        assert_eq!(
            team_feedback(&[("spaces.md", &plain), ("tabs.md", &old_declared)], &[]),
            Ok(vec![])
        );
        assert!(team_feedback(&[("spaces.md", &plain), ("tabs.md", &old)], &[]).is_err());
    }

    #[test]
    fn the_decision_follows_the_findings_it_is_given() {
        let old = mem("tabs", "feedback", "Always indent with tabs.", "");
        let new = mem(
            "spaces",
            "feedback",
            "Never indent with tabs; use spaces.",
            "",
        );
        let (batch, team) = ([("spaces.md", new.as_str())], [("tabs.md", old.as_str())]);
        let found = team_feedback_findings(&batch, &team);
        assert_eq!(found.len(), 1);
        assert_eq!(
            (found[0].a.as_str(), found[0].b.as_str()),
            ("spaces.md", "tabs.md")
        );
        assert_eq!(found[0].kind, Kind::Contradiction);
        assert!(team_feedback_decide(&batch, &team, &found).is_err());
        // A judge that calls the pair compatible (or drops it) lets it through.
        let related = Finding {
            kind: Kind::Related,
            ..found[0].clone()
        };
        assert_eq!(team_feedback_decide(&batch, &team, &[related]), Ok(vec![]));
        assert_eq!(team_feedback_decide(&batch, &team, &[]), Ok(vec![]));
        // And one that calls a related pair a contradiction refuses it, with its reason.
        let calm = mem("spaces", "feedback", "Prefer tabs in Makefiles.", "");
        let batch = [("spaces.md", calm.as_str())];
        let judged: Vec<Finding> = team_feedback_findings(&batch, &team)
            .into_iter()
            .map(|f| Finding {
                kind: Kind::Contradiction,
                reason: "model judge (m): r".into(),
                ..f
            })
            .collect();
        if let Some(f) = judged.first() {
            let err = team_feedback_decide(&batch, &team, &judged).unwrap_err();
            assert_eq!(err[0].reason, "model judge (m): r");
            assert_eq!(err[0].other, f.b);
        }
    }

    #[test]
    fn judge_runs_the_rules_in_the_servers_order() {
        let mut project = ProjectState::default();
        project
            .live
            .insert("seed.md".into(), mem("seed", "project", "Seed.", ""));
        // Static rules first, even when other rules would fail too.
        let v = judge(
            &req(vec![
                put("me.md", &mem("me", "user", "I like tabs.", "")),
                put("seed.md/x.md", "x"),
            ]),
            &project,
            LIMITS,
        );
        assert_eq!(v.rules(), ["frontmatter_missing", "type_user_in_team"]);
        let v = judge(
            &req(vec![put("seed.md/x.md", &mem("x", "project", "x", ""))]),
            &project,
            LIMITS,
        );
        assert_eq!(v.rules(), ["path_clash"]);
        let v = judge(
            &req(vec![
                del("seed.md"),
                put("seed.md/x.md", &mem("x", "project", "x", "")),
            ]),
            &project,
            LIMITS,
        );
        assert_eq!(v, Verdict::Accepted { superseded: vec![] });
    }
}
