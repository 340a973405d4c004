//! Approving a feedback memory as superseding published team feedback writes the superseded
//! paths into its frontmatter's `supersedes:`, so the published file says what it replaced.
//! Every other byte of the file stays as the author wrote it.

use memsync_core::MemoryDoc;
use serde_json::Value;

/// `text` with `supersedes:` naming `paths` after whatever it named before: one path as a
/// string (the form the feedback check honours), several as a flow list.
pub fn with_supersedes(text: &str, paths: &[String]) -> Result<String, String> {
    let doc = MemoryDoc::parse(text).map_err(|p| p.to_string())?;
    let mut all = doc.get_paths("supersedes").ok_or_else(|| {
        "its frontmatter's `supersedes:` is neither a path nor a list of paths".to_owned()
    })?;
    for p in paths {
        if !all.contains(p) {
            all.push(p.clone());
        }
    }
    let value = match all.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };

    let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let fence = |l: &str| l.trim_end_matches(['\r', '\n', ' ', '\t']).to_owned();
    // Line 0 opens the frontmatter (MemoryDoc checked it); find the line that closes it.
    let close = lines
        .iter()
        .enumerate()
        .skip(1)
        .find(|(_, l)| matches!(fence(l).as_str(), "---" | "..."))
        .map(|(i, _)| i)
        .ok_or("its frontmatter is not closed")?;
    let mut out = String::with_capacity(text.len() + value.len() + 16);
    out.push_str(lines[0]);
    let mut in_old = false;
    for line in &lines[1..close] {
        let top_level = !line.starts_with([' ', '\t', '-']) && !fence(line).is_empty();
        if top_level {
            in_old = line.starts_with("supersedes:");
        }
        if !in_old {
            out.push_str(line);
        }
    }
    out.push_str("supersedes: ");
    out.push_str(&value);
    out.push_str(newline);
    for line in &lines[close..] {
        out.push_str(line);
    }

    // The result must say exactly that, and keep everything else.
    let new = MemoryDoc::parse(&out).map_err(|p| p.to_string())?;
    let mut before = doc.frontmatter().clone();
    let mut after = new.frontmatter().clone();
    let written = after.remove("supersedes");
    before.remove("supersedes");
    let expected = match all.as_slice() {
        [one] => Value::String(one.clone()),
        many => Value::Array(many.iter().cloned().map(Value::String).collect()),
    };
    if before != after || written != Some(expected) || new.body() != doc.body() {
        return Err("its frontmatter could not be given a `supersedes:` line".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(p: &[&str]) -> Vec<String> {
        p.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn one_path_is_a_string_that_the_feedback_check_honours() {
        let text = "---\nname: tabs\ndescription: indent\ntype: feedback\n---\nUse tabs.\n";
        let out = with_supersedes(text, &paths(&["spaces.md"])).unwrap();
        assert_eq!(
            out,
            "---\nname: tabs\ndescription: indent\ntype: feedback\nsupersedes: spaces.md\n---\nUse tabs.\n"
        );
        let doc = MemoryDoc::parse(&out).unwrap();
        assert_eq!(doc.get_str("supersedes"), Some("spaces.md"));
    }

    #[test]
    fn an_earlier_supersedes_is_kept_and_extended() {
        let text = "---\nname: tabs\nsupersedes: old.md\ndescription: indent\ntype: feedback\n---\nUse tabs.\n";
        let out = with_supersedes(text, &paths(&["spaces.md", "old.md"])).unwrap();
        assert_eq!(
            out,
            "---\nname: tabs\ndescription: indent\ntype: feedback\nsupersedes: [old.md, spaces.md]\n---\nUse tabs.\n"
        );
        let block = "---\nname: t\nsupersedes:\n- a.md\n- b.md\ntype: feedback\ndescription: d\n---\nbody\n";
        let out = with_supersedes(block, &paths(&["c/d.md"])).unwrap();
        assert_eq!(
            out,
            "---\nname: t\ntype: feedback\ndescription: d\nsupersedes: [a.md, b.md, c/d.md]\n---\nbody\n"
        );
        // Naming the one it already supersedes changes nothing but the line's place.
        let same = "---\nname: t\ntype: feedback\ndescription: d\nsupersedes: a.md\n---\nbody\n";
        assert_eq!(with_supersedes(same, &paths(&["a.md"])).unwrap(), same);
    }

    #[test]
    fn line_endings_comments_and_the_body_survive() {
        let text = "\u{feff}---\r\n# the rule\r\nname: tabs\r\ndescription: indent\r\ntype: feedback\r\n...\r\nUse tabs.\r\n---\r\nmore\r\n";
        let out = with_supersedes(text, &paths(&["-x.md"])).unwrap();
        assert_eq!(
            out,
            "\u{feff}---\r\n# the rule\r\nname: tabs\r\ndescription: indent\r\ntype: feedback\r\nsupersedes: -x.md\r\n...\r\nUse tabs.\r\n---\r\nmore\r\n"
        );
    }

    #[test]
    fn a_supersedes_that_is_not_paths_is_refused() {
        let text = "---\nname: t\ntype: feedback\ndescription: d\nsupersedes: {a: 1}\n---\nbody\n";
        assert!(with_supersedes(text, &paths(&["a.md"])).is_err());
        assert!(with_supersedes("no frontmatter", &paths(&["a.md"])).is_err());
    }
}
