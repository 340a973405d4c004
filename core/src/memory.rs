//! The memory file format: markdown with a YAML frontmatter block.
//!
//! The frontmatter is split off by hand so that the original bytes (BOM, CRLF, `...` closer,
//! comments, key order, unknown keys) survive untouched: `MemoryDoc` is a read-only view over
//! the exact text, and `render` gives that text back.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Default largest memory file, in bytes (configurable on the server).
pub const DEFAULT_MAX_FILE_BYTES: usize = 100 * 1024;

const NAME_MAX_CHARS: usize = 100;
const DESCRIPTION_MAX_CHARS: usize = 300;
/// How much of an offending value a message repeats.
const ECHO_CHARS: usize = 80;
const BOM: char = '\u{feff}';
/// The opening `---` is always line 1, so the YAML starts on line 2.
const YAML_FIRST_LINE: u32 = 2;

/// Messages stay on one line (they end up in JSON and terminal tables), so the expected block is
/// described rather than shown.
const FRONTMATTER_EXAMPLE: &str = "start the file with a line `---`, then the lines `name: <short-slug>`, `description: <one line>` and `type: <user|feedback|project|reference>`, then a closing line `---`, then the markdown body";

/// What a memory is about; decides where it may be synced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryType {
    User,
    Feedback,
    Project,
    Reference,
}

impl MemoryType {
    pub const ALL: [MemoryType; 4] = [
        MemoryType::User,
        MemoryType::Feedback,
        MemoryType::Project,
        MemoryType::Reference,
    ];

    pub fn as_str(&self) -> &'static str {
        match self {
            MemoryType::User => "user",
            MemoryType::Feedback => "feedback",
            MemoryType::Project => "project",
            MemoryType::Reference => "reference",
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("unknown memory type: use one of user|feedback|project|reference")]
pub struct UnknownMemoryType;

impl FromStr for MemoryType {
    type Err = UnknownMemoryType;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        MemoryType::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or(UnknownMemoryType)
    }
}

impl fmt::Display for MemoryType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One thing wrong with a memory file, with a stable rule id and (when known) its 1-based line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub rule: &'static str,
    pub message: String,
    pub line: Option<u32>,
}

impl Problem {
    fn new(rule: &'static str, message: impl Into<String>, line: Option<u32>) -> Problem {
        Problem {
            rule,
            message: message.into(),
            line,
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "line {line}: {} [{}]", self.message, self.rule),
            None => write!(f, "{} [{}]", self.message, self.rule),
        }
    }
}

/// A parsed memory file: the exact text plus its frontmatter as a generic YAML mapping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryDoc {
    text: String,
    frontmatter: Map<String, Value>,
    body_offset: usize,
    body_start_line: u32,
}

/// A line of `text` without its terminator, with where it starts and where the next one starts.
struct Line<'a> {
    content: &'a str,
    start: usize,
    next: usize,
}

fn lines_with_offsets(text: &str, from: usize) -> impl Iterator<Item = Line<'_>> {
    let mut pos = from;
    std::iter::from_fn(move || {
        if pos >= text.len() {
            return None;
        }
        let rest = &text[pos..];
        let (raw, len) = match rest.find('\n') {
            Some(i) => (&rest[..i], i + 1),
            None => (rest, rest.len()),
        };
        let line = Line {
            content: raw.strip_suffix('\r').unwrap_or(raw),
            start: pos,
            next: pos + len,
        };
        pos += len;
        Some(line)
    })
}

fn is_fence(content: &str, closers: &[&str]) -> bool {
    let trimmed = content.trim_end_matches([' ', '\t']);
    closers.contains(&trimmed)
}

fn yaml_options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        // Messages are rendered by us with file line numbers; no snippets.
        with_snippet: false,
        // `name: no` and `type: yes` are strings, not YAML 1.1 booleans.
        strict_booleans: true,
        // An unknown key holding `.nan` must not make the whole file invalid.
        non_finite_float_policy: serde_saphyr::NonFiniteFloatPolicy::AsString,
        // Frontmatter is a handful of keys; anything near these limits is an alias bomb or
        // garbage, and the server parses untrusted pushes.
        budget: serde_saphyr::budget! { max_nodes: 20_000, max_events: 100_000, max_depth: 32 },
        alias_limits: serde_saphyr::alias_limits! { max_total_replayed_events: 20_000 },
    }
}

fn line_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A short, single-line preview of a user value for messages.
fn echo(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars().take(ECHO_CHARS) {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if s.chars().nth(ECHO_CHARS).is_some() {
        out.push('…');
    }
    out
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "empty",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

impl MemoryDoc {
    /// Splits off and parses the frontmatter. Only structure is checked here; field rules are in
    /// [`validate`].
    pub fn parse(text: &str) -> Result<MemoryDoc, Problem> {
        let start = if text.starts_with(BOM) {
            BOM.len_utf8()
        } else {
            0
        };
        let mut lines = lines_with_offsets(text, start);
        let Some(opener) = lines.next().filter(|l| is_fence(l.content, &["---"])) else {
            return Err(Problem::new(
                "frontmatter_missing",
                format!("the file has no frontmatter: {FRONTMATTER_EXAMPLE}"),
                Some(1),
            ));
        };
        let yaml_start = opener.next;
        let mut closing = None;
        for (i, line) in lines.enumerate() {
            if is_fence(line.content, &["---", "..."]) {
                // Line 1 is the opener, and `enumerate` starts at the line after it.
                closing = Some((line, line_u32(i + 2)));
                break;
            }
        }
        let Some((close, close_line)) = closing else {
            return Err(Problem::new(
                "frontmatter_unclosed",
                "the frontmatter opened on line 1 is never closed: end it with a line containing only `---`",
                Some(1),
            ));
        };

        let yaml = &text[yaml_start..close.start];
        let value: Value =
            serde_saphyr::from_str_with_options(yaml, yaml_options()).map_err(|e| {
                // The YAML starts on file line 2, so its line N is file line N + 1.
                let f = serde_saphyr::UserMessageFormatter;
                let rendered = e.render_with_options(serde_saphyr::render_options! {
                    formatter: &f,
                    snippets: serde_saphyr::SnippetMode::Off,
                    line_offset: 1,
                });
                let line = e.location().map(|l| {
                    u32::try_from(l.line())
                        .unwrap_or(u32::MAX)
                        .saturating_add(1)
                });
                Problem::new(
                    "frontmatter_invalid",
                    format!(
                        "the frontmatter is not valid YAML: {}",
                        echo_long(&rendered)
                    ),
                    line,
                )
            })?;
        let frontmatter = match value {
            Value::Object(map) => map,
            // An empty block is an empty mapping: the missing fields are reported one by one.
            Value::Null => Map::new(),
            other => {
                return Err(Problem::new(
                    "frontmatter_not_mapping",
                    format!(
                        "the frontmatter is {}, not a mapping of `key: value` lines: {FRONTMATTER_EXAMPLE}",
                        kind_of(&other)
                    ),
                    Some(2),
                ));
            }
        };
        Ok(MemoryDoc {
            text: text.to_owned(),
            frontmatter,
            body_offset: close.next,
            body_start_line: close_line.saturating_add(1),
        })
    }

    /// The exact text this document was parsed from.
    pub fn render(&self) -> String {
        self.text.clone()
    }

    pub fn name(&self) -> Option<&str> {
        self.get_str("name")
    }

    pub fn description(&self) -> Option<&str> {
        self.get_str("description")
    }

    /// The type as written: top-level `type`, else `metadata.type`.
    pub fn raw_type(&self) -> Option<&str> {
        self.get_str("type")
            .or_else(|| self.metadata_type().and_then(Value::as_str))
    }

    pub fn memory_type(&self) -> Option<MemoryType> {
        self.raw_type()?.parse().ok()
    }

    /// A top-level string value, e.g. `overrides` or `supersedes`.
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.frontmatter.get(key).and_then(Value::as_str)
    }

    /// The paths a top-level key names (`supersedes`, `compatible-with`): one path as a string,
    /// or a list of them, trimmed; none when the key is absent or empty. `None` when it holds
    /// something else (a number, a mapping).
    pub fn get_paths(&self, key: &str) -> Option<Vec<String>> {
        match self.frontmatter.get(key) {
            None | Some(Value::Null) => Some(Vec::new()),
            Some(Value::String(s)) => Some(vec![s.trim().to_owned()]),
            Some(Value::Array(items)) => Some(
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|s| s.trim().to_owned())
                    .collect(),
            ),
            Some(_) => None,
        }
    }

    /// The whole frontmatter as a generic mapping (unknown keys included).
    pub fn frontmatter(&self) -> &Map<String, Value> {
        &self.frontmatter
    }

    pub fn body(&self) -> &str {
        &self.text[self.body_offset..]
    }

    /// 1-based line where the body starts (the line after the closing `---`).
    pub fn body_start_line(&self) -> u32 {
        self.body_start_line
    }

    fn metadata_type(&self) -> Option<&Value> {
        self.frontmatter
            .get("metadata")
            .and_then(Value::as_object)
            .and_then(|m| m.get("type"))
    }

    /// Best-effort file line of a frontmatter key, for pointing at problems. `parent` finds a
    /// nested key (such as `metadata.type`) under its parent key.
    fn key_line(&self, key: &str, parent: Option<&str>) -> Option<u32> {
        let yaml_end = self.body_offset;
        let mut in_parent = parent.is_none();
        let first = lines_with_offsets(&self.text, 0)
            .next()
            .map_or(0, |l| l.next);
        for (i, line) in lines_with_offsets(&self.text[..yaml_end], first).enumerate() {
            let content = line.content;
            let top_level = !content.starts_with([' ', '\t']);
            if let Some(p) = parent {
                if top_level {
                    in_parent = key_matches(content, p);
                    continue;
                }
                if in_parent && key_matches(content.trim_start(), key) {
                    return Some(YAML_FIRST_LINE + line_u32(i));
                }
            } else if in_parent && top_level && key_matches(content, key) {
                return Some(YAML_FIRST_LINE + line_u32(i));
            }
        }
        None
    }
}

fn key_matches(line: &str, key: &str) -> bool {
    let unquoted = line
        .strip_prefix(key)
        .or_else(|| line.strip_prefix(&format!("\"{key}\"")))
        .or_else(|| line.strip_prefix(&format!("'{key}'")));
    unquoted.is_some_and(|rest| rest.trim_start_matches([' ', '\t']).starts_with(':'))
}

/// YAML error messages can quote input: keep them to one bounded line.
fn echo_long(s: &str) -> String {
    const MAX: usize = 140;
    let mut out: String = s
        .chars()
        .take(MAX)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if s.chars().nth(MAX).is_some() {
        out.push('…');
    }
    out
}

fn line_of_offset(bytes: &[u8], offset: usize) -> u32 {
    line_u32(bytes[..offset].iter().filter(|&&b| b == b'\n').count() + 1)
}

/// Checks one single-line text field (`name`, `description`).
fn check_text_field(
    doc: &MemoryDoc,
    key: &str,
    [missing, invalid]: [&'static str; 2],
    max_chars: usize,
    hint: &str,
    problems: &mut Vec<Problem>,
) {
    let line = doc.key_line(key, None);
    match doc.frontmatter.get(key) {
        None => problems.push(Problem::new(
            missing,
            format!("the frontmatter has no `{key}`: add `{key}: {hint}`"),
            Some(1),
        )),
        Some(Value::Null) => problems.push(Problem::new(
            missing,
            format!("`{key}` is empty: give it a value, e.g. `{key}: {hint}`"),
            line,
        )),
        Some(Value::String(s)) => {
            let chars = s.chars().count();
            let message = if s.contains(['\n', '\r']) {
                Some(format!(
                    "`{key}` must be a single line; it spans several: \"{}\"",
                    echo(s)
                ))
            } else if s.trim().is_empty() {
                Some(format!("`{key}` is blank: give it a value, e.g. `{key}: {hint}`"))
            } else if chars > max_chars {
                Some(format!(
                    "`{key}` is {chars} characters long; the limit is {max_chars}: shorten \"{}\"",
                    echo(s)
                ))
            } else {
                None
            };
            if let Some(message) = message {
                problems.push(Problem::new(invalid, message, line));
            }
        }
        Some(other) => problems.push(Problem::new(
            invalid,
            format!(
                "`{key}` must be a single-line string of 1-{max_chars} characters, but it is {}: quote it or write it as text, e.g. `{key}: {hint}`",
                kind_of(other)
            ),
            line,
        )),
    }
}

/// Checks one `type` value; returns it when it is a known type.
fn check_type_value(
    value: &Value,
    what: &str,
    line: Option<u32>,
    problems: &mut Vec<Problem>,
) -> Option<MemoryType> {
    let message = match value {
        Value::String(s) => match s.parse::<MemoryType>() {
            Ok(t) => return Some(t),
            Err(_) => format!(
                "`{what}` is \"{}\", which is not a memory type: use one of user|feedback|project|reference (lowercase)",
                echo(s)
            ),
        },
        Value::Null => format!("`{what}` is empty: use one of user|feedback|project|reference"),
        other => format!(
            "`{what}` is {}, not a memory type: use one of user|feedback|project|reference",
            kind_of(other)
        ),
    };
    problems.push(Problem::new("type_unknown", message, line));
    None
}

/// Validates a memory file and reports every problem found, not just the first.
pub fn validate(bytes: &[u8], max_bytes: usize) -> Result<MemoryDoc, Vec<Problem>> {
    if bytes.len() > max_bytes {
        return Err(vec![Problem::new(
            "too_large",
            format!(
                "the file is {} bytes; the limit is {max_bytes} bytes: split it into several smaller memories",
                bytes.len()
            ),
            None,
        )]);
    }
    let mut problems = Vec::new();
    if let Some(i) = bytes.iter().position(|&b| b == 0) {
        problems.push(Problem::new(
            "nul_byte",
            "the file contains a NUL byte: memories are text; remove it",
            Some(line_of_offset(bytes, i)),
        ));
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            problems.push(Problem::new(
                "not_utf8",
                "the file is not valid UTF-8: save it as UTF-8 text",
                Some(line_of_offset(bytes, e.valid_up_to())),
            ));
            return Err(problems);
        }
    };
    let doc = match MemoryDoc::parse(text) {
        Ok(doc) => doc,
        Err(p) => {
            problems.push(p);
            return Err(problems);
        }
    };

    check_text_field(
        &doc,
        "name",
        ["name_missing", "name_invalid"],
        NAME_MAX_CHARS,
        "testing-policy",
        &mut problems,
    );
    check_text_field(
        &doc,
        "description",
        ["description_missing", "description_invalid"],
        DESCRIPTION_MAX_CHARS,
        "one line saying when this memory is relevant",
        &mut problems,
    );

    let top = doc.frontmatter.get("type").filter(|v| !v.is_null());
    let nested = doc.metadata_type().filter(|v| !v.is_null());
    match (top, nested) {
        (None, None) => problems.push(Problem::new(
            "type_missing",
            "the frontmatter has no `type`: add `type: user`, `feedback`, `project` or `reference`",
            Some(1),
        )),
        (top, nested) => {
            let top_line = doc.key_line("type", None);
            let nested_line = doc.key_line("type", Some("metadata"));
            let a = top.and_then(|v| check_type_value(v, "type", top_line, &mut problems));
            let b = nested
                .and_then(|v| check_type_value(v, "metadata.type", nested_line, &mut problems));
            if let (Some(a), Some(b)) = (a, b)
                && a != b
            {
                problems.push(Problem::new(
                    "type_conflict",
                    format!(
                        "`type` is {a} but `metadata.type` is {b}: keep one of them, or make them agree"
                    ),
                    nested_line.or(top_line),
                ));
            }
        }
    }

    if problems.is_empty() {
        Ok(doc)
    } else {
        Err(problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "---\nname: testing-policy\ndescription: integration tests hit a real database\ntype: feedback\n---\nIntegration tests must hit a real database.\n";

    fn rules(bytes: &[u8]) -> Vec<&'static str> {
        match validate(bytes, DEFAULT_MAX_FILE_BYTES) {
            Ok(_) => vec![],
            Err(ps) => ps.into_iter().map(|p| p.rule).collect(),
        }
    }

    fn problems(text: &str) -> Vec<Problem> {
        validate(text.as_bytes(), DEFAULT_MAX_FILE_BYTES).unwrap_err()
    }

    #[test]
    fn parses_a_good_memory() {
        let doc = validate(GOOD.as_bytes(), DEFAULT_MAX_FILE_BYTES).unwrap();
        assert_eq!(doc.name(), Some("testing-policy"));
        assert_eq!(
            doc.description(),
            Some("integration tests hit a real database")
        );
        assert_eq!(doc.raw_type(), Some("feedback"));
        assert_eq!(doc.memory_type(), Some(MemoryType::Feedback));
        assert_eq!(doc.body(), "Integration tests must hit a real database.\n");
        assert_eq!(doc.body_start_line(), 6);
        assert_eq!(doc.render(), GOOD);
    }

    #[test]
    fn keeps_bom_crlf_dots_closer_comments_and_unknown_keys() {
        let text = "\u{feff}---  \r\n# a comment\r\nzeta: 1\r\nname: x   # trailing\r\nextra:\r\n  nested: [1, 2]\r\ndescription: d\r\ntype: project\r\n...\r\nbody line\r\n\r\nmore";
        let doc = MemoryDoc::parse(text).unwrap();
        assert_eq!(doc.render(), text);
        assert_eq!(doc.name(), Some("x"));
        assert_eq!(doc.memory_type(), Some(MemoryType::Project));
        assert_eq!(doc.body(), "body line\r\n\r\nmore");
        assert_eq!(doc.body_start_line(), 10);
        assert!(doc.frontmatter().contains_key("zeta"));
        assert!(validate(text.as_bytes(), DEFAULT_MAX_FILE_BYTES).is_ok());
    }

    #[test]
    fn body_may_be_empty_and_closer_may_lack_newline() {
        let doc = MemoryDoc::parse("---\nname: a\n---").unwrap();
        assert_eq!(doc.body(), "");
        assert_eq!(doc.body_start_line(), 4);
        let doc = MemoryDoc::parse("---\n---\n").unwrap();
        assert!(doc.frontmatter().is_empty());
        assert_eq!(doc.body_start_line(), 3);
    }

    #[test]
    fn metadata_type() {
        let text = "---\nname: a\ndescription: b\nmetadata:\n  type: reference\n  owner: me\n---\n";
        let doc = validate(text.as_bytes(), DEFAULT_MAX_FILE_BYTES).unwrap();
        assert_eq!(doc.raw_type(), Some("reference"));
        assert_eq!(doc.memory_type(), Some(MemoryType::Reference));
        let same = "---\nname: a\ndescription: b\ntype: user\nmetadata:\n  type: user\n---\n";
        assert!(validate(same.as_bytes(), DEFAULT_MAX_FILE_BYTES).is_ok());
    }

    #[test]
    fn type_conflict() {
        let text = "---\nname: a\ndescription: b\ntype: user\nmetadata:\n  type: project\n---\n";
        let ps = problems(text);
        assert_eq!(ps.len(), 1);
        assert_eq!(ps[0].rule, "type_conflict");
        assert_eq!(ps[0].line, Some(6));
        assert_eq!(MemoryDoc::parse(text).unwrap().raw_type(), Some("user"));
    }

    #[test]
    fn get_str_reads_any_top_level_string() {
        let doc =
            MemoryDoc::parse("---\noverrides: team/testing.md\nsupersedes: old.md\nn: 3\n---\n")
                .unwrap();
        assert_eq!(doc.get_str("overrides"), Some("team/testing.md"));
        assert_eq!(doc.get_str("supersedes"), Some("old.md"));
        assert_eq!(doc.get_str("n"), None);
        assert_eq!(doc.get_str("absent"), None);
    }

    #[test]
    fn too_large_is_checked_first() {
        let big = format!("{GOOD}{}", "x".repeat(200));
        let ps = validate(big.as_bytes(), 100).unwrap_err();
        assert_eq!(ps.len(), 1);
        assert_eq!(ps[0].rule, "too_large");
        assert!(ps[0].message.contains(&big.len().to_string()) && ps[0].message.contains("100"));
        assert_eq!(rules(&[0xff; 10]), vec!["not_utf8"]);
        assert_eq!(
            validate(&[0xff; 200], 100).unwrap_err()[0].rule,
            "too_large"
        );
    }

    #[test]
    fn not_utf8_reports_line() {
        let mut bytes = b"---\nname: a\n".to_vec();
        bytes.extend([0xc3, 0x28]);
        let ps = validate(&bytes, DEFAULT_MAX_FILE_BYTES).unwrap_err();
        assert_eq!((ps[0].rule, ps[0].line), ("not_utf8", Some(3)));
    }

    #[test]
    fn nul_byte_reports_line_and_keeps_going() {
        let text = GOOD.replace("Integration", "Integ\0ration");
        let ps = problems(&text);
        assert_eq!(ps.len(), 1);
        assert_eq!((ps[0].rule, ps[0].line), ("nul_byte", Some(6)));
    }

    #[test]
    fn frontmatter_missing() {
        for text in [
            "",
            "no frontmatter\n",
            " ---\nname: a\n---\n",
            "\n---\nname: a\n---\n",
            "----\n",
        ] {
            let ps = problems(text);
            assert_eq!(ps.len(), 1, "{text:?}");
            assert_eq!(ps[0].rule, "frontmatter_missing");
            assert!(ps[0].message.contains("`---`") && !ps[0].message.contains('\n'));
        }
    }

    #[test]
    fn frontmatter_unclosed() {
        let ps = problems("---\nname: a\ntype: user\n");
        assert_eq!((ps[0].rule, ps.len()), ("frontmatter_unclosed", 1));
    }

    #[test]
    fn frontmatter_invalid_with_file_line() {
        let ps = problems("---\nname: a\ndescription: [oops\ntype: user\n---\n");
        assert_eq!(ps.len(), 1);
        assert_eq!(ps[0].rule, "frontmatter_invalid");
        assert!(ps[0].line.is_some_and(|l| l >= 3), "{:?}", ps[0]);
        let bom = problems("\u{feff}---\r\nname: a\r\nname: b\r\n---\r\n");
        assert_eq!((bom[0].rule, bom[0].line), ("frontmatter_invalid", Some(3)));
        assert!(bom[0].message.contains("duplicate"), "{}", bom[0].message);
    }

    #[test]
    fn frontmatter_not_mapping() {
        for text in ["---\n- a\n- b\n---\n", "---\njust text\n---\n"] {
            assert_eq!(rules(text.as_bytes()), vec!["frontmatter_not_mapping"]);
        }
    }

    #[test]
    fn field_rules() {
        assert_eq!(
            rules(b"---\nfoo: bar\n---\n"),
            vec!["name_missing", "description_missing", "type_missing"]
        );
        let cases: &[(&str, &[&str])] = &[
            ("name:\ndescription: d\ntype: user", &["name_missing"]),
            ("name: ''\ndescription: d\ntype: user", &["name_invalid"]),
            ("name: [a]\ndescription: d\ntype: user", &["name_invalid"]),
            ("name: 12\ndescription: d\ntype: user", &["name_invalid"]),
            (
                "name: \"a\\nb\"\ndescription: d\ntype: user",
                &["name_invalid"],
            ),
            (
                "name: a\ndescription: {x: 1}\ntype: user",
                &["description_invalid"],
            ),
            (
                "name: a\ndescription: |\n  two\n  lines\ntype: user",
                &["description_invalid"],
            ),
            ("name: a\ndescription: d\ntype: Feedback", &["type_unknown"]),
            ("name: a\ndescription: d\ntype: 3", &["type_unknown"]),
            ("name: a\ndescription: d\ntype: [user]", &["type_unknown"]),
            (
                "name: a\ndescription: d\nmetadata:\n  type: nope",
                &["type_unknown"],
            ),
            ("name: a\ndescription: d\ntype:", &["type_missing"]),
            ("name: no\ndescription: yes\ntype: user", &[]),
        ];
        for (fm, want) in cases {
            let text = format!("---\n{fm}\n---\nbody\n");
            assert_eq!(&rules(text.as_bytes()), want, "{fm}");
        }
        let long_name = format!(
            "---\nname: {}\ndescription: d\ntype: user\n---\n",
            "n".repeat(101)
        );
        assert_eq!(rules(long_name.as_bytes()), vec!["name_invalid"]);
        let ok_name = format!(
            "---\nname: {}\ndescription: d\ntype: user\n---\n",
            "n".repeat(100)
        );
        assert_eq!(rules(ok_name.as_bytes()), Vec::<&str>::new());
        let long_desc = format!(
            "---\nname: a\ndescription: {}\ntype: user\n---\n",
            "d".repeat(301)
        );
        assert_eq!(rules(long_desc.as_bytes()), vec!["description_invalid"]);
    }

    #[test]
    fn reports_all_problems_with_lines() {
        let ps = problems("---\nname: [a]\ndescription: ''\ntype: robot\n---\n");
        let got: Vec<_> = ps.iter().map(|p| (p.rule, p.line)).collect();
        assert_eq!(
            got,
            vec![
                ("name_invalid", Some(2)),
                ("description_invalid", Some(3)),
                ("type_unknown", Some(4))
            ]
        );
        assert!(ps[2].message.contains("user|feedback|project|reference"));
    }

    #[test]
    fn messages_do_not_echo_long_values() {
        let secretish = "s".repeat(5000);
        let text = format!("---\nname: {secretish}\ndescription: d\ntype: {secretish}\n---\n");
        for p in problems(&text) {
            assert!(!p.message.contains(&"s".repeat(81)), "{}", p.rule);
            assert!(!p.message.is_empty());
        }
        let text = format!("---\nname: a\ndescription: d\ntype: user\nx: [{secretish}\n---\n");
        for p in problems(&text) {
            assert!(!p.message.contains(&"s".repeat(201)), "{}", p.rule);
        }
    }

    #[test]
    fn hostile_yaml_is_refused() {
        let deep = format!(
            "---\nname: a\nx: {}{}\n---\n",
            "[".repeat(40_000),
            "]".repeat(40_000)
        );
        assert_eq!(rules(deep.as_bytes()), vec!["frontmatter_invalid"]);
        let mut bomb = String::from("---\na: &a [x,x,x,x,x,x,x,x,x]\n");
        for (i, name) in ["b", "c", "d", "e", "f", "g", "h"].iter().enumerate() {
            let prev = ["a", "b", "c", "d", "e", "f", "g"][i];
            bomb.push_str(&format!(
                "{name}: &{name} [{}]\n",
                vec![format!("*{prev}"); 9].join(",")
            ));
        }
        bomb.push_str("---\n");
        assert_eq!(rules(bomb.as_bytes()), vec!["frontmatter_invalid"]);
    }

    #[test]
    fn memory_type_names() {
        for t in MemoryType::ALL {
            assert_eq!(t.as_str().parse::<MemoryType>(), Ok(t));
            assert_eq!(
                serde_json::to_string(&t).unwrap(),
                format!("\"{}\"", t.as_str())
            );
        }
        assert!("User".parse::<MemoryType>().is_err());
        assert_eq!(
            serde_json::from_str::<MemoryType>("\"project\"").unwrap(),
            MemoryType::Project
        );
    }
}
