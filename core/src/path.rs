//! Memory paths: where a memory lives inside a team directory, e.g. `testing.md` or
//! `infra/db/MEMORY.md`.
//!
//! A `MemoryPath` that exists has passed every rule below, so joining it onto a directory can
//! never escape that directory, collide with a Windows device name or hide behind a dot file.

use std::borrow::Borrow;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use unicode_normalization::UnicodeNormalization;

/// Longest path, in bytes.
pub const MAX_PATH_BYTES: usize = 255;
/// Most `/`-separated segments, the file name included.
pub const MAX_SEGMENTS: usize = 4;
/// File name of the per-directory index.
pub const INDEX_FILE: &str = "MEMORY.md";

/// How much of a rejected segment an error message repeats.
const ECHO_CHARS: usize = 60;

/// A validated, relative, `/`-separated memory path ending in `.md`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MemoryPath(String);

/// Why a string is not a valid memory path. Every message says what is wrong and how to fix it.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PathError {
    #[error("the path is empty: give a relative path such as `testing.md` or `infra/db.md`")]
    Empty,
    #[error(
        "the path is absolute: give a path relative to the memory directory, such as `testing.md`, without a leading `/`, `\\` or drive letter"
    )]
    Absolute,
    #[error("the path contains a backslash: separate directories with `/`, e.g. `infra/db.md`")]
    Backslash,
    #[error(
        "the path contains `%`: percent-encoding is not allowed; write the plain characters (letters, digits, '.', '_', '-')"
    )]
    PercentEncoding,
    #[error(
        "the path contains the control character U+{code:04X} at character {position}: remove it (tabs, newlines and NUL are not allowed)"
    )]
    ControlChar { code: u32, position: usize },
    #[error("{}", non_ascii_message(*.code, *.position))]
    NonAscii { code: u32, position: usize },
    #[error(
        "the path is {len} bytes long; the limit is {MAX_PATH_BYTES}: use shorter directory or file names"
    )]
    TooLong { len: usize },
    #[error(
        "the path has an empty segment (`//`, or a trailing `/`): name a file, e.g. `infra/db.md`"
    )]
    EmptySegment,
    #[error(
        "the path contains a `.` or `..` segment: give the plain path inside the memory directory, e.g. `infra/db.md`"
    )]
    DotSegment,
    #[error(
        "the path segment `{segment}` starts with `.`: hidden files and directories are not synced; rename it without the leading dot"
    )]
    HiddenSegment { segment: String },
    #[error(
        "the path segment `{segment}` contains {ch:?}: use only ASCII letters, digits, '.', '_' and '-'"
    )]
    InvalidChar { ch: char, segment: String },
    #[error(
        "the path segment `{segment}` is a reserved device name on Windows (CON, PRN, AUX, NUL, COM0-9, LPT0-9): choose another name"
    )]
    ReservedName { segment: String },
    #[error(
        "the path has {count} segments; at most {MAX_SEGMENTS} are allowed (three directories and the file): use a flatter layout"
    )]
    TooManySegments { count: usize },
    #[error("the path does not end in `.md`: memories are markdown files, e.g. `testing.md`")]
    NotMarkdown,
}

impl PathError {
    /// The rule id reported for every path problem.
    pub fn rule(&self) -> &'static str {
        "path_invalid"
    }
}

fn non_ascii_message(code: u32, position: usize) -> String {
    // Lookalikes get a pointed hint: they are the usual way to smuggle `..` or `/` past a filter.
    let looks_like = match code {
        0x2024 | 0xFE52 | 0xFF0E | 0x3002 | 0xFF61 | 0x2E31 => " (it looks like '.' but is not)",
        0x2044 | 0x2215 | 0xFF0F | 0x29F8 | 0x2571 => " (it looks like '/' but is not)",
        0x2216 | 0xFF3C | 0x29F9 | 0xFE68 => " (it looks like '\\' but is not)",
        _ => "",
    };
    format!(
        "the path contains the non-ASCII character U+{code:04X} at character {position}{looks_like}: only ASCII letters, digits, '.', '_', '-' and '/' between directories are allowed"
    )
}

fn echo(segment: &str) -> String {
    // Only called after the ASCII check, so a char is a byte here.
    let mut s: String = segment.chars().take(ECHO_CHARS).collect();
    if segment.len() > ECHO_CHARS {
        s.push('…');
    }
    s
}

fn is_reserved_device(segment: &str) -> bool {
    // Windows reserves the name before the first dot: `con.md` and `con.tar.md` both open CON.
    let stem = segment.split('.').next().unwrap_or(segment);
    let upper = stem.to_ascii_uppercase();
    match upper.as_str() {
        "CON" | "PRN" | "AUX" | "NUL" => true,
        _ => {
            let b = upper.as_bytes();
            b.len() == 4
                && (upper.starts_with("COM") || upper.starts_with("LPT"))
                && b[3].is_ascii_digit()
        }
    }
}

fn is_drive_absolute(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':'
}

impl MemoryPath {
    /// Validates `s` (after NFC normalisation) against the path rules.
    pub fn parse(s: &str) -> Result<MemoryPath, PathError> {
        if s.is_empty() {
            return Err(PathError::Empty);
        }
        let s: String = s.nfc().collect();

        if let Some((position, c)) = s.chars().enumerate().find(|(_, c)| c.is_control()) {
            return Err(PathError::ControlChar {
                code: c as u32,
                position: position + 1,
            });
        }
        if s.starts_with('/') || s.starts_with('\\') || is_drive_absolute(&s) {
            return Err(PathError::Absolute);
        }
        if s.contains('%') {
            return Err(PathError::PercentEncoding);
        }
        if s.contains('\\') {
            return Err(PathError::Backslash);
        }
        if let Some((position, c)) = s.chars().enumerate().find(|(_, c)| !c.is_ascii()) {
            return Err(PathError::NonAscii {
                code: c as u32,
                position: position + 1,
            });
        }
        if s.len() > MAX_PATH_BYTES {
            return Err(PathError::TooLong { len: s.len() });
        }

        let mut count = 0;
        for segment in s.split('/') {
            count += 1;
            if segment.is_empty() {
                return Err(PathError::EmptySegment);
            }
            if segment == "." || segment == ".." {
                return Err(PathError::DotSegment);
            }
            if segment.starts_with('.') {
                return Err(PathError::HiddenSegment {
                    segment: echo(segment),
                });
            }
            if let Some(ch) = segment
                .chars()
                .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
            {
                return Err(PathError::InvalidChar {
                    ch,
                    segment: echo(segment),
                });
            }
            if is_reserved_device(segment) {
                return Err(PathError::ReservedName {
                    segment: echo(segment),
                });
            }
        }
        if count > MAX_SEGMENTS {
            return Err(PathError::TooManySegments { count });
        }
        if !s.ends_with(".md") {
            return Err(PathError::NotMarkdown);
        }
        Ok(MemoryPath(s))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is a directory index (`MEMORY.md` in any directory).
    pub fn is_index(&self) -> bool {
        self.file_name() == INDEX_FILE
    }

    /// The directory part: `""` for a root file, `"a/b"` for `"a/b/c.md"`.
    pub fn dir(&self) -> &str {
        self.0.rsplit_once('/').map_or("", |(dir, _)| dir)
    }

    pub fn file_name(&self) -> &str {
        self.0.rsplit_once('/').map_or(&self.0, |(_, name)| name)
    }

    /// The index of `dir`, which must be the `dir()` of a valid path (or `""`).
    pub fn index_of_dir(dir: &str) -> MemoryPath {
        if dir.is_empty() {
            MemoryPath(INDEX_FILE.to_owned())
        } else {
            MemoryPath(format!("{dir}/{INDEX_FILE}"))
        }
    }

    /// This path relative to `dir`, if it lies inside it: `"a/b.md"` relative to `"a"` is
    /// `"b.md"`; relative to `""` it is the whole path.
    pub fn relative_to(&self, dir: &str) -> Option<&str> {
        if dir.is_empty() {
            return Some(&self.0);
        }
        self.0.strip_prefix(dir)?.strip_prefix('/')
    }
}

impl FromStr for MemoryPath {
    type Err = PathError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        MemoryPath::parse(s)
    }
}

impl AsRef<str> for MemoryPath {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

// Lets maps keyed by `MemoryPath` be looked up with a `&str`; `Ord`, `Eq` and `Hash` agree
// with `str`'s because they are derived from the inner `String`.
impl Borrow<str> for MemoryPath {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for MemoryPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for MemoryPath {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for MemoryPath {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(s: &str) -> PathError {
        MemoryPath::parse(s).unwrap_err()
    }

    #[test]
    fn accepts_valid_paths() {
        for ok in [
            "testing.md",
            "MEMORY.md",
            "a/b.md",
            "infra/db/MEMORY.md",
            "a/b/c/d.md",
            "my_notes-2.v1.md",
            "console.md",
            "com10.md",
            "lpt.md",
            "x.md.md",
        ] {
            assert_eq!(
                MemoryPath::parse(ok).map(|p| p.to_string()),
                Ok(ok.to_owned())
            );
        }
        let max = format!("{}.md", "a".repeat(MAX_PATH_BYTES - 3));
        assert!(MemoryPath::parse(&max).is_ok());
    }

    #[test]
    fn rejects_empty() {
        assert_eq!(err(""), PathError::Empty);
    }

    #[test]
    fn rejects_absolute() {
        for bad in [
            "/x.md",
            "C:/x.md",
            "C:\\x.md",
            "c:x.md",
            "\\x.md",
            "\\\\srv\\share\\x.md",
            "//x.md",
        ] {
            assert_eq!(err(bad), PathError::Absolute, "{bad}");
        }
    }

    #[test]
    fn rejects_backslash() {
        assert_eq!(err("a\\b.md"), PathError::Backslash);
        assert_eq!(err("..\\x.md"), PathError::Backslash);
    }

    #[test]
    fn rejects_dot_segments() {
        for bad in ["../x.md", "a/../x.md", "./x.md", "a/./b.md", "a/..", ".."] {
            assert_eq!(err(bad), PathError::DotSegment, "{bad}");
        }
    }

    #[test]
    fn rejects_any_percent() {
        for bad in [
            "%2e%2e/x.md",
            "%2E%2e/x.md",
            "a/%2E%2e/b.md",
            "a%20b.md",
            "100%.md",
            "%2f.md",
        ] {
            assert_eq!(err(bad), PathError::PercentEncoding, "{bad}");
        }
    }

    #[test]
    fn rejects_unicode_lookalikes_and_non_ascii() {
        for (bad, code) in [
            ("\u{FF0E}\u{FF0E}/x.md", 0xFF0E),
            ("\u{2024}\u{2024}/x.md", 0x2024),
            ("a\u{FF0F}b.md", 0xFF0F),
            ("a\u{2215}b.md", 0x2215),
            ("caf\u{e9}.md", 0xE9),
            ("notes\u{200B}.md", 0x200B),
        ] {
            let e = err(bad);
            assert!(
                matches!(e, PathError::NonAscii { code: c, .. } if c == code),
                "{bad}: {e:?}"
            );
            let msg = e.to_string();
            assert!(
                msg.contains("only ASCII letters, digits, '.', '_', '-'"),
                "{msg}"
            );
        }
        assert!(
            err("\u{FF0E}\u{FF0E}/x.md")
                .to_string()
                .contains("looks like '.'")
        );
        assert!(err("a\u{2215}b.md").to_string().contains("looks like '/'"));
    }

    #[test]
    fn nfc_normalises_before_checking() {
        // Decomposed é becomes one non-ASCII char at position 4, not a combining mark at 5.
        assert_eq!(
            err("cafe\u{301}.md"),
            PathError::NonAscii {
                code: 0xE9,
                position: 4
            }
        );
    }

    #[test]
    fn rejects_control_characters() {
        for (bad, code) in [
            ("a\0.md", 0),
            ("a\tb.md", 9),
            ("a\nb.md", 10),
            ("a\rb.md", 13),
            ("a\u{7f}.md", 0x7f),
        ] {
            assert!(
                matches!(err(bad), PathError::ControlChar { code: c, .. } if c == code),
                "{bad:?}"
            );
        }
        assert!(err("a\0.md").to_string().contains("U+0000"));
    }

    #[test]
    fn rejects_empty_segments() {
        for bad in ["a//b.md", "a/", "a/b.md/"] {
            assert_eq!(err(bad), PathError::EmptySegment, "{bad}");
        }
    }

    #[test]
    fn rejects_leading_dot_segments() {
        assert!(
            matches!(err(".git/x.md"), PathError::HiddenSegment { segment } if segment == ".git")
        );
        assert!(matches!(err(".hidden.md"), PathError::HiddenSegment { .. }));
        assert!(matches!(err("a/.md"), PathError::HiddenSegment { .. }));
    }

    #[test]
    fn rejects_other_ascii_characters() {
        for bad in [
            "a b.md", "ab:c.md", "a*.md", "a?.md", "<a>.md", "a|b.md", "a\"b.md", "a~.md",
        ] {
            assert!(matches!(err(bad), PathError::InvalidChar { .. }), "{bad}");
        }
    }

    #[test]
    fn rejects_too_many_segments() {
        assert_eq!(err("a/b/c/d/e.md"), PathError::TooManySegments { count: 5 });
    }

    #[test]
    fn rejects_too_long() {
        let long = format!("{}.md", "a".repeat(MAX_PATH_BYTES - 2));
        assert_eq!(
            err(&long),
            PathError::TooLong {
                len: MAX_PATH_BYTES + 1
            }
        );
    }

    #[test]
    fn rejects_non_markdown() {
        for bad in ["a.txt", "a", "a.MD", "a.md.bak", "dir/file"] {
            assert_eq!(err(bad), PathError::NotMarkdown, "{bad}");
        }
    }

    #[test]
    fn rejects_windows_device_names() {
        for bad in [
            "con.md",
            "NUL.md",
            "aux/x.md",
            "com1.md",
            "Lpt9.md",
            "prn.tar.md",
            "a/CoM3/x.md",
        ] {
            assert!(matches!(err(bad), PathError::ReservedName { .. }), "{bad}");
        }
    }

    #[test]
    fn messages_are_clear_and_bounded() {
        let long_segment = format!(".{}/x.md", "y".repeat(200));
        let huge = "z".repeat(10_000);
        for bad in [
            "",
            "/x.md",
            "a\\b.md",
            "%2e.md",
            "a\0.md",
            "é.md",
            "a//b.md",
            "../x.md",
            ".git/x.md",
            "a b.md",
            "con.md",
            "a/b/c/d/e.md",
            "x.txt",
            &long_segment,
            &huge,
        ] {
            let e = err(bad);
            let msg = e.to_string();
            assert!(!msg.is_empty());
            assert!(msg.len() < 260, "{msg}");
            assert_eq!(e.rule(), "path_invalid");
        }
        assert!(!err(&huge).to_string().contains(&"z".repeat(101)));
    }

    #[test]
    fn parts() {
        let p = MemoryPath::parse("a/b/c.md").unwrap();
        assert_eq!((p.dir(), p.file_name()), ("a/b", "c.md"));
        assert!(!p.is_index());
        let root = MemoryPath::parse("c.md").unwrap();
        assert_eq!((root.dir(), root.file_name()), ("", "c.md"));
        assert!(MemoryPath::parse("a/MEMORY.md").unwrap().is_index());
        assert!(MemoryPath::parse("MEMORY.md").unwrap().is_index());
        assert!(!MemoryPath::parse("XMEMORY.md").unwrap().is_index());
        assert_eq!(MemoryPath::index_of_dir("").as_str(), "MEMORY.md");
        assert_eq!(MemoryPath::index_of_dir("a/b").as_str(), "a/b/MEMORY.md");
        assert_eq!(
            MemoryPath::index_of_dir(p.dir()),
            MemoryPath::parse("a/b/MEMORY.md").unwrap()
        );
    }

    #[test]
    fn relative_to() {
        let p = MemoryPath::parse("a/b/c.md").unwrap();
        assert_eq!(p.relative_to(""), Some("a/b/c.md"));
        assert_eq!(p.relative_to("a"), Some("b/c.md"));
        assert_eq!(p.relative_to("a/b"), Some("c.md"));
        assert_eq!(p.relative_to("a/bb"), None);
        assert_eq!(MemoryPath::parse("ab/c.md").unwrap().relative_to("a"), None);
        assert_eq!(
            MemoryPath::parse("a/b.md").unwrap().relative_to("a"),
            Some("b.md")
        );
    }

    #[test]
    fn formatting_and_serde() {
        let p: MemoryPath = "a/b.md".parse().unwrap();
        assert_eq!(format!("{p:?}"), "MemoryPath(\"a/b.md\")");
        assert_eq!(format!("{p}"), "a/b.md");
        assert_eq!(serde_json::to_string(&p).unwrap(), "\"a/b.md\"");
        assert_eq!(serde_json::from_str::<MemoryPath>("\"a/b.md\"").unwrap(), p);
        assert!(serde_json::from_str::<MemoryPath>("\"../b.md\"").is_err());
        let mut m = std::collections::BTreeMap::new();
        m.insert(p.clone(), 1);
        assert_eq!(m.get("a/b.md"), Some(&1));
    }
}
