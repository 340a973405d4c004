//! The team-write guard: secrets and injection payloads in memory files.
//!
//! Team memory is loaded into every teammate's agent, so one leaked key or one planted instruction
//! reaches everyone. [`Scanner::scan`] reports, with rule, position and a redacted preview:
//!
//! - **provider credentials** written from the providers' published formats (prefix, length,
//!   alphabet; GitHub's CRC32 checksum is verified), each still required to look random;
//! - **structural secrets**: private-key blocks, passwords in URLs and connection strings,
//!   Authorization headers, JWTs, Docker `auths`;
//! - **generic secrets**: a secret-ish name assigned a value that looks real, after filters for
//!   placeholders, references, digests, identifiers and public keys;
//! - **injection**: invisible and bidi characters, harness-shaped tags, instruction-override
//!   phrases, exfiltration / persistence commands.
//!
//! Detection runs on the text as is, then on a normalised copy (invisible characters removed,
//! NFKC folded) of the lines that normalisation changed, so a zero-width space inside `AKIA…`
//! or full-width `ｇｈｐ_…` is still caught; positions map back to the original text.
//!
//! A finding never contains the secret: the preview shows at most its first four characters
//! (fewer when it is short) and the fingerprint is a SHA-256 of rule and value.
//!
//! A server can add rules of its own ([`ExtraRule`], installed once at start-up with
//! [`install_extra_rules`]); [`rule_set_id`] names the rule set in force, so that what an older
//! rule set checked can be rescanned.

mod engine;
mod extra;
mod generic;
mod heuristics;
mod injection;
mod rules;
mod secrets;
mod unicode;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::OnceLock;

use sha2::Digest;

use engine::Engine;
pub use extra::{
    ExtraRule, MAX_COMPILED_BYTES, MAX_DESCRIPTION_CHARS, MAX_EXTRA_RULES, MAX_ID_CHARS,
    MAX_PATTERN_BYTES,
};
use heuristics::redact;

/// What kind of problem a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    Secret,
    Injection,
    Policy,
}

/// One thing the scanner refuses. Never contains the secret itself.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Finding {
    /// Stable kebab-case rule id, one of [`Scanner::rules`].
    pub rule: &'static str,
    pub category: Category,
    /// 1-based line in the original text.
    pub line: u32,
    /// 1-based column, in characters, in the original text.
    pub column: u32,
    /// Secrets: at most the first four characters then `…`. Injection: a short description.
    pub preview: String,
    /// Lower-case hex SHA-256 of `rule id + "\0" + matched value` (after normalisation): the key
    /// of the per-project allowlist, stable across files and lines.
    pub fingerprint: String,
}

/// A rule the scanner can report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuleInfo {
    pub id: &'static str,
    pub category: Category,
    pub description: &'static str,
}

/// The compiled scanner: build once (see [`scanner`]), share freely (`Send + Sync`).
pub struct Scanner {
    engine: Engine,
    extra: Vec<extra::Compiled>,
    rule_set: String,
}

impl Default for Scanner {
    fn default() -> Self {
        Self::new()
    }
}

/// A detector's raw result, in byte offsets of the text it ran on.
#[derive(Clone)]
pub(crate) struct Hit {
    rule: &'static str,
    category: Category,
    start: usize,
    end: usize,
    /// Hashed into the fingerprint; never shown.
    value: String,
    preview: String,
    /// Found on the normalised copy (the raw pass wins ties).
    normalized: bool,
}

/// Never prints the value: a `Hit` may hold a secret.
impl std::fmt::Debug for Hit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hit")
            .field("rule", &self.rule)
            .field("span", &(self.start..self.end))
            .field("preview", &self.preview)
            .field("normalized", &self.normalized)
            .finish_non_exhaustive()
    }
}

impl Hit {
    fn secret(rule: &'static str, text: &str, start: usize, end: usize, value: &str) -> Hit {
        Hit {
            rule,
            category: Category::Secret,
            start,
            end,
            value: value.to_owned(),
            preview: redact(&text[start..end]),
            normalized: false,
        }
    }

    fn injection(
        rule: &'static str,
        start: usize,
        end: usize,
        preview: String,
        value: &str,
    ) -> Hit {
        Hit {
            rule,
            category: rules::category(rule),
            start,
            end,
            value: value.to_owned(),
            preview,
            normalized: false,
        }
    }
}

impl Scanner {
    /// The built-in rules; use [`scanner`] for the shared instance. Each pattern is compiled
    /// the first time a text wakes its detector (see [`Scanner::compile_all`]).
    pub fn new() -> Scanner {
        Scanner {
            engine: Engine::new(),
            extra: Vec::new(),
            rule_set: rule_set_of(&[]),
        }
    }

    /// The built-in rules and `extra`, after checking every extra rule; the error names the
    /// first bad rule and what is wrong with it.
    pub fn with_extra_rules(extra: &[ExtraRule]) -> Result<Scanner, String> {
        let compiled = extra::compile(extra)?;
        Ok(Scanner {
            engine: Engine::new(),
            rule_set: rule_set_of(&compiled),
            extra: compiled,
        })
    }

    /// Compiles every built-in pattern now (tens of milliseconds), so that no scan pays for
    /// it later: for a long-running process, at start. A short-lived one leaves it to the
    /// scans, which compile only what their texts wake.
    pub fn compile_all(&self) -> &Scanner {
        self.engine.compile_all();
        self
    }

    /// The identity of this scanner's rule set: 16 hex digits that change with any change to
    /// the rules (see [`rule_set_id`]).
    pub fn rule_set_id(&self) -> &str {
        &self.rule_set
    }

    /// The ids of the extra rules, in configuration order.
    pub fn extra_rule_ids(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.extra.iter().map(|r| r.id)
    }

    /// Runs every detector and every extra rule over `regions` of `text`.
    fn detect(&self, text: &str, regions: &[std::ops::Range<usize>], hits: &mut Vec<Hit>) {
        self.engine.scan(text, regions, hits);
        for rule in &self.extra {
            rule.scan(text, regions, hits);
        }
    }

    /// Every finding in `text`, sorted by (line, column, rule), without duplicates.
    pub fn scan(&self, text: &str) -> Vec<Finding> {
        let mut hits = Vec::new();
        self.detect(text, std::slice::from_ref(&(0..text.len())), &mut hits);
        if let Some(report) = unicode::analyze(text) {
            for run in &report.hidden {
                let rule = match run.kind {
                    unicode::Hidden::Invisible => "invisible-character",
                    unicode::Hidden::Bidi => "bidi-control",
                };
                hits.push(Hit::injection(
                    rule,
                    run.start,
                    run.end,
                    unicode::describe_run(run),
                    &text[run.start..run.end],
                ));
            }
            if let Some(norm) = unicode::normalize(text, &report.changed_lines, 4) {
                let mut found = Vec::new();
                self.detect(&norm.text, &norm.dirty, &mut found);
                for mut h in found {
                    let (s, e) = norm.original_span(h.start, h.end);
                    h.start = s;
                    h.end = e;
                    h.normalized = true;
                    hits.push(h);
                }
            }
        }
        resolve(text, hits)
    }

    /// Every built-in rule id this scanner can emit (see [`Scanner::extra_rule_ids`] for the
    /// others).
    pub fn rules(&self) -> &'static [RuleInfo] {
        rules::RULES
    }
}

static SCANNER: OnceLock<Scanner> = OnceLock::new();

/// The process-wide scanner, built on first use: the built-in rules, plus the extra rules
/// installed before that use (see [`install_extra_rules`]).
pub fn scanner() -> &'static Scanner {
    SCANNER.get_or_init(Scanner::new)
}

/// Makes the process-wide scanner the built-in rules plus `rules`. Once per process, before the
/// first scan: a scanner already in use is never changed under its callers. The error names the
/// first bad rule and what is wrong with it.
pub fn install_extra_rules(rules: &[ExtraRule]) -> Result<(), String> {
    let scanner = Scanner::with_extra_rules(rules)?;
    SCANNER.set(scanner).map_err(|_| {
        "the scanner is already in use: extra scan rules are installed once, at start-up, before anything is scanned".to_owned()
    })
}

/// The identity of the process-wide scanner's rule set (see [`Scanner::rule_set_id`]).
pub fn rule_set_id() -> &'static str {
    scanner().rule_set_id()
}

/// The source of the built-in detectors: the rule ids and categories, their patterns, anchors,
/// limits and filters all live here, so any change to them changes the rule set's identity.
const DETECTOR_SOURCES: &[&str] = &[
    include_str!("mod.rs"),
    include_str!("engine.rs"),
    include_str!("extra.rs"),
    include_str!("generic.rs"),
    include_str!("heuristics.rs"),
    include_str!("injection.rs"),
    include_str!("rules.rs"),
    include_str!("secrets.rs"),
    include_str!("unicode.rs"),
];

/// 16 hex digits of a SHA-256 over every active rule's id and category, the built-in detectors'
/// source (their patterns and filters) and every extra rule's pattern.
fn rule_set_of(extra: &[extra::Compiled]) -> String {
    let mut h = sha2::Sha256::new();
    h.update(b"memsync-scan-rule-set/1\0");
    for r in rules::RULES {
        h.update(r.id.as_bytes());
        h.update(b"\0");
        h.update(crate::guard::category_name(r.category).as_bytes());
        h.update(b"\0");
    }
    for source in DETECTOR_SOURCES {
        h.update(sha256_hex(&[source.as_bytes()]).as_bytes());
    }
    for r in extra {
        h.update(b"extra\0");
        h.update(r.id.as_bytes());
        h.update(b"\0");
        h.update(crate::guard::category_name(r.category).as_bytes());
        h.update(b"\0");
        h.update(r.pattern.as_bytes());
        h.update(b"\0");
    }
    let digest: [u8; 32] = h.finalize().into();
    hex::encode(&digest[..8])
}

fn sha256_hex(parts: &[&[u8]]) -> String {
    let mut h = sha2::Sha256::new();
    for p in parts {
        h.update(p);
    }
    let digest: [u8; 32] = h.finalize().into();
    hex::encode(digest)
}

/// Non-overlapping intervals, keyed by start.
#[derive(Default)]
struct Intervals(BTreeMap<usize, usize>);

impl Intervals {
    fn overlaps(&self, start: usize, end: usize) -> bool {
        let end = end.max(start + 1);
        self.0
            .range(..end)
            .next_back()
            .is_some_and(|(_, &e)| e > start)
    }

    fn insert(&mut self, start: usize, end: usize) {
        self.0.insert(start, end.max(start + 1));
    }
}

/// Drop documentation examples and duplicates (one secret reported by several rules or by both
/// passes keeps its most specific rule), then turn byte spans into lines and columns.
fn resolve(text: &str, mut hits: Vec<Hit>) -> Vec<Finding> {
    hits.retain(|h| {
        h.category != Category::Secret
            || !rules::KNOWN_EXAMPLES.contains(&sha256_hex(&[h.value.as_bytes()]).as_str())
    });
    hits.sort_by_key(|h| {
        (
            h.category != Category::Secret,
            rules::tier(h.rule),
            h.normalized,
            h.start,
        )
    });
    let mut secrets = Intervals::default();
    let mut per_rule: BTreeMap<&'static str, Intervals> = BTreeMap::new();
    let mut kept: Vec<Hit> = Vec::with_capacity(hits.len());
    for h in hits {
        let slot = if h.category == Category::Secret {
            &mut secrets
        } else {
            per_rule.entry(h.rule).or_default()
        };
        if slot.overlaps(h.start, h.end) {
            continue;
        }
        slot.insert(h.start, h.end);
        kept.push(h);
    }
    // An injection preview quotes the text; never let it quote a secret found there.
    for h in kept
        .iter_mut()
        .filter(|h| matches!(h.rule, "harness-tag" | "instruction-override"))
    {
        if secrets.overlaps(h.start, h.end) {
            h.preview = rules::RULES
                .iter()
                .find(|r| r.id == h.rule)
                .map_or_else(String::new, |r| r.description.to_owned());
        }
    }
    kept.sort_by_key(|h| h.start);
    let mut findings = Vec::with_capacity(kept.len());
    let bytes = text.as_bytes();
    let (mut pos, mut line, mut column) = (0usize, 1u32, 1u32);
    for h in kept {
        let target = h.start.min(bytes.len());
        for &b in &bytes[pos..target] {
            if b == b'\n' {
                line += 1;
                column = 1;
            } else if b & 0xC0 != 0x80 {
                column += 1;
            }
        }
        pos = target;
        findings.push(Finding {
            rule: h.rule,
            category: h.category,
            line,
            column,
            fingerprint: sha256_hex(&[h.rule.as_bytes(), b"\0", h.value.as_bytes()]),
            preview: h.preview,
        });
    }
    findings.sort_by(|a, b| (a.line, a.column, a.rule).cmp(&(b.line, b.column, b.rule)));
    findings.dedup_by(|a, b| a.line == b.line && a.column == b.column && a.rule == b.rule);
    findings
}
