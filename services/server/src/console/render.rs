//! What the console's templates show of untrusted memory text: markdown bodies as inert HTML,
//! unified diffs as numbered lines (unified or side by side), ages and frontmatter values.
//! Pure functions, no I/O.
//!
//! Memory bodies are written by anyone on the team (and by their agents), so [`markdown`] treats
//! them as hostile: raw HTML is shown as text, only http(s)/mailto/fragment links become links,
//! images are never fetched, and no id or attribute comes from the input unprefixed.

use chrono::{DateTime, Utc};
use pulldown_cmark::{Alignment, CowStr, Event, LinkType, Options, Parser, Tag, TagEnd, html};
use pulldown_cmark_escape::{escape_href, escape_html};
use serde_json::Value;

/// Every link we render leaves the console without handing it our referrer or window.
const LINK_REL: &str = "nofollow noopener noreferrer";

/// Schemes a rendered link may have; everything else (and relative links) is shown as text.
const LINK_SCHEMES: [&str; 3] = ["http", "https", "mailto"];

/// A memory body (markdown, untrusted) as HTML that is safe to insert into a page.
///
/// - Raw HTML (blocks and inline) is shown as escaped text: an HTML block as a
///   `<pre class="raw-html"><code>` block, inline HTML in place, so an auditor sees exactly what
///   the agents are told (comments included).
/// - Links: only http, https, mailto and fragment destinations become
///   `<a href=".." rel="nofollow noopener noreferrer">`; any other (or relative) destination is
///   rendered as the link text followed by `<code class="dest">destination</code>`. An autolink
///   whose text is its destination shows only the `<code class="dest">`.
/// - Images are never `<img>`: `[image: ALT]` followed by `<code class="dest">destination</code>`.
/// - Footnotes, tables, strikethrough and task lists are enabled. Footnote ids are prefixed with
///   `fn-` so they cannot collide with the page's own ids; table alignment becomes a class
///   (`align-left`, `align-center`, `align-right`) instead of an inline style the CSP would block.
/// - Heading ids and attributes never come from the input.
pub fn markdown(body: &str) -> String {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS;
    let mut parser = Parser::new_ext(body, options);
    let mut events: Vec<Event<'_>> = Vec::new();
    // One entry per open link: `None` when it was rendered as `<a>`, else the destination to show
    // after its text.
    let mut open_links: Vec<Option<String>> = Vec::new();
    let mut table = TableCells::default();

    while let Some(event) = parser.next() {
        match event {
            Event::Html(raw) | Event::InlineHtml(raw) => events.push(Event::Text(raw)),
            Event::Start(Tag::HtmlBlock) => {
                events.push(Event::Html(r#"<pre class="raw-html"><code>"#.into()));
            }
            Event::End(TagEnd::HtmlBlock) => events.push(Event::Html("</code></pre>\n".into())),
            Event::Start(Tag::Heading { level, .. }) => events.push(Event::Start(Tag::Heading {
                level,
                id: None,
                classes: Vec::new(),
                attrs: Vec::new(),
            })),
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                ..
            }) => {
                let dest = match link_type {
                    // pulldown gives an email autolink's address without its scheme.
                    LinkType::Email => format!("mailto:{dest_url}"),
                    _ => dest_url.into_string(),
                };
                match link_href(&dest) {
                    Some(href) => {
                        events.push(Event::Html(anchor(href, &title).into()));
                        open_links.push(None);
                    }
                    None if link_type == LinkType::Autolink => {
                        // The text is the destination itself: show it once.
                        plain_text(&mut parser);
                        events.push(Event::Html(dest_code(&dest).into()));
                    }
                    None => open_links.push(Some(dest)),
                }
            }
            Event::End(TagEnd::Link) => match open_links.pop().flatten() {
                Some(dest) => events.push(Event::Html(dest_code(&dest).into())),
                None => events.push(Event::Html("</a>".into())),
            },
            Event::Start(Tag::Image { dest_url, .. }) => {
                let alt = plain_text(&mut parser);
                events.push(Event::Text(format!("[image: {alt}]").into()));
                events.push(Event::Html(dest_code(&dest_url).into()));
            }
            Event::FootnoteReference(name) => {
                events.push(Event::FootnoteReference(footnote_id(&name)));
            }
            Event::Start(Tag::FootnoteDefinition(name)) => {
                events.push(Event::Start(Tag::FootnoteDefinition(footnote_id(&name))));
            }
            Event::Start(Tag::Table(alignments)) => {
                table = TableCells {
                    alignments,
                    ..TableCells::default()
                };
                events.push(Event::Start(Tag::Table(Vec::new())));
            }
            Event::Start(Tag::TableHead) => {
                table.in_head = true;
                table.index = 0;
                events.push(Event::Start(Tag::TableHead));
            }
            Event::End(TagEnd::TableHead) => {
                table.in_head = false;
                events.push(Event::End(TagEnd::TableHead));
            }
            Event::Start(Tag::TableRow) => {
                table.index = 0;
                events.push(Event::Start(Tag::TableRow));
            }
            Event::Start(Tag::TableCell) => events.push(table.cell_start()),
            other => events.push(other),
        }
    }

    let mut out = String::new();
    html::push_html(&mut out, events.into_iter());
    out
}

/// The `href` a link destination may have, or `None` when it must be shown as text.
///
/// Browsers ignore leading/trailing spaces and control characters and drop tabs and newlines
/// anywhere in a URL, so the scheme is checked both on the trimmed destination (what we emit)
/// and on the destination with every ASCII space and control character removed (what a browser
/// could read). pulldown has already decoded entities and backslash escapes.
fn link_href(dest: &str) -> Option<&str> {
    let is_space_or_control = |c: char| c.is_ascii_whitespace() || c.is_ascii_control();
    let trimmed = dest.trim_matches(is_space_or_control);
    let squeezed: String = dest.chars().filter(|&c| !is_space_or_control(c)).collect();
    (allowed_destination(trimmed) && allowed_destination(&squeezed)).then_some(trimmed)
}

fn allowed_destination(dest: &str) -> bool {
    dest.starts_with('#')
        || dest.split_once(':').is_some_and(|(scheme, _)| {
            LINK_SCHEMES
                .iter()
                .any(|allowed| scheme.eq_ignore_ascii_case(allowed))
        })
}

fn anchor(href: &str, title: &str) -> String {
    let title = if title.is_empty() {
        String::new()
    } else {
        format!(" title=\"{}\"", attribute_text(title))
    };
    format!(
        "<a href=\"{}\"{title} rel=\"{LINK_REL}\">",
        attribute_href(href)
    )
}

/// A destination that is not rendered as a link, shown after its text.
fn dest_code(dest: &str) -> String {
    format!(" <code class=\"dest\">{}</code>", attribute_text(dest))
}

/// Text escaped for an attribute value or element content (`&`, `<`, `>`, `"` and `'`).
fn attribute_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    // Writing to a String cannot fail.
    let _ = escape_html(&mut out, text);
    out
}

/// A URL escaped for an `href`: unsafe bytes percent-encoded, `&` and `'` as entities.
fn attribute_href(href: &str) -> String {
    let mut out = String::with_capacity(href.len());
    // Writing to a String cannot fail.
    let _ = escape_href(&mut out, href);
    out
}

fn footnote_id(name: &str) -> CowStr<'static> {
    format!("fn-{name}").into()
}

/// Consumes the events up to the end of the element just started and returns its text (an
/// image's alt text, an autolink's text): markup inside is dropped, breaks become spaces.
fn plain_text(parser: &mut Parser<'_>) -> String {
    let mut text = String::new();
    let mut depth = 0usize;
    for event in parser.by_ref() {
        match event {
            Event::Start(_) => depth += 1,
            Event::End(_) if depth == 0 => break,
            Event::End(_) => depth -= 1,
            Event::Text(t) | Event::Code(t) | Event::InlineHtml(t) | Event::Html(t) => {
                text.push_str(&t);
            }
            Event::SoftBreak | Event::HardBreak | Event::Rule => text.push(' '),
            Event::FootnoteReference(name) => {
                text.push_str("[^");
                text.push_str(&name);
                text.push(']');
            }
            Event::InlineMath(t) | Event::DisplayMath(t) => text.push_str(&t),
            Event::TaskListMarker(_) => {}
        }
    }
    text
}

/// Table cells with their alignment as a class, since the CSP blocks pulldown's inline styles.
#[derive(Default)]
struct TableCells {
    alignments: Vec<Alignment>,
    in_head: bool,
    index: usize,
}

impl TableCells {
    fn cell_start(&mut self) -> Event<'static> {
        let class = match self.alignments.get(self.index) {
            Some(Alignment::Left) => Some("align-left"),
            Some(Alignment::Center) => Some("align-center"),
            Some(Alignment::Right) => Some("align-right"),
            Some(Alignment::None) | None => None,
        };
        self.index += 1;
        match class {
            // pulldown still closes the cell with `</th>` / `</td>` from its own head state.
            Some(class) => {
                let cell = if self.in_head { "th" } else { "td" };
                Event::Html(format!("<{cell} class=\"{class}\">").into())
            }
            None => Event::Start(Tag::TableCell),
        }
    }
}

/// What a line of a unified diff is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiffKind {
    /// `--- old` / `+++ new` before the first hunk (text is the whole line).
    Header,
    /// `@@ -l,n +l,n @@` (text is the whole line).
    Hunk,
    Context,
    Added,
    Removed,
    /// `\ No newline at end of file` (text without the `\ `), or a line that is not part of a
    /// well-formed diff (text is the whole line).
    Note,
}

/// One line of a unified diff with its line numbers in the old and new text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffLine {
    pub kind: DiffKind,
    pub old_no: Option<u32>,
    pub new_no: Option<u32>,
    /// The line without its marker (unescaped: the templates escape it).
    pub text: String,
}

/// Parses a unified diff (as `memsync_core::merge::unified_diff` writes it) into lines with
/// old/new line numbers. Hunk lines are counted against their `@@` header, so a removed line
/// that reads `-- x` is not taken for a `--- ` header. Malformed input never panics: lines that
/// fit nowhere become [`DiffKind::Note`].
pub fn parse_unified(diff: &str) -> Vec<DiffLine> {
    let mut lines = Vec::new();
    let mut hunk: Option<HunkCursor> = None;
    for line in diff.lines() {
        if let Some(note) = line.strip_prefix('\\') {
            lines.push(DiffLine::unnumbered(DiffKind::Note, note.trim_start()));
            continue;
        }
        if let Some(parsed) = hunk.as_mut().and_then(|cursor| cursor.take(line)) {
            lines.push(parsed);
            continue;
        }
        if line.starts_with("@@") {
            match HunkCursor::parse(line) {
                Some(cursor) => {
                    hunk = Some(cursor);
                    lines.push(DiffLine::unnumbered(DiffKind::Hunk, line));
                }
                None => {
                    hunk = None;
                    lines.push(DiffLine::unnumbered(DiffKind::Note, line));
                }
            }
        } else if line.starts_with("--- ") || line.starts_with("+++ ") {
            hunk = None;
            lines.push(DiffLine::unnumbered(DiffKind::Header, line));
        } else {
            lines.push(DiffLine::unnumbered(DiffKind::Note, line));
        }
    }
    lines
}

impl DiffLine {
    fn unnumbered(kind: DiffKind, text: &str) -> Self {
        Self {
            kind,
            old_no: None,
            new_no: None,
            text: text.to_owned(),
        }
    }
}

/// Where we are in a hunk: the next line numbers and how many old/new lines its header promised.
struct HunkCursor {
    old_no: u32,
    new_no: u32,
    old_left: u32,
    new_left: u32,
}

impl HunkCursor {
    /// `@@ -a[,b] +c[,d] @@[ section]`; a missing count means 1.
    fn parse(line: &str) -> Option<Self> {
        let ranges = line.strip_prefix("@@ -")?.split_once(" @@")?.0;
        let (old, new) = ranges.split_once(" +")?;
        let (old_no, old_left) = hunk_range(old)?;
        let (new_no, new_left) = hunk_range(new)?;
        Some(Self {
            old_no,
            new_no,
            old_left,
            new_left,
        })
    }

    /// The line as part of this hunk, or `None` when the hunk has no room for it.
    fn take(&mut self, line: &str) -> Option<DiffLine> {
        let (marker, text) = match line.chars().next() {
            // An empty line inside a hunk is an empty context line whose space was trimmed.
            None => (' ', ""),
            Some(marker) => (marker, &line[marker.len_utf8()..]),
        };
        let (kind, old_no, new_no) = match marker {
            ' ' if self.old_left > 0 && self.new_left > 0 => {
                self.old_left -= 1;
                self.new_left -= 1;
                (DiffKind::Context, Some(self.old_no), Some(self.new_no))
            }
            '-' if self.old_left > 0 => {
                self.old_left -= 1;
                (DiffKind::Removed, Some(self.old_no), None)
            }
            '+' if self.new_left > 0 => {
                self.new_left -= 1;
                (DiffKind::Added, None, Some(self.new_no))
            }
            _ => return None,
        };
        if old_no.is_some() {
            self.old_no = self.old_no.saturating_add(1);
        }
        if new_no.is_some() {
            self.new_no = self.new_no.saturating_add(1);
        }
        Some(DiffLine {
            kind,
            old_no,
            new_no,
            text: text.to_owned(),
        })
    }
}

fn hunk_range(range: &str) -> Option<(u32, u32)> {
    let number = |s: &str| {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s.parse::<u32>().ok()
    };
    match range.split_once(',') {
        Some((start, count)) => Some((number(start)?, number(count)?)),
        None => Some((number(range)?, 1)),
    }
}

/// One side of a side-by-side row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SideCell {
    pub no: u32,
    pub text: String,
    /// Removed (left) or added (right) rather than context.
    pub changed: bool,
}

/// A side-by-side row: a hunk header (`hunk`, no cells) or the old line and/or the new line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SideRow {
    pub hunk: Option<String>,
    pub left: Option<SideCell>,
    pub right: Option<SideCell>,
}

/// Side-by-side rows: a row per hunk header, context lines on both sides, and within a hunk a
/// run of removals followed by a run of additions paired row by row (the longer run's extra lines
/// have an empty other side). File headers and notes (`\ No newline at end of file`) have no row.
pub fn side_by_side(lines: &[DiffLine]) -> Vec<SideRow> {
    let mut rows = Vec::new();
    let mut removed: Vec<SideCell> = Vec::new();
    let mut added: Vec<SideCell> = Vec::new();
    for line in lines {
        match line.kind {
            DiffKind::Removed => {
                // Removals after additions start a new change block.
                if !added.is_empty() {
                    pair_changes(&mut rows, &mut removed, &mut added);
                }
                removed.push(SideCell {
                    no: line.old_no.unwrap_or_default(),
                    text: line.text.clone(),
                    changed: true,
                });
            }
            DiffKind::Added => added.push(SideCell {
                no: line.new_no.unwrap_or_default(),
                text: line.text.clone(),
                changed: true,
            }),
            DiffKind::Context => {
                pair_changes(&mut rows, &mut removed, &mut added);
                rows.push(SideRow {
                    hunk: None,
                    left: Some(SideCell {
                        no: line.old_no.unwrap_or_default(),
                        text: line.text.clone(),
                        changed: false,
                    }),
                    right: Some(SideCell {
                        no: line.new_no.unwrap_or_default(),
                        text: line.text.clone(),
                        changed: false,
                    }),
                });
            }
            DiffKind::Hunk => {
                pair_changes(&mut rows, &mut removed, &mut added);
                rows.push(SideRow {
                    hunk: Some(line.text.clone()),
                    left: None,
                    right: None,
                });
            }
            DiffKind::Header => pair_changes(&mut rows, &mut removed, &mut added),
            DiffKind::Note => {}
        }
    }
    pair_changes(&mut rows, &mut removed, &mut added);
    rows
}

fn pair_changes(rows: &mut Vec<SideRow>, removed: &mut Vec<SideCell>, added: &mut Vec<SideCell>) {
    let mut left = removed.drain(..);
    let mut right = added.drain(..);
    loop {
        let row = SideRow {
            hunk: None,
            left: left.next(),
            right: right.next(),
        };
        if row.left.is_none() && row.right.is_none() {
            break;
        }
        rows.push(row);
    }
}

/// How long ago an RFC 3339 time was, in words ("just now", "5 minutes ago", "1 day ago",
/// "4 months ago", "2 years ago"). A time in the future is "just now"; text that is not RFC 3339
/// is returned unchanged.
pub fn age(rfc3339: &str, now: DateTime<Utc>) -> String {
    let Ok(then) = DateTime::parse_from_rfc3339(rfc3339) else {
        return rfc3339.to_owned();
    };
    let seconds = now.signed_duration_since(then).num_seconds();
    const MINUTE: i64 = 60;
    const HOUR: i64 = 60 * MINUTE;
    const DAY: i64 = 24 * HOUR;
    let (count, unit) = match seconds {
        s if s < MINUTE => return "just now".to_owned(),
        s if s < HOUR => (s / MINUTE, "minute"),
        s if s < DAY => (s / HOUR, "hour"),
        s => match s / DAY {
            days if days < 30 => (days, "day"),
            // 360..=364 days would be "12 months": that is still under a year.
            days if days < 365 => ((days / 30).min(11), "month"),
            days => (days / 365, "year"),
        },
    };
    let plural = if count == 1 { "" } else { "s" };
    format!("{count} {unit}{plural} ago")
}

/// A frontmatter value as one display string: strings as they are, arrays joined with ", ",
/// null as nothing, objects, numbers and booleans as compact JSON.
pub fn field_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Array(items) => items.iter().map(field_text).collect::<Vec<_>>().join(", "),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
}
