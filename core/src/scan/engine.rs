//! The keyword prefilter and the dispatch of detectors to the lines where their anchors occur.
//!
//! One Aho-Corasick automaton holds the literal anchors of every detector (ASCII case-insensitive).
//! A single pass over the text yields, per line, the set of detectors worth running there; lines
//! without an anchor cost nothing beyond the automaton. Detectors then run on that line only,
//! except private keys (which read the following lines) and the few provider formats without a
//! literal part (which run over the whole text once a context word such as `discord` occurs).

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::{Deref, Range};
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use regex::{Regex, RegexBuilder};

use super::heuristics::{entropy, is_reference, is_token_placeholder};
use super::rules::{Bounds, PROVIDERS, ProviderSpec, Trigger};
use super::{Hit, generic, injection, secrets};

#[derive(Debug, Clone, Copy)]
enum Kind {
    Provider(usize),
    PrivateKey,
    UrlCredentials,
    AuthHeader,
    Jwt,
    DockerAuth,
    CliCredentials,
    Generic,
    HarnessTag,
    Override,
    Commands,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// The line holding the anchor.
    Line,
    /// The whole text, once, if an anchor occurs anywhere.
    Doc,
}

struct Detector {
    kind: Kind,
    scope: Scope,
}

/// The detectors woken on the current line, where the generic anchors are, and what the
/// private-key detector already knows about END lines.
struct LineState {
    pending: Vec<u16>,
    marked: Vec<bool>,
    generic_hits: Vec<usize>,
    pem_ends: secrets::EndMarkers,
}

pub(super) struct Engine {
    prefilter: AhoCorasick,
    /// For each prefilter pattern, the detectors it wakes.
    wakes: Vec<Vec<u16>>,
    /// Patterns that are generic anchors: the generic detector gets their positions.
    generic_anchor: Vec<bool>,
    detectors: Vec<Detector>,
    providers: Vec<Pattern>,
    secrets: secrets::Patterns,
    injection: injection::Patterns,
}

/// A pattern of the scanner's own source, compiled the first time a detector needs it (it
/// derefs to the compiled [`Regex`]). Compiling all of them takes tens of milliseconds, which a
/// short-lived process (a `memsync push` checking one file) would pay for patterns whose
/// anchors never occur in its text; a server compiles them all at start
/// ([`Scanner::compile_all`](super::Scanner::compile_all)).
pub(super) struct Pattern {
    source: Cow<'static, str>,
    compiled: OnceLock<Regex>,
}

impl Pattern {
    /// Compiles the pattern now if it is not yet. A pattern that does not compile is a bug in
    /// the scanner's source: the test that compiles every pattern catches it.
    pub(super) fn compiled(&self) -> &Regex {
        self.compiled.get_or_init(|| {
            RegexBuilder::new(&self.source)
                .size_limit(1 << 24)
                .build()
                .unwrap_or_else(|e| {
                    panic!("scanner pattern {:?} does not compile: {e}", self.source)
                })
        })
    }
}

impl Deref for Pattern {
    type Target = Regex;

    fn deref(&self) -> &Regex {
        self.compiled()
    }
}

/// A pattern of the scanner's source (compiled on first use, see [`Pattern`]).
pub(super) fn regex(pattern: impl Into<Cow<'static, str>>) -> Pattern {
    Pattern {
        source: pattern.into(),
        compiled: OnceLock::new(),
    }
}

fn provider_regex(spec: &ProviderSpec) -> Pattern {
    match spec.bounds {
        Bounds::Raw => regex(format!("(?m){}", spec.pattern)),
        b => regex(format!(
            "(?m)(?:^|[^{}])({})(?:$|[^{}])",
            b.left(),
            spec.pattern,
            b.right()
        )),
    }
}

impl Engine {
    pub(super) fn new() -> Engine {
        let mut detectors: Vec<(Detector, &'static [&'static str])> = Vec::new();
        for (i, spec) in PROVIDERS.iter().enumerate() {
            let scope = match spec.trigger {
                Trigger::Line => Scope::Line,
                Trigger::Doc => Scope::Doc,
            };
            detectors.push((
                Detector {
                    kind: Kind::Provider(i),
                    scope,
                },
                spec.anchors,
            ));
        }
        let line = |kind| Detector {
            kind,
            scope: Scope::Line,
        };
        detectors.push((line(Kind::PrivateKey), secrets::PRIVATE_KEY_ANCHORS));
        detectors.push((line(Kind::UrlCredentials), &["://"]));
        detectors.push((line(Kind::AuthHeader), &["authorization", "bearer"]));
        detectors.push((line(Kind::Jwt), &["eyj"]));
        detectors.push((
            line(Kind::DockerAuth),
            &["\"auth\"", "identitytoken", "registrytoken"],
        ));
        detectors.push((line(Kind::CliCredentials), secrets::CLI_ANCHORS));
        detectors.push((line(Kind::Generic), generic::ANCHORS));
        detectors.push((line(Kind::HarnessTag), injection::HARNESS_ANCHORS));
        detectors.push((line(Kind::Override), injection::OVERRIDE_ANCHORS));
        detectors.push((line(Kind::Commands), injection::COMMAND_ANCHORS));

        let mut index: HashMap<&'static str, usize> = HashMap::new();
        let mut patterns: Vec<&'static str> = Vec::new();
        let mut wakes: Vec<Vec<u16>> = Vec::new();
        for (d, (_, anchors)) in detectors.iter().enumerate() {
            for &anchor in *anchors {
                debug_assert_eq!(
                    anchor,
                    anchor.to_ascii_lowercase(),
                    "anchors are lower case"
                );
                let p = *index.entry(anchor).or_insert_with(|| {
                    patterns.push(anchor);
                    wakes.push(Vec::new());
                    patterns.len() - 1
                });
                if !wakes[p].contains(&(d as u16)) {
                    wakes[p].push(d as u16);
                }
            }
        }
        let prefilter = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .kind(Some(AhoCorasickKind::DFA))
            .build(&patterns)
            .unwrap_or_else(|e| panic!("scanner prefilter does not build: {e}"));

        let generic = detectors
            .iter()
            .position(|(d, _)| matches!(d.kind, Kind::Generic))
            .unwrap_or(usize::MAX) as u16;
        let generic_anchor = wakes.iter().map(|w| w.contains(&generic)).collect();
        Engine {
            prefilter,
            wakes,
            generic_anchor,
            detectors: detectors.into_iter().map(|(d, _)| d).collect(),
            providers: PROVIDERS.iter().map(provider_regex).collect(),
            secrets: secrets::Patterns::new(),
            injection: injection::Patterns::new(),
        }
    }

    /// Compiles every pattern now (see [`Pattern`]).
    pub(super) fn compile_all(&self) {
        for p in &self.providers {
            p.compiled();
        }
        self.secrets.compile_all();
        self.injection.compile_all();
    }

    /// Run every detector whose anchors occur inside `regions` of `text`.
    pub(super) fn scan(&self, text: &str, regions: &[Range<usize>], out: &mut Vec<Hit>) {
        let n = self.detectors.len();
        let mut line = LineState {
            pending: Vec::new(),
            marked: vec![false; n],
            generic_hits: Vec::new(),
            pem_ends: secrets::EndMarkers::default(),
        };
        let mut whole: Vec<u16> = Vec::new();
        let mut whole_marked = vec![false; n];
        let mut bounds: Option<(usize, usize)> = None;
        for region in regions {
            for m in self.prefilter.find_overlapping_iter(&text[region.clone()]) {
                let pos = region.start + m.start();
                if bounds.is_none_or(|(_, end)| pos > end) {
                    if let Some((s, e)) = bounds {
                        self.flush(text, s, e, &mut line, out);
                    }
                    bounds = Some(line_bounds(text, pos));
                }
                let p = m.pattern().as_usize();
                if self.generic_anchor[p] {
                    line.generic_hits.push(pos);
                }
                for &d in &self.wakes[p] {
                    let di = d as usize;
                    match self.detectors[di].scope {
                        Scope::Doc if !whole_marked[di] => {
                            whole_marked[di] = true;
                            whole.push(d);
                        }
                        Scope::Line if !line.marked[di] => {
                            line.marked[di] = true;
                            line.pending.push(d);
                        }
                        _ => {}
                    }
                }
            }
        }
        if let Some((s, e)) = bounds {
            self.flush(text, s, e, &mut line, out);
        }
        for d in whole {
            self.run(
                self.detectors[d as usize].kind,
                text,
                0,
                text.len(),
                &mut line,
                out,
            );
        }
    }

    fn flush(
        &self,
        text: &str,
        start: usize,
        end: usize,
        line: &mut LineState,
        out: &mut Vec<Hit>,
    ) {
        let end = if text[start..end].ends_with('\r') {
            end - 1
        } else {
            end
        };
        let mut pending = std::mem::take(&mut line.pending);
        for &d in &pending {
            line.marked[d as usize] = false;
            match self.detectors[d as usize].kind {
                Kind::Generic => {
                    line.generic_hits.sort_unstable();
                    generic::scan_hits(text, start, end, &line.generic_hits, out);
                }
                kind => self.run(kind, text, start, end, line, out),
            }
        }
        pending.clear();
        line.pending = pending;
        line.generic_hits.clear();
    }

    fn run(
        &self,
        kind: Kind,
        text: &str,
        start: usize,
        end: usize,
        line: &mut LineState,
        out: &mut Vec<Hit>,
    ) {
        match kind {
            Kind::Provider(i) => self.provider(i, text, start, end, out),
            Kind::PrivateKey => {
                secrets::private_key(&self.secrets, &mut line.pem_ends, text, start, end, out)
            }
            Kind::UrlCredentials => secrets::url_credentials(text, start, end, out),
            Kind::AuthHeader => secrets::authorization(&self.secrets, text, start, end, out),
            Kind::Jwt => secrets::jwt(&self.secrets, text, start, end, out),
            Kind::DockerAuth => secrets::docker_auth(&self.secrets, text, start, end, out),
            Kind::CliCredentials => secrets::cli_credentials(&self.secrets, text, start, end, out),
            Kind::Generic => generic::scan_line(text, start, end, out),
            Kind::HarnessTag => injection::harness_tags(&self.injection, text, start, end, out),
            Kind::Override => injection::overrides(&self.injection, text, start, end, out),
            Kind::Commands => injection::commands(&self.injection, text, start, end, out),
        }
    }

    fn provider(&self, i: usize, text: &str, start: usize, end: usize, out: &mut Vec<Hit>) {
        let spec = &PROVIDERS[i];
        let re = &self.providers[i];
        let hay = &text[start..end];
        let mut locs = re.capture_locations();
        let mut at = 0;
        while at < hay.len() && re.captures_read_at(&mut locs, hay, at).is_some() {
            let Some((ts, te)) = locs.get(1) else { break };
            at = te;
            let token = &hay[ts..te];
            if !accept(spec, token, text, start + ts) {
                continue;
            }
            out.push(Hit::secret(spec.id, text, start + ts, start + te, token));
            if spec.id == "aws-access-key-id" {
                secrets::aws_secret_near(&self.secrets, text, start + ts, out);
            }
        }
    }
}

/// The line holding byte `pos`: its start and the offset of its `\n` (or the end of the text).
pub(super) fn line_bounds(text: &str, pos: usize) -> (usize, usize) {
    let start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    let end = text[pos..].find('\n').map_or(text.len(), |i| pos + i);
    (start, end)
}

/// The text of the `radius` lines either side of byte `pos`, and the line itself, clipped to
/// 4 KiB either side (so a huge single-line file costs linear time, not quadratic).
pub(super) fn window(text: &str, pos: usize, radius: usize) -> &str {
    const CLIP: usize = 4096;
    let floor = ceil_boundary(text, pos.saturating_sub(CLIP));
    let ceil = floor_boundary(text, pos + CLIP);
    let mut start = text[floor..pos]
        .rfind('\n')
        .map_or(floor, |i| floor + i + 1);
    for _ in 0..radius {
        if start <= floor {
            break;
        }
        start = text[floor..start - 1]
            .rfind('\n')
            .map_or(floor, |i| floor + i + 1);
    }
    let mut end = text[pos..ceil].find('\n').map_or(ceil, |i| pos + i);
    for _ in 0..radius {
        if end >= ceil {
            break;
        }
        end = text[end + 1..ceil].find('\n').map_or(ceil, |i| end + 1 + i);
    }
    &text[start..end]
}

pub(super) fn floor_boundary(text: &str, i: usize) -> usize {
    let mut i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(text: &str, i: usize) -> usize {
    let mut i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

fn accept(spec: &ProviderSpec, token: &str, text: &str, at: usize) -> bool {
    if matches!(spec.bounds, Bounds::Raw) && is_reference(token) {
        return false;
    }
    // A valid checksum is what a real token carries and a hand-made stand-in almost never does,
    // so it outweighs a placeholder word that a random token can contain by chance (`…yOuR…`).
    if (!spec.checksum && is_token_placeholder(token)) || entropy(token) < spec.min_entropy {
        return false;
    }
    if spec.checksum && !github_checksum_ok(token) {
        return false;
    }
    if !spec.near.is_empty() {
        let around = window(text, at, 3).to_ascii_lowercase();
        if !spec.near.iter().any(|w| around.contains(w)) {
            return false;
        }
    }
    true
}

/// GitHub's token checksum (npm's tokens use the same format): the last 6 characters are the
/// CRC32 of the 30 random characters before them, in base62 (`0-9A-Za-z`), left-padded with `0`.
/// Longer `ghs_`/`ghr_` forms carry no published checksum, so they pass on length and randomness.
pub(super) fn github_checksum_ok(token: &str) -> bool {
    let payload = token.split_once('_').map_or("", |(_, p)| p);
    if payload.len() != 36 {
        return payload.len() > 36;
    }
    let (body, check) = payload.split_at(30);
    base62_checksum(body) == check
}

/// CRC32 of `body` as 6 base62 characters.
pub(super) fn base62_checksum(body: &str) -> String {
    const ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut n = crc32fast::hash(body.as_bytes());
    let mut out = [b'0'; 6];
    for slot in out.iter_mut().rev() {
        *slot = ALPHABET[(n % 62) as usize];
        n /= 62;
    }
    out.iter().map(|&b| b as char).collect()
}
