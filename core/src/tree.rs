//! Which memory paths can live side by side in one team directory on every filesystem a team
//! uses.
//!
//! Two valid paths can still collide on disk:
//! - one names a file where the other needs a directory (`seed.md` and `seed.md/x.md`, or
//!   `MEMORY.md/x.md` beside the root index);
//! - they differ only in letter case or Unicode normalisation (`Notes.md` and `notes.md`,
//!   `memory.md` beside `MEMORY.md`, `Infra/a.md` beside `infra/b.md`), which the case-insensitive
//!   filesystems of macOS and Windows store as one file or one directory.
//!
//! Every directory that holds a memory also holds its `MEMORY.md` (the server maintains one per
//! directory), so a path brings the indexes of all its ancestor directories with it.
//!
//! The server refuses a push that would create a clash; the client refuses to write a pulled
//! file that clashes with one it already has. Both use [`PathTree`].

use std::collections::HashMap;

use unicode_normalization::UnicodeNormalization;

use crate::path::INDEX_FILE;

/// The rule id of every clash.
pub const RULE: &str = "path_clash";

/// How `path` collides with `other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClashKind {
    /// The two differ only in letter case or normalisation (in the whole path, or in a
    /// directory on the way).
    CaseVariant,
    /// `path` needs a directory where `other` is a file.
    DirectoryOverFile,
    /// `path` is a file where `other` needs a directory.
    FileOverDirectory,
}

/// A path that cannot join the tree, and the path it collides with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clash {
    pub path: String,
    /// The existing path (or the directory, or the implied `MEMORY.md`) it collides with.
    pub other: String,
    pub kind: ClashKind,
}

impl Clash {
    pub fn rule(&self) -> &'static str {
        RULE
    }

    /// What is wrong and how to fix it.
    pub fn message(&self) -> String {
        let Clash { path, other, kind } = self;
        match kind {
            ClashKind::CaseVariant => format!(
                "`{path}` differs from `{other}` only in letter case: on macOS and Windows they are the same name. \
                 Use the existing spelling `{other}`, or choose a different name"
            ),
            ClashKind::DirectoryOverFile => format!(
                "`{path}` needs a directory `{other}`, but `{other}` is a file: \
                 move the memory to another directory, e.g. `{}`",
                suggestion(path, other)
            ),
            ClashKind::FileOverDirectory => format!(
                "`{path}` would be a file, but `{other}` needs a directory of that name: choose another file name"
            ),
        }
    }
}

fn suggestion(path: &str, dir: &str) -> String {
    let stem = dir.strip_suffix(".md").unwrap_or(dir);
    let rest = path.strip_prefix(dir).unwrap_or(path);
    format!("{stem}{rest}")
}

/// Case-folded, NFKC-normalised form of a name: two names with the same key are one name on a
/// case-insensitive filesystem.
pub fn fold(s: &str) -> String {
    s.nfkc().flat_map(char::to_lowercase).collect()
}

#[derive(Debug, Clone)]
struct Node {
    spelling: String,
    dir: bool,
    /// The path that put this node in the tree (for messages about implied indexes and dirs).
    owner: String,
}

/// The directories and files of a set of paths, keyed by their folded names.
#[derive(Debug, Default, Clone)]
pub struct PathTree {
    nodes: HashMap<String, Node>,
}

/// Every node a path occupies: its directories, its ancestors' indexes, and itself.
fn nodes_of(path: &str) -> Vec<(String, bool)> {
    let segs: Vec<&str> = path.split('/').collect();
    let mut out = Vec::with_capacity(segs.len() * 2);
    let mut prefix = String::new();
    for (i, seg) in segs.iter().enumerate() {
        let index = if prefix.is_empty() {
            INDEX_FILE.to_owned()
        } else {
            format!("{prefix}/{INDEX_FILE}")
        };
        out.push((index, false));
        if !prefix.is_empty() {
            prefix.push('/');
        }
        prefix.push_str(seg);
        out.push((prefix.clone(), i + 1 < segs.len()));
    }
    out
}

impl PathTree {
    pub fn new() -> PathTree {
        PathTree::default()
    }

    /// The first collision `path` would have with the tree (or with itself, as
    /// `MEMORY.md/x.md` has: the root index and a directory of one name), if any.
    pub fn check(&self, path: &str) -> Option<Clash> {
        let mut own: HashMap<String, Node> = HashMap::new();
        for (name, dir) in nodes_of(path) {
            let key = fold(&name);
            let Some(node) = self.nodes.get(&key).or_else(|| own.get(&key)) else {
                own.insert(
                    key,
                    Node {
                        spelling: name,
                        dir,
                        owner: path.to_owned(),
                    },
                );
                continue;
            };
            let kind = if node.dir != dir {
                if dir {
                    ClashKind::DirectoryOverFile
                } else {
                    ClashKind::FileOverDirectory
                }
            } else if node.spelling != name {
                ClashKind::CaseVariant
            } else {
                continue;
            };
            // Name the existing thing the user can see: the file, the directory, or the path
            // that needs the directory.
            let other = match kind {
                ClashKind::FileOverDirectory => node.owner.clone(),
                ClashKind::CaseVariant if dir => format!("{}/", node.spelling),
                _ => node.spelling.clone(),
            };
            return Some(Clash {
                path: path.to_owned(),
                other,
                kind,
            });
        }
        None
    }

    /// Adds `path` unless it collides with what is already there.
    pub fn insert(&mut self, path: &str) -> Result<(), Clash> {
        if let Some(c) = self.check(path) {
            return Err(c);
        }
        for (name, dir) in nodes_of(path) {
            self.nodes.entry(fold(&name)).or_insert_with(|| Node {
                spelling: name,
                dir,
                owner: path.to_owned(),
            });
        }
        Ok(())
    }

    /// Builds a tree of `existing` paths, skipping any that already collide with earlier ones
    /// (data stored before the rule existed), and returns it with those skipped.
    pub fn build<'a>(existing: impl IntoIterator<Item = &'a str>) -> (PathTree, Vec<Clash>) {
        let mut tree = PathTree::new();
        let mut skipped = Vec::new();
        for p in existing {
            if let Err(c) = tree.insert(p) {
                skipped.push(c);
            }
        }
        (tree, skipped)
    }

    /// The folded names a path occupies (its directories, its ancestors' indexes and itself):
    /// what a store must look up to find every path that could collide with it.
    pub fn lookup_keys(path: &str) -> LookupKeys {
        let mut keys = LookupKeys::default();
        for (name, dir) in nodes_of(path) {
            let f = fold(&name);
            if dir || name == path {
                keys.prefixes.push(format!("{f}/"));
            }
            keys.exact.push(f);
        }
        keys.exact.sort();
        keys.exact.dedup();
        keys.prefixes.sort();
        keys.prefixes.dedup();
        keys
    }
}

/// Which stored paths can collide with a new one: those whose folded form equals one of
/// `exact`, or starts with one of `prefixes`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LookupKeys {
    pub exact: Vec<String>,
    pub prefixes: Vec<String>,
}

impl LookupKeys {
    pub fn extend(&mut self, other: LookupKeys) {
        self.exact.extend(other.exact);
        self.prefixes.extend(other.prefixes);
        self.exact.sort();
        self.exact.dedup();
        self.prefixes.sort();
        self.prefixes.dedup();
    }

    /// Whether a stored path is one of those these keys select.
    pub fn selects(&self, stored: &str) -> bool {
        let f = fold(stored);
        self.exact.contains(&f) || self.prefixes.iter().any(|p| f.starts_with(p.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clash(existing: &[&str], new: &str) -> Option<ClashKind> {
        let (tree, _) = PathTree::build(existing.iter().copied());
        tree.check(new).map(|c| c.kind)
    }

    #[test]
    fn file_and_directory_of_one_name_clash_both_ways() {
        use ClashKind::*;
        assert_eq!(clash(&["seed.md"], "seed.md/x.md"), Some(DirectoryOverFile));
        assert_eq!(clash(&["seed.md/x.md"], "seed.md"), Some(FileOverDirectory));
        assert_eq!(clash(&[], "MEMORY.md/x.md"), Some(DirectoryOverFile));
        assert_eq!(
            clash(&["a.md"], "MEMORY.md/x.md/y.md"),
            Some(DirectoryOverFile)
        );
        assert_eq!(
            clash(&["a/b.md"], "a/MEMORY.md/c.md"),
            Some(DirectoryOverFile)
        );
        assert_eq!(clash(&["x/y.md/z.md"], "x/y.md"), Some(FileOverDirectory));
        // Stored before the rule: skipped when the tree is built, so it blocks nothing.
        assert_eq!(PathTree::build(["x/MEMORY.md/y.md"]).1.len(), 1);
    }

    #[test]
    fn case_variants_clash_with_files_dirs_and_indexes() {
        use ClashKind::*;
        assert_eq!(clash(&["Notes.md"], "notes.md"), Some(CaseVariant));
        assert_eq!(clash(&["a.md"], "memory.md"), Some(CaseVariant));
        assert_eq!(clash(&[], "Memory.md"), Some(CaseVariant));
        assert_eq!(clash(&["Infra/a.md"], "infra/b.md"), Some(CaseVariant));
        assert_eq!(clash(&["infra/a.md"], "infra/MEMORY.md"), None);
        assert_eq!(clash(&["infra/a.md"], "Infra/memory.md"), Some(CaseVariant));
    }

    #[test]
    fn what_may_live_together_does() {
        assert_eq!(clash(&["a.md", "b/c.md", "MEMORY.md"], "b/d.md"), None);
        assert_eq!(clash(&["a.md"], "a.md"), None);
        assert_eq!(clash(&["seed.md"], "seed/x.md"), None);
        assert_eq!(clash(&["b/MEMORY.md"], "b/c/d.md"), None);
        assert_eq!(clash(&["notes.md"], "notes-2.md"), None);
    }

    #[test]
    fn build_skips_stored_clashes_and_keeps_the_first() {
        let (tree, skipped) = PathTree::build(["Notes.md", "notes.md"]);
        assert_eq!(skipped.len(), 1);
        assert_eq!(skipped[0].path, "notes.md");
        assert_eq!(tree.check("Notes.md"), None);
    }

    #[test]
    fn messages_name_both_paths() {
        let (tree, _) = PathTree::build(["seed.md"]);
        let c = tree.check("seed.md/x.md").unwrap();
        assert!(
            c.message().contains("`seed.md` is a file"),
            "{}",
            c.message()
        );
        assert!(c.message().contains("`seed/x.md`"), "{}", c.message());
        let (tree, _) = PathTree::build(["Notes.md"]);
        let c = tree.check("notes.md").unwrap();
        assert_eq!(c.other, "Notes.md");
        assert!(c.message().contains("letter case"));
    }

    #[test]
    fn lookup_keys_select_every_path_that_could_clash() {
        let stored = [
            "seed.md",
            "Seed.md/a.md",
            "memory.md",
            "Infra/x.md",
            "infra2/x.md",
            "other.md",
        ];
        let mut keys = PathTree::lookup_keys("seed.md/x.md");
        keys.extend(PathTree::lookup_keys("infra/y.md"));
        let picked: Vec<&str> = stored.iter().copied().filter(|s| keys.selects(s)).collect();
        assert_eq!(
            picked,
            ["seed.md", "Seed.md/a.md", "memory.md", "Infra/x.md"]
        );
    }
}
