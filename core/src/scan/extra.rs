//! Rules an operator adds to the built-in ones (the server's `--scan-rules` file): a regular
//! expression per rule, reported like any built-in finding (rule id, position, a redacted
//! preview, a fingerprint the project's allowlist can name).
//!
//! A pattern is matched against the whole file in multi-line mode (`^` and `$` match at line
//! breaks). When it has a capture group, group 1 is the value (previewed and fingerprinted);
//! otherwise the whole match is. Like the built-in detectors, the rules also run on the
//! normalised copy of lines that hide characters, so a zero-width space inside a token does not
//! hide it.

use std::collections::HashSet;
use std::ops::Range;

use regex::{Regex, RegexBuilder};

use super::heuristics::redact;
use super::{Category, Hit, rules};

/// At most this many extra rules.
pub const MAX_EXTRA_RULES: usize = 200;
/// Longest pattern, in bytes.
pub const MAX_PATTERN_BYTES: usize = 4096;
/// Largest compiled pattern (the `regex` crate's size limit), in bytes.
pub const MAX_COMPILED_BYTES: usize = 1 << 20;
/// Longest rule id.
pub const MAX_ID_CHARS: usize = 64;
/// Longest description.
pub const MAX_DESCRIPTION_CHARS: usize = 200;

/// One extra rule as configured.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtraRule {
    /// Kebab-case, distinct from every built-in rule id and every other extra rule.
    pub id: String,
    /// `secret` or `injection`.
    pub category: Category,
    /// A Rust regular expression.
    pub pattern: String,
    /// What it finds, shown with an injection finding instead of the matched text.
    pub description: String,
}

/// A rule checked and compiled. Its id and description live as long as the process: findings
/// name rules with `&'static str`, and extra rules are installed once per process.
pub(super) struct Compiled {
    pub id: &'static str,
    pub category: Category,
    pub description: &'static str,
    pub pattern: String,
    re: Regex,
}

fn is_kebab(id: &str) -> bool {
    !id.is_empty()
        && id.split('-').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

/// Checks and compiles `rules`; the error names the first bad rule and what is wrong with it.
pub(super) fn compile(list: &[ExtraRule]) -> Result<Vec<Compiled>, String> {
    if list.len() > MAX_EXTRA_RULES {
        return Err(format!(
            "{} extra scan rules are configured; at most {MAX_EXTRA_RULES} are allowed",
            list.len()
        ));
    }
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(list.len());
    for (i, rule) in list.iter().enumerate() {
        let name = if rule.id.is_empty() {
            format!("scan rule #{}", i + 1)
        } else {
            format!("scan rule #{} `{}`", i + 1, rule.id.escape_debug())
        };
        let bad = |why: String| Err(format!("{name}: {why}"));
        if !is_kebab(&rule.id) || rule.id.chars().count() > MAX_ID_CHARS {
            return bad(format!(
                "`id` must be kebab-case (lower-case letters and digits joined by single dashes, at most {MAX_ID_CHARS} characters), e.g. `acme-deploy-token`"
            ));
        }
        if rules::RULES.iter().any(|r| r.id == rule.id) {
            return bad(
                "`id` is the id of a built-in rule; give the extra rule an id of its own".into(),
            );
        }
        if !seen.insert(rule.id.as_str()) {
            return bad("`id` is used by an earlier rule of the file; ids must be unique".into());
        }
        if rule.category == Category::Policy {
            return bad("`category` must be `secret` or `injection`".into());
        }
        let description = rule.description.trim();
        if description.is_empty()
            || description.chars().count() > MAX_DESCRIPTION_CHARS
            || description.chars().any(char::is_control)
        {
            return bad(format!(
                "`description` must say what the rule finds, in 1-{MAX_DESCRIPTION_CHARS} characters on one line"
            ));
        }
        if rule.pattern.is_empty() || rule.pattern.len() > MAX_PATTERN_BYTES {
            return bad(format!(
                "`pattern` must be a regular expression of 1-{MAX_PATTERN_BYTES} bytes"
            ));
        }
        let re = match RegexBuilder::new(&rule.pattern)
            .multi_line(true)
            .size_limit(MAX_COMPILED_BYTES)
            .build()
        {
            Ok(re) => re,
            Err(regex::Error::CompiledTooBig(_)) => {
                return bad(format!(
                    "`pattern` compiles to more than {} KiB; simplify it (fewer or smaller repetitions)",
                    MAX_COMPILED_BYTES / 1024
                ));
            }
            Err(e) => {
                // The regex error quotes the pattern across several lines: keep its last line,
                // which says what is wrong.
                let text = e.to_string();
                let why = text
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("invalid");
                return bad(format!(
                    "`pattern` is not a valid regular expression ({})",
                    why.trim().trim_start_matches("error: ")
                ));
            }
        };
        if re.is_match("") {
            return bad(
                "`pattern` matches the empty text, so it would find something in every file; make it match at least one character".into(),
            );
        }
        out.push(Compiled {
            id: Box::leak(rule.id.clone().into_boxed_str()),
            category: rule.category,
            description: Box::leak(description.to_owned().into_boxed_str()),
            pattern: rule.pattern.clone(),
            re,
        });
    }
    Ok(out)
}

impl Compiled {
    /// Every match that starts inside one of `regions` of `text`.
    pub(super) fn scan(&self, text: &str, regions: &[Range<usize>], out: &mut Vec<Hit>) {
        let mut locs = self.re.capture_locations();
        let mut at = 0;
        while at < text.len() {
            let Some(m) = self.re.captures_read_at(&mut locs, text, at) else {
                break;
            };
            let (ms, me) = (m.start(), m.end());
            // An empty match cannot repeat forever: the next search starts a character later.
            at = if me > ms {
                me
            } else {
                text[me..]
                    .chars()
                    .next()
                    .map_or(text.len(), |c| me + c.len_utf8())
            };
            let (start, end) = locs.get(1).unwrap_or((ms, me));
            if start == end || !regions.iter().any(|r| r.contains(&start)) {
                continue;
            }
            let value = &text[start..end];
            let preview = match self.category {
                Category::Secret => redact(value),
                _ => self.description.to_owned(),
            };
            out.push(Hit {
                rule: self.id,
                category: self.category,
                start,
                end,
                value: value.to_owned(),
                preview,
                normalized: false,
            });
        }
    }
}
