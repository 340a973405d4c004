//! Three-way text merge of one memory file.

/// The two sides edited overlapping (or touching) lines, so there is no safe automatic result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("both sides changed the same lines")]
pub struct MergeConflict;

/// Merges `ours` and `theirs`, both edited from `base`, line by line.
pub fn merge_text(base: &str, ours: &str, theirs: &str) -> Result<String, MergeConflict> {
    // The trivial cases never need a diff, and stay exact whatever the diff algorithm does.
    if ours == theirs || theirs == base {
        return Ok(ours.to_owned());
    }
    if ours == base {
        return Ok(theirs.to_owned());
    }
    // diffy returns the text with conflict markers as the error when hunks overlap.
    diffy::merge(base, ours, theirs).map_err(|_| MergeConflict)
}

/// A unified diff from `old` to `new` (headers `--- original` / `+++ modified`).
pub fn unified_diff(old: &str, new: &str) -> String {
    diffy::create_patch(old, new).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str =
        "# Title\n\nFirst paragraph.\nStill first.\n\nSecond paragraph.\n\nThird paragraph.\n";

    #[test]
    fn trivial_cases() {
        assert_eq!(merge_text("a", "b", "b"), Ok("b".into()));
        assert_eq!(merge_text("a", "a", "c"), Ok("c".into()));
        assert_eq!(merge_text("a", "b", "a"), Ok("b".into()));
        assert_eq!(merge_text("", "", ""), Ok(String::new()));
    }

    #[test]
    fn different_paragraphs_merge_cleanly() {
        let ours = BASE.replace("First paragraph.", "First paragraph, edited.");
        let theirs = BASE.replace("Third paragraph.", "Third paragraph, edited.");
        let merged = merge_text(BASE, &ours, &theirs).unwrap();
        assert_eq!(
            merged,
            BASE.replace("First paragraph.", "First paragraph, edited.")
                .replace("Third paragraph.", "Third paragraph, edited.")
        );
    }

    #[test]
    fn same_line_edited_differently_conflicts() {
        let ours = BASE.replace("Second paragraph.", "Second, ours.");
        let theirs = BASE.replace("Second paragraph.", "Second, theirs.");
        assert_eq!(merge_text(BASE, &ours, &theirs), Err(MergeConflict));
        assert_eq!(
            MergeConflict.to_string(),
            "both sides changed the same lines"
        );
    }

    #[test]
    fn same_edit_on_both_sides_with_other_edit() {
        let both = BASE.replace("Second paragraph.", "Second, same.");
        let ours = both.replace("# Title", "# New title");
        assert_eq!(merge_text(BASE, &ours, &both), Ok(ours.clone()));
    }

    #[test]
    fn appends_and_prepends_merge() {
        let ours = format!("{BASE}\nAppended by ours.\n");
        let theirs = format!("Intro by theirs.\n\n{BASE}");
        assert_eq!(
            merge_text(BASE, &ours, &theirs),
            Ok(format!("Intro by theirs.\n\n{BASE}\nAppended by ours.\n"))
        );
    }

    #[test]
    fn both_append_at_end_conflicts() {
        let ours = format!("{BASE}ours\n");
        let theirs = format!("{BASE}theirs\n");
        assert_eq!(merge_text(BASE, &ours, &theirs), Err(MergeConflict));
    }

    #[test]
    fn last_line_without_newline() {
        let base = "a\n\nb\n\nc";
        // Editing the last line on one side and the first on the other merges.
        assert_eq!(
            merge_text(base, "A\n\nb\n\nc", "a\n\nb\n\nC"),
            Ok("A\n\nb\n\nC".into())
        );
        // Adding a trailing newline on one side is an edit of the last line.
        assert_eq!(
            merge_text(base, "A\n\nb\n\nc", "a\n\nb\n\nc\n"),
            Ok("A\n\nb\n\nc\n".into())
        );
        // Appending after an unterminated last line on one side, first-line edit on the other.
        assert_eq!(
            merge_text(base, "a\n\nb\n\nc\nd", "X\n\nb\n\nc"),
            Ok("X\n\nb\n\nc\nd".into())
        );
        // Both sides changing the unterminated last line differently conflicts.
        assert_eq!(
            merge_text(base, "a\n\nb\n\nc1", "a\n\nb\n\nc2"),
            Err(MergeConflict)
        );
        assert_eq!(
            merge_text(base, "a\n\nb\n\nc\n", "a\n\nb\n\nc2"),
            Err(MergeConflict)
        );
    }

    #[test]
    fn crlf_text_merges() {
        let base = "a\r\n\r\nb\r\n\r\nc\r\n";
        assert_eq!(
            merge_text(base, "A\r\n\r\nb\r\n\r\nc\r\n", "a\r\n\r\nb\r\n\r\nC\r\n"),
            Ok("A\r\n\r\nb\r\n\r\nC\r\n".into())
        );
    }

    #[test]
    fn delete_versus_edit_conflicts() {
        let ours = BASE.replace("Second paragraph.\n", "");
        let theirs = BASE.replace("Second paragraph.", "Second, edited.");
        assert_eq!(merge_text(BASE, &ours, &theirs), Err(MergeConflict));
    }
}
