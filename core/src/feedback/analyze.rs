//! One feedback memory, read for comparison: its directive split into sentences, each word and
//! lexicon choice with the polarity the sentence gives it, and the scope it applies to.

use unicode_normalization::UnicodeNormalization;

use super::glossary::Glossary;
use super::lexicon::{
    CONDITION_WORDS, CONTEXT_LABELS, Cue, Dir, ELIDED, IMPERATIVE_VERBS, Lexicon, N_SCOPE_DIMS,
    PLACE_WORDS, Pol, SCOPES,
};
use crate::memory::{MemoryDoc, MemoryType};

/// Only this much of the rule text is read (a rule is a line or two; this bounds the work on
/// hostile input).
const MAX_BODY_BYTES: usize = 4096;
const MAX_DESCRIPTION_BYTES: usize = 1024;
const MAX_CLAUSES: usize = 64;
const MAX_TOKENS_PER_CLAUSE: usize = 160;
const MAX_TERM_STANCES: usize = 512;
const MAX_CHOICE_STANCES: usize = 128;
/// Matches per lexicon pattern.
const MAX_MATCHES_PER_PATTERN: usize = 32;
const MAX_BACKTICK_SPAN: usize = 60;

/// Term weights, in quarters: a code identifier, an ordinary word, a common word, a CJK pair.
pub(crate) const W_IDENT: u32 = 8;
pub(crate) const W_WORD: u32 = 4;
pub(crate) const W_GENERIC: u32 = 2;
pub(crate) const W_CJK: u32 = 3;
/// An acronym or product name ("LGPL", "GitHub").
pub(crate) const W_NAME: u32 = 5;
const W_CJK_GENERIC: u32 = 1;

/// Which scope values (a bit per value) a directive names, per dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Scope(pub [u16; N_SCOPE_DIMS]);

impl Scope {
    /// The first dimension in which both name values and none in common.
    pub(crate) fn separating_dim(&self, other: &Scope) -> Option<usize> {
        (0..N_SCOPE_DIMS)
            .find(|&d| self.0[d] != 0 && other.0[d] != 0 && self.0[d] & other.0[d] == 0)
    }

    pub(crate) fn compatible(&self, other: &Scope) -> bool {
        self.separating_dim(other).is_none()
    }

    pub(crate) fn union(&mut self, other: &Scope) {
        for d in 0..N_SCOPE_DIMS {
            self.0[d] |= other.0[d];
        }
    }

    /// Each dimension this scope leaves open is taken from `fallback`.
    fn or(&self, fallback: &Scope) -> Scope {
        let mut s = *self;
        for d in 0..N_SCOPE_DIMS {
            if s.0[d] == 0 {
                s.0[d] = fallback.0[d];
            }
        }
        s
    }

    pub(crate) fn intersection(&self, other: &Scope) -> Scope {
        let mut s = *self;
        for d in 0..N_SCOPE_DIMS {
            s.0[d] &= other.0[d];
        }
        s
    }

    /// Value labels named in dimension `d`.
    pub(crate) fn labels(&self, d: usize) -> Vec<&'static str> {
        let Some(dim) = SCOPES.get(d) else {
            return Vec::new();
        };
        dim.values
            .iter()
            .enumerate()
            .filter(|(v, _)| *v < 16 && self.0[d] & (1 << v) != 0)
            .map(|(_, (label, _))| *label)
            .collect()
    }
}

/// A subject term of the directive.
#[derive(Debug, Clone)]
pub(crate) struct Term {
    pub key: String,
    pub weight: u32,
    /// As first written (original case), for reasons.
    pub surface: String,
    pub cjk: bool,
    /// Byte offset of the first occurrence in the directive.
    pub pos: usize,
}

/// What one sentence part says about a term.
#[derive(Debug, Clone)]
pub(crate) struct TermStance {
    /// Index into `Analysis::terms`.
    pub term: usize,
    pub pol: Pol,
    pub clause: usize,
    pub scope: Scope,
    /// Byte range of the directive to quote.
    pub snip: (usize, usize),
}

/// What one sentence part says about a lexicon choice.
#[derive(Debug, Clone)]
pub(crate) struct ChoiceStance {
    pub concept: usize,
    pub choice: usize,
    pub pol: Pol,
    /// The sentence it is in.
    pub clause: usize,
    pub scope: Scope,
    pub snip: (usize, usize),
}

/// A feedback memory, read.
#[derive(Debug, Clone)]
pub(crate) struct Analysis {
    /// The directive: the rule lines then the description, normalised (NFKC, one space).
    pub text: String,
    /// Sorted by key.
    pub terms: Vec<Term>,
    /// Concepts the directive names, sorted.
    pub concepts: Vec<usize>,
    /// Sorted by term.
    pub term_stances: Vec<TermStance>,
    /// Sorted by concept.
    pub choice_stances: Vec<ChoiceStance>,
    /// Pairs of adjacent subject words ("pr titl", "hint typ"), in either order, sorted.
    pub phrases: Vec<String>,
    /// The headline: the rule's first sentence ends at `.0`, the description starts at `.1`.
    pub headline: (usize, usize),
    /// The amounts the directive states (read once here, compared for every pair).
    pub quantities: Vec<super::Quantity>,
    /// The directories and named places it names, as path components.
    pub places: Vec<Vec<String>>,
    /// The terms of each sentence (indices into `terms`, sorted).
    pub clause_terms: Vec<Vec<usize>>,
    /// Each sentence's byte range and scope (its own, else the whole directive's).
    pub clauses: Vec<((usize, usize), Scope)>,
    /// The wording of the name and directive, to compare as a whole.
    pub profile: super::similar::Profile,
    /// Which sides of the lexicon's antonym pairs each sentence says: bit `2k` the first word
    /// of pair `k`, bit `2k + 1` the second.
    pub clause_sides: Vec<u64>,
    /// Whether each sentence retires or bans what it names (see `lexicon::RETIRED`).
    pub clause_retires: Vec<bool>,
    /// What the memory says, for the sentence-embedding model: its description and body.
    pub said: String,
    /// What the memory means, as the installed sentence-embedding model reads [`Self::said`]
    /// (`embed.rs`; set by `compare`); None without a model.
    pub meaning: Option<std::sync::Arc<[f32]>>,
}

impl Analysis {
    /// The summed weight of its subject terms (at least 1).
    pub(crate) fn weight(&self) -> u32 {
        self.terms.iter().map(|t| t.weight).sum::<u32>().max(1)
    }

    /// Whether a byte offset of `text` is in the headline (first sentence or description).
    pub(crate) fn in_headline(&self, at: usize) -> bool {
        at < self.headline.0 || at >= self.headline.1
    }

    /// The sentence a byte offset is in.
    pub(crate) fn clause_at(&self, at: usize) -> Option<usize> {
        self.clauses
            .iter()
            .position(|((s, e), _)| (*s..=*e).contains(&at))
    }
}

/// Reads a memory; `None` unless it is a `type: feedback` memory that parses.
pub(crate) fn analyze(text: &str) -> Option<Analysis> {
    let doc = MemoryDoc::parse(text).ok()?;
    if doc.memory_type() != Some(MemoryType::Feedback) {
        return None;
    }
    let mut x = analyze_directive(&directive_text(doc.body(), doc.description()));
    let mut whole = doc
        .name()
        .unwrap_or("")
        .chars()
        .take(256)
        .collect::<String>();
    whole.push('\n');
    whole.push_str(&x.text);
    x.profile = super::similar::profile(&whole);
    if super::embed::installed() {
        x.said = format!("{}. {}", doc.description().unwrap_or(""), doc.body());
    }
    Some(x)
}

/// The rule lines (the body up to the first `**Why:**` / `**How to apply:**`-style label) and
/// the description, one normalised line each; plus where the description starts.
pub(crate) fn directive_text(body: &str, description: Option<&str>) -> (String, usize) {
    let mut out = String::new();
    for raw in body.lines() {
        let line = normalize_line(strip_markup(raw));
        if is_context_label(&line) {
            break;
        }
        if line.is_empty() || line.starts_with("```") {
            continue;
        }
        if out.len() + line.len() + 1 > MAX_BODY_BYTES {
            push_truncated(&mut out, &line, MAX_BODY_BYTES);
            break;
        }
        out.push_str(&line);
        out.push('\n');
    }
    let desc_start = out.len();
    if let Some(d) = description {
        let d = normalize_line(d);
        push_truncated(&mut out, &d, desc_start + MAX_DESCRIPTION_BYTES);
    }
    (out, desc_start)
}

fn push_truncated(out: &mut String, line: &str, limit: usize) {
    for c in line.chars() {
        if out.len() + c.len_utf8() + 1 > limit {
            break;
        }
        out.push(c);
    }
    out.push('\n');
}

/// List markers, quote markers and heading marks say nothing.
fn strip_markup(line: &str) -> &str {
    let mut l = line.trim();
    loop {
        let before = l;
        for p in ["- ", "* ", "+ ", "> ", "• "] {
            if let Some(rest) = l.strip_prefix(p) {
                l = rest.trim_start();
            }
        }
        l = l.trim_start_matches('#').trim_start();
        let digits = l.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && digits < 4 {
            if let Some(rest) = l[digits..].strip_prefix(". ") {
                l = rest.trim_start();
            } else if let Some(rest) = l[digits..].strip_prefix(") ") {
                l = rest.trim_start();
            }
        }
        if l == before {
            return l;
        }
    }
}

/// NFKC, straight apostrophes and quotes, one space between words.
fn normalize_line(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut space = false;
    for c in line.nfkc() {
        let c = match c {
            '\u{2018}' | '\u{2019}' | '\u{02bc}' => '\'',
            '\u{201c}' | '\u{201d}' => '"',
            c => c,
        };
        if c.is_whitespace() || c.is_control() {
            space = !out.is_empty();
            continue;
        }
        if space {
            out.push(' ');
            space = false;
        }
        out.push(c);
    }
    out
}

/// `**Why:**`, `**How to apply:**`, `Why:`, `## Why`, `**理由：**`, …
fn is_context_label(line: &str) -> bool {
    let lower = line.to_lowercase();
    let l = lower.trim_start_matches(['*', '_', ' ']);
    let head: String = l.chars().take(40).collect();
    let label = match head.find([':', '：']) {
        Some(i) => &head[..i],
        None if line.starts_with('#') || l.len() <= 30 => head.as_str(),
        None => return false,
    };
    let label = label.trim_matches(['*', '_', ' ']);
    if label.is_empty() {
        return false;
    }
    CONTEXT_LABELS.iter().any(|w| {
        label == *w
            || (label.starts_with(w) && (label[w.len()..].starts_with(' ') || !w.is_ascii()))
    }) && (head.contains([':', '：'])
        || line.trim_start().starts_with('#')
        || line.starts_with("**"))
}

/// Lower case, one char for one char of the same length (so byte offsets stay valid).
pub(crate) fn lower_same_len(s: &str) -> String {
    s.chars()
        .map(|c| {
            let mut l = c.to_lowercase();
            match (l.next(), l.next()) {
                (Some(x), None) if x.len_utf8() == c.len_utf8() => x,
                _ => c,
            }
        })
        .collect()
}

/// Han ideographs and katakana: written without spaces, matched as character pairs.
pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c,
        '\u{4E00}'..='\u{9FFF}'
        | '\u{3400}'..='\u{4DBF}'
        | '\u{F900}'..='\u{FAFF}'
        | '\u{20000}'..='\u{2FFFF}'
        | '\u{30A0}'..='\u{30FF}'
        | '\u{31F0}'..='\u{31FF}'
        | '\u{3005}')
}

pub(crate) fn is_hiragana(c: char) -> bool {
    matches!(c, '\u{3040}'..='\u{309F}')
}

pub(crate) fn is_hangul(c: char) -> bool {
    matches!(c, '\u{AC00}'..='\u{D7AF}' | '\u{1100}'..='\u{11FF}' | '\u{3130}'..='\u{318F}')
}

/// Light English stemming: plurals, -ing, -ed, a final e ("mocking", "mocked", "mocks" → mock;
/// "rebase", "rebasing" → rebas). Other words pass through.
pub(crate) fn stem(w: &str) -> String {
    let n = w.chars().count();
    if n <= 3 || !w.chars().all(char::is_alphabetic) {
        return w.to_owned();
    }
    let mut s = w.to_owned();
    if s.ends_with("ies") && n > 4 {
        s.truncate(s.len() - 3);
        s.push('y');
    } else if s.ends_with("sses") {
        s.truncate(s.len() - 2);
    } else if s.ends_with("ss") || s.ends_with("us") || s.ends_with("is") {
    } else if s.ends_with('s') {
        s.pop();
    }
    // Adverbs read as their adjective: "relatively", "locally", "strictly", "separately".
    if ["ally", "ively", "ctly", "ntly", "tely", "rly"]
        .iter()
        .any(|x| s.ends_with(x))
        && s.chars().count() > 6
    {
        s.truncate(s.len() - 2);
    }
    // Nouns of action: "approval", "removal", "proposal" read as "approve", "remove", "propose".
    if ["oval", "ival", "sal", "wal"]
        .iter()
        .any(|x| s.ends_with(x))
        && s.chars().count() > 6
    {
        s.truncate(s.len() - 2);
        return s;
    }
    for suffix in ["ing", "ed"] {
        if s.ends_with(suffix) && s.chars().count() >= suffix.len() + 3 {
            s.truncate(s.len() - suffix.len());
            let mut it = s.chars().rev();
            if let (Some(a), Some(b)) = (it.next(), it.next())
                && a == b
                && a.is_ascii_alphabetic()
                && !"aeiouylsz".contains(a)
            {
                s.pop();
            }
            break;
        }
    }
    if s.ends_with('e') && s.chars().count() > 3 {
        s.pop();
    }
    s
}

/// A token of a clause.
#[derive(Debug, Clone)]
struct Tok {
    start: usize,
    end: usize,
    key: String,
    weight: u32,
    cjk: bool,
    /// The plain lower-case word, for the imperative check.
    word: Option<String>,
}

#[derive(Debug, Clone, Copy)]
struct Anchor {
    start: usize,
    end: usize,
    concept: usize,
    choice: usize,
    clause: usize,
}

/// What a marker word does to the words after it (until the next cue or comma).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shield {
    None,
    /// "in", "on", "for", …: a place or purpose; its words are not what the rule is about
    /// ("no emoji *in commit messages*"), but a lexicon choice still is ("log *in UTC*").
    Place,
    /// "when", "if", "before", …: a condition; nothing in it is a directive ("*when
    /// squash-merging*, use the PR title").
    Condition,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ItemKind {
    Tok(usize),
    Anchor(usize),
    /// A choice named by the cue word itself ("*skip* the hooks", "*bypass* hooks").
    AnchorInCue(usize),
    Cue(Cue),
    Comma,
    Shield(Shield),
}

#[derive(Debug, Clone, Copy)]
struct Item {
    pos: usize,
    kind: ItemKind,
}

fn split_clauses(lower: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut iter = lower.char_indices().peekable();
    let mut in_code = false;
    while let Some((i, c)) = iter.next() {
        let next = iter.peek().map(|(_, n)| *n);
        // `HttpOnly; Secure` is one code span, not two sentences (a line still ends one).
        if c == '`' {
            in_code = !in_code;
        }
        if c == '\n' {
            in_code = false;
        }
        let boundary = !in_code
            && match c {
                '\n' | '!' | '?' | ';' | '。' | '！' | '？' | '；' => true,
                '.' => {
                    next.is_none_or(char::is_whitespace)
                        && !lower[start..i].ends_with("e.g")
                        && !lower[start..i].ends_with("i.e")
                        && !lower[start..i].ends_with("etc")
                        && !lower[start..i].ends_with("vs")
                }
                _ => false,
            };
        // `!` right after a word is a Rust macro (`println!`), not the end of a sentence.
        let macro_bang = c == '!'
            && lower[..i]
                .chars()
                .next_back()
                .is_some_and(|p| p.is_ascii_alphanumeric())
            && next.is_some_and(|n| n == '(' || n == '[' || n == ' ' || n == ',');
        if boundary && !macro_bang {
            push_clause(&mut out, lower, start, i);
            start = i + c.len_utf8();
            if out.len() >= MAX_CLAUSES {
                return out;
            }
        }
    }
    push_clause(&mut out, lower, start, lower.len());
    out.truncate(MAX_CLAUSES);
    out
}

fn push_clause(out: &mut Vec<(usize, usize)>, lower: &str, s: usize, e: usize) {
    if lower[s..e].chars().any(|c| c.is_alphanumeric()) {
        out.push((s, e));
    }
}

fn backtick_spans(lower: &str, s: usize, e: usize) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut open: Option<usize> = None;
    for (i, c) in lower[s..e].char_indices() {
        if c == '`' {
            match open {
                None => open = Some(s + i + 1),
                Some(o) => {
                    spans.push((o, s + i));
                    open = None;
                }
            }
        }
    }
    spans
}

fn overlaps(a: (usize, usize), b: (usize, usize)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

/// A word without the Turkish case ending its apostrophe sets off ("istio'yu" → "istio").
fn strip_case_suffix(w: &str) -> Option<&str> {
    let (head, tail) = w.rsplit_once('\'')?;
    let ending = [
        "ı", "i", "u", "ü", "yı", "yi", "yu", "yü", "a", "e", "ya", "ye", "da", "de", "ta", "te",
        "dan", "den", "tan", "ten", "nın", "nin", "nun", "nün", "ın", "in", "un", "ün", "la", "le",
        "yla", "yle", "daki", "deki", "taki", "teki", "lar", "ler", "ları", "leri",
    ];
    (!head.is_empty() && ending.contains(&tail)).then_some(head)
}

/// Words, code identifiers and CJK pairs of one clause, minus stop words and cue words.
fn tokenize(
    lex: &Lexicon,
    text: &str,
    lower: &str,
    (s, e): (usize, usize),
    cue_spans: &[(usize, usize)],
    code_spans: &[(usize, usize)],
) -> Vec<Tok> {
    let mut toks = Vec::new();
    for &(cs, ce) in code_spans {
        let key = lower[cs..ce]
            .trim()
            .trim_end_matches("()")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        if key.chars().count() >= 2 && key.len() <= MAX_BACKTICK_SPAN {
            // `main` in backticks is still the everyday word.
            let weight = if key.chars().all(char::is_alphabetic) && lex.is_generic(&stem(&key)) {
                W_GENERIC
            } else {
                W_IDENT
            };
            toks.push(Tok {
                start: cs,
                end: ce,
                key,
                weight,
                cjk: false,
                word: None,
            });
        }
    }
    let chars: Vec<(usize, char)> = lower[s..e]
        .char_indices()
        .map(|(i, c)| (s + i, c))
        .collect();
    let at = |k: usize| chars.get(k).map(|(_, c)| *c);
    let pos = |k: usize| chars.get(k).map_or(e, |(p, _)| *p);
    let in_cue = |a: usize, b: usize| cue_spans.iter().any(|&c| overlaps(c, (a, b)));
    let mut k = 0;
    while k < chars.len() && toks.len() < MAX_TOKENS_PER_CLAUSE {
        let c = chars[k].1;
        if is_cjk(c) {
            let run_start = k;
            while at(k).is_some_and(is_cjk) {
                k += 1;
            }
            let (rs, re) = (pos(run_start), pos(k));
            for (off, len, key) in Glossary::get().in_run(&lower[rs..re]) {
                // Named as the key ("database"), not joined into the CJK words of reasons.
                push_key(&mut toks, key, rs + off, rs + off + len, false);
            }
            for j in run_start..k.saturating_sub(1) {
                let (a, b) = (pos(j), pos(j + 2));
                if in_cue(a, b) {
                    continue;
                }
                let key = &lower[a..b];
                let weight = if lex.is_cjk_generic(key) {
                    W_CJK_GENERIC
                } else {
                    W_CJK
                };
                toks.push(Tok {
                    start: a,
                    end: b,
                    key: key.to_owned(),
                    weight,
                    cjk: true,
                    word: None,
                });
            }
            continue;
        }
        let wordish = |c: char| (c.is_alphanumeric() && !is_cjk(c) && !is_hiragana(c)) || c == '_';
        let starts_word = wordish(c)
            || (c == '.'
                && at(k + 1).is_some_and(|n| n.is_ascii_alphanumeric())
                && !at(k.wrapping_sub(1)).is_some_and(wordish))
            || (c == '-'
                && at(k + 1) == Some('-')
                && at(k + 2).is_some_and(|n| n.is_ascii_alphabetic()));
        if !starts_word {
            k += 1;
            continue;
        }
        let mut ws = k;
        if c == '-' {
            k += 2;
        } else {
            k += 1;
        }
        // Inner dots, dashes, slashes… join an identifier (`pnpm-lock.yaml`, `std::fs`).
        while let Some(ch) = at(k) {
            let joins = matches!(ch, '.' | '-' | '/' | ':' | '\'' | '+' | '#')
                && at(k + 1).is_some_and(|n| wordish(n) && !is_hangul(n));
            if !(wordish(ch) || joins) {
                break;
            }
            k += 1;
        }
        let mut we = k;
        let mut call = false;
        if at(k) == Some('(') && at(k + 1) == Some(')') {
            call = true;
            k += 2;
        }
        let (mut a, b) = (pos(ws), pos(we));
        if in_cue(a, b) {
            continue;
        }
        // French and Italian elided articles and pronouns ("l'API", "qu'en", "j'utilise",
        // "dell'utente") are not part of the word.
        if let Some(p) = ELIDED
            .iter()
            .find(|p| lower[a..b].starts_with(*p) && b - a > p.len())
        {
            // The elisions are ASCII: as many characters as bytes.
            a += p.len();
            ws += p.len();
        }
        let mut w = &lower[a..b];
        if let Some(x) = w.strip_suffix("'s") {
            w = x;
            we = ws + x.chars().count();
        } else if let Some(x) = strip_case_suffix(w) {
            // Turkish case endings after a name ("Istio'yu", "Redis'te", "2023'te").
            w = x;
            we = ws + x.chars().count();
        }
        let w_end = pos(we);
        // Abbreviations with dots ("e.g", "z.b", "p.ex") are words, not identifiers.
        let abbreviation = matches!(
            w.trim_end_matches('.'),
            "e.g" | "i.e" | "z.b" | "d.h" | "u.a" | "p.ex" | "p.ej" | "p.e" | "c.-à-d"
        );
        let ident = call
            || w.starts_with("--")
            || (w.starts_with('.') && w.len() > 1)
            || !abbreviation && w.trim_matches('_').contains(['_', '.', '/', ':', '+', '#']);
        if ident {
            toks.push(Tok {
                start: a,
                end: pos(k),
                key: w.to_owned(),
                weight: W_IDENT,
                cjk: false,
                word: None,
            });
            // A file name's compound extension names its kind: `0042_users.down.sql` and
            // `.down.sql` files are both down migrations.
            if let Some(dot) = w.find('.').filter(|&d| d > 0)
                && w[dot..].matches('.').count() >= 2
                && !w[dot..].contains(['/', ':'])
            {
                toks.push(Tok {
                    start: a,
                    end: pos(k),
                    key: w[dot..].to_owned(),
                    weight: W_WORD,
                    cjk: false,
                    word: None,
                });
            }
        }
        let original = text.get(a..w_end).unwrap_or("");
        if matches!(original, "IT" | "ITs") {
            push_key(&mut toks, "integration-test", a, w_end, false);
            continue;
        }
        let whole_key = Glossary::get().key(w, &stem(w));
        if let Some(key) = whole_key.filter(|_| w.contains('-')) {
            push_key(&mut toks, key, a, w_end, false);
            continue;
        }
        // The parts of a hyphenated word ("third-party") weigh one word together.
        let compound =
            !ident && w.contains('-') && w.split('-').filter(|p| !p.is_empty()).count() > 1;
        for part in w.split(|ch: char| !(ch.is_alphanumeric() || ch == '\'')) {
            let part = part.trim_matches('\'');
            if let Some(mut t) = plain_word(lex, part, a, w_end) {
                if compound {
                    t.weight = (t.weight / 2).max(1);
                }
                if part.chars().any(is_hangul) {
                    if let Some(key) = Glossary::get().hangul_key(part) {
                        t.key = key.to_owned();
                    }
                } else if let Some(key) = Glossary::get().key(part, &t.key) {
                    t.key = key.to_owned();
                    t.weight = if lex.is_generic(key) {
                        W_GENERIC
                    } else {
                        W_WORD
                    };
                } else if t.weight == W_WORD && is_acronym(original, part) {
                    // "LGPL", "OLTP", "GitHub": a name, not an ordinary word.
                    t.weight = W_NAME;
                }
                let broader = Glossary::get().broader(&t.key);
                toks.push(t);
                if let Some(b) = broader {
                    push_key(&mut toks, b, a, w_end, false);
                }
            }
        }
    }
    for (off, len, key) in Glossary::get().in_phrases(&lower[s..e]) {
        if !toks.iter().any(|t| t.key == key && t.start == s + off) {
            push_key(&mut toks, key, s + off, s + off + len, false);
        }
    }
    merge_compounds(&mut toks, lower);
    toks.truncate(MAX_TOKENS_PER_CLAUSE);
    toks
}

/// A glossary key as a token of its own (an ordinary word's weight, or less if it is common).
fn push_key(toks: &mut Vec<Tok>, key: &str, start: usize, end: usize, cjk: bool) {
    let lex = Lexicon::get();
    let weight = if lex.is_generic(key) {
        W_GENERIC
    } else {
        W_WORD
    };
    toks.push(Tok {
        start,
        end,
        key: key.to_owned(),
        weight,
        cjk,
        word: None,
    });
}

/// Whether `part` is written as an acronym or a product name in `original` (all capitals, or a
/// capital after a lower-case letter: "LGPL", "GitHub"), not at the mercy of sentence case.
fn is_acronym(original: &str, part: &str) -> bool {
    let Some(at) = original.to_lowercase().find(part) else {
        return false;
    };
    let Some(o) = original.get(at..at + part.len()) else {
        return false;
    };
    let letters: Vec<char> = o.chars().filter(|c| c.is_alphabetic()).collect();
    if letters.len() < 2 || !letters.iter().all(char::is_ascii) {
        return false;
    }
    let upper = letters.iter().filter(|c| c.is_uppercase()).count();
    upper == letters.len()
        || letters
            .windows(2)
            .any(|w| w[0].is_lowercase() && w[1].is_uppercase())
}

/// One word for a compound and its abbreviation: "pull request(s)", "merge request(s)", "PRs"
/// → pr.
fn merge_compounds(toks: &mut Vec<Tok>, lower: &str) {
    let mut i = 0;
    while i < toks.len() {
        if toks[i].key == "prs" || toks[i].key == "mrs" {
            toks[i].key = "pr".to_owned();
        }
        let compound = matches!(toks[i].key.as_str(), "pull" | "merg")
            && toks.get(i + 1).is_some_and(|n| {
                n.key == "request"
                    && n.start >= toks[i].end
                    && lower[toks[i].end..n.start]
                        .chars()
                        .all(|c| c == ' ' || c == '-')
            });
        if compound {
            let end = toks[i + 1].end;
            toks[i].key = "pr".to_owned();
            toks[i].end = end;
            toks[i].weight = W_WORD;
            toks[i].word = None;
            toks.remove(i + 1);
        }
        i += 1;
    }
}

fn plain_word(lex: &Lexicon, w: &str, start: usize, end: usize) -> Option<Tok> {
    let n = w.chars().count();
    if n < 2 || lex.is_stop(w) {
        return None;
    }
    if w.chars().all(|c| c.is_ascii_digit()) {
        return Some(Tok {
            start,
            end,
            key: w.to_owned(),
            weight: W_GENERIC,
            cjk: false,
            word: None,
        });
    }
    let key = stem(w);
    if lex.is_stop(&key) {
        return None;
    }
    let weight = if lex.is_generic(&key) {
        W_GENERIC
    } else {
        W_WORD
    };
    Some(Tok {
        start,
        end,
        key,
        weight,
        cjk: false,
        word: Some(w.to_owned()),
    })
}

fn scope_of(lex: &Lexicon, text: &str) -> Scope {
    let mut s = Scope::default();
    if let Some(set) = &lex.scope_set {
        for i in set.matches(text).iter() {
            if let Some(&(d, v)) = lex.scope_values.get(i)
                && d < N_SCOPE_DIMS
                && v < 16
            {
                s.0[d] |= 1 << v;
            }
        }
    }
    s
}

/// Every lexicon choice named in the directive. A span claimed by an earlier concept or choice
/// is not matched again.
fn find_anchors(
    lex: &Lexicon,
    lower: &str,
    clauses: &[(usize, usize)],
    desc: (usize, usize),
) -> Vec<Anchor> {
    let mut anchors = Vec::new();
    let Some(set) = &lex.concept_set else {
        return anchors;
    };
    let desc_text = &lower[desc.0.min(lower.len())..desc.1.min(lower.len())];
    // Spans that name no choice ("npm packages" is the registry, not the tool).
    let mut claimed: Vec<(usize, usize)> = lex
        .not_choices
        .iter()
        .flat_map(|re| re.find_iter(lower).take(MAX_MATCHES_PER_PATTERN))
        .map(|m| (m.start(), m.end()))
        .collect();
    for idx in set.matches(lower).iter() {
        let Some((ci, hi, re)) = lex.concept_patterns.get(idx) else {
            continue;
        };
        for caps in re.captures_iter(lower).take(MAX_MATCHES_PER_PATTERN) {
            let Some(whole) = caps.get(0) else { continue };
            let a = caps.name("c").unwrap_or(whole);
            if a.start() == a.end()
                || claimed
                    .iter()
                    .any(|&(s, e)| a.start() >= s && a.start() < e)
            {
                continue;
            }
            let Some(clause) = clauses
                .iter()
                .position(|&(s, e)| a.start() >= s && a.start() < e)
            else {
                continue;
            };
            if let Some(Some(ctx)) = lex.contexts.get(*ci) {
                let (s, e) = clauses[clause];
                if !ctx.is_match(&lower[s..e]) && !ctx.is_match(desc_text) {
                    continue;
                }
            }
            claimed.push((a.start(), a.end()));
            anchors.push(Anchor {
                start: a.start(),
                end: a.end(),
                concept: *ci,
                choice: *hi,
                clause,
            });
        }
    }
    anchors.sort_by_key(|a| (a.start, a.concept, a.choice));
    anchors
}

/// The polarity of every token and anchor of one clause (`None`: the topic, before the cue).
struct Resolved {
    tok: Vec<Option<Pol>>,
    anchor: Vec<Option<Pol>>,
    /// Segment (comma-separated part) of each token and anchor.
    tok_seg: Vec<usize>,
    anchor_seg: Vec<usize>,
}

fn resolve(items: &[Item], n_tok: usize, n_anchor: usize, toks: &[Tok], lower: &str) -> Resolved {
    let mut r = Resolved {
        tok: vec![None; n_tok],
        anchor: vec![None; n_anchor],
        tok_seg: vec![0; n_tok],
        anchor_seg: vec![0; n_anchor],
    };
    let mut state: Option<Pol> = None;
    let mut last_pol = Pol::Pos;
    let mut pending: Vec<(ItemKind, Shield)> = Vec::new();
    let mut seen_cue = false;
    let mut seen_prefer = false;
    let mut seg = 0;
    let mut shield = Shield::None;

    fn shielded(k: ItemKind, sh: Shield, p: Option<Pol>) -> Option<Pol> {
        match (k, sh) {
            (_, Shield::Condition) | (ItemKind::Tok(_), Shield::Place) => None,
            _ => p,
        }
    }
    fn assign(r: &mut Resolved, k: ItemKind, p: Option<Pol>) {
        match k {
            ItemKind::Tok(i) => {
                if let Some(x) = r.tok.get_mut(i) {
                    *x = p;
                }
            }
            ItemKind::Anchor(i) | ItemKind::AnchorInCue(i) => {
                if let Some(x) = r.anchor.get_mut(i) {
                    *x = p;
                }
            }
            _ => {}
        }
    }
    fn flush(r: &mut Resolved, pending: &mut Vec<(ItemKind, Shield)>, p: Option<Pol>) {
        for (k, sh) in pending.drain(..) {
            assign(r, k, shielded(k, sh, p));
        }
    }
    // The topic before a cue has no polarity of its own, except a lexicon choice that a strong
    // or negative cue is about ("tabs must never be used"); after a weak verb the topic is its
    // subject, not its object ("new feature flags default to off").
    // A choice in an earlier part of the sentence is not what the cue is about ("start with a
    // lowercase letter, carry no trailing punctuation"): it is stated as done there, unless a
    // cue came before it.
    fn flush_topic(
        r: &mut Resolved,
        pending: &mut Vec<(ItemKind, Shield)>,
        anchor: Option<Pol>,
        (seg, seen_cue): (usize, bool),
    ) {
        for (k, sh) in pending.drain(..) {
            match k {
                ItemKind::Anchor(i) | ItemKind::AnchorInCue(i)
                    if r.anchor_seg.get(i).is_some_and(|&s| s < seg) =>
                {
                    assign(r, k, shielded(k, sh, (!seen_cue).then_some(Pol::Pos)))
                }
                ItemKind::Anchor(_) | ItemKind::AnchorInCue(_) => {
                    assign(r, k, shielded(k, sh, anchor))
                }
                _ => assign(r, k, None),
            }
        }
    }

    for (idx, item) in items.iter().enumerate() {
        match item.kind {
            ItemKind::Tok(i) | ItemKind::Anchor(i) => {
                let segs = if matches!(item.kind, ItemKind::Tok(_)) {
                    &mut r.tok_seg
                } else {
                    &mut r.anchor_seg
                };
                if let Some(s) = segs.get_mut(i) {
                    *s = seg;
                }
                match state {
                    Some(p) => assign(&mut r, item.kind, shielded(item.kind, shield, Some(p))),
                    None => pending.push((item.kind, shield)),
                }
            }
            ItemKind::AnchorInCue(i) => {
                if let Some(s) = r.anchor_seg.get_mut(i) {
                    *s = seg;
                }
                // The cue word names the choice: it is done ("skip the hooks") unless a
                // negation is already in force ("never skip the hooks").
                let p = state.unwrap_or(Pol::Pos);
                assign(&mut r, item.kind, shielded(item.kind, shield, Some(p)));
            }
            ItemKind::Shield(sh) => {
                if sh == Shield::Condition || shield != Shield::Condition {
                    shield = sh;
                }
            }
            ItemKind::Cue(Cue::Polar { pol, dir, strong }) => {
                let seen_before = seen_cue;
                seen_cue = true;
                shield = Shield::None;
                if pol == Pol::Pos && lower[item.pos..].starts_with("prefer") {
                    seen_prefer = true;
                }
                let keep_neg = matches!(state, Some(Pol::Neg | Pol::Optional))
                    && !strong
                    && matches!(pol, Pol::Pos | Pol::Permit);
                match dir {
                    Dir::Pre => {
                        let follows = items[idx + 1..]
                            .iter()
                            .take_while(|i| {
                                !matches!(i.kind, ItemKind::Comma | ItemKind::Cue(Cue::But))
                            })
                            .any(|i| matches!(i.kind, ItemKind::Tok(_) | ItemKind::Anchor(_)));
                        let at = (seg, seen_before);
                        if follows {
                            let anchor = (strong || pol != Pol::Pos).then_some(pol);
                            flush_topic(&mut r, &mut pending, anchor, at);
                        } else if !strong && pol == Pol::Pos {
                            // "new feature flags default to off": the subject of a verb.
                            flush_topic(&mut r, &mut pending, None, at);
                        } else {
                            flush(&mut r, &mut pending, Some(pol));
                        }
                        if !keep_neg {
                            state = Some(pol);
                            last_pol = pol;
                        }
                    }
                    Dir::Post => {
                        flush(&mut r, &mut pending, Some(pol));
                        state = None;
                        last_pol = pol;
                    }
                    Dir::Both => {
                        flush(&mut r, &mut pending, Some(pol));
                        if !keep_neg {
                            state = Some(pol);
                            last_pol = pol;
                        }
                    }
                }
            }
            ItemKind::Cue(Cue::Flip) => {
                shield = Shield::None;
                let new = match state {
                    Some(p) => p.flipped(),
                    None if !seen_cue => {
                        flush(&mut r, &mut pending, Some(Pol::Pos));
                        Pol::Neg
                    }
                    None => {
                        flush(&mut r, &mut pending, None);
                        last_pol.flipped()
                    }
                };
                seen_cue = true;
                state = Some(new);
                last_pol = new;
            }
            ItemKind::Cue(Cue::FlipAfterPrefer) => {
                if seen_prefer && let Some(p) = state {
                    shield = Shield::None;
                    state = Some(p.flipped());
                    last_pol = p.flipped();
                }
            }
            ItemKind::Cue(Cue::But) => {
                shield = Shield::None;
                flush(
                    &mut r,
                    &mut pending,
                    if seen_cue { None } else { Some(Pol::Pos) },
                );
                state = None;
                seg += 1;
            }
            ItemKind::Comma => {
                shield = Shield::None;
                seg += 1;
                // "Tests mit Vitest, nicht mit Jest": a negation that reads both ways stops at
                // the comma before it; what came before is the pick.
                if let Some(Item {
                    kind:
                        ItemKind::Cue(Cue::Polar {
                            pol: Pol::Neg,
                            dir: Dir::Both,
                            ..
                        }),
                    ..
                }) = items.get(idx + 1)
                {
                    flush(&mut r, &mut pending, Some(state.unwrap_or(Pol::Pos)));
                }
                // "don't mock the database, hit a real one"
                if let Some(Item {
                    kind: ItemKind::Tok(t),
                    ..
                }) = items.get(idx + 1)
                    && toks
                        .get(*t)
                        .and_then(|t| t.word.as_deref())
                        .is_some_and(|w| IMPERATIVE_VERBS.contains(&w))
                {
                    flush(
                        &mut r,
                        &mut pending,
                        if seen_cue { None } else { Some(Pol::Pos) },
                    );
                    state = Some(Pol::Pos);
                    last_pol = Pol::Pos;
                }
            }
        }
    }
    flush(
        &mut r,
        &mut pending,
        if seen_cue { None } else { Some(Pol::Pos) },
    );
    r
}

/// Condition and place words of a clause, outside cues and code.
fn shield_words(
    (text, lower): (&str, &str),
    (s, e): (usize, usize),
    skip: &[(usize, usize)],
) -> Vec<(usize, Shield)> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    for (i, c) in lower[s..e]
        .char_indices()
        .chain(std::iter::once((e - s, ' ')))
    {
        if c.is_alphabetic() && !is_cjk(c) && !is_hiragana(c) {
            if start.is_none() {
                start = Some(i);
            }
            continue;
        }
        let Some(st) = start.take() else { continue };
        let (a, b) = (s + st, s + i);
        if c == '\'' || c == '-' || skip.iter().any(|&sp| overlaps(sp, (a, b))) {
            continue;
        }
        let w = &lower[a..b];
        if CONDITION_WORDS.contains(&w) {
            out.push((a, Shield::Condition));
        } else if PLACE_WORDS.contains(&w) && !names_tool(text, lower, b, e) {
            out.push((a, Shield::Place));
        }
    }
    out
}

/// Whether the words after "in" at `at` name the tool a thing is made in, not a place: one or
/// two capitalised names that end the sentence or are followed by "with" or "and" ("I write new
/// infrastructure in Pulumi with TypeScript", "models in JAX"), not "in Go services".
fn names_tool(text: &str, lower: &str, at: usize, e: usize) -> bool {
    if !matches!(lower.get(at.saturating_sub(3)..at), Some(" in" | "\tin")) {
        return false;
    }
    let mut names = 0;
    for w in text[at..e].split_whitespace() {
        let core = w.trim_end_matches(['.', ',', ';', ':', ')', '!']);
        if core.chars().next().is_some_and(char::is_uppercase) && names < 2 {
            names += 1;
            if core.len() != w.len() {
                return true;
            }
            continue;
        }
        return names > 0 && matches!(w, "with" | "and" | "using" | "via");
    }
    names > 0
}

/// Analyses a directive (see [`directive_text`]).
pub(crate) fn analyze_directive((text, desc_start): &(String, usize)) -> Analysis {
    let lex = Lexicon::get();
    let text = text.clone();
    let lower = lower_same_len(&text);
    let clauses = split_clauses(&lower);
    let anchors = find_anchors(lex, &lower, &clauses, (*desc_start, lower.len()));

    struct ClauseOut {
        toks: Vec<Tok>,
        tok_pol: Vec<Option<Pol>>,
        tok_seg: Vec<usize>,
        anchors: Vec<Anchor>,
        anchor_pol: Vec<Option<Pol>>,
        anchor_seg: Vec<usize>,
        seg_snip: Vec<(usize, usize)>,
        scope: Scope,
        seg_scope: Vec<Scope>,
        /// Literals in backticks given as examples ("e.g. `Add retry to uploader`").
        examples: Vec<(usize, usize)>,
    }

    let mut outs = Vec::with_capacity(clauses.len());
    let mut phrases: Vec<String> = Vec::new();
    let mut note_scope = Scope::default();
    for (ci, &(s, e)) in clauses.iter().enumerate() {
        let code_spans = backtick_spans(&lower, s, e);
        // "Alerts without a runbook_url fail lint": what a thing fails without, it needs.
        let needs = lex.fails_without(&lower[s..e]);
        let cues: Vec<(usize, usize, Cue)> = lex
            .cues(&lower[s..e])
            .into_iter()
            .map(|(a, b, c)| (s + a, s + b, c))
            .filter(|&(a, b, _)| !code_spans.iter().any(|&sp| overlaps(sp, (a, b))))
            .filter(|&(a, b, c)| !(needs && c == Cue::Flip && &lower[a..b] == "without"))
            .collect();
        let cue_spans: Vec<(usize, usize)> = cues.iter().map(|&(a, b, _)| (a, b)).collect();
        let toks = tokenize(lex, &text, &lower, (s, e), &cue_spans, &code_spans);
        phrases.extend(phrases_of(&toks));
        let clause_anchors: Vec<Anchor> =
            anchors.iter().copied().filter(|a| a.clause == ci).collect();

        let mut items: Vec<(usize, u8, Item)> = Vec::new();
        for (i, t) in toks.iter().enumerate() {
            items.push((
                t.start,
                2,
                Item {
                    pos: t.start,
                    kind: ItemKind::Tok(i),
                },
            ));
        }
        for (i, a) in clause_anchors.iter().enumerate() {
            let in_cue = cue_spans.iter().any(|&c| overlaps(c, (a.start, a.end)));
            let kind = if in_cue {
                ItemKind::AnchorInCue(i)
            } else {
                ItemKind::Anchor(i)
            };
            items.push((
                a.start,
                if in_cue { 0 } else { 2 },
                Item { pos: a.start, kind },
            ));
        }
        for &(a, _, c) in &cues {
            items.push((
                a,
                1,
                Item {
                    pos: a,
                    kind: ItemKind::Cue(c),
                },
            ));
        }
        let mut skip = cue_spans.clone();
        skip.extend(code_spans.iter().copied());
        for (a, sh) in shield_words((&text, &lower), (s, e), &skip) {
            items.push((
                a,
                1,
                Item {
                    pos: a,
                    kind: ItemKind::Shield(sh),
                },
            ));
        }
        let mut in_code = false;
        // Whether each open parenthesis started an aside (not `unwrap()` or `f(x)`).
        let mut parens: Vec<bool> = Vec::new();
        for (i, c) in lower[s..e].char_indices() {
            if c == '`' {
                in_code = !in_code;
            }
            let after_space = lower[..s + i]
                .chars()
                .next_back()
                .is_none_or(char::is_whitespace);
            let paren = match c {
                '(' => {
                    parens.push(after_space);
                    after_space
                }
                ')' => parens.pop().unwrap_or(false),
                _ => false,
            };
            let comma = !in_code
                && (paren || matches!(c, ',' | '，' | '、' | '（' | '）' | '—' | '–' | ':' | '：'))
                && !(c == ':' && lower[s + i + 1..].starts_with(':'))
                && !(c == ':' && lower[..s + i].ends_with(':'));
            if comma {
                items.push((
                    s + i,
                    1,
                    Item {
                        pos: s + i,
                        kind: ItemKind::Comma,
                    },
                ));
            }
        }
        items.sort_by_key(|(p, rank, _)| (*p, *rank));
        let items: Vec<Item> = items.into_iter().map(|(_, _, i)| i).collect();
        // Segments as `resolve` counts them (commas and "but"s, in order).
        let mut seg_ranges = Vec::new();
        let mut cur = s;
        for it in &items {
            match it.kind {
                ItemKind::Comma => {
                    seg_ranges.push((cur, it.pos));
                    cur = it.pos + lower[it.pos..].chars().next().map_or(1, char::len_utf8);
                }
                ItemKind::Cue(Cue::But) => {
                    seg_ranges.push((cur, it.pos));
                    cur = it.pos;
                }
                _ => {}
            }
        }
        seg_ranges.push((cur, e));

        let res = resolve(&items, toks.len(), clause_anchors.len(), &toks, &lower);

        let scope = scope_of(lex, &lower[s..e]);
        note_scope.union(&scope);
        let seg_scope: Vec<Scope> = seg_ranges
            .iter()
            .map(|&(a, b)| scope_of(lex, &lower[a..b]))
            .collect();
        let seg_snip: Vec<(usize, usize)> = seg_ranges
            .iter()
            .map(|&(a, b)| {
                // Quote from the segment's first forward-looking cue ("must hit a real
                // database"), else the whole segment ("mocks are fine").
                let first_pre = cues.iter().find(|&&(cs, _, c)| {
                    cs >= a && cs < b && matches!(c, Cue::Polar { dir: Dir::Pre, .. } | Cue::Flip)
                });
                let start = match first_pre {
                    Some(&(cs, _, Cue::Polar { .. })) if cs > a => {
                        // Keep a short topic ("tabs must never…") but drop a long one.
                        if lower[a..cs].split_whitespace().count() <= 2 {
                            a
                        } else {
                            cs
                        }
                    }
                    _ => a,
                };
                trim_snip(&lower, start, b)
            })
            .collect();
        outs.push(ClauseOut {
            toks,
            tok_pol: res.tok,
            tok_seg: res.tok_seg,
            anchors: clause_anchors,
            anchor_pol: res.anchor,
            anchor_seg: res.anchor_seg,
            seg_snip,
            scope,
            seg_scope,
            examples: code_spans
                .iter()
                .copied()
                .filter(|&(a, _)| {
                    let before = &lower[s..a];
                    let before = before
                        .char_indices()
                        .rev()
                        .nth(24)
                        .map_or(before, |(i, _)| &before[i..]);
                    [
                        "e.g",
                        "for example",
                        "for instance",
                        "such as",
                        "like ",
                        "z.b",
                        "zum beispiel",
                        "par exemple",
                        "p.ex",
                        "por ejemplo",
                        "p.ej",
                        "例如",
                        "比如",
                        "例えば",
                        "例:",
                        "예:",
                        "예를 들어",
                        "ad esempio",
                    ]
                    .iter()
                    .any(|m| before.contains(m))
                })
                .collect(),
        });
    }

    // Terms: every token, deduplicated by key (the highest weight, the first surface).
    let mut terms: Vec<Term> = Vec::new();
    for o in &outs {
        for t in &o.toks {
            terms.push(Term {
                key: t.key.clone(),
                weight: t.weight,
                surface: text.get(t.start..t.end).unwrap_or(&t.key).to_owned(),
                cjk: t.cjk,
                pos: t.start,
            });
        }
    }
    terms.sort_by(|a, b| {
        a.key
            .cmp(&b.key)
            .then(b.weight.cmp(&a.weight))
            .then(a.pos.cmp(&b.pos))
    });
    terms.dedup_by(|later, first| later.key == first.key);

    let mut concepts: Vec<usize> = anchors.iter().map(|a| a.concept).collect();
    concepts.sort_unstable();
    concepts.dedup();

    let mut term_stances = Vec::new();
    let mut choice_stances = Vec::new();
    for (ci, o) in outs.iter().enumerate() {
        let clause_scope = o.scope.or(&note_scope);
        for (i, t) in o.toks.iter().enumerate() {
            let (Some(Some(pol)), Some(&seg)) = (o.tok_pol.get(i), o.tok_seg.get(i)) else {
                continue;
            };
            let Ok(term) = terms.binary_search_by(|x| x.key.as_str().cmp(&t.key)) else {
                continue;
            };
            // A literal given as an example ("e.g. `Add retry to uploader`"): what it is about
            // counts, not the stance of the sentence quoting it.
            if o.examples.iter().any(|&(a, b)| t.start >= a && t.start < b) {
                continue;
            }
            if term_stances.len() >= MAX_TERM_STANCES {
                break;
            }
            let scope = o
                .seg_scope
                .get(seg)
                .copied()
                .unwrap_or_default()
                .or(&clause_scope);
            // A qualifier: the word just before, in the same part, with only a space or hyphen
            // between (not a CJK pair, which overlaps its neighbours).
            term_stances.push(TermStance {
                term,
                pol: *pol,
                clause: ci,
                scope,
                snip: o.seg_snip.get(seg).copied().unwrap_or((0, 0)),
            });
        }
        for (i, a) in o.anchors.iter().enumerate() {
            let (Some(Some(pol)), Some(&seg)) = (o.anchor_pol.get(i), o.anchor_seg.get(i)) else {
                continue;
            };
            if choice_stances.len() >= MAX_CHOICE_STANCES {
                break;
            }
            let scope = o
                .seg_scope
                .get(seg)
                .copied()
                .unwrap_or_default()
                .or(&clause_scope);
            choice_stances.push(ChoiceStance {
                concept: a.concept,
                choice: a.choice,
                pol: *pol,
                clause: ci,
                scope,
                snip: o.seg_snip.get(seg).copied().unwrap_or((0, 0)),
            });
        }
    }
    term_stances.sort_by_key(|s| s.term);
    choice_stances.sort_by_key(|s| (s.concept, s.choice));
    let clause_terms: Vec<Vec<usize>> = outs
        .iter()
        .map(|o| {
            let mut v: Vec<usize> = o
                .toks
                .iter()
                .filter_map(|t| terms.binary_search_by(|x| x.key.as_str().cmp(&t.key)).ok())
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        })
        .collect();
    let headline = headline_end(&text, *desc_start);
    phrases.sort();
    phrases.dedup();
    let mut x = Analysis {
        phrases,
        text,
        terms,
        concepts,
        term_stances,
        choice_stances,
        headline: (headline, *desc_start),
        quantities: Vec::new(),
        places: Vec::new(),
        clause_terms,
        clauses: clauses
            .iter()
            .zip(&outs)
            .map(|(&r, o)| (r, o.scope.or(&note_scope)))
            .collect(),
        profile: Default::default(),
        said: String::new(),
        meaning: None,
        clause_retires: clauses
            .iter()
            .map(|&(s, e)| {
                lex.retired
                    .as_ref()
                    .is_some_and(|r| r.is_match(&lower[s..e]))
            })
            .collect(),
        clause_sides: clauses
            .iter()
            .map(|&(s, e)| {
                let part = &lower[s..e];
                let mut bits = 0u64;
                for (k, (x, y)) in lex.antonyms.iter().enumerate().take(32) {
                    if x.is_match(part) {
                        bits |= 1 << (2 * k);
                    }
                    if y.is_match(part) {
                        bits |= 1 << (2 * k + 1);
                    }
                }
                bits
            })
            .collect(),
    };
    x.quantities = super::quantities(&x);
    x.places = super::places(&x);
    x
}

/// Adjacent word pairs of a clause (no CJK pairs, which are phrases already), the two keys in
/// sorted order so "PR title" and "title of the PR" are one phrase.
fn phrases_of(toks: &[Tok]) -> Vec<String> {
    let words: Vec<&Tok> = toks
        .iter()
        .filter(|t| !t.cjk && t.weight < W_IDENT)
        .collect();
    let mut out = Vec::new();
    for w in words.windows(2) {
        let (x, y) = (&w[0], &w[1]);
        // Adjacent: nothing but a stop word or two between them.
        // Two everyday words ("commit message", "main branch") are an everyday phrase.
        if y.start < x.end
            || y.start - x.end > 12
            || x.key == y.key
            || x.weight.max(y.weight) < W_WORD
        {
            continue;
        }
        let (p, q) = if x.key <= y.key { (x, y) } else { (y, x) };
        out.push(format!("{} {}", p.key, q.key));
    }
    out
}

/// End of the rule's first sentence (the memory's headline, with its description).
fn headline_end(text: &str, desc_start: usize) -> usize {
    let rule = text.get(..desc_start).unwrap_or("");
    [". ", ".\n", "。", "! ", "? ", "\n", "；", "; "]
        .iter()
        .filter_map(|p| rule.find(p).map(|i| i + p.len()))
        .min()
        .unwrap_or(desc_start)
}

/// A quotable range: no surrounding spaces or punctuation, at most ~12 words.
fn trim_snip(lower: &str, mut a: usize, mut b: usize) -> (usize, usize) {
    let junk = |c: char| {
        c.is_whitespace()
            || matches!(
                c,
                '*' | '_' | ',' | '"' | '\'' | '-' | '—' | '(' | ')' | ':'
            )
    };
    while let Some(c) = lower[a..b].chars().next() {
        if !junk(c) {
            break;
        }
        a += c.len_utf8();
    }
    while let Some(c) = lower[a..b].chars().next_back() {
        if !junk(c) || (c == ')' && lower[a..b].contains('(')) {
            break;
        }
        b -= c.len_utf8();
    }
    // At most 12 words, or 40 characters of unspaced script.
    let mut words = 0;
    let mut chars = 0;
    let mut prev_space = true;
    for (i, c) in lower[a..b].char_indices() {
        chars += 1;
        if c.is_whitespace() {
            prev_space = true;
            continue;
        }
        if prev_space {
            words += 1;
            prev_space = false;
            if words > 12 {
                return (a, a + i);
            }
        }
        if chars > 80 {
            return (a, a + i);
        }
    }
    (a, b)
}
