//! Static checks of a push batch, before any database work: paths, sizes, encodings, the memory
//! format and the type policy. Every failure of the batch is reported at once.

use std::collections::HashSet;

use memsync_core::memory::{self, MemoryDoc};
use memsync_core::wire::{Failure, PushChange, PushOp, PushRequest};
use memsync_core::{MemoryPath, MemoryType, Sha256};

/// One change that passed the static checks.
#[derive(Debug, Clone)]
pub struct CheckedChange {
    pub path: MemoryPath,
    pub op: PushOp,
    pub base: Option<Sha256>,
    pub content: Option<String>,
}

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_file_bytes: usize,
    pub max_changes_per_push: usize,
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

pub fn check_batch(req: &PushRequest, limits: Limits) -> Result<Vec<CheckedChange>, Vec<Failure>> {
    let mut failures = Vec::new();
    if req.changes.len() > limits.max_changes_per_push {
        failures.push(failure(
            "",
            "too_many_changes",
            format!(
                "the push carries {} changes; at most {} are accepted per push: split it into smaller pushes",
                req.changes.len(),
                limits.max_changes_per_push
            ),
            None,
        ));
        return Err(failures);
    }
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(req.changes.len());
    for change in &req.changes {
        match check_change(change, limits) {
            Ok(c) => {
                if !seen.insert(c.path.clone()) {
                    failures.push(failure(
                        &change.path,
                        "duplicate_path",
                        "the same path appears twice in one push; send each path once",
                        None,
                    ));
                } else {
                    out.push(c);
                }
            }
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
    match change.op {
        PushOp::Delete => {
            if change.content.is_some() {
                return Err(vec![failure(
                    &change.path,
                    "delete_with_content",
                    "a delete carries no content; drop `content` or use op `put`",
                    None,
                )]);
            }
            Ok(CheckedChange {
                path,
                op: PushOp::Delete,
                base: change.base_sha256,
                content: None,
            })
        }
        PushOp::Put => {
            let Some(content) = &change.content else {
                return Err(vec![failure(
                    &change.path,
                    "content_missing",
                    "a `put` needs `content` (the whole file)",
                    None,
                )]);
            };
            if path.is_index() {
                check_index_text(&change.path, content, limits)?;
            } else {
                let doc = memory::validate(content.as_bytes(), limits.max_file_bytes).map_err(
                    |problems| {
                        problems
                            .into_iter()
                            .map(|p| failure(&change.path, p.rule, p.message, p.line))
                            .collect::<Vec<_>>()
                    },
                )?;
                check_team_policy(&change.path, &doc)?;
            }
            Ok(CheckedChange {
                path,
                op: PushOp::Put,
                base: change.base_sha256,
                content: Some(content.clone()),
            })
        }
    }
}

fn check_index_text(path: &str, content: &str, limits: Limits) -> Result<(), Vec<Failure>> {
    let mut f = Vec::new();
    if content.len() > limits.max_file_bytes {
        f.push(failure(
            path,
            "too_large",
            format!(
                "the file is {} bytes; the limit is {} bytes",
                content.len(),
                limits.max_file_bytes
            ),
            None,
        ));
    }
    if let Some(pos) = content.find('\0') {
        let line = content[..pos].matches('\n').count() as u32 + 1;
        f.push(failure(
            path,
            "nul_byte",
            "the file contains a NUL byte; memories are text",
            Some(line),
        ));
    }
    if f.is_empty() { Ok(()) } else { Err(f) }
}

/// Team-scope policy: `type: user` memories are always private.
pub fn check_team_policy(path: &str, doc: &MemoryDoc) -> Result<(), Vec<Failure>> {
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

/// The secret and injection scan of every file a batch writes. CPU-bound: callers run it off
/// the async runtime.
pub fn scan_batch(checked: &[CheckedChange]) -> Vec<Failure> {
    checked
        .iter()
        .filter_map(|c| Some((c.path.as_str(), c.content.as_deref()?)))
        .flat_map(|(path, text)| memsync_core::guard::scan_text(&shown(path), text))
        .collect()
}
