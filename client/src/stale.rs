//! Memories checked against the code: the repository paths a memory names
//! (`memsync_core::refs`), which exist in the working tree when it is pushed (sent as
//! `named_paths`), and which are gone now (the memory may be stale).
//!
//! A memory *names* a path when it writes it in backticks with a directory (`` `src/db.rs` ``),
//! or when the path was recorded in its `named_paths`: it existed in the author's working tree
//! when the memory was written. A bare file name (`pool.rs`, even backticked) may live anywhere
//! in the tree, so it counts only when it was recorded, found at the repository root.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use memsync_core::policy::MAX_NAMED_PATHS;
use memsync_core::refs::path_tokens;
use memsync_core::wire::Lifecycle;
use serde::Serialize;

use crate::state::State;

/// Whether `path` (relative, `/`-separated, no `..`: a `PathToken`) exists under `root`. A
/// symlink counts as existing, dangling or not: it is the repository's own entry.
fn exists(root: &Path, path: &str) -> bool {
    std::fs::symlink_metadata(root.join(path)).is_ok()
}

/// The paths `content` names that exist in the working tree at `root` now: what a push sends as
/// `named_paths` (at most `MAX_NAMED_PATHS`, in order of first mention).
pub fn named_paths(root: &Path, content: &str) -> Vec<String> {
    path_tokens(content)
        .into_iter()
        .filter(|t| exists(root, &t.path))
        .map(|t| t.path)
        .take(MAX_NAMED_PATHS)
        .collect()
}

/// Which memories dir a stale memory is in.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Team,
    Private,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Team => "team",
            Scope::Private => "private",
        }
    }
}

/// A memory that names repository paths that no longer exist.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Stale {
    /// Relative to its memories dir.
    pub path: String,
    pub scope: Scope,
    /// The named paths that are gone, sorted.
    pub missing: Vec<String>,
    /// `dated` for a note about a moment (a date in its name): expected to age.
    pub lifecycle: Lifecycle,
}

impl Stale {
    /// One line for a person or an agent:
    /// "team memory `db.md` may be stale: names `src/old.rs`, which no longer exists".
    pub fn sentence(&self) -> String {
        let names: Vec<String> = self.missing.iter().map(|m| format!("`{m}`")).collect();
        let dated = match self.lifecycle {
            Lifecycle::Dated => " (a dated note)",
            Lifecycle::Evergreen => "",
        };
        let which = if self.missing.len() == 1 {
            "which no longer exists"
        } else {
            "which no longer exist"
        };
        format!(
            "{} memory `{}`{dated} may be stale: names {}, {which}",
            self.scope.as_str(),
            self.path,
            names.join(", ")
        )
    }
}

/// The memories of one dir that name paths gone from the working tree at `root`. `memories` are
/// (path, text); `recorded` the `named_paths` kept for each (team memories only).
pub fn find_stale(
    root: &Path,
    scope: Scope,
    memories: &[(String, String)],
    recorded: &BTreeMap<String, Vec<String>>,
) -> Vec<Stale> {
    let mut out = Vec::new();
    for (path, text) in memories {
        let mut named: BTreeSet<String> = path_tokens(text)
            .into_iter()
            .filter(|t| t.backticked && t.path.contains('/'))
            .map(|t| t.path)
            .collect();
        if let Some(r) = recorded.get(path) {
            // Only what the text still names: an edit that dropped a path dropped the claim.
            let in_text: BTreeSet<String> = path_tokens(text).into_iter().map(|t| t.path).collect();
            named.extend(r.iter().filter(|p| in_text.contains(*p)).cloned());
        }
        let missing: Vec<String> = named.into_iter().filter(|p| !exists(root, p)).collect();
        if !missing.is_empty() {
            out.push(Stale {
                path: path.clone(),
                scope,
                missing,
                lifecycle: Lifecycle::of_path(path),
            });
        }
    }
    out
}

/// Team and private memories that name repository paths gone from the working tree.
pub fn possibly_stale(
    root: &Path,
    state: &State,
    team: &[(String, String)],
    private: &[(String, String)],
) -> Vec<Stale> {
    let recorded: BTreeMap<String, Vec<String>> = state
        .files
        .iter()
        .filter(|(_, t)| !t.named_paths.is_empty())
        .map(|(p, t)| (p.clone(), t.named_paths.clone()))
        .collect();
    let mut found = find_stale(root, Scope::Team, team, &recorded);
    found.extend(find_stale(root, Scope::Private, private, &BTreeMap::new()));
    found
}

/// The context lines for a session: one per stale memory, at most `cap`, then how many more.
pub fn context_lines(stale: &[Stale], cap: usize) -> Vec<String> {
    let mut lines: Vec<String> = stale
        .iter()
        .take(cap)
        .map(|s| format!("memsync: {}", s.sentence()))
        .collect();
    if stale.len() > cap {
        lines.push(format!(
            "memsync: and {} more possibly stale memories (`memsync check` lists them all)",
            stale.len() - cap
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[&str]) -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        for f in files {
            let p = tmp.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        tmp
    }

    #[test]
    fn named_paths_are_the_tokens_that_exist_now() {
        let t = tree(&["src/db/pool.rs", "Cargo.toml", "migrations/001.sql"]);
        let text = "Pool in `src/db/pool.rs`, see Cargo.toml, migrations/ and src/gone.rs; \
                    and/or `src/planned.rs`";
        assert_eq!(
            named_paths(t.path(), text),
            ["src/db/pool.rs", "Cargo.toml", "migrations"]
        );
        let many: String = (0..100).map(|i| format!("`f{i}.rs` ")).collect();
        let files: Vec<String> = (0..100).map(|i| format!("f{i}.rs")).collect();
        let refs: Vec<&str> = files.iter().map(String::as_str).collect();
        let t = tree(&refs);
        assert_eq!(named_paths(t.path(), &many).len(), MAX_NAMED_PATHS);
    }

    #[test]
    fn stale_when_a_backticked_path_or_a_recorded_one_is_gone() {
        let t = tree(&["src/db/pool.rs", "Cargo.toml"]);
        let memories = vec![
            (
                "db.md".to_owned(),
                "Pool in `src/db/pool.rs`; old code in `src/old.rs`.".to_owned(),
            ),
            // Bare mentions count only when recorded.
            (
                "bare.md".to_owned(),
                "See src/removed.rs and lib/util.rs.".to_owned(),
            ),
            // A backticked bare file name alone: it may live anywhere.
            ("name.md".to_owned(), "The `pool.rs` file.".to_owned()),
            (
                "2026-11-30-outage.md".to_owned(),
                "Caused by `src/a.rs` and `src/b.rs`.".to_owned(),
            ),
            ("fine.md".to_owned(), "Uses `Cargo.toml`.".to_owned()),
        ];
        let recorded = BTreeMap::from([
            ("bare.md".to_owned(), vec!["src/removed.rs".to_owned()]),
            // Recorded, but the text no longer names it.
            ("fine.md".to_owned(), vec!["src/dropped.rs".to_owned()]),
        ]);
        let stale = find_stale(t.path(), Scope::Team, &memories, &recorded);
        let got: Vec<(&str, Vec<&str>, Lifecycle)> = stale
            .iter()
            .map(|s| {
                (
                    s.path.as_str(),
                    s.missing.iter().map(String::as_str).collect(),
                    s.lifecycle,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("db.md", vec!["src/old.rs"], Lifecycle::Evergreen),
                ("bare.md", vec!["src/removed.rs"], Lifecycle::Evergreen),
                (
                    "2026-11-30-outage.md",
                    vec!["src/a.rs", "src/b.rs"],
                    Lifecycle::Dated
                ),
            ]
        );
        assert_eq!(
            stale[0].sentence(),
            "team memory `db.md` may be stale: names `src/old.rs`, which no longer exists"
        );
        assert_eq!(
            stale[2].sentence(),
            "team memory `2026-11-30-outage.md` (a dated note) may be stale: names `src/a.rs`, `src/b.rs`, which no longer exist"
        );
    }

    #[test]
    fn context_lines_are_capped() {
        let s = |i: usize| Stale {
            path: format!("m{i}.md"),
            scope: Scope::Private,
            missing: vec!["src/x.rs".into()],
            lifecycle: Lifecycle::Evergreen,
        };
        let all: Vec<Stale> = (0..13).map(s).collect();
        let lines = context_lines(&all, 10);
        assert_eq!(lines.len(), 11);
        assert!(lines[0].starts_with("memsync: private memory `m0.md` may be stale"));
        assert_eq!(
            lines[10],
            "memsync: and 3 more possibly stale memories (`memsync check` lists them all)"
        );
        assert_eq!(context_lines(&all[..2], 10).len(), 2);
    }
}
