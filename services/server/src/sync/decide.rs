//! One file's fate in a push, from its base, the client's version and the server's: write it,
//! delete it, leave it, merge it three-way, or report a conflict. Pure: the table tests below
//! cover every combination.

use memsync_core::merge::merge_text;
use memsync_core::policy::{self, CheckedChange};
use memsync_core::wire::PushOp;

use crate::store::memories::Stored;

#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    Write { content: String, merged: bool },
    Delete,
    Noop,
    Conflict(&'static str),
}

/// `current` is the server's state of the path (None if it never existed), `base_text` the
/// content of the client's base version when it differs from the live one and is still stored.
pub fn decide(
    change: &CheckedChange,
    current: Option<&Stored>,
    base_text: Option<&str>,
    max_file_bytes: usize,
) -> Decision {
    let live = current.filter(|c| !c.deleted);
    match (change.op, live) {
        (PushOp::Delete, None) => Decision::Noop,
        (PushOp::Delete, Some(cur)) => {
            if change.base.is_some() && change.base == cur.sha256 {
                Decision::Delete
            } else {
                // Someone changed it since this client saw it: deleting would lose that edit.
                Decision::Conflict("changed_on_server")
            }
        }
        (PushOp::Put, _) if change.content.is_none() => Decision::Noop,
        (PushOp::Put, None) => {
            let content = change.content.clone().unwrap_or_default();
            match (change.base, current) {
                (None, _) => Decision::Write {
                    content,
                    merged: false,
                },
                (Some(_), Some(c)) if c.deleted => Decision::Conflict("deleted_on_server"),
                (Some(_), _) => Decision::Conflict("unknown_base"),
            }
        }
        (PushOp::Put, Some(cur)) => {
            let ours = change.content.as_deref().unwrap_or_default();
            let theirs = cur.content.as_deref().unwrap_or_default();
            if ours == theirs {
                return Decision::Noop;
            }
            if change.base.is_some() && change.base == cur.sha256 {
                return Decision::Write {
                    content: ours.to_owned(),
                    merged: false,
                };
            }
            let Some(base) = base_text else {
                return Decision::Conflict(if change.base.is_none() {
                    "exists_on_server"
                } else {
                    "unknown_base"
                });
            };
            match merge_text(base, ours, theirs) {
                Ok(m) if m == theirs => Decision::Noop,
                Ok(m) => {
                    // A merge of two valid files can still be invalid (broken frontmatter, too
                    // large, a type change to `user`): the same checks as any write.
                    if policy::check_file(&change.path, m.as_bytes(), max_file_bytes).is_err() {
                        return Decision::Conflict("merge_invalid");
                    }
                    let merged = m != ours;
                    Decision::Write { content: m, merged }
                }
                Err(_) => Decision::Conflict("overlapping_edit"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use memsync_core::{MemoryPath, Sha256};

    use super::*;

    const MAX: usize = 64 * 1024;

    /// (case, the change, the server's state, the base text, the decision expected)
    type Case<'a> = (
        &'a str,
        CheckedChange,
        Option<Stored>,
        Option<&'a str>,
        Decision,
    );

    fn doc(kind: &str, body: &str) -> String {
        format!("---\nname: db\ndescription: the database\ntype: {kind}\n---\n{body}")
    }

    /// Three paragraphs, so that edits to the first and the last merge cleanly.
    fn body(first: &str, last: &str) -> String {
        format!("{first}\n\nmiddle one\nmiddle two\nmiddle three\n\n{last}\n")
    }

    fn sha(text: &str) -> Sha256 {
        Sha256::of(text.as_bytes())
    }

    fn live(text: &str) -> Stored {
        Stored {
            revision: 3,
            deleted: false,
            sha256: Some(sha(text)),
            content: Some(text.to_owned()),
            author_name: "bob".into(),
            updated_at: Utc::now(),
            disabled: false,
            named_paths: Vec::new(),
        }
    }

    fn tombstone() -> Stored {
        Stored {
            revision: 4,
            deleted: true,
            sha256: None,
            content: None,
            author_name: "bob".into(),
            updated_at: Utc::now(),
            disabled: false,
            named_paths: Vec::new(),
        }
    }

    fn change(op: PushOp, base: Option<&str>, content: Option<&str>) -> CheckedChange {
        CheckedChange {
            path: MemoryPath::parse("db.md").expect("valid path"),
            op,
            base: base.map(sha),
            content: content.map(str::to_owned),
            named_paths: Vec::new(),
        }
    }

    fn write(content: &str, merged: bool) -> Decision {
        Decision::Write {
            content: content.to_owned(),
            merged,
        }
    }

    /// Every combination of the client's op and base, the server's state (never, deleted,
    /// live) and the three texts (base, ours, theirs): same, disjoint edits, overlapping edits.
    #[test]
    fn every_combination_of_base_ours_and_theirs() {
        let base = doc("project", &body("first", "last"));
        let theirs = doc("project", &body("first", "last, edited on the server"));
        let ours = doc("project", &body("first, edited here", "last"));
        let merged = doc(
            "project",
            &body("first, edited here", "last, edited on the server"),
        );
        let ours_overlapping = doc("project", &body("first", "last, edited here"));
        // A valid file on its own, and a merge that is not: `type: user` is never team memory.
        let ours_user = doc("user", &body("first", "last"));
        let unrelated = doc("project", "something else\n");

        use Decision::{Conflict, Delete, Noop};
        use PushOp::{Delete as Del, Put};
        #[rustfmt::skip]
        let table: Vec<Case> = vec![
            // Deletes.
            ("delete what never existed", change(Del, None, None), None, None, Noop),
            ("delete what is already deleted", change(Del, Some(&base), None), Some(tombstone()), None, Noop),
            ("delete the version seen", change(Del, Some(&theirs), None), Some(live(&theirs)), None, Delete),
            ("delete a version changed since", change(Del, Some(&base), None), Some(live(&theirs)), Some(&base), Conflict("changed_on_server")),
            ("delete without a base", change(Del, None, None), Some(live(&theirs)), None, Conflict("changed_on_server")),
            // Puts of new paths and over tombstones.
            ("a put without content", change(Put, None, None), Some(live(&theirs)), None, Noop),
            ("create", change(Put, None, Some(&ours)), None, None, write(&ours, false)),
            ("create with a base the server never had", change(Put, Some(&base), Some(&ours)), None, None, Conflict("unknown_base")),
            ("recreate a deleted file, no base", change(Put, None, Some(&ours)), Some(tombstone()), None, write(&ours, false)),
            ("edit a file deleted since", change(Put, Some(&base), Some(&ours)), Some(tombstone()), None, Conflict("deleted_on_server")),
            // Puts over a live file.
            ("same content, no base", change(Put, None, Some(&theirs)), Some(live(&theirs)), None, Noop),
            ("same content, old base", change(Put, Some(&base), Some(&theirs)), Some(live(&theirs)), Some(&base), Noop),
            ("edit the version seen", change(Put, Some(&theirs), Some(&ours)), Some(live(&theirs)), None, write(&ours, false)),
            ("create over an existing file", change(Put, None, Some(&ours)), Some(live(&theirs)), None, Conflict("exists_on_server")),
            ("base no longer stored", change(Put, Some(&base), Some(&ours)), Some(live(&theirs)), None, Conflict("unknown_base")),
            ("disjoint edits merge", change(Put, Some(&base), Some(&ours)), Some(live(&theirs)), Some(&base), write(&merged, true)),
            ("ours unchanged from base: theirs stands", change(Put, Some(&base), Some(&base)), Some(live(&theirs)), Some(&base), Noop),
            ("overlapping edits", change(Put, Some(&base), Some(&ours_overlapping)), Some(live(&theirs)), Some(&base), Conflict("overlapping_edit")),
            ("a merge that is no valid memory", change(Put, Some(&base), Some(&ours_user)), Some(live(&theirs)), Some(&base), Conflict("merge_invalid")),
            ("an unrelated base text", change(Put, Some(&unrelated), Some(&ours)), Some(live(&theirs)), Some(&unrelated), Conflict("overlapping_edit")),
        ];
        for (case, change, current, base_text, want) in table {
            let got = decide(&change, current.as_ref(), base_text, MAX);
            assert_eq!(got, want, "{case}");
        }
    }

    #[test]
    fn a_merge_over_the_size_limit_is_a_conflict() {
        let base = doc("project", &body("first", "last"));
        let ours = doc("project", &body(&"a".repeat(600), "last"));
        let theirs = doc("project", &body("first", &"b".repeat(600)));
        let max = ours.len().max(theirs.len()) + 100;
        let got = decide(
            &change(PushOp::Put, Some(&base), Some(&ours)),
            Some(&live(&theirs)),
            Some(&base),
            max,
        );
        assert_eq!(got, Decision::Conflict("merge_invalid"));
    }
}
