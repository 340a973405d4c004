//! `memsync render`: the team index in an agent's instruction file (`AGENTS.md`, `GEMINI.md`,
//! `.github/copilot-instructions.md`), inside a block memsync owns:
//!
//! ```text
//! <!-- memsync:begin … -->
//! …written by memsync…
//! <!-- memsync:end -->
//! ```
//!
//! Everything outside the block stays byte for byte. A file without the block gets it at its
//! end; a file whose markers are broken (a begin without an end, two blocks) is not touched; a
//! block edited by hand since memsync wrote it is not overwritten unless the user says so.

use std::path::Path;

use memsync_core::Sha256;

/// The start of the begin marker's line (the rest of the line explains the block).
pub const BEGIN: &str = "<!-- memsync:begin";
/// The end marker's line.
pub const END: &str = "<!-- memsync:end -->";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RenderError {
    #[error(
        "{file}: {problem}; nothing was changed. Fix the markers by hand (memsync's block runs from a line starting `{BEGIN}` to a line `{END}`), or delete both, and run the command again"
    )]
    Markers { file: String, problem: String },
    #[error(
        "{file}: memsync's block was edited by hand since memsync wrote it; nothing was changed, so that text is not lost. Move your text outside the block and run `memsync render --agent {agent} --force`"
    )]
    EditedByHand { file: String, agent: String },
    #[error("{file} is not UTF-8 text; nothing was changed")]
    NotText { file: String },
}

/// The block for a team dir: markers, a paragraph naming the dir, and the index.
pub fn block(project: &str, team_dir_shown: &str, index: Option<&str>) -> String {
    let mut b = String::new();
    b.push_str(BEGIN);
    b.push_str(
        " team memory, written by `memsync render` and rewritten by every `memsync pull`: write your own text outside this block -->\n",
    );
    b.push_str("## Team memory (memsync)\n\n");
    b.push_str(&format!(
        "The team memory of project {project} is synced by memsync into `{team_dir_shown}`. \
         Each entry below links a file in that directory: read it when the entry is relevant to the task. \
         To share project-wide knowledge with the team, save it there as a memory (name: / description: / type: frontmatter, \
         plus an entry in that directory's MEMORY.md); `memsync push` sends it.\n\n"
    ));
    match index.filter(|t| !t.trim().is_empty()) {
        Some(text) => {
            let (shown, truncated) = crate::hook::index_budget(text);
            b.push_str(&shown);
            if truncated {
                b.push_str("(truncated to the first 200 lines / 25,000 bytes)\n");
            }
        }
        None => b.push_str("The team MEMORY.md is empty so far.\n"),
    }
    b.push_str(END);
    b.push('\n');
    b
}

/// The result of putting a block into a file's text.
#[derive(Debug, PartialEq, Eq)]
pub struct Applied {
    pub text: String,
    /// The text differs from what the file held.
    pub changed: bool,
}

/// Where memsync's block is in `text`: the byte range of its lines (end marker's line break
/// included).
fn find_block(text: &str, file: &str) -> Result<Option<std::ops::Range<usize>>, RenderError> {
    let mut begins = Vec::new();
    let mut ends = Vec::new();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare.starts_with(BEGIN) {
            begins.push(at);
        } else if bare == END {
            ends.push(at + line.len());
        }
        at += line.len();
    }
    let problem = match (begins.as_slice(), ends.as_slice()) {
        ([], []) => return Ok(None),
        ([b], [e]) if b < e => return Ok(Some(*b..*e)),
        ([_], [_]) => "memsync's end marker comes before its begin marker".to_owned(),
        ([], _) => "memsync's end marker has no begin marker".to_owned(),
        (_, []) => "memsync's begin marker has no end marker".to_owned(),
        (b, e) => format!(
            "the file has {} begin and {} end markers of memsync's block; it owns one",
            b.len(),
            e.len()
        ),
    };
    Err(RenderError::Markers {
        file: file.to_owned(),
        problem,
    })
}

/// The sha256 of the block in `text`, if it has one.
pub fn block_sha(text: &str) -> Option<Sha256> {
    let range = find_block(text, "").ok()??;
    Some(Sha256::of(text[range].as_bytes()))
}

/// `existing` (None: no file) with `block` in memsync's place: replacing the block that is
/// there, else appended after a blank line. `last_written` is the sha256 of the block memsync
/// wrote last time; a block that differs from it was edited by hand and is kept unless `force`.
pub fn apply(
    existing: Option<&[u8]>,
    block: &str,
    last_written: Option<Sha256>,
    force: bool,
    file: &Path,
    agent: &str,
) -> Result<Applied, RenderError> {
    let shown = file.display().to_string();
    let text = match existing {
        None => "",
        Some(bytes) => std::str::from_utf8(bytes).map_err(|_| RenderError::NotText {
            file: shown.clone(),
        })?,
    };
    let new = match find_block(text, &shown)? {
        Some(range) => {
            let old = &text[range.clone()];
            if !force
                && let Some(sha) = last_written
                && Sha256::of(old.as_bytes()) != sha
                && old != block
            {
                return Err(RenderError::EditedByHand {
                    file: shown,
                    agent: agent.to_owned(),
                });
            }
            // A CRLF file keeps its line ends inside the block too.
            let block = if old.contains("\r\n") {
                block.replace('\n', "\r\n")
            } else {
                block.to_owned()
            };
            format!("{}{block}{}", &text[..range.start], &text[range.end..])
        }
        None => {
            let sep = if text.is_empty() || text.ends_with("\n\n") || text.ends_with("\n\r\n") {
                ""
            } else if text.ends_with('\n') {
                "\n"
            } else {
                "\n\n"
            };
            let added = format!("{sep}{block}");
            // A CRLF file gets CRLF line ends.
            let added = if text.contains("\r\n") {
                added.replace('\n', "\r\n")
            } else {
                added
            };
            format!("{text}{added}")
        }
    };
    Ok(Applied {
        changed: new != text || existing.is_none(),
        text: new,
    })
}

/// `text` without memsync's block (the line breaks `apply` put before it stay); None when
/// there is no block.
pub fn remove(text: &str, file: &Path) -> Result<Option<String>, RenderError> {
    let Some(range) = find_block(text, &file.display().to_string())? else {
        return Ok(None);
    };
    Ok(Some(format!(
        "{}{}",
        &text[..range.start],
        &text[range.end..]
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(existing: Option<&str>, block: &str) -> Result<Applied, RenderError> {
        apply(
            existing.map(str::as_bytes),
            block,
            None,
            false,
            Path::new("AGENTS.md"),
            "codex",
        )
    }

    #[test]
    fn block_names_the_dir_and_carries_the_index() {
        let b = block("acme/api", "~/.codex/memsync/t", Some("- [A](a.md) — a\n"));
        assert!(b.starts_with(BEGIN) && b.ends_with(&format!("{END}\n")));
        assert!(b.contains("`~/.codex/memsync/t`") && b.contains("acme/api"));
        assert!(b.contains("\n- [A](a.md) — a\n"));
        assert!(block("a/b", "d", None).contains("empty so far"));
        let long: String = (0..300).map(|i| format!("- [n{i}](n{i}.md)\n")).collect();
        let cut = block("a/b", "d", Some(&long));
        assert!(cut.contains("n199.md") && !cut.contains("n200.md") && cut.contains("truncated"));
    }

    #[test]
    fn the_rest_of_the_file_stays_byte_for_byte() {
        let b1 = block("a/b", "d", Some("- [A](a.md) — a\n"));
        let b2 = block("a/b", "d", Some("- [A](a.md) — a\n- [B](b.md) — b\n"));
        for user in [
            "# Rules\r\nUse tabs.\r\n",
            "no newline at the end",
            "ends with two\n\n",
            "   \n\u{feff}odd bytes ✓\n",
        ] {
            let nl = if user.contains('\r') { "\r\n" } else { "\n" };
            let first = put(Some(user), &b1).unwrap();
            assert!(first.changed && first.text.starts_with(user), "{user:?}");
            assert!(first.text.ends_with(&b1.replace('\n', nl)));
            // The user writes more after the block; a refresh changes the block only.
            let edited = format!("{}more of mine{nl}", first.text);
            let second = put(Some(&edited), &b2).unwrap();
            let start = edited.find(BEGIN).unwrap();
            assert_eq!(&second.text[..start], &edited[..start]);
            let b2_nl = b2.replace('\n', nl);
            assert!(second.text.ends_with(&format!("{b2_nl}more of mine{nl}")));
            // The same block again changes nothing.
            assert!(!put(Some(&second.text), &b2).unwrap().changed, "{user:?}");
            // Taking it out gives back what the user wrote (and the line breaks before it).
            let gone = remove(&first.text, Path::new("f")).unwrap().unwrap();
            assert!(gone.starts_with(user) && gone[user.len()..].trim().is_empty());
        }
        let fresh = put(None, &b1).unwrap();
        assert!(fresh.changed && fresh.text == b1);
        assert_eq!(remove("plain", Path::new("f")).unwrap(), None);
    }

    #[test]
    fn broken_markers_change_nothing() {
        for (text, says) in [
            (format!("{BEGIN} -->\nx\n"), "no end marker"),
            (format!("x\n{END}\n"), "no begin marker"),
            (format!("{END}\n{BEGIN} -->\n"), "before its begin"),
            (
                format!("{BEGIN} -->\n{END}\n{BEGIN} -->\n{END}\n"),
                "2 begin and 2 end",
            ),
        ] {
            let e = put(Some(&text), "b").unwrap_err();
            assert!(e.to_string().contains(says), "{e}");
            assert!(e.to_string().contains("nothing was changed"));
        }
        let e = apply(Some(b"\xff\xfe"), "b", None, false, Path::new("F"), "x").unwrap_err();
        assert_eq!(e, RenderError::NotText { file: "F".into() });
    }

    #[test]
    fn a_block_edited_by_hand_is_kept_unless_forced() {
        let b1 = block("a/b", "d", Some("- [A](a.md)\n"));
        let b2 = block("a/b", "d", Some("- [B](b.md)\n"));
        let written = put(Some("mine\n"), &b1).unwrap().text;
        let sha = block_sha(&written).unwrap();
        assert_eq!(sha, Sha256::of(b1.as_bytes()));
        let edited = written.replace("## Team memory", "## Team memory\nMY NOTE");
        let f = Path::new("AGENTS.md");
        let e = apply(Some(edited.as_bytes()), &b2, Some(sha), false, f, "codex").unwrap_err();
        assert!(matches!(e, RenderError::EditedByHand { .. }), "{e}");
        assert!(e.to_string().contains("--agent codex --force"));
        // Untouched: refreshed.
        let ok = apply(Some(written.as_bytes()), &b2, Some(sha), false, f, "codex").unwrap();
        assert!(ok.text.contains("- [B](b.md)"));
        let forced = apply(Some(edited.as_bytes()), &b2, Some(sha), true, f, "codex").unwrap();
        assert!(!forced.text.contains("MY NOTE") && forced.text.starts_with("mine\n"));
    }
}
