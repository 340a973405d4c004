//! Keeps every directory's `MEMORY.md` consistent within a push: a pushed index is merged per
//! entry with the server's, entries whose file is gone are dropped, every memory gets an entry
//! (from its frontmatter), every subdirectory holding memories is linked from its parent, and no
//! index grows past what agents load (200 lines / 25,000 bytes).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use memsync_core::index::{self, Expected, Index};
use memsync_core::wire::Failure;
use memsync_core::{MemoryDoc, Sha256};
use sqlx::PgConnection;

use crate::store::memories::{self, NewState, Stored};
use memsync_core::ProjectId;

/// What the index step needs from the rest of the push.
pub struct IndexInput<'a> {
    /// New states of memory (non-index) files decided so far, by path.
    pub writes: &'a BTreeMap<String, NewState>,
    /// The stored state of every path the push touches.
    pub current: &'a HashMap<String, Stored>,
    /// Index files the client pushed: path → (base, content; None for a delete).
    pub pushed: &'a BTreeMap<String, (Option<Sha256>, Option<String>)>,
}

pub struct IndexResult {
    pub states: Vec<NewState>,
    pub failures: Vec<Failure>,
}

fn parent(dir: &str) -> Option<&str> {
    if dir.is_empty() {
        None
    } else {
        Some(dir.rsplit_once('/').map_or("", |(p, _)| p))
    }
}

fn dir_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

fn is_live(current: &HashMap<String, Stored>, path: &str) -> bool {
    current.get(path).is_some_and(|s| !s.deleted)
}

pub async fn maintain(
    conn: &mut PgConnection,
    project: &ProjectId,
    input: IndexInput<'_>,
) -> sqlx::Result<IndexResult> {
    // Dirs to look at, deepest first: (depth, dir). A dir whose index appears or disappears
    // makes its parent's index gain or lose the link to it, so the parent is queued then.
    let depth = |d: &str| {
        if d.is_empty() {
            0
        } else {
            d.matches('/').count() + 1
        }
    };
    let mut pending: BTreeSet<(usize, String)> = BTreeSet::new();
    for p in input.pushed.keys() {
        pending.insert((depth(dir_of(p)), dir_of(p).to_owned()));
    }
    for (path, st) in input.writes {
        if is_live(input.current, path) != st.content.is_some() {
            pending.insert((depth(dir_of(path)), dir_of(path).to_owned()));
        }
    }
    let mut states = Vec::new();
    let mut failures = Vec::new();
    while let Some((_, dir)) = pending.pop_last() {
        let index_path = join(&dir, "MEMORY.md");
        let stored = memories::current(conn, project, std::slice::from_ref(&index_path))
            .await?
            .remove(&index_path)
            .filter(|s| !s.deleted);
        let server_text = stored.as_ref().and_then(|s| s.content.clone());
        let mut idx = match input.pushed.get(&index_path) {
            Some((base, Some(ours))) => {
                let server_sha = stored.as_ref().and_then(|s| s.sha256);
                if server_text.is_none() || *base == server_sha {
                    Index::parse(ours)
                } else {
                    let base_text = match base {
                        Some(b) => memories::version_content(conn, project, &index_path, b)
                            .await?
                            .unwrap_or_default(),
                        None => String::new(),
                    };
                    index::merge(
                        &Index::parse(&base_text),
                        &Index::parse(ours),
                        &Index::parse(server_text.as_deref().unwrap_or("")),
                    )
                }
            }
            // A pushed delete of an index is not honoured while memories remain: the index
            // is derived from them.
            _ => Index::parse(server_text.as_deref().unwrap_or("")),
        };

        // Live memory files under this dir after this push.
        let mut live: BTreeSet<String> = memories::live_paths_under(conn, project, &dir)
            .await?
            .into_iter()
            .collect();
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        for (path, st) in input.writes.range(prefix.clone()..) {
            if !path.starts_with(&prefix) {
                break;
            }
            if st.content.is_some() {
                live.insert(path.clone());
            } else {
                live.remove(path);
            }
        }
        // Expected targets, relative to this dir: its own memory files (with their full path)
        // and the indexes of its subdirs that hold memories.
        let mut expected: BTreeMap<String, Option<String>> = BTreeMap::new();
        for p in &live {
            let rest = &p[prefix.len()..];
            if rest == "MEMORY.md" || rest.ends_with("/MEMORY.md") {
                continue;
            }
            match rest.split_once('/') {
                None => expected.insert(rest.to_owned(), Some(p.clone())),
                Some((sub, _)) => expected.insert(format!("{sub}/MEMORY.md"), None),
            };
        }
        let exists_after = !expected.is_empty() || dir.is_empty();
        if stored.is_some() != exists_after
            && let Some(p) = parent(&dir)
        {
            pending.insert((depth(p), p.to_owned()));
        }
        let missing: Vec<String> = expected
            .iter()
            .filter_map(|(target, full)| full.as_ref().filter(|_| idx.entry(target).is_none()))
            .filter(|full| !input.writes.contains_key(*full))
            .cloned()
            .collect();
        let fetched = if missing.is_empty() {
            HashMap::new()
        } else {
            memories::live_contents(conn, project, &missing).await?
        };
        let expected: BTreeMap<String, Expected> = expected
            .into_iter()
            .map(|(target, full)| {
                let (title, hook) = match &full {
                    Some(full) => {
                        let text = input
                            .writes
                            .get(full)
                            .and_then(|s| s.content.as_deref())
                            .or_else(|| fetched.get(full).map(String::as_str));
                        title_and_hook(text, &target)
                    }
                    None => {
                        let sub = target.trim_end_matches("/MEMORY.md");
                        (sub.to_owned(), format!("team memories under {sub}/"))
                    }
                };
                let hook = index::entry_hook(&hook, &title, &target);
                (target, Expected { title, hook })
            })
            .collect();
        index::reconcile(&mut idx, &expected);
        let rendered = idx.render();
        // A dir without memories loses its index; so does the root, once its index is empty.
        if !exists_after || (expected.is_empty() && rendered.trim().is_empty()) {
            if stored.is_some() {
                states.push(NewState {
                    path: index_path,
                    content: None,
                    ..NewState::default()
                });
            }
            continue;
        }
        let lines = rendered.lines().count();
        if lines > index::MAX_LINES || rendered.len() > index::MAX_BYTES {
            failures.push(Failure::new(
                index_path.clone(),
                "index_too_large",
                format!(
                    "{index_path} would have {lines} lines and {} bytes; agents load only the first {} lines / {} bytes of an index. \
                     Move some memories into a subdirectory (it gets its own MEMORY.md) or shorten the index",
                    rendered.len(),
                    index::MAX_LINES,
                    index::MAX_BYTES
                ),
                None,
            ));
            continue;
        }
        if server_text.as_deref() != Some(rendered.as_str()) {
            let merged = match input.pushed.get(&index_path) {
                Some((_, Some(ours))) => *ours != rendered,
                _ => false,
            };
            states.push(NewState {
                path: index_path,
                content: Some(rendered),
                merged,
                ..NewState::default()
            });
        }
    }
    Ok(IndexResult { states, failures })
}

fn title_and_hook(text: Option<&str>, target: &str) -> (String, String) {
    let fallback = target.trim_end_matches(".md").to_owned();
    let Some(doc) = text.and_then(|t| MemoryDoc::parse(t).ok()) else {
        return (fallback, String::new());
    };
    (
        doc.name().map(str::to_owned).unwrap_or(fallback),
        doc.description().unwrap_or("").to_owned(),
    )
}
