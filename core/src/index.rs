//! The `MEMORY.md` index: one line per memory, `- [Title](file.md) — hook`, optionally grouped
//! under headings.
//!
//! The index is line-oriented: every line parses to exactly one [`IndexItem`], lines that are
//! neither headings nor entries are kept verbatim, and entries are keyed by their link target so
//! that concurrent edits merge per entry instead of per file.

use crate::text::thousands;
use std::collections::{BTreeMap, BTreeSet};

/// Agents load only this many lines of an index.
pub const MAX_LINES: usize = 200;
/// Agents load only this many bytes of an index.
pub const MAX_BYTES: usize = 25_000;
/// Index lines longer than this (in characters) are reported, and generated hooks are cut to fit.
pub const LINE_SOFT_MAX: usize = 150;

const BOM: char = '\u{feff}';
/// Trimmed from heading text and hooks. `\r` is included because a line's trailing `\r`s are
/// dropped on parse, so a value ending in one would not survive a render.
const BLANK: [char; 3] = [' ', '\t', '\r'];
const ECHO_CHARS: usize = 80;
/// Separators accepted between a link and its hook; `--` before `-` so the longer one wins.
const HOOK_SEPARATORS: [&str; 5] = ["—", "–", "--", "-", ":"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    /// Link text as written (markdown escapes kept).
    pub title: String,
    /// Link target relative to the index's directory, e.g. `testing.md`.
    pub target: String,
    /// One-line summary after the separator; empty when there is none.
    pub hook: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexItem {
    Heading {
        level: u8,
        text: String,
    },
    Entry(IndexEntry),
    /// Any other line, kept verbatim.
    Text(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Index {
    pub items: Vec<IndexItem>,
}

/// What `reconcile` needs to create an entry for a memory: its title and the text its hook is
/// made from (usually the frontmatter `name` and `description`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    pub title: String,
    pub hook: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LintFinding {
    pub rule: &'static str,
    pub message: String,
    pub line: Option<u32>,
    /// `true` for problems that refuse a push, `false` for warnings.
    pub error: bool,
}

impl IndexEntry {
    /// The canonical line: `- [Title](target) — hook`, or `- [Title](target)` without a hook.
    pub fn render(&self) -> String {
        if self.hook.is_empty() {
            format!("- [{}]({})", self.title, self.target)
        } else {
            format!("- [{}]({}) — {}", self.title, self.target, self.hook)
        }
    }

    fn key(&self) -> &str {
        link_key(&self.target)
    }
}

impl IndexItem {
    fn render(&self) -> String {
        match self {
            IndexItem::Heading { level, text } => {
                format!("{} {text}", "#".repeat(usize::from(*level)))
            }
            IndexItem::Entry(e) => e.render(),
            IndexItem::Text(t) => t.clone(),
        }
    }

    fn parse(line: &str) -> IndexItem {
        if let Some(heading) = parse_heading(line) {
            heading
        } else if let Some(entry) = parse_entry(line) {
            IndexItem::Entry(entry)
        } else {
            IndexItem::Text(line.to_owned())
        }
    }
}

impl Index {
    /// Parses an index. Never fails: a line that is not a heading or an entry is kept as text.
    pub fn parse(text: &str) -> Index {
        Index {
            items: lines(text).map(IndexItem::parse).collect(),
        }
    }

    /// LF-joined lines with a trailing newline (nothing at all for an empty index).
    pub fn render(&self) -> String {
        let mut out = String::new();
        for item in &self.items {
            out.push_str(&item.render());
            out.push('\n');
        }
        out
    }

    pub fn entries(&self) -> impl Iterator<Item = &IndexEntry> {
        self.items.iter().filter_map(|item| match item {
            IndexItem::Entry(e) => Some(e),
            _ => None,
        })
    }

    /// The first entry linking to `target` (`./x.md` and `<x.md>` count as `x.md`).
    pub fn entry(&self, target: &str) -> Option<&IndexEntry> {
        let key = link_key(target);
        self.entries().find(|e| e.key() == key)
    }
}

/// The lines of an index without terminators: leading BOMs dropped, CRLF accepted.
fn lines(text: &str) -> impl Iterator<Item = &str> {
    // All trailing `\r`s go, so that no parsed line can render differently from how it parses.
    text.trim_start_matches(BOM)
        .lines()
        .map(|l| l.trim_end_matches('\r'))
}

fn parse_heading(line: &str) -> Option<IndexItem> {
    let hashes = line.bytes().take_while(|&b| b == b'#').count();
    if !(1..=6).contains(&hashes) {
        return None;
    }
    let rest = &line[hashes..];
    if !rest.starts_with([' ', '\t']) {
        return None;
    }
    let text = rest.trim_matches(BLANK);
    if text.is_empty() {
        return None;
    }
    Some(IndexItem::Heading {
        level: u8::try_from(hashes).ok()?,
        text: text.to_owned(),
    })
}

/// Splits `s` (just after an opening `open`) at its matching `close`, honouring nesting and
/// backslash escapes. Returns the inside and what follows the closer.
fn split_balanced(s: &str, open: char, close: char) -> Option<(&str, &str)> {
    let mut depth = 1usize;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return Some((&s[..i], &s[i + c.len_utf8()..]));
            }
        }
    }
    None
}

fn parse_entry(line: &str) -> Option<IndexEntry> {
    let bullet = line
        .trim_start_matches([' ', '\t'])
        .strip_prefix(['-', '*', '+'])?;
    let after_bullet = bullet.trim_start_matches([' ', '\t']);
    if after_bullet.len() == bullet.len() {
        return None;
    }
    let (title, rest) = split_balanced(after_bullet.strip_prefix('[')?, '[', ']')?;
    // The target is kept as written: trimming it could leave a trailing `\` that would escape
    // the closing parenthesis when rendered.
    let (target, rest) = split_balanced(rest.strip_prefix('(')?, '(', ')')?;
    if link_key(target).is_empty() {
        return None;
    }
    let rest = rest.trim_start_matches([' ', '\t']);
    let hook = if rest.is_empty() {
        ""
    } else {
        let after = HOOK_SEPARATORS
            .iter()
            .find_map(|sep| rest.strip_prefix(sep))?;
        if !after.is_empty() && !after.starts_with([' ', '\t']) {
            return None;
        }
        after.trim_matches(BLANK)
    };
    Some(IndexEntry {
        title: title.to_owned(),
        target: target.to_owned(),
        hook: hook.to_owned(),
    })
}

/// The identity of a link target: `./x.md`, `<x.md>` and ` x.md ` all mean `x.md`.
fn link_key(target: &str) -> &str {
    let mut t = target.trim_matches([' ', '\t']);
    if let Some(inner) = t.strip_prefix('<').and_then(|t| t.strip_suffix('>')) {
        t = inner.trim_matches([' ', '\t']);
    }
    while let Some(rest) = t.strip_prefix("./") {
        t = rest;
    }
    t
}

/// Links that leave the memory directory (web pages, anchors, mail) are never reconciled.
fn is_external(target: &str) -> bool {
    let key = link_key(target);
    key.contains("://") || key.starts_with('#') || key.starts_with("mailto:")
}

/// The first entry of each target, by key.
fn keyed(index: &Index) -> BTreeMap<&str, &IndexEntry> {
    let mut map = BTreeMap::new();
    for e in index.entries() {
        map.entry(e.key()).or_insert(e);
    }
    map
}

/// Merges two versions of an index against their common ancestor, entry by entry.
///
/// `ours` is the incoming push and `theirs` the server's current version. An entry added on
/// either side lands; one removed on a side is removed unless the other side changed it; a change
/// on one side wins over no change; when both changed it differently, ours wins. The layout
/// follows theirs; entries only ours has are placed after the entry that precedes them in ours,
/// else under their heading from ours (created at the end if needed), else at the end.
pub fn merge(base: &Index, ours: &Index, theirs: &Index) -> Index {
    let (b, o, t) = (keyed(base), keyed(ours), keyed(theirs));
    let keys: BTreeSet<&str> = b.keys().chain(o.keys()).chain(t.keys()).copied().collect();
    let mut resolved: BTreeMap<&str, &IndexEntry> = BTreeMap::new();
    for key in keys {
        let (b, o, t) = (b.get(key), o.get(key), t.get(key));
        let winner = match (b, o, t) {
            (Some(b), Some(o), Some(t)) => Some(if o != b { o } else { t }),
            (Some(b), Some(o), None) => (o != b).then_some(o),
            (Some(b), None, Some(t)) => (t != b).then_some(t),
            (_, Some(o), _) => Some(o),
            (_, None, t) => t,
        };
        if let Some(entry) = winner {
            resolved.insert(key, entry);
        }
    }

    let mut out: Vec<IndexItem> = Vec::with_capacity(theirs.items.len() + o.len());
    let mut placed: BTreeSet<&str> = BTreeSet::new();
    for item in &theirs.items {
        match item {
            IndexItem::Entry(e) => {
                if let Some(r) = resolved.get(e.key())
                    && placed.insert(e.key())
                {
                    out.push(IndexItem::Entry((*r).clone()));
                }
            }
            other => out.push(other.clone()),
        }
    }

    for (i, item) in ours.items.iter().enumerate() {
        let IndexItem::Entry(e) = item else { continue };
        let key = e.key();
        let Some(r) = resolved.get(key) else { continue };
        if placed.contains(key) {
            continue;
        }
        let at = insertion_point(&mut out, &ours.items[..i]);
        out.insert(at, IndexItem::Entry((*r).clone()));
        placed.insert(key);
    }
    merge_prose(base, ours, &mut out);
    Index { items: out }
}

/// Non-entry lines (prose and headings) are merged too, so that no line someone wrote is lost:
/// a line ours added (absent from base) is kept after the line that precedes it in ours; a line
/// ours removed (in base, not in ours) is removed. Blank lines are layout and follow theirs.
fn merge_prose(base: &Index, ours: &Index, out: &mut Vec<IndexItem>) {
    let is_prose = |item: &IndexItem| match item {
        IndexItem::Text(t) => !t.trim().is_empty(),
        IndexItem::Heading { .. } => true,
        IndexItem::Entry(_) => false,
    };
    let removed: Vec<&IndexItem> = base
        .items
        .iter()
        .filter(|item| is_prose(item) && !ours.items.contains(item))
        .collect();
    out.retain(|item| !removed.contains(&item));
    for (i, item) in ours.items.iter().enumerate() {
        if !is_prose(item) || base.items.contains(item) || out.contains(item) {
            continue;
        }
        let at = ours.items[..i]
            .iter()
            .rev()
            .find_map(|prev| out.iter().position(|o| o == prev).map(|p| p + 1))
            .unwrap_or(0);
        out.insert(at, item.clone());
    }
}

fn position_of(items: &[IndexItem], key: &str) -> Option<usize> {
    items
        .iter()
        .position(|item| matches!(item, IndexItem::Entry(e) if e.key() == key))
}

/// Index just past the last entry of the section starting at `start` (which ends at the next
/// heading), or `None` when the section has no entries.
fn after_last_entry_of_section(items: &[IndexItem], start: usize) -> Option<usize> {
    items[start..]
        .iter()
        .take_while(|item| !matches!(item, IndexItem::Heading { .. }))
        .enumerate()
        .filter(|(_, item)| matches!(item, IndexItem::Entry(_)))
        .last()
        .map(|(i, _)| start + i + 1)
}

/// Where an entry that `ours` has right after `ours_before` goes in `out`; may add its heading.
fn insertion_point(out: &mut Vec<IndexItem>, ours_before: &[IndexItem]) -> usize {
    for item in ours_before.iter().rev() {
        match item {
            IndexItem::Entry(prev) => {
                if let Some(p) = position_of(out, prev.key()) {
                    return p + 1;
                }
            }
            IndexItem::Heading { level, text } => {
                let found = out
                    .iter()
                    .position(|h| matches!(h, IndexItem::Heading { text: t, .. } if t == text));
                if let Some(h) = found {
                    return after_last_entry_of_section(out, h + 1).unwrap_or(h + 1);
                }
                if out
                    .last()
                    .is_some_and(|last| *last != IndexItem::Text(String::new()))
                {
                    out.push(IndexItem::Text(String::new()));
                }
                out.push(IndexItem::Heading {
                    level: *level,
                    text: text.clone(),
                });
                return out.len();
            }
            IndexItem::Text(_) => {}
        }
    }
    // Before any heading in ours: join the entries before the first heading, if there are any.
    after_last_entry_of_section(out, 0).unwrap_or(out.len())
}

fn collapse_whitespace(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A title safe to put between `[` and `]`: one line, brackets and backslashes escaped.
fn link_title(title: &str) -> String {
    let mut out = String::new();
    for c in collapse_whitespace(title).chars() {
        if matches!(c, '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The hook for an entry made from a memory's description: one line, cut with `…` so that the
/// rendered `- [title](target) — hook` fits in [`LINE_SOFT_MAX`] characters.
pub fn entry_hook(description: &str, title: &str, target: &str) -> String {
    let hook = collapse_whitespace(description);
    // `- [` + `](` + `)` + ` — `
    let fixed = title.chars().count() + target.chars().count() + 9;
    let budget = LINE_SOFT_MAX.saturating_sub(fixed);
    if hook.chars().count() <= budget {
        return hook;
    }
    if budget < 2 {
        // No room for even one character and the ellipsis.
        return String::new();
    }
    let keep = budget - 1;
    let cut: String = hook.chars().take(keep).collect();
    // Prefer ending at a word boundary when that does not throw away more than a third.
    let cut = match cut.rfind(' ') {
        Some(i) if cut[..i].chars().count() >= keep * 2 / 3 => &cut[..i],
        _ => cut.as_str(),
    };
    format!("{}…", cut.trim_end())
}

/// Brings an index in line with the memories that exist: drops entries whose target is not a
/// key of `expected` (external links excepted) and repeated entries of one target (the first
/// stays), and appends an entry for every expected target without one, in sorted order.
/// Returns whether anything changed.
pub fn reconcile(index: &mut Index, expected: &BTreeMap<String, Expected>) -> bool {
    let mut changed = false;
    let mut seen: BTreeSet<String> = BTreeSet::new();
    index.items.retain(|item| match item {
        IndexItem::Entry(e) if !is_external(&e.target) => {
            let key = e.key();
            let keep = expected.contains_key(key) && seen.insert(key.to_owned());
            changed |= !keep;
            keep
        }
        _ => true,
    });
    for (target, exp) in expected {
        if seen.contains(target.as_str()) {
            continue;
        }
        let title = link_title(&exp.title);
        let hook = entry_hook(&exp.hook, &title, target);
        index.items.push(IndexItem::Entry(IndexEntry {
            title,
            target: target.clone(),
            hook,
        }));
        changed = true;
    }
    changed
}

fn echo(s: &str) -> String {
    let mut out: String = s.chars().take(ECHO_CHARS).collect();
    if s.chars().nth(ECHO_CHARS).is_some() {
        out.push('…');
    }
    out
}

fn line_no(i: usize) -> Option<u32> {
    u32::try_from(i + 1).ok()
}

/// Checks an index against the limits agents apply and against the memories that exist
/// (`expected_targets`, relative to the index's directory).
pub fn lint(text: &str, expected_targets: &BTreeSet<String>) -> Vec<LintFinding> {
    let mut findings = Vec::new();
    let mut finding = |rule, message: String, line, error| {
        findings.push(LintFinding {
            rule,
            message,
            line,
            error,
        })
    };
    let all_lines: Vec<&str> = lines(text).collect();
    if all_lines.len() > MAX_LINES {
        finding(
            "index_too_many_lines",
            format!(
                "MEMORY.md has {} lines; the limit is {MAX_LINES}: agents load only the first {MAX_LINES} lines, so later entries are never seen. Shorten or merge entries, or move detail into the memory files",
                thousands(all_lines.len())
            ),
            line_no(MAX_LINES),
            true,
        );
    }
    if text.len() > MAX_BYTES {
        finding(
            "index_too_large",
            format!(
                "MEMORY.md is {} bytes; the limit is {} bytes: agents load only the first {} bytes, so the rest is never seen. Shorten hooks or remove entries",
                thousands(text.len()),
                thousands(MAX_BYTES),
                thousands(MAX_BYTES)
            ),
            None,
            true,
        );
    }

    let mut seen: BTreeSet<String> = BTreeSet::new();
    for (i, line) in all_lines.iter().enumerate() {
        let chars = line.chars().count();
        if chars > LINE_SOFT_MAX {
            finding(
                "index_line_too_long",
                format!(
                    "the line is {chars} characters; keep index lines under {LINE_SOFT_MAX} so each stays a one-line pointer (details belong in the memory file)"
                ),
                line_no(i),
                false,
            );
        }
        let IndexItem::Entry(e) = IndexItem::parse(line) else {
            continue;
        };
        if is_external(&e.target) {
            continue;
        }
        let key = e.key();
        if !expected_targets.contains(key) {
            finding(
                "index_dangling_link",
                format!(
                    "the entry links to `{}`, which is not a memory in this directory: remove the entry or restore the file",
                    echo(key)
                ),
                line_no(i),
                true,
            );
        } else if !seen.insert(key.to_owned()) {
            finding(
                "index_duplicate_entry",
                format!(
                    "`{}` is listed more than once: keep a single entry",
                    echo(key)
                ),
                line_no(i),
                false,
            );
        }
    }
    for target in expected_targets {
        if !seen.contains(target.as_str()) {
            finding(
                "index_missing_entry",
                format!(
                    "`{}` has no entry in MEMORY.md: add a line `- [Title]({}) — one-line hook`",
                    echo(target),
                    echo(target)
                ),
                None,
                true,
            );
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(title: &str, target: &str, hook: &str) -> IndexEntry {
        IndexEntry {
            title: title.into(),
            target: target.into(),
            hook: hook.into(),
        }
    }

    fn targets(index: &Index) -> Vec<&str> {
        index.entries().map(|e| e.target.as_str()).collect()
    }

    fn idx(text: &str) -> Index {
        Index::parse(text)
    }

    #[test]
    fn parses_headings_entries_and_text() {
        let text = "# Memory\n\n## Testing\n- [Testing policy](testing.md) — real DB, no mocks\n- [Ref](ref.md)\nSome prose.\n";
        let index = idx(text);
        assert_eq!(
            index.items,
            vec![
                IndexItem::Heading {
                    level: 1,
                    text: "Memory".into()
                },
                IndexItem::Text(String::new()),
                IndexItem::Heading {
                    level: 2,
                    text: "Testing".into()
                },
                IndexItem::Entry(entry("Testing policy", "testing.md", "real DB, no mocks")),
                IndexItem::Entry(entry("Ref", "ref.md", "")),
                IndexItem::Text("Some prose.".into()),
            ]
        );
        assert_eq!(index.render(), text);
        assert_eq!(
            index.entry("testing.md").map(|e| e.title.as_str()),
            Some("Testing policy")
        );
        assert_eq!(
            index.entry("./ref.md").map(|e| e.target.as_str()),
            Some("ref.md")
        );
        assert!(index.entry("nope.md").is_none());
    }

    #[test]
    fn accepts_other_bullets_and_separators() {
        for line in [
            "* [T](t.md) — h",
            "- [T](t.md) - h",
            "- [T](t.md) – h",
            "- [T](t.md) -- h",
            "- [T](t.md): h",
            "+ [T](t.md) —   h  ",
            "  - [T](t.md) — h",
            "-\t[T](t.md)\t—\th",
        ] {
            assert_eq!(
                idx(line).items,
                vec![IndexItem::Entry(entry("T", "t.md", "h"))],
                "{line}"
            );
        }
        assert_eq!(idx("* [T](t.md) -- h\n").render(), "- [T](t.md) — h\n");
    }

    #[test]
    fn non_entries_stay_text() {
        for line in [
            "-[T](t.md)",
            "- [T] (t.md)",
            "- [T](t.md) extra words",
            "- [T](t.md)-h",
            "- [T](t.md",
            "- [T(t.md)",
            "- [T]()",
            "#nospace",
            "#",
            "# ",
            "####### seven",
            " # indented",
            "plain text",
        ] {
            assert_eq!(
                idx(line).items,
                vec![IndexItem::Text(line.into())],
                "{line}"
            );
        }
    }

    #[test]
    fn nested_brackets_and_escapes_in_links() {
        let e = &idx("- [a [b] c](x_(1).md) — h").items[0];
        assert_eq!(e, &IndexItem::Entry(entry("a [b] c", "x_(1).md", "h")));
        let e = &idx("- [a \\] b](x.md)").items[0];
        assert_eq!(e, &IndexItem::Entry(entry("a \\] b", "x.md", "")));
    }

    #[test]
    fn crlf_and_bom() {
        let index = idx("\u{feff}## H\r\n- [T](t.md) — h\r\n\r\ntext\r\n");
        assert_eq!(index.render(), "## H\n- [T](t.md) — h\n\ntext\n");
    }

    #[test]
    fn render_of_empty_and_unterminated() {
        assert_eq!(idx("").render(), "");
        assert_eq!(idx("\n").render(), "\n");
        assert_eq!(idx("a").render(), "a\n");
        assert_eq!(idx("a\n\n").items.len(), 2);
    }

    #[test]
    fn entry_render() {
        assert_eq!(entry("T", "t.md", "h").render(), "- [T](t.md) — h");
        assert_eq!(entry("T", "t.md", "").render(), "- [T](t.md)");
    }

    #[test]
    fn merge_both_sides_add_entries_at_once() {
        let base = idx("- [A](a.md) — a\n");
        let ours = idx("- [A](a.md) — a\n- [X](x.md) — x\n");
        let theirs = idx("- [A](a.md) — a\n- [Y](y.md) — y\n");
        let m = merge(&base, &ours, &theirs);
        assert_eq!(
            m.render(),
            "- [A](a.md) — a\n- [X](x.md) — x\n- [Y](y.md) — y\n"
        );
    }

    #[test]
    fn merge_removals_and_changes() {
        let base = idx("- [A](a.md) — a\n- [B](b.md) — b\n- [C](c.md) — c\n- [D](d.md) — d\n");
        // ours: removes A, changes B, keeps C, keeps D
        let ours = idx("- [B](b.md) — ours\n- [C](c.md) — c\n- [D](d.md) — d\n");
        // theirs: changes A, removes B, removes C, changes D
        let theirs = idx("- [A](a.md) — theirs\n- [D](d.md) — theirs\n");
        let m = merge(&base, &ours, &theirs);
        // A: removed by ours but changed by theirs → kept; B: changed by ours, removed by
        // theirs → kept (nothing precedes it in ours, so it joins the end of the list);
        // C: removed by theirs → gone; D: theirs' change.
        assert_eq!(
            m.render(),
            "- [A](a.md) — theirs\n- [D](d.md) — theirs\n- [B](b.md) — ours\n"
        );
    }

    #[test]
    fn merge_both_changed_ours_wins_and_no_duplicates() {
        let base = idx("- [A](a.md) — a\n");
        let ours = idx("- [A](a.md) — ours\n- [N](n.md) — ours\n");
        let theirs = idx("- [A](a.md) — theirs\n- [A](a.md) — dup\n- [N](n.md) — theirs\n");
        let m = merge(&base, &ours, &theirs);
        assert_eq!(m.render(), "- [A](a.md) — ours\n- [N](n.md) — ours\n");
    }

    #[test]
    fn merge_removed_on_both_sides() {
        let base = idx("- [A](a.md)\n- [B](b.md)\n");
        let m = merge(&base, &idx("- [B](b.md)\n"), &idx("- [B](b.md)\n"));
        assert_eq!(targets(&m), vec!["b.md"]);
    }

    #[test]
    fn merge_places_new_entries_under_their_heading() {
        let base = idx("## Testing\n- [A](a.md)\n\n## Infra\n- [B](b.md)\n");
        // ours adds X as the first entry under Infra and Z under a new heading
        let ours = idx(
            "## Testing\n- [A](a.md)\n\n## Infra\n- [X](x.md)\n- [B](b.md)\n\n## New\n- [Z](z.md)\n",
        );
        // theirs reorders sections and removes A
        let theirs = idx("## Infra\n- [B](b.md)\n- [C](c.md)\n\n## Testing\n");
        let m = merge(&base, &ours, &theirs);
        assert_eq!(
            m.render(),
            "## Infra\n- [B](b.md)\n- [C](c.md)\n- [X](x.md)\n\n## Testing\n\n## New\n- [Z](z.md)\n"
        );
    }

    #[test]
    fn merge_entry_after_deleted_predecessor_uses_heading_then_end() {
        let base = idx("## H\n- [A](a.md)\n");
        let ours = idx("## H\n- [A](a.md)\n- [X](x.md)\n");
        let theirs = idx("## H\n");
        // A was deleted by theirs; X's predecessor is gone, so it goes under heading H.
        assert_eq!(merge(&base, &ours, &theirs).render(), "## H\n- [X](x.md)\n");
        // With no heading in ours and no preamble entries in theirs, X goes at the end.
        let m = merge(&idx(""), &idx("- [X](x.md)\n"), &idx("# Title\nprose\n"));
        assert_eq!(m.render(), "# Title\nprose\n- [X](x.md)\n");
        // Preamble entries in theirs: X joins them.
        let m = merge(
            &idx(""),
            &idx("- [X](x.md)\n"),
            &idx("- [Y](y.md)\n\n## H\n- [Z](z.md)\n"),
        );
        assert_eq!(
            m.render(),
            "- [Y](y.md)\n- [X](x.md)\n\n## H\n- [Z](z.md)\n"
        );
    }

    #[test]
    fn merge_layout_follows_theirs() {
        let base = idx("- [A](a.md)\n- [B](b.md)\n");
        let ours = idx("# Ours only\n- [B](b.md)\n- [A](a.md)\nours text\n");
        let theirs = idx("theirs text\n- [A](a.md)\n- [B](b.md)\n");
        // Entry order follows theirs; the prose ours added is kept where ours had it.
        assert_eq!(
            merge(&base, &ours, &theirs),
            idx("# Ours only\ntheirs text\n- [A](a.md)\nours text\n- [B](b.md)\n")
        );
    }

    #[test]
    fn entry_hook_fits_the_soft_limit() {
        assert_eq!(entry_hook("short\n hook", "T", "t.md"), "short hook");
        let long = "word ".repeat(100);
        let hook = entry_hook(&long, "Title", "title.md");
        let line = entry("Title", "title.md", &hook).render();
        assert!(line.chars().count() <= LINE_SOFT_MAX, "{line}");
        assert!(hook.ends_with('…') && hook.starts_with("word word"));
        let unbroken = "é".repeat(500);
        let hook = entry_hook(&unbroken, "T", "t.md");
        assert_eq!(
            entry("T", "t.md", &hook).render().chars().count(),
            LINE_SOFT_MAX
        );
        assert_eq!(entry_hook("desc", &"t".repeat(200), "t.md"), "");
    }

    #[test]
    fn reconcile_removes_dangling_and_duplicates_and_adds_missing() {
        let mut index = idx(
            "## Notes\n- [A](a.md) — a\n- [Gone](gone.md) — g\n- [A again](./a.md)\n- [Web](https://x.example/a) — w\n- [Anchor](#top)\ntext\n",
        );
        let mut expected = BTreeMap::new();
        for (t, title) in [("a.md", "A"), ("z.md", "Zed [draft]"), ("b.md", "Bee")] {
            expected.insert(
                t.to_owned(),
                Expected {
                    title: title.into(),
                    hook: format!("about {t}"),
                },
            );
        }
        assert!(reconcile(&mut index, &expected));
        assert_eq!(
            index.render(),
            "## Notes\n- [A](a.md) — a\n- [Web](https://x.example/a) — w\n- [Anchor](#top)\ntext\n- [Bee](b.md) — about b.md\n- [Zed \\[draft\\]](z.md) — about z.md\n"
        );
        assert_eq!(Index::parse(&index.render()), index);
        assert!(
            !reconcile(&mut index, &expected),
            "second run changes nothing"
        );
    }

    #[test]
    fn reconcile_empty_index() {
        let mut index = Index::default();
        assert!(!reconcile(&mut index, &BTreeMap::new()));
        let expected = BTreeMap::from([(
            "a.md".to_owned(),
            Expected {
                title: "A".into(),
                hook: "d".repeat(400),
            },
        )]);
        assert!(reconcile(&mut index, &expected));
        let line = index.render();
        assert!(line.trim_end().chars().count() <= LINE_SOFT_MAX);
        assert!(lint(&line, &BTreeSet::from(["a.md".to_owned()])).is_empty());
    }

    fn lint_rules(text: &str, expected: &[&str]) -> Vec<(&'static str, Option<u32>, bool)> {
        let expected = expected.iter().map(|s| s.to_string()).collect();
        lint(text, &expected)
            .into_iter()
            .map(|f| (f.rule, f.line, f.error))
            .collect()
    }

    #[test]
    fn lint_entries() {
        let text =
            "# Index\n- [A](a.md) — a\n- [G](gone.md)\n- [A2](a.md)\n- [W](https://w.example/)\n";
        assert_eq!(
            lint_rules(text, &["a.md", "b.md"]),
            vec![
                ("index_dangling_link", Some(3), true),
                ("index_duplicate_entry", Some(4), false),
                ("index_missing_entry", None, true),
            ]
        );
        assert!(
            lint_rules(text.replace("gone", "b").as_str(), &["a.md", "b.md"])
                .iter()
                .all(|f| f.0 == "index_duplicate_entry")
        );
    }

    #[test]
    fn lint_line_length() {
        let text = format!("- [A](a.md) — {}\n", "h".repeat(140));
        assert_eq!(
            lint_rules(&text, &["a.md"]),
            vec![("index_line_too_long", Some(1), false)]
        );
        let ok = format!("- [A](a.md) — {}\n", "h".repeat(136));
        assert_eq!(ok.trim_end().chars().count(), LINE_SOFT_MAX);
        assert!(lint_rules(&ok, &["a.md"]).is_empty());
    }

    #[test]
    fn lint_size_limits() {
        let many = "x\n".repeat(MAX_LINES + 1);
        let findings = lint(&many, &BTreeSet::new());
        assert_eq!(findings.len(), 1);
        assert_eq!(
            (findings[0].rule, findings[0].error),
            ("index_too_many_lines", true)
        );
        assert!(
            findings[0].message.contains("201") && findings[0].message.contains("first 200 lines")
        );
        assert!(lint(&"x\n".repeat(MAX_LINES), &BTreeSet::new()).is_empty());

        let big = format!("{}\n", "y".repeat(100)).repeat(MAX_BYTES / 101 + 1);
        let rules: Vec<_> = lint(&big, &BTreeSet::new())
            .into_iter()
            .filter(|f| f.rule == "index_too_large")
            .collect();
        assert_eq!(rules.len(), 1);
        assert!(
            rules[0].message.contains("first 25,000 bytes"),
            "{}",
            rules[0].message
        );
        assert!(rules[0].message.contains(&thousands(big.len())));
    }

    #[test]
    fn thousands_groups() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(25_000), "25,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn merge_keeps_prose_either_side_wrote() {
        let base = Index::parse("# Team\n- [A](a.md) — a\n");
        let ours = Index::parse("# Team\nRead these first.\n- [A](a.md) — a\n");
        let theirs = Index::parse("# Team\n- [A](a.md) — a\n- [B](b.md) — b\nAsk in #memsync.\n");
        let m = merge(&base, &ours, &theirs).render();
        assert_eq!(
            m,
            "# Team\nRead these first.\n- [A](a.md) — a\n- [B](b.md) — b\nAsk in #memsync.\n"
        );
        // A line ours removed goes, even though theirs kept it.
        let ours2 = Index::parse("- [A](a.md) — a\n");
        let m2 = merge(&base, &ours2, &theirs).render();
        assert!(!m2.contains("# Team"), "{m2}");
        assert!(m2.contains("Ask in #memsync."), "{m2}");
    }
}
