//! Feedback consistency: which feedback memories of one set are about the same subject as
//! memories of another set, and which of those give opposite directives.
//!
//! Agents are told not to save a private feedback memory that contradicts a team one without
//! saying so; this module checks it in software. It is deterministic (the verdict on a pair
//! depends on those two memories only, never on the rest of the set, so [`check_one`] and
//! [`compare`] always agree), explains every finding in one line, and reads untrusted text: it
//! never panics and its work per memory is bounded (only the first 4 KiB of rule text and 1 KiB
//! of description are read, at most 64 sentences; the lexicon is matched with the `regex` and
//! `aho-corasick` automata, linear in the text; the wording profile reads at most 6,000
//! characters). The lexicon is compiled once per process, on first use (~0.13 s). Each memory
//! is read once (~0.17 ms in release), then each pair is compared from what was read: 300 × 300
//! memories take ~0.08 s after the ~0.1 s of reading (`memsync-feedback-eval --bench 300`).
//!
//! # Method
//!
//! 1. **Directive.** A feedback memory leads with its rule, then `**Why:**` and
//!    `**How to apply:**` lines. The rule lines (the body up to the first such label — bold or
//!    not, in English, Chinese, Japanese, Korean, German, Spanish, French, Portuguese, Italian,
//!    Dutch, Polish, Swedish or Turkish) and the
//!    `description` are the directive; the why/how lines are context and are not read. Only
//!    `type: feedback` memories (or `metadata.type`) that parse are compared. Text is
//!    NFKC-normalised and lower-cased, split into sentences, and sentences into parts at commas,
//!    colons, dashes, asides in parentheses and "but".
//! 2. **Subject.** Content terms of the directive: words after stop-word removal and light
//!    stemming ("mocking", "mocked", "mocks" → mock; "pull request", "PR" → pr), code
//!    identifiers kept whole (`cargo fmt` in backticks, `unwrap()`, `--no-verify`,
//!    `pnpm-lock.yaml`, `snake_case`) and, for Chinese and Japanese, pairs of adjacent
//!    Han/katakana characters (hiragana separates words). Identifiers weigh more than words;
//!    common words (test, code, file, commit…) and language names weigh less. A domain lexicon
//!    maps synonyms to one *concept* with *choices*: npm/pnpm/yarn/bun → the JavaScript package
//!    manager; squash/merge commit/rebase-and-merge → how pull requests are merged; rebase onto
//!    main/merge main in → how branches are updated; tabs/spaces → indentation;
//!    camelCase/snake_case/kebab-case/PascalCase → naming style; UTC/local time → the timezone;
//!    mock/fake/stub/in-memory vs real/throwaway database → the database in tests; 80/100/120
//!    columns → line length; and some thirty more, with their Chinese, Japanese, German, Spanish
//!    and French names where they have one (the lexicon is in `lexicon.rs`). Where two concepts
//!    could read the same words, the more specific one wins ("--force-with-lease" is not
//!    "--force"; "npm packages" names no package manager). A glossary (`glossary.rs`) gives one
//!    key to the abbreviations, spellings and translations of the everyday nouns of software
//!    work ("MR"/"pull request", "pg"/"PostgreSQL", "k8s"/"Kubernetes", "ITs"/"integration
//!    tests", "Datenbank"/"データベース"/"database"), and names what a thing is a kind of
//!    (PostgreSQL is a database) at low weight. Acronyms and product names written as such
//!    ("LGPL", "GitHub") weigh more than words; terms most topics use ("pr", "merge",
//!    "production": the common-term list, from the development set's document frequencies)
//!    weigh less. A phrase both use ("PR title", "type hints") adds to the words apart. Two
//!    memories share a subject when they name a concept in common, or their shared terms weigh
//!    at least as much as two ordinary words.
//! 3. **Polarity.** Each term and choice gets the polarity of the part of the sentence it is in:
//!    *do* (always, must, should, use, prefer, the bare imperative "Mock the database"),
//!    *don't* (never, don't, avoid, stop, skip, omit, no longer, no, remove, forbidden, is
//!    deprecated), *may* (is fine, is ok, may, can, allowed) or *need not* (no need to, optional,
//!    don't bother). "Instead of", "rather than", "not", "without", "unless" and "prefer X over
//!    Y" switch it for what follows. Cues such as "must" govern the words after them; the words
//!    before them are the topic ("integration tests must hit a real database": the topic has no
//!    polarity, "real database" is *do*), except a lexicon choice, which a strong or negative cue
//!    is about ("tabs must never be used"). Post-positive cues ("mocks are fine", "tabs are
//!    forbidden", "the e2e suite must pass") govern the words before them; Japanese and Korean
//!    predicates come last, German cues govern the whole part. A weak positive cue ("use") does
//!    not lift a negation in force ("don't use"). A condition ("when squash-merging, …", "if",
//!    "before") carries no directive, and a place ("no emoji *in commit messages*") says where a
//!    rule applies, not what it is about.
//! 4. **Opposition.** Two directives oppose when the same term or choice is *do* in one and
//!    *don't* in the other (or *may* vs *don't*, or *do* vs *need not*), or when they pick
//!    different choices of an exclusive concept (tabs vs spaces, pnpm vs npm, squash vs merge
//!    commits, 80 vs 120 columns, UTC vs local time) and neither accepts the other's pick. For
//!    plain terms the opposed terms of one pair of sentences must weigh at least as much as two
//!    ordinary words (one identifier is enough), so one shared verb ("commit") is not a
//!    contradiction; under a strongly shared subject (a fifth of both directives' weight, four
//!    words, no lexicon concept in common) one opposed word is enough, and so is one named
//!    thing (a product, an identifier, a word capitalised mid-sentence) that the other memory
//!    retires or bans as a whole ("mypy was removed from the toolchain", "PyCryptodome is on the
//!    deny list", "Istio 2023'te kaldırıldı"; `lexicon::RETIRED`). A pick of a lexicon
//!    concept opposes only when it is what the two sentences are about: they share a word
//!    beyond the concept, or the concept heads both memories and they share more than it
//!    ("las tablas van en snake_case" and "flag keys are kebab-case" name different things).
//!    A literal given as an example ("e.g. `Add retry to uploader`") takes no stance.
//!    Without a negation, two sentences about one thing (two words in common) oppose when one
//!    says a word of an antonym pair and the other the other word: before/after, add/remove,
//!    manual/automatic, sync/async, one large/a chain of small, plural/singular,
//!    absolute/relative, explicit/implicit, pinned/latest… (`lexicon::ANTONYMS`; a sentence
//!    that says both says neither). Amounts oppose when they cannot both hold: each amount
//!    carries its unit (time, percent, columns, approvals, or any counted word: "100 MB",
//!    "3 retries") and its bound ("within 5 minutes" and "up to 500" are at most, "at least 6
//!    months" at least, and a negation before a bound turns it: "no function above 3008 MB" is
//!    at most 3008 MB); they oppose only when no amount keeps to both: "exactly 7 days" vs
//!    "exactly 30", "at least 6 months" vs "after 3 months". Two bounds in the same direction
//!    never do ("within 15 minutes" and "within 5 minutes" are both kept by acting within 5: the
//!    stricter one refines the other, and the pair is `related`), and a 10-minute lifetime keeps
//!    to "at most 15 minutes". Amounts compare only in compatible scopes ("staging backups 7 days"
//!    vs "production backups 90 days" do not) and in sentences about one thing (two words in
//!    common besides a unit of time or a counted word, or one and memories worded alike).
//! 5. **Wording.** Each memory's name and directive also get a profile of character n-grams
//!    (3–5 characters inside each word; `similar.rs`), compared by cosine. It sees one subject
//!    under other spellings, inflections and some translations ("migration", "Migrationen",
//!    "migración"; "Postgres", "PostgreSQL") and reads CJK text unsegmented. A pair that shares
//!    a word and is worded alike (cosine at least 0.21) is `related` even when its shared terms
//!    weigh too little; and a contradiction from plain terms or a same-choice pick between
//!    memories worded less alike than 0.18 (and sharing under half their subject) is reported
//!    as `related` with the opposing parts quoted: a flipped word between two rules worded
//!    nothing alike was, on the development sets, more often two rules about different things.
//! 6. **Scope.** Qualifiers separate rules: shared/main branches vs your own/feature branch;
//!    where the text goes (logs, display — CLI output, UI —, storage and APIs, commit messages,
//!    PR text, code comments, source code, docs, replies); tests vs production code; unit vs
//!    integration tests; frontend vs backend; CI vs local; the language of the code (also told
//!    by identifiers: `console.log`, `println!`); and what is named (file names, variables and
//!    functions, types, constants, fields, columns); the deployment environment (production,
//!    staging, development); public API and customer-facing apps vs internal endpoints and
//!    admin tools; applications vs published libraries; feature, release and hotfix branches;
//!    mobile apps vs web; batch jobs vs online services; incident severities (SEV1…SEV4; "SEV2
//!    or higher" names only SEV2); who the rule is for (employees, contractors, interns). Two
//!    directives that each name directories (`app/api/`, `jobs/sql/*.sql`) or named places
//!    ("the `batch` namespace"), none inside another, apply to different places. Each stance
//!    takes the scope of its sentence part, else of its sentence, else of the whole directive,
//!    dimension by dimension. Two stances are in different scopes when, in some dimension, both
//!    name values and none in common; a rule that names no value applies to all of them (so
//!    "never force-push" does contradict "force-pushing your own branch is fine").
//! 7. **Verdict.** Opposition in compatible scopes → [`Kind::Contradiction`]; a shared subject
//!    (including opposition only across different scopes) → [`Kind::Related`]; otherwise
//!    nothing. The reason names the shared subject, the scope both name, and quotes the two
//!    opposing sentence parts, e.g. `both about the database in tests (integration tests);
//!    "Mock the database in integration tests" vs "must hit a real database"`; a related pair
//!    says `…, for different scopes (unit tests vs integration tests); …` or `…; no opposing
//!    directives`.
//! 8. **Figures.** A pair its rules leave without a verdict that still shares a word's weight is
//!    `related` when a logistic model over its figures (how much it shares, how alike it is
//!    worded, how long the memories are; `related_by`) says so, fitted on the development sets
//!    for 0.85 findings per 100 unrelated pairs: `both about X; some wording in common (N%)`.
//! 9. **Meaning (optional).** Where an embedding model is installed (`embed.rs`: a sentence
//!    encoder whose weights the operator fetches; `--feedback-model-dir` on the server,
//!    MEMSYNC_FEEDBACK_MODEL on a user's machine), a pair its words leave without a verdict is
//!    `related` when a logistic model over the meaning's cosine and the words' figures says so
//!    (`close in meaning`; fitted on the development sets for 0.85 findings per 100 unrelated
//!    pairs, see `related_by`; it replaces item 8's model), and the meaning's cosine is one
//!    more thing that ranks related pairs. It never makes a contradiction.
//!
//! What it does not do: it does not understand exceptions beyond the scope words ("only for
//! hotfixes"), conventions outside the lexicon (RFC 7807 vs a custom envelope), scopes it has
//! no words for ("the CLI" vs "services", "server components" vs "client components"), nor
//! what a rule presupposes beyond a lexicon pick named in passing ("they become the squash
//! commit subject"). Measured on labelled sets written without seeing it
//! (`tests/feedback-eval/`, `memsync-feedback-eval [--model DIR] --set dev+|heldout12`; figures
//! in `docs/protocol.md`), it pairs more than nine in ten contradicting memories as one subject
//! but calls only a fifth to two fifths of them contradictions, and on sets it was not tuned on
//! a tenth to more than half of its `contradiction` verdicts are wrong. The hand-written
//! regression corpus (`tests/src/feedback_corpus.rs`) lists every case it gets wrong there,
//! with the reason.
//! Each finding carries a `likelihood` that ranks the related pairs the session-start notice
//! lists: for a related pair, a logistic model's probability (in thousandths) that it is a
//! contradiction, from how close the two are in words (and meaning), how much they share and how
//! long they are (`rank_features`), fitted on the development sets' related findings
//! (`memsync-feedback-eval [--model DIR] --fit-ranking`, which also scores each set ranked by a
//! model fitted on the others).

mod analyze;
pub mod embed;
mod glossary;
mod lexicon;
mod similar;
#[cfg(test)]
mod tests;

use analyze::{Analysis, ChoiceStance, Scope, TermStance, analyze};
use lexicon::{choice_label, concept_exclusive, concept_label};

/// How two feedback memories relate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Opposite directives on one subject, in the same scope.
    Contradiction,
    /// The same subject, compatible directives (or opposite ones for different scopes).
    Related,
}

/// A feedback memory to compare: its path (relative to its dir) and full file text.
#[derive(Debug, Clone, Copy)]
pub struct Note<'a> {
    pub path: &'a str,
    pub text: &'a str,
}

/// One pair of memories that have something in common.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Finding {
    /// Path from the first set.
    pub a: String,
    /// Path from the second set.
    pub b: String,
    pub kind: Kind,
    /// One line naming the shared subject and the opposing cues.
    pub reason: String,
    /// How likely the pair is to contradict, 0–1000: 1000 for a contradiction; for a related
    /// pair, at most 999, the ranking model's estimate (see the module docs) from how close the
    /// two are (the better of the Dice coefficient of their weighted subject terms and the
    /// cosine of their wording, averaged with the meaning's cosine when the embedding model is
    /// installed), how much they share and how long they are. Ranks the related pairs the
    /// session-start notice lists.
    pub likelihood: u32,
}

/// Compares every note of `a` with every note of `b` (only `type: feedback` ones; others
/// ignored; a note that doesn't parse is ignored). Pairs with nothing in common are not
/// reported. Findings come in the order of `a`, then of `b`.
pub fn compare(a: &[Note<'_>], b: &[Note<'_>]) -> Vec<Finding> {
    fn texts<'t>(x: &[Note<'t>]) -> Vec<&'t str> {
        x.iter().map(|n| n.text).collect()
    }
    let mut out = Vec::new();
    each_pair(&texts(a), &texts(b), |i, j, judged| {
        if let Some((kind, reason, likelihood)) = judged.verdict {
            out.push(Finding {
                a: a[i].path.to_owned(),
                b: b[j].path.to_owned(),
                kind,
                reason,
                likelihood,
            });
        }
    });
    out
}

/// Judges every pair of `a` × `b` that reads as feedback memories, in the order of `a`, then of
/// `b`, handing `f` their indexes and the verdict with its figures.
fn each_pair(a: &[&str], b: &[&str], mut f: impl FnMut(usize, usize, Judged)) {
    let (aa, bb) = read_both(a, b);
    for (i, xa) in aa.iter().enumerate() {
        let Some(xa) = xa else { continue };
        for (j, xb) in bb.iter().enumerate() {
            let Some(xb) = xb else { continue };
            f(i, j, judge_ranked(xa, xb));
        }
    }
}

/// Reads both sets (a text that is not a feedback memory, or does not parse, reads as `None`),
/// with what each memory means when the embedding model is installed: all at once, as the model
/// runs faster on many texts together.
fn read_both(a: &[&str], b: &[&str]) -> (Vec<Option<Analysis>>, Vec<Option<Analysis>>) {
    let read = |x: &[&str]| -> Vec<Option<Analysis>> { x.iter().map(|t| analyze(t)).collect() };
    let (mut aa, mut bb) = (read(a), read(b));
    if embed::installed() {
        let mut all: Vec<&mut Analysis> = aa.iter_mut().chain(bb.iter_mut()).flatten().collect();
        let texts: Vec<&str> = all.iter().map(|x| x.said.as_str()).collect();
        if let Some(vectors) = embed::embeddings(&texts) {
            for (x, v) in all.iter_mut().zip(vectors) {
                x.meaning = Some(v);
            }
        }
    }
    (aa, bb)
}

/// Same, for one candidate against a set (the server's check of a single push / the stateless
/// endpoint).
pub fn check_one(candidate: &Note<'_>, against: &[Note<'_>]) -> Vec<Finding> {
    compare(std::slice::from_ref(candidate), against)
}

/// Memories worded this much alike (the cosine of their character n-grams, `similar.rs`) are
/// about one subject even when no term they share weighs enough.
const SIMILAR_RELATED: f32 = 0.21;
/// Memories worded less alike than this are not called contradictions…
const SIMILAR_OPPOSE: f32 = 0.18;
/// …unless their shared subject is at least this much of both (Dice, in thousandths).
const SHARED_FIRM: u32 = 500;
/// Shared terms must weigh this much (two ordinary words, one identifier) to make a subject.
const RELATED_MIN: u32 = 2 * analyze::W_WORD;
/// Opposed terms of one sentence pair must weigh this much to make a contradiction.
const OPPOSED_MIN: u32 = 2 * analyze::W_WORD;
/// A shared concept is a subject by itself.
const W_CONCEPT: u32 = 3 * analyze::W_WORD;
/// Scope dimension of the kind of test; when it is named, "tests" says nothing more.
const DIM_AREA: usize = 2;
const DIM_TEST_KIND: usize = 3;

/// An opposition found between two memories.
struct Opposition {
    subject: String,
    /// The lexicon concept opposed (choice oppositions), else `usize::MAX`.
    concept: usize,
    /// Two different choices of the concept (not one choice, done and not done).
    two_picks: bool,
    scope_a: Scope,
    scope_b: Scope,
    snip_a: (usize, usize),
    snip_b: (usize, usize),
    weight: u32,
    /// The two sentences share a term beyond the concept: the picks are about one thing.
    anchored: bool,
}

/// The verdict on a pair, its one-line reason and its likelihood of being a contradiction (see
/// [`Finding::likelihood`]).
fn judge(a: &Analysis, b: &Analysis) -> Option<(Kind, String, u32)> {
    judge_ranked(a, b).verdict
}

/// A pair judged, with the figures that rank it ([`rank_features`]) and whether its rules left it
/// without a verdict and to the model that relates such pairs (see [`related_by`]).
struct Judged {
    verdict: Option<(Kind, String, u32)>,
    x: [f32; RANK_FEATURES],
    words_silent: bool,
}

/// [`judge`], with the figures that ranked a related pair ([`rank_features`]).
fn judge_ranked(a: &Analysis, b: &Analysis) -> Judged {
    let (shared_weight, shared_concepts, shared_terms) = shared_subject(a, b);
    let meaning = match (&a.meaning, &b.meaning) {
        (Some(x), Some(y)) => Some(embed::cosine(x, y)),
        _ => None,
    };
    // How alike the two are, in thousandths, from how alike their words are: with a model,
    // averaged with their meanings' cosine (round six: on the development sets, the notice at 8
    // pairs then reached 0.80 of the contradictions instead of 0.78, the mean of the six sets;
    // the words alone or the better of the two ranked worse). One of the ranking's figures.
    let with_meaning = |words: u32| {
        match meaning {
            Some(m) => ((words as f32 + m.max(0.0) * 1000.0) / 2.0) as u32,
            None => words,
        }
        .min(999)
    };
    // Related pairs are ranked for the notice by how likely they are to contradict (see
    // `rank`), from how close they are and what they share.
    let features = |closeness: u32, alike: f32| {
        rank_features(
            closeness,
            shared_weight,
            (a.weight(), b.weight()),
            shared_concepts.len(),
            alike,
            meaning,
        )
    };
    // A pair its words leave without a verdict is related when the fitted model says its
    // figures put it on one subject: with the embedding model, by its meaning whatever its
    // words; without, by what little it shares and how alike it is worded (and only when it
    // shares at least a word's weight: one common word between two one-line rules is not a
    // subject, however alike their few words are).
    let by_figures = |terms: &[usize], x: [f32; RANK_FEATURES]| match meaning {
        None if shared_weight < analyze::W_WORD => Judged {
            verdict: None,
            x,
            words_silent: false,
        },
        _ => Judged {
            verdict: match meaning {
                Some(m) => related_by(&RELATE_MEANING, RELATE_THRESHOLD, &x).then(|| {
                    (
                        Kind::Related,
                        meaning_reason(a, b, terms, m),
                        rank(&x, true),
                    )
                }),
                None => related_by(&RELATE_WORDS, RELATE_WORDS_THRESHOLD, &x)
                    .then(|| (Kind::Related, words_reason(a, terms, x[5]), rank(&x, false))),
            },
            x,
            words_silent: true,
        },
    };
    if shared_weight == 0 {
        return by_figures(&[], features(with_meaning(0), 0.0));
    }
    let alike = similar::cosine(&a.profile, &b.profile);
    let dice = 2000 * shared_weight / (a.weight() + b.weight());
    // In words: the better of the shared subject's Dice coefficient and the wording's cosine.
    let x = features(
        with_meaning(dice.max((alike * 1000.0) as u32).min(999)),
        alike,
    );
    // Only a related pair needs its likelihood.
    let likelihood = || rank(&x, meaning.is_some());
    let verdict = match verdict(a, b, shared_weight, &shared_concepts, &shared_terms, alike) {
        // A flipped word between memories worded nothing alike is more often two rules about
        // different things than one rule and its opposite. Two different picks of an exclusive
        // lexicon concept (tabs vs spaces, in two languages), amounts that cannot both hold, and
        // short memories that share half their subject are firmer evidence.
        Some((Kind::Contradiction, reason, firm))
            if alike < SIMILAR_OPPOSE && !firm && dice < SHARED_FIRM =>
        {
            Some((
                Kind::Related,
                format!("{reason} (but worded too differently to call it a contradiction)"),
                likelihood(),
            ))
        }
        Some((Kind::Contradiction, reason, _)) => Some((Kind::Contradiction, reason, 1000)),
        Some((Kind::Related, reason, _)) => Some((Kind::Related, reason, likelihood())),
        None if alike >= SIMILAR_RELATED && shared_weight >= analyze::W_WORD => Some((
            Kind::Related,
            format!(
                "both about {}; worded alike ({:.0}% of their wording in common); no opposing \
                 directives",
                term_names(a, &shared_terms, 3).join(", "),
                alike * 100.0
            ),
            likelihood(),
        )),
        None => return by_figures(&shared_terms, x),
    };
    Judged {
        verdict,
        x,
        words_silent: false,
    }
}

/// What ranks a related pair: its closeness (thousandths, see [`judge`]), the shared subject's
/// weight (log), Dice coefficient and share of the smaller memory, shared lexicon concepts (at
/// most 2), the wording's cosine, each memory's weight (log, smaller then larger), and with the
/// embedding model the meaning's cosine (else 0).
#[doc(hidden)]
pub fn rank_features(
    closeness: u32,
    shared: u32,
    (wa, wb): (u32, u32),
    concepts: usize,
    alike: f32,
    meaning: Option<f32>,
) -> [f32; RANK_FEATURES] {
    let (w, lo, hi) = (shared as f32, wa.min(wb) as f32, wa.max(wb) as f32);
    [
        closeness as f32 / 1000.0,
        w.ln_1p(),
        2.0 * w / (lo + hi).max(1.0),
        w / lo.max(1.0),
        concepts.min(2) as f32,
        alike,
        lo.ln_1p(),
        hi.ln_1p(),
        meaning.map_or(0.0, |m| m.max(0.0)),
    ]
}

#[doc(hidden)]
pub const RANK_FEATURES: usize = 9;

/// A logistic model of "this related pair is a contradiction" over [`rank_features`], fitted on
/// the development sets' related findings (`memsync-feedback-eval --fit-ranking` prints these and
/// how the notice does with them, each set scored by a model fitted on the others): weights,
/// then the intercept. One model for the words alone, one with the meaning's cosine.
#[doc(hidden)]
pub const RANK_WORDS: [f32; RANK_FEATURES + 1] = [
    2.9622, 2.9179, -3.9008, -2.0340, -1.4788, 4.4535, -0.7557, -0.3386, 0.0000, -4.8776,
];
#[doc(hidden)]
pub const RANK_MEANING: [f32; RANK_FEATURES + 1] = [
    2.7722, 1.7979, -2.8064, -1.3432, -1.0774, 2.6458, -0.5851, 0.0079, 3.8759, -6.1383,
];

/// Whether a pair the words leave silent is on one subject: a logistic model over
/// [`rank_features`] (with the embedding model, [`RELATE_MEANING`]: the meaning's cosine, with how
/// close and how long the memories are; without, [`RELATE_WORDS`]: the little they share and how
/// alike they are worded), fitted on the development sets' silent pairs, at the threshold where
/// all findings on their unrelated pairs come to [`RELATE_PER_100`] per 100
/// (`memsync-feedback-eval [--model DIR] --fit-ranking`).
fn related_by(model: &[f32; RANK_FEATURES + 1], threshold: f32, x: &[f32; RANK_FEATURES]) -> bool {
    logistic(model, x) > threshold
}

#[doc(hidden)]
pub const RELATE_WORDS: [f32; RANK_FEATURES + 1] = [
    7.2807, 2.9782, 3.5146, 2.2553, 0.0000, 8.4099, 0.3303, 0.1408, 0.0000, -10.1136,
];
#[doc(hidden)]
pub const RELATE_WORDS_THRESHOLD: f32 = 0.4347;
#[doc(hidden)]
pub const RELATE_MEANING: [f32; RANK_FEATURES + 1] = [
    6.4471, 0.8826, 1.2468, 0.6395, 0.0000, 3.6154, 0.2083, 0.0197, 12.0165, -8.6088,
];
#[doc(hidden)]
pub const RELATE_THRESHOLD: f32 = 0.5248;
/// Findings per 100 unrelated pairs the development sets are allowed, words and meaning
/// together, when the threshold is fitted: room under the budget of 1, since a held-out set
/// finds more false alarms than the sets it was tuned on (round six: 1.16 against 0.87, round
/// eleven 1.15 against 0.85).
#[doc(hidden)]
pub const RELATE_PER_100: f64 = 0.85;

/// A related pair's likelihood, 0–999, from [`rank_features`] (`meaning`: whether they hold the
/// meaning's cosine).
fn rank(x: &[f32; RANK_FEATURES], meaning: bool) -> u32 {
    let model = if meaning { &RANK_MEANING } else { &RANK_WORDS };
    (1000.0 * logistic(model, x)).round().clamp(0.0, 999.0) as u32
}

#[doc(hidden)]
/// The probability a logistic model (`weights` then the intercept) gives `x`.
pub fn logistic(model: &[f32; RANK_FEATURES + 1], x: &[f32; RANK_FEATURES]) -> f32 {
    let z = model[RANK_FEATURES] + model.iter().zip(x).map(|(w, v)| w * v).sum::<f32>();
    1.0 / (1.0 + (-z).exp())
}

/// The reason of a pair found related by its meaning only.
fn meaning_reason(a: &Analysis, b: &Analysis, shared_terms: &[usize], m: f32) -> String {
    let names = term_names(a, shared_terms, 3);
    let about = if names.is_empty() {
        let first = |x: &Analysis| quote(&x.text, (0, x.headline.0.min(x.text.len())));
        format!("\"{}\" and \"{}\"", first(a), first(b))
    } else {
        names.join(", ")
    };
    format!(
        "both about {about}; close in meaning ({:.0}% by the embedding model); no opposing \
         directives",
        m * 100.0
    )
}

fn words_reason(a: &Analysis, shared_terms: &[usize], alike: f32) -> String {
    format!(
        "both about {}; some wording in common ({:.0}%); no opposing directives",
        term_names(a, shared_terms, 3).join(", "),
        alike * 100.0
    )
}

fn verdict(
    a: &Analysis,
    b: &Analysis,
    shared_weight: u32,
    shared_concepts: &[usize],
    shared_terms: &[usize],
    alike: f32,
) -> Option<(Kind, String, bool)> {
    let (c_same, c_apart) = choice_opposition(a, b);
    // Under a strongly shared subject (a fifth of both directives' weight, four words), one opposed word
    // is enough: "Commit the generated stubs" vs "Generated code is never committed".
    // Where both name a lexicon concept, its choices decide ("pnpm install" vs "never npm
    // install" agree), not one flipped word.
    let strong = 10 * shared_weight >= a.weight() + b.weight()
        && shared_weight >= 4 * analyze::W_WORD
        && shared_concepts.is_empty();
    let opposed_min = if strong { analyze::W_WORD } else { OPPOSED_MIN };
    let (t_same, t_apart) = term_opposition(a, b, opposed_min);
    // A pick of a lexicon concept is a contradiction only when the two share more than the
    // concept itself: "`pnpm format`" and "`npm test -- -u`" both name a package manager, and
    // are about formatting and snapshots.
    let beyond_concepts = shared_weight
        .saturating_sub(W_CONCEPT * u32::try_from(shared_concepts.len()).unwrap_or(u32::MAX));
    let headline_concept = |x: &Analysis, c: usize| {
        x.choice_stances
            .iter()
            .any(|s| s.concept == c && x.in_headline(s.snip.0))
    };
    // Two different picks (tabs vs spaces) may stand alone when the concept heads both
    // memories (first sentence or description); "Docker" vs "without Docker" says no more than
    // the word, and stands alone only when both descriptions name the concept.
    let described = |x: &Analysis, c: usize| {
        x.choice_stances
            .iter()
            .any(|s| s.concept == c && s.snip.0 >= x.headline.1)
    };
    // A pick of a concept contradicts when the two sentences are about one thing (they share a
    // word beyond the concept), or the concept heads both memories and they share more than it
    // or half of what they say (Dice): "las tablas van en snake_case" and "flag keys are
    // kebab-case" name different things.
    let headlines =
        |o: &Opposition| headline_concept(a, o.concept) && headline_concept(b, o.concept);
    let c_same = c_same.filter(|o| {
        let subject = o.anchored
            || headlines(o)
                && (beyond_concepts >= RELATED_MIN || 4 * shared_weight >= a.weight() + b.weight());
        subject
            && (beyond_concepts >= analyze::W_WORD
                || (o.two_picks && headlines(o))
                || (described(a, o.concept) && described(b, o.concept)))
    });
    let apart_places = separate_places(a, b);
    let (same, places) = match (c_same.or(t_same), &apart_places) {
        (Some(o), Some(places)) => (None, Some((o, places))),
        (Some(o), None) => (Some(o), None),
        (None, _) => (None, None),
    };
    if let Some((o, (pa, pb))) = places {
        let reason = format!(
            "both about {}, for different places (`{pa}` vs `{pb}`); \"{}\" vs \"{}\"",
            o.subject,
            quote(&a.text, o.snip_a),
            quote(&b.text, o.snip_b)
        );
        return Some((Kind::Related, reason, false));
    }
    if let Some(o) = same {
        let scope = scope_note(&o.scope_a.intersection(&o.scope_b));
        let reason = format!(
            "both about {}{}; \"{}\" vs \"{}\"",
            o.subject,
            scope,
            quote(&a.text, o.snip_a),
            quote(&b.text, o.snip_b)
        );
        return Some((Kind::Contradiction, reason, o.two_picks));
    }
    if let Some(o) = c_apart.or(t_apart) {
        let (la, lb) = match o.scope_a.separating_dim(&o.scope_b) {
            Some(d) => (o.scope_a.labels(d).join("/"), o.scope_b.labels(d).join("/")),
            None => (String::new(), String::new()),
        };
        let reason = format!(
            "both about {}, for different scopes ({la} vs {lb}); \"{}\" vs \"{}\"",
            o.subject,
            quote(&a.text, o.snip_a),
            quote(&b.text, o.snip_b)
        );
        return Some((Kind::Related, reason, false));
    }
    if let Some((k, ca, cb)) = antonym_opposition(a, b)
        && apart_places.is_none()
    {
        let span = |x: &Analysis, c: usize| x.clauses.get(c).map_or((0, 0), |r| r.0);
        let (wa, wb) = lexicon::antonym_words(
            k,
            &a.text[span(a, ca).0..span(a, ca).1],
            &b.text[span(b, cb).0..span(b, cb).1],
        );
        let reason = format!(
            "both about {}; opposite words ({wa} vs {wb}): \"{}\" vs \"{}\"",
            term_names(a, shared_terms, 3).join(", "),
            quote(&a.text, span(a, ca)),
            quote(&b.text, span(b, cb))
        );
        return Some((Kind::Contradiction, reason, false));
    }
    if let Some((qa, qb)) = quantity_opposition(a, b, shared_weight, alike)
        && apart_places.is_none()
    {
        let reason = format!(
            "both about {}; different amounts: \"{}\" vs \"{}\"",
            qa.unit,
            quote(&a.text, qa.snip),
            quote(&b.text, qb.snip)
        );
        return Some((Kind::Contradiction, reason, true));
    }
    if shared_weight >= RELATED_MIN {
        let mut names: Vec<String> = shared_concepts
            .iter()
            .take(2)
            .map(|&c| concept_label(c).to_owned())
            .collect();
        names.extend(term_names(a, shared_terms, 3));
        let reason = format!("both about {}; no opposing directives", names.join(", "));
        return Some((Kind::Related, reason, false));
    }
    None
}

/// An amount a directive states: a number and the word it counts ("120 columns", "6 months",
/// "two approvals").
#[derive(Debug, Clone)]
pub(crate) struct Quantity {
    value: f64,
    unit: String,
    snip: (usize, usize),
    bound: Bound,
    /// The sentence it is in.
    clause: usize,
}

/// What an amount says: exactly it, at most it ("within 5 minutes", "up to 500"), or at least
/// it ("at least 6 months", "80% or more").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bound {
    Exact,
    AtMost,
    AtLeast,
}

impl Bound {
    /// Whether some amount keeps to both `x` of this bound and `y` of `other`: an exact amount or
    /// an opposite bound must be possible under both ("a 10-minute TTL" keeps to "at most 15
    /// minutes"); two bounds in the same direction always are (acting "within 5 minutes" keeps
    /// to "within 15" too).
    fn meets(self, x: f64, other: Bound, y: f64) -> bool {
        use Bound::{AtLeast, AtMost, Exact};
        let eq = (x - y).abs() < f64::EPSILON;
        match (self, other) {
            (Exact, Exact) => eq,
            (AtMost, AtMost) | (AtLeast, AtLeast) => true,
            (AtMost, Exact) => y <= x,
            (Exact, AtMost) => x <= y,
            (AtLeast, Exact) => y >= x,
            (Exact, AtLeast) => x >= y,
            (AtMost, AtLeast) => y <= x,
            (AtLeast, AtMost) => x <= y,
        }
    }
}

/// Words before an amount that make it a bound.
const AT_MOST_BEFORE: &[&str] = &[
    "at most",
    "not exceed",
    "never exceed",
    "not go over",
    "stays under",
    "stay under",
    "up to",
    "within",
    "no more than",
    "not more than",
    "max",
    "max.",
    "maximum",
    "maximum of",
    "a maximum of",
    "under",
    "less than",
    "fewer than",
    "below",
    "<",
    "<=",
    "≤",
    "höchstens",
    "maximal",
    "bis zu",
    "innerhalb von",
    "innerhalb",
    "weniger als",
    "au plus",
    "au maximum",
    "jusqu'à",
    "moins de",
    "en moins de",
    "dans les",
    "como máximo",
    "hasta",
    "menos de",
    "en menos de",
    "no más de",
    "dentro de",
    "no máximo",
    "até",
    "em até",
    "menos de",
    "al massimo",
    "fino a",
    "entro",
    "meno di",
    "hooguit",
    "maximaal",
    "binnen",
    "最多",
    "不超过",
    "至多",
    "最大",
    "no later than",
    "not later than",
    "spätestens",
    "a más tardar",
    "au plus tard",
    "o mais tardar",
    "entro e non oltre",
    "uiterlijk",
    "najpóźniej",
    "w ciągu",
    "maksymalnie",
    "najwyżej",
    "högst",
    "senast",
    "inom",
    "en fazla",
    "en geç",
    "最晚",
    "最迟",
    "遅くとも",
];
const AT_LEAST_BEFORE: &[&str] = &[
    "at least",
    "no less than",
    "not less than",
    "minimum",
    "minimum of",
    "a minimum of",
    "min",
    "min.",
    "more than",
    "over",
    "above",
    ">",
    ">=",
    "≥",
    "mindestens",
    "wenigstens",
    "mehr als",
    "au moins",
    "au minimum",
    "plus de",
    "al menos",
    "como mínimo",
    "más de",
    "pelo menos",
    "no mínimo",
    "mais de",
    "almeno",
    "più di",
    "minstens",
    "ten minste",
    "至少",
    "最少",
    "不少于",
    "en az",
    "co najmniej",
    "minst",
    "åtminstone",
    "minimaal",
    "minimo",
    "mínimo",
    "최소",
    "最低",
    "少なくとも",
];
/// Words after an amount's unit that make it a bound.
const AT_MOST_AFTER: &[&str] = &[
    "or less",
    "or fewer",
    "at most",
    "max",
    "maximum",
    "tops",
    "oder weniger",
    "maximum",
    "以内",
    "以下",
    "之内",
    "内",
    "이내",
    "이하",
    "까지",
    "at the latest",
    "or earlier",
    "or sooner",
    "içinde",
    "以内に",
];
const AT_LEAST_AFTER: &[&str] = &[
    "or more",
    "at least",
    "minimum",
    "or longer",
    "oder mehr",
    "ou plus",
    "o más",
    "ou mais",
    "以上",
    "이상",
];

/// Whether words before an amount's bound phrase negate it ("must not go *above* 30", "never
/// *less than* 10"); the phrase's own negation ("not more than", "never exceed") is the
/// phrase's, not theirs.
fn negates_bound(words: &str) -> bool {
    static NEG: std::sync::OnceLock<Option<regex::Regex>> = std::sync::OnceLock::new();
    NEG.get_or_init(|| {
        regex::Regex::new(
            r"(?-u:\b)(?:not|never|no|don't|doesn't|mustn't|shouldn't|can't|cannot|nicht|nie|niemals|keine?n?|ne|jamais|nunca|não|non|mai|niet|nooit|nigdy|inte|aldrig|asla)(?-u:\b)|不|禁止|않|しない|ない",
        )
        .ok()
    })
    .as_ref()
    .is_some_and(|r| r.is_match(words))
}

/// The bound the words around an amount give it: `before` is the text before the number, from
/// where its sentence part starts at `part`, `after` the text after its unit (both lower-cased).
/// Time given "to" do something is a deadline ("15 minutes to acknowledge"). A negation in the
/// part before the bound turns it ("no function above 3008 MB" is at most 3008 MB).
fn bound_of(before: &str, part: usize, after: &str, timed: bool) -> Bound {
    let before = before.trim_end_matches([' ', '\u{a0}', '(']);
    let after = after.trim_start_matches([' ', '\u{a0}', ')']);
    let ends = |w: &&str| {
        before.ends_with(*w)
            && before[..before.len() - w.len()]
                .chars()
                .next_back()
                .is_none_or(|c| !c.is_alphanumeric() || analyze::is_cjk(c))
    };
    let starts = |w: &&str| {
        after.starts_with(*w)
            && after[w.len()..]
                .chars()
                .next()
                .is_none_or(|c| !c.is_alphanumeric() || analyze::is_cjk(c) || analyze::is_hangul(c))
    };
    // The length of the longest bound phrase of `list` that ends `before`.
    let longest = |list: &[&str]| list.iter().filter(|w| ends(w)).map(|w| w.len()).max();
    let (most, least) = (longest(AT_MOST_BEFORE), longest(AT_LEAST_BEFORE));
    let bound = if most.is_some() || AT_MOST_AFTER.iter().any(starts) || (timed && starts(&"to")) {
        Bound::AtMost
    } else if least.is_some() || AT_LEAST_AFTER.iter().any(starts) {
        Bound::AtLeast
    } else {
        return Bound::Exact;
    };
    // The words of the sentence part before the bound phrase.
    let phrase = most.max(least).unwrap_or(0);
    let words = &before[part.min(before.len() - phrase)..before.len() - phrase];
    match bound {
        Bound::AtMost if negates_bound(words) => Bound::AtLeast,
        Bound::AtLeast if negates_bound(words) => Bound::AtMost,
        _ => bound,
    }
}

const NUMBER_WORDS: &[(&str, f64)] = &[
    ("one", 1.0),
    ("two", 2.0),
    ("three", 3.0),
    ("four", 4.0),
    ("five", 5.0),
    ("six", 6.0),
    ("seven", 7.0),
    ("eight", 8.0),
    ("nine", 9.0),
    ("ten", 10.0),
    ("twelve", 12.0),
    ("fifteen", 15.0),
    ("twenty", 20.0),
    ("thirty", 30.0),
    ("vier", 4.0),
    ("fünf", 5.0),
    ("sechs", 6.0),
    ("sieben", 7.0),
    ("zehn", 10.0),
    ("zwölf", 12.0),
    ("quatre", 4.0),
    ("cinq", 5.0),
    ("sept", 7.0),
    ("dix", 10.0),
    ("cuatro", 4.0),
    ("cinco", 5.0),
    ("seis", 6.0),
    ("diez", 10.0),
    ("quatro", 4.0),
    ("dez", 10.0),
    ("due", 2.0),
    ("tre", 3.0),
    ("cinque", 5.0),
    ("dieci", 10.0),
    ("twee", 2.0),
    ("drie", 3.0),
    ("vijf", 5.0),
    ("tien", 10.0),
    ("två", 2.0),
    ("fem", 5.0),
    ("tio", 10.0),
    ("dwa", 2.0),
    ("trzy", 3.0),
    ("pięć", 5.0),
    ("iki", 2.0),
    ("üç", 3.0),
    ("beş", 5.0),
    ("single", 1.0),
    ("once", 1.0),
    ("twice", 2.0),
    ("ein", 1.0),
    ("eine", 1.0),
    ("einen", 1.0),
    ("zwei", 2.0),
    ("drei", 3.0),
    ("un", 1.0),
    ("une", 1.0),
    ("deux", 2.0),
    ("trois", 3.0),
    ("uno", 1.0),
    ("una", 1.0),
    ("dos", 2.0),
    ("tres", 3.0),
    ("um", 1.0),
    ("uma", 1.0),
    ("dois", 2.0),
    ("duas", 2.0),
];

/// Units that count time, so "6 months" and "3 月" compare.
fn unit_key(word: &str) -> Option<String> {
    let w = analyze::stem(word);
    let w = match w.as_str() {
        "s" | "sec" | "secs" | "second" | "秒" | "초" | "sekund" | "seconde" | "segundo"
        | "secondi" | "seconden" | "saniy" => "second",
        "minut" | "min" | "mins" | "分" | "分钟" | "분" | "minuto" | "minuten" | "minuter"
        | "dakika" => "minute",
        "hour" | "hr" | "hrs" | "h" | "時間" | "小时" | "시간" | "stund" | "stunden" | "heur"
        | "hora" | "or" | "uur" | "timm" | "timmar" | "godzin" | "saat" => "hour",
        "day" | "日" | "天" | "일" | "tag" | "tagen" | "jour" | "día" | "dia" | "giorni"
        | "giorno" | "dag" | "dagen" | "dagar" | "dni" | "dzień" | "gün" => "day",
        "week" | "週" | "周" | "주" | "woch" | "wochen" | "semain" | "semana" | "settiman"
        | "weken" | "veckor" | "vecka" | "tygodni" | "hafta" => "week",
        "month" | "个月" | "ヶ月" | "か月" | "개월" | "monat" | "monaten" | "moi" | "mes"
        | "mese" | "mesi" | "maand" | "maanden" | "månad" | "månader" | "miesięcy" => "month",
        "year" | "年" | "년" | "jahr" | "jahren" | "an" | "ann" | "anné" | "año" | "ano"
        | "anni" | "anno" | "jaar" | "jaren" | "år" | "lat" | "rok" | "yıl" => "year",
        "%" | "percent" | "prozent" | "pourcent" | "por" => "percent",
        "column" | "char" | "character" | "col" => "columns",
        "approval" | "approv" | "reviewer" | "review" => "approvals",
        _ => return None,
    };
    Some(w.to_owned())
}

/// Whether a term is a unit of time or size.
fn measures(key: &str) -> bool {
    matches!(
        key,
        "second"
            | "minut"
            | "hour"
            | "day"
            | "week"
            | "month"
            | "year"
            | "kb"
            | "mb"
            | "gb"
            | "tb"
            | "kib"
            | "mib"
            | "gib"
            | "ms"
            | "byte"
    )
}

/// Whether a unit key counts time.
fn is_time(unit: &str) -> bool {
    matches!(
        unit,
        "second" | "minute" | "hour" | "day" | "week" | "month" | "year"
    )
}

/// Amounts in a directive, with the unit they count (time units, percentages, columns,
/// approvals: the quantities rules set). Read once per memory, into [`Analysis::quantities`].
pub(crate) fn quantities(x: &Analysis) -> Vec<Quantity> {
    let lower = analyze::lower_same_len(&x.text);
    let mut out = Vec::new();
    let bytes: Vec<(usize, char)> = lower.char_indices().collect();
    let mut i = 0;
    while i < bytes.len() && out.len() < 16 {
        let (start, c) = bytes[i];
        let mut value = None;
        let mut j = i;
        if c.is_ascii_digit()
            && (i == 0
                || !(bytes[i - 1].1.is_alphanumeric()
                    || matches!(bytes[i - 1].1, '-' | '_' | '.' | '/')))
        {
            while j < bytes.len() && (bytes[j].1.is_ascii_digit() || bytes[j].1 == '.') {
                j += 1;
            }
            let end = bytes.get(j).map_or(lower.len(), |b| b.0);
            value = lower[start..end].trim_end_matches('.').parse::<f64>().ok();
        } else if c.is_alphabetic() && (i == 0 || !bytes[i - 1].1.is_alphanumeric()) {
            while j < bytes.len() && bytes[j].1.is_alphabetic() && !analyze::is_cjk(bytes[j].1) {
                j += 1;
            }
            let end = bytes.get(j).map_or(lower.len(), |b| b.0);
            value = NUMBER_WORDS
                .iter()
                .find(|(w, _)| *w == &lower[start..end])
                .map(|&(_, v)| v);
        }
        let Some(v) = value else {
            i += 1;
            continue;
        };
        // "max 100. No offsets": a number that ends a sentence counts nothing.
        if lower[start..bytes.get(j).map_or(lower.len(), |b| b.0)].ends_with('.') {
            i = j.max(i + 1);
            continue;
        }
        // The unit: the next word (skipping a space or hyphen), or the CJK characters after it.
        let mut k = j;
        while k < bytes.len() && matches!(bytes[k].1, ' ' | '-' | '\u{a0}') {
            k += 1;
        }
        let us = bytes.get(k).map_or(lower.len(), |b| b.0);
        let mut ue = k;
        if bytes.get(k).is_some_and(|b| b.1 == '%') {
            ue = k + 1;
        } else if bytes
            .get(k)
            .is_some_and(|b| analyze::is_cjk(b.1) || b.1 == 'ヶ' || b.1 == 'か')
        {
            ue = (k + 2).min(bytes.len());
        } else {
            while ue < bytes.len()
                && bytes[ue].1.is_alphabetic()
                && !analyze::is_cjk(bytes[ue].1)
                && !analyze::is_hangul(bytes[ue].1)
            {
                ue += 1;
            }
        }
        let uend = bytes.get(ue).map_or(lower.len(), |b| b.0);
        let unit_raw = &lower[us..uend];
        // "3月", "2時間": the unit is the first CJK character or two.
        let known = unit_key(unit_raw).or_else(|| {
            unit_raw
                .chars()
                .next()
                .filter(|&c| analyze::is_cjk(c) || analyze::is_hangul(c))
                .and_then(|c| unit_key(&c.to_string()))
        });
        // Any other counted word is a unit of its own ("100 MB", "3 retries", "2 replicas"),
        // compared only between sentences about one thing.
        let counted = known.is_none()
            && c.is_ascii_digit()
            && unit_raw.chars().count() >= 2
            && unit_raw
                .chars()
                .all(|c| c.is_alphabetic() && !analyze::is_cjk(c))
            && !NUMBER_WORDS.iter().any(|(w, _)| *w == unit_raw)
            && !lexicon::Lexicon::get().is_stop(unit_raw)
            && !matches!(unit_raw, "more" | "less" | "times" | "time" | "of" | "per");
        // A setting: "`maxReceiveCount: 5`", "line-length = 120", "minSdk 24": the name is the
        // unit.
        let setting = || {
            let before = x.text[..start].trim_end_matches([' ', ':', '=', '`', '"', '\'']);
            let name: String = before
                .chars()
                .rev()
                .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            let named = name.chars().count() >= 3
                && name.chars().next().is_some_and(char::is_alphabetic)
                && (name.contains(['_', '-', '.'])
                    || name.chars().any(char::is_lowercase)
                        && name.chars().skip(1).any(char::is_uppercase));
            (c.is_ascii_digit() && named).then(|| format!("={}", name.to_lowercase()))
        };
        let unit = known
            .or_else(|| counted.then(|| format!("#{}", analyze::stem(unit_raw))))
            .or_else(setting);
        if let Some(unit) = unit {
            let timed = is_time(&unit);
            let part = clause_around(&x.text, start, uend).0;
            let bound = bound_of(&lower[..start], part, &lower[uend..], timed);
            out.push(Quantity {
                value: v,
                unit,
                snip: clause_around(&x.text, start, uend),
                bound,
                clause: x.clause_at(start).unwrap_or(usize::MAX),
            });
        }
        i = j.max(i + 1);
    }
    out
}

/// An amount in a unit it compares in: seconds to weeks in seconds (as "time"), months and years
/// in months (as "months"), so "24 hours" and "15 minutes" compare; "30 days" and "a month" do
/// not, a month being no fixed number of days.
fn measured(q: &Quantity) -> Quantity {
    let (unit, factor) = match q.unit.as_str() {
        "second" => ("time", 1.0),
        "minute" => ("time", 60.0),
        "hour" => ("time", 3600.0),
        "day" => ("time", 86_400.0),
        "week" => ("time", 604_800.0),
        "month" => ("months", 1.0),
        "year" => ("months", 12.0),
        _ => return q.clone(),
    };
    Quantity {
        value: q.value * factor,
        unit: unit.to_owned(),
        ..q.clone()
    }
}

/// The sentence part around a byte range, to quote.
fn clause_around(text: &str, s: usize, e: usize) -> (usize, usize) {
    let stops = ['.', ';', '\n', '。', ',', '，', '、', ':', '：'];
    let a = text[..s]
        .char_indices()
        .rev()
        .find(|(_, c)| stops.contains(c))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let b = text[e..]
        .find(|c: char| stops.contains(&c))
        .map_or(text.len(), |i| e + i);
    (a, b)
}

/// Two directives that share a strong subject and each set one amount of the same unit, in
/// sentences about the same thing and in compatible scopes, where the amounts cannot both hold:
/// "keep old versions at least 6 months" vs "switch them off after 3 months", "two approvals" vs
/// "one approval". Bounds in the same direction agree ("within 5 minutes" vs "at most 15").
fn quantity_opposition(
    a: &Analysis,
    b: &Analysis,
    shared: u32,
    alike: f32,
) -> Option<(Quantity, Quantity)> {
    // The subject: at least a tenth of the two directives' weight in common.
    if 20 * shared < (a.weight() + b.weight()) || shared < analyze::W_WORD + analyze::W_GENERIC {
        return None;
    }
    let (qa, qb) = (&a.quantities, &b.quantities);
    // Each amount measured in a unit both sides can be compared in.
    let (ma, mb): (Vec<Quantity>, Vec<Quantity>) = (
        qa.iter().map(measured).collect(),
        qb.iter().map(measured).collect(),
    );
    // Each side states one amount of the unit (the description may repeat it).
    let one_value = |q: &[Quantity], unit: &str| -> Option<Quantity> {
        let mut of_unit = q.iter().filter(|z| z.unit == unit);
        let first = of_unit.next()?;
        let mut one = first.clone();
        for z in of_unit {
            if (z.value - first.value).abs() >= f64::EPSILON {
                return None;
            }
            // "at most 30 days … after 30 days": the bound is what the amount says.
            if one.bound == Bound::Exact {
                one.bound = z.bound;
            }
        }
        Some(one)
    };
    for x in &ma {
        let unit = x.unit.as_str();
        let (Some(x), Some(y)) = (one_value(&ma, unit), one_value(&mb, unit)) else {
            continue;
        };
        // Stated in one unit on both sides ("15 minutes" vs "60 minutes"), not converted ("24
        // hours" vs "15 minutes").
        let mut raw = qa
            .iter()
            .zip(&ma)
            .chain(qb.iter().zip(&mb))
            .filter(|(_, m)| m.unit == unit)
            .map(|(q, _)| q.unit.as_str());
        let first_raw = raw.next();
        let one_unit = raw.all(|u| Some(u) == first_raw);
        if x.bound.meets(x.value, y.bound, y.value) {
            continue;
        }
        let scope = |z: &Analysis, q: &Quantity| z.clauses.get(q.clause).map(|c| c.1);
        if let (Some(sx), Some(sy)) = (scope(a, &x), scope(b, &y))
            && !sx.compatible(&sy)
        {
            continue;
        }
        // The sentences are about one thing: they share two words besides a unit of time (which
        // says nothing of what is timed), or one and the memories are worded alike ("120
        // columns" of code and "72 characters" of a commit subject are not); amounts in different
        // units of time must share the two words (a wait of days and a reply within an hour are
        // more often two things timed). Approvals are a subject of their own, and so is a named
        // setting (`maxReceiveCount: 5`).
        if x.unit != "approvals" && !x.unit.starts_with('=') {
            let strict = sentence_overlap(a, x.clause, b, y.clause, true, analyze::W_WORD);
            let loose = sentence_overlap(a, x.clause, b, y.clause, true, 1);
            if strict < 2 * analyze::W_WORD
                && (!one_unit || loose < analyze::W_WORD || alike < SIMILAR_RELATED)
            {
                continue;
            }
        }
        return Some((x, y));
    }
    None
}

/// The directories a directive names (`app/api/`, `jobs/sql/*.sql` → `jobs/sql`,
/// `hotfix/2.14.1` → `hotfix`), as path components. Read once per memory, into
/// [`Analysis::places`].
pub(crate) fn places(x: &Analysis) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    // Named places: "the `batch` namespace", "cluster `orders`" → namespace/batch.
    static NAMED: std::sync::OnceLock<Option<regex::Regex>> = std::sync::OnceLock::new();
    let named = NAMED.get_or_init(|| {
        let nouns = "namespace|cluster|bucket|queue|topic|schema|keyspace|account|region|tenant|workspace|environment|project";
        regex::Regex::new(&format!(
            r"(?i)`([^`\s]{{1,40}})`\s+({nouns})s?\b|\b({nouns})s?\s+`([^`\s]{{1,40}})`"
        ))
        .ok()
    });
    if let Some(re) = named {
        for c in re.captures_iter(&x.text).take(16) {
            let (name, noun) = match (c.get(1), c.get(2), c.get(3), c.get(4)) {
                (Some(n), Some(k), _, _) | (_, _, Some(k), Some(n)) => (n.as_str(), k.as_str()),
                _ => continue,
            };
            let place = vec![noun.to_owned(), name.to_owned()];
            if !out.contains(&place) {
                out.push(place);
            }
        }
    }
    for t in &x.terms {
        let k = t.key.trim_matches('`');
        if !k.contains('/') || k.contains("://") || k.starts_with('/') && k.len() < 3 {
            continue;
        }
        let mut parts: Vec<&str> = k.split('/').filter(|p| !p.is_empty()).collect();
        // A final component that is a file, a glob or a placeholder is not a directory.
        if !k.ends_with('/')
            && parts.last().is_some_and(|l| {
                l.contains(['.', '*', '<', '{']) || l.chars().any(|c| c.is_ascii_digit())
            })
        {
            parts.pop();
        }
        if parts.iter().any(|p| p.contains(['*', '<', '{'])) {
            parts.truncate(
                parts
                    .iter()
                    .position(|p| p.contains(['*', '<', '{']))
                    .unwrap_or(0),
            );
        }
        let parts: Vec<String> = parts.into_iter().map(str::to_owned).collect();
        if !parts.is_empty() && !out.contains(&parts) {
            out.push(parts);
        }
    }
    out
}

/// Two directives that name directories, none of one inside (or above) one of the other, apply
/// to different places: the first directory of each.
fn separate_places(a: &Analysis, b: &Analysis) -> Option<(String, String)> {
    let (pa, pb) = (&a.places, &b.places);
    if pa.is_empty() || pb.is_empty() {
        return None;
    }
    let nested = |x: &[String], y: &[String]| x.iter().zip(y).all(|(p, q)| p == q);
    if pa.iter().any(|x| pb.iter().any(|y| nested(x, y))) {
        return None;
    }
    Some((
        format!("{}/", pa[0].join("/")),
        format!("{}/", pb[0].join("/")),
    ))
}

/// Weight of the shared subject, the shared concepts and the shared terms (indices into
/// `a.terms`, heaviest first).
fn shared_subject(a: &Analysis, b: &Analysis) -> (u32, Vec<usize>, Vec<usize>) {
    let mut weight = 0;
    let mut terms = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.terms.len() && j < b.terms.len() {
        match a.terms[i].key.cmp(&b.terms[j].key) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                weight += a.terms[i].weight.min(b.terms[j].weight);
                terms.push(i);
                i += 1;
                j += 1;
            }
        }
    }
    let concepts: Vec<usize> = a
        .concepts
        .iter()
        .copied()
        .filter(|c| b.concepts.binary_search(c).is_ok())
        .collect();
    weight += W_CONCEPT * u32::try_from(concepts.len()).unwrap_or(u32::MAX / W_CONCEPT);
    // A phrase both use ("PR title", "type hints") says more than its words apart.
    let phrases = a
        .phrases
        .iter()
        .filter(|p| b.phrases.binary_search(p).is_ok())
        .count()
        .min(2);
    if weight > 0 {
        weight += analyze::W_WORD * u32::try_from(phrases).unwrap_or(2);
    }
    terms.sort_by(|&x, &y| {
        a.terms[y]
            .weight
            .cmp(&a.terms[x].weight)
            .then(a.terms[x].pos.cmp(&a.terms[y].pos))
    });
    (weight, concepts, terms)
}

/// Whether `x` uses or allows `choice` of `concept` in a scope compatible with `scope`.
fn accepts(x: &[ChoiceStance], concept: usize, choice: usize, scope: &Scope) -> bool {
    x.iter().any(|s| {
        s.concept == concept && s.choice == choice && s.pol.accepts() && s.scope.compatible(scope)
    })
}

/// The first opposition between lexicon choices in compatible scopes, and the first across
/// different scopes.
fn choice_opposition(a: &Analysis, b: &Analysis) -> (Option<Opposition>, Option<Opposition>) {
    let (mut same, mut apart): (Option<Opposition>, Option<Opposition>) = (None, None);
    for sa in &a.choice_stances {
        for sb in b.choice_stances.iter().filter(|s| s.concept == sa.concept) {
            let opposed = if sa.choice == sb.choice {
                sa.pol.opposes(sb.pol)
            } else {
                concept_exclusive(sa.concept)
                    && prefers_either(sa, sb)
                    && !accepts(&b.choice_stances, sa.concept, sa.choice, &sa.scope)
                    && !accepts(&a.choice_stances, sb.concept, sb.choice, &sb.scope)
            };
            if !opposed {
                continue;
            }
            // Two different picks explain the conflict better than "X" vs "not X".
            let weight = W_CONCEPT + u32::from(sa.choice != sb.choice);
            // A pick named in passing as what the rule takes for granted ("they become the squash
            // commit subject") is that rule's pick as much as a stated one, against a rule whose
            // headline makes the other pick.
            let presumes = |x: &Analysis,
                            s: &analyze::ChoiceStance,
                            y: &Analysis,
                            t: &analyze::ChoiceStance| {
                presupposed(x, s) && y.in_headline(t.snip.0)
            };
            let anchored = sentence_overlap(a, sa.clause, b, sb.clause, false, analyze::W_WORD)
                .saturating_sub(part_overlap(a, sa.clause, b, sb.clause))
                >= analyze::W_WORD
                || presumes(a, sa, b, sb)
                || presumes(b, sb, a, sa);
            let o = Opposition {
                anchored,
                subject: concept_label(sa.concept).to_owned(),
                concept: sa.concept,
                two_picks: sa.choice != sb.choice,
                scope_a: sa.scope,
                scope_b: sb.scope,
                snip_a: sa.snip,
                snip_b: sb.snip,
                weight,
            };
            let slot = if sa.scope.compatible(&sb.scope) {
                &mut same
            } else {
                &mut apart
            };
            // An opposition whose sentences are about one thing beats a heavier one whose are not.
            if slot
                .as_ref()
                .is_none_or(|x| (x.anchored, x.weight) < (o.anchored, o.weight))
            {
                *slot = Some(o);
            }
        }
    }
    (same, apart)
}

/// Whether a pick is named as a thing the rule takes for granted: "the squash commit subject",
/// "our pnpm lockfile" (its name after "the" or "our", qualifying the noun that follows).
fn presupposed(x: &Analysis, s: &analyze::ChoiceStance) -> bool {
    let Some(label) = lexicon::CONCEPTS
        .get(s.concept)
        .and_then(|c| c.choices.get(s.choice))
        .map(|c| c.label.to_lowercase())
    else {
        return false;
    };
    let snip = x.text[s.snip.0..s.snip.1].to_lowercase();
    ["the ", "our "].iter().any(|det| {
        snip.match_indices(&format!("{det}{label} "))
            .any(|(at, m)| {
                (at == 0 || snip[..at].ends_with(' '))
                    && snip[at + m.len()..].starts_with(|c: char| c.is_alphabetic())
            })
    })
}

/// Two sentences about one thing (they share two words), in compatible scopes, where one says
/// one word of an antonym pair and the other the other word (and neither says both): the pair
/// and the two sentences.
fn antonym_opposition(a: &Analysis, b: &Analysis) -> Option<(usize, usize, usize)> {
    for (ca, &sa) in a.clause_sides.iter().enumerate() {
        if sa == 0 {
            continue;
        }
        for (cb, &sb) in b.clause_sides.iter().enumerate() {
            if sb == 0 {
                continue;
            }
            for k in 0..32 {
                let (x, y) = (1u64 << (2 * k), 1u64 << (2 * k + 1));
                let (ax, ay, bx, by) = (sa & x != 0, sa & y != 0, sb & x != 0, sb & y != 0);
                if !((ax && !ay && by && !bx) || (ay && !ax && bx && !by)) {
                    continue;
                }
                let scopes = a
                    .clauses
                    .get(ca)
                    .map(|c| c.1)
                    .zip(b.clauses.get(cb).map(|c| c.1));
                if scopes.is_some_and(|(p, q)| !p.compatible(&q)) {
                    continue;
                }
                if sentence_overlap(a, ca, b, cb, true, analyze::W_WORD) >= 2 * analyze::W_WORD {
                    return Some((k, ca, cb));
                }
            }
        }
    }
    None
}

/// The weight of the shared words of two sentences that are only parts of a compound name in
/// one of them ("snake" of `SCREAMING_SNAKE_CASE` and of `snake_case`): they say the two name
/// alike, not that they are about one thing.
fn part_overlap(a: &Analysis, ca: usize, b: &Analysis, cb: usize) -> u32 {
    let (Some(ta), Some(tb)) = (a.clause_terms.get(ca), b.clause_terms.get(cb)) else {
        return 0;
    };
    let compound = |x: &Analysis, ts: &[usize], key: &str| {
        ts.iter().any(|&t| {
            let k = &x.terms[t].key;
            k.len() > key.len() && k.contains(['_', '-']) && k.contains(key)
        })
    };
    let mut w = 0;
    for &i in ta {
        let t = &a.terms[i];
        if t.cjk || t.weight < analyze::W_WORD {
            continue;
        }
        if let Some(&j) = tb.iter().find(|&&j| b.terms[j].key == t.key)
            && (compound(a, ta, &t.key) || compound(b, tb, &t.key))
        {
            w += t.weight.min(b.terms[j].weight);
        }
    }
    w
}

/// The weight of the terms two sentences share that weigh at least `min_weight` in both
/// (CJK pairs always count), without, with `no_time`, units of time: "hours" says nothing of
/// what is timed.
fn sentence_overlap(
    a: &Analysis,
    ca: usize,
    b: &Analysis,
    cb: usize,
    no_time: bool,
    min_weight: u32,
) -> u32 {
    let (Some(ta), Some(tb)) = (a.clause_terms.get(ca), b.clause_terms.get(cb)) else {
        return 0;
    };
    let mut w = 0;
    for &i in ta {
        let t = &a.terms[i];
        if t.weight < min_weight && !t.cjk {
            continue;
        }
        if no_time && unit_key(&t.key).is_some_and(|u| is_time(&u)) {
            continue;
        }
        if let Some(&j) = tb.iter().find(|&&j| b.terms[j].key == t.key) {
            let m = t.weight.min(b.terms[j].weight);
            if m >= min_weight || t.cjk && b.terms[j].cjk {
                w += m;
            }
        }
    }
    w
}

/// One side uses its choice and the other uses or allows a different one.
fn prefers_either(sa: &ChoiceStance, sb: &ChoiceStance) -> bool {
    use lexicon::Pol::{Permit, Pos};
    matches!((sa.pol, sb.pol), (Pos, Pos) | (Pos, Permit) | (Permit, Pos))
}

/// Opposed terms, summed per pair of sentences: the heaviest sum in compatible scopes and the
/// heaviest across different scopes, if they reach [`OPPOSED_MIN`].
fn term_opposition(
    a: &Analysis,
    b: &Analysis,
    opposed_min: u32,
) -> (Option<Opposition>, Option<Opposition>) {
    struct Acc {
        clauses: (usize, usize),
        compatible: bool,
        weight: u32,
        terms: Vec<usize>,
        best: u32,
        first: (usize, usize),
        retires: bool,
    }
    let retires = |x: &Analysis, s: &TermStance| {
        s.pol == lexicon::Pol::Neg && x.clause_retires.get(s.clause).copied().unwrap_or(false)
    };
    // What was retired is a thing with a name: a product, an identifier, a capitalised term.
    let named = |x: &analyze::Term, y: &analyze::Term| {
        x.weight.max(y.weight) >= analyze::W_NAME || capitalised(a, x) || capitalised(b, y)
    };
    let mut accs: Vec<Acc> = Vec::new();
    let group = |st: &[TermStance], from: usize| -> usize {
        let t = st[from].term;
        st[from..].iter().take_while(|s| s.term == t).count()
    };
    let (mut i, mut j) = (0, 0);
    while i < a.term_stances.len() && j < b.term_stances.len() {
        let ta = &a.terms[a.term_stances[i].term];
        let tb = &b.terms[b.term_stances[j].term];
        match ta.key.cmp(&tb.key) {
            std::cmp::Ordering::Less => i += group(&a.term_stances, i),
            std::cmp::Ordering::Greater => j += group(&b.term_stances, j),
            std::cmp::Ordering::Equal => {
                let (na, nb) = (group(&a.term_stances, i), group(&b.term_stances, j));
                let w = ta.weight.min(tb.weight);
                let term = a.term_stances[i].term;
                let mut seen: Vec<((usize, usize), bool)> = Vec::new();
                for (ia, sa) in a.term_stances[i..i + na].iter().enumerate() {
                    for (ib, sb) in b.term_stances[j..j + nb].iter().enumerate() {
                        // A unit of time or size is not what a rule is about ("more than 1
                        // MB" vs "must not exceed 80 MB").
                        if !sa.pol.opposes(sb.pol) || measures(&ta.key) {
                            continue;
                        }
                        let key = ((sa.clause, sb.clause), sa.scope.compatible(&sb.scope));
                        if seen.contains(&key) {
                            continue;
                        }
                        seen.push(key);
                        let pos = accs
                            .iter()
                            .position(|x| (x.clauses, x.compatible) == key)
                            .unwrap_or_else(|| {
                                accs.push(Acc {
                                    clauses: key.0,
                                    compatible: key.1,
                                    weight: 0,
                                    terms: Vec::new(),
                                    best: 0,
                                    first: (i + ia, j + ib),
                                    retires: false,
                                });
                                accs.len() - 1
                            });
                        let acc = &mut accs[pos];
                        acc.retires |= (retires(a, sa) || retires(b, sb)) && named(ta, tb);
                        acc.weight += w;
                        acc.terms.push(term);
                        if w > acc.best {
                            acc.best = w;
                            acc.first = (i + ia, j + ib);
                        }
                    }
                }
                i += na;
                j += nb;
            }
        }
    }
    let pick = |compatible: bool| -> Option<Opposition> {
        let acc = accs
            .iter()
            .filter(|x| {
                x.compatible == compatible
                    && x.weight
                        >= if x.retires {
                            analyze::W_WORD
                        } else {
                            opposed_min
                        }
            })
            .fold(None::<&Acc>, |best, x| match best {
                Some(b) if b.weight >= x.weight => Some(b),
                _ => Some(x),
            })?;
        let (sa, sb) = (&a.term_stances[acc.first.0], &b.term_stances[acc.first.1]);
        let mut terms = acc.terms.clone();
        terms.sort_by(|&x, &y| {
            a.terms[y]
                .weight
                .cmp(&a.terms[x].weight)
                .then(a.terms[x].pos.cmp(&a.terms[y].pos))
        });
        Some(Opposition {
            subject: term_names(a, &terms, 3).join(", "),
            concept: usize::MAX,
            two_picks: false,
            scope_a: sa.scope,
            scope_b: sb.scope,
            snip_a: sa.snip,
            snip_b: sb.snip,
            weight: acc.weight,
            anchored: true,
        })
    };
    (pick(true), pick(false))
}

/// Whether a term is first written with a capital where a sentence does not start ("uses
/// Datadog", not "Screenshots live in the repo").
fn capitalised(x: &Analysis, t: &analyze::Term) -> bool {
    let starts_sentence = x.text[..t.pos.min(x.text.len())]
        .trim_end_matches([' ', '`', '"', '\'', '(', '«', '“'])
        .chars()
        .next_back()
        .is_none_or(|c| matches!(c, '.' | '!' | '?' | ':' | ';' | '\n'));
    !starts_sentence && t.surface.chars().next().is_some_and(char::is_uppercase)
}

/// Display names of terms (heaviest first): CJK pairs that are adjacent in `a`'s text are
/// joined back into one word; identifiers are quoted as code.
fn term_names(a: &Analysis, terms: &[usize], max: usize) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut cjk: Vec<&analyze::Term> = terms
        .iter()
        .filter_map(|&t| a.terms.get(t))
        .filter(|t| t.cjk)
        .collect();
    cjk.sort_by_key(|t| t.pos);
    let mut runs: Vec<(usize, String)> = Vec::new();
    for t in cjk {
        if let Some((end, run)) = runs.last_mut()
            && t.pos < *end
        {
            let overlap = *end - t.pos;
            run.push_str(t.surface.get(overlap..).unwrap_or(""));
            *end = t.pos + t.surface.len();
            continue;
        }
        runs.push((t.pos + t.surface.len(), t.surface.clone()));
    }
    let mut cjk_done = false;
    for &t in terms {
        let Some(term) = a.terms.get(t) else { continue };
        if term.cjk {
            if !cjk_done {
                cjk_done = true;
                let mut r: Vec<String> = runs.iter().map(|(_, s)| s.clone()).collect();
                r.sort_by_key(|s| std::cmp::Reverse(s.chars().count()));
                names.extend(r.into_iter().take(max));
            }
            continue;
        }
        let name = if term.weight >= analyze::W_IDENT {
            format!("`{}`", term.surface.trim_matches('`'))
        } else {
            term.surface.to_lowercase()
        };
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names.truncate(max);
    names
}

/// " (integration tests)" for the scope values both stances name, or "".
fn scope_note(s: &Scope) -> String {
    let mut labels = Vec::new();
    for d in 0..lexicon::N_SCOPE_DIMS {
        if d == DIM_AREA && s.0[DIM_TEST_KIND] != 0 {
            continue;
        }
        labels.extend(s.labels(d));
    }
    if labels.is_empty() {
        String::new()
    } else {
        format!(" ({})", labels.join(", "))
    }
}

/// A directive excerpt on one line, with no double quotes of its own.
fn quote(text: &str, (s, e): (usize, usize)) -> String {
    let raw = text.get(s..e).unwrap_or("");
    let mut out = String::with_capacity(raw.len());
    for c in raw.chars() {
        match c {
            '"' => out.push('\''),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    let out = out.trim();
    if out.is_empty() {
        "…".to_owned()
    } else {
        out.to_owned()
    }
}

#[doc(hidden)]
/// The choice names of a memory's directive, for debugging the lexicon (`memsync-feedback-eval
/// --explain`).
pub fn explain(text: &str) -> String {
    let Some(x) = analyze(text) else {
        return "not a feedback memory".to_owned();
    };
    let mut out = format!(
        "directive: {:?}\nlexicon patterns that failed to compile: {}\n",
        x.text,
        lexicon::Lexicon::get().broken
    );
    for s in &x.choice_stances {
        out.push_str(&format!(
            "choice {} = {} {:?} scope {:?} \"{}\"\n",
            concept_label(s.concept),
            choice_label(s.concept, s.choice),
            s.pol,
            s.scope.0,
            quote(&x.text, s.snip)
        ));
    }
    for s in &x.term_stances {
        out.push_str(&format!(
            "term {} {:?} clause {} scope {:?}\n",
            x.terms[s.term].key, s.pol, s.clause, s.scope.0
        ));
    }
    let neutral: Vec<&str> = x
        .terms
        .iter()
        .enumerate()
        .filter(|(i, _)| !x.term_stances.iter().any(|s| s.term == *i))
        .map(|(_, t)| t.key.as_str())
        .collect();
    out.push_str(&format!("topic terms: {neutral:?}\n"));
    for (i, c) in x.clause_terms.iter().enumerate() {
        let keys: Vec<String> = c
            .iter()
            .map(|&t| format!("{}:{}", x.terms[t].key, x.terms[t].weight))
            .collect();
        out.push_str(&format!("sentence {i}: {}\n", keys.join(" ")));
    }
    for (i, bits) in x.clause_sides.iter().enumerate() {
        if *bits != 0 {
            out.push_str(&format!("sentence {i} antonym sides {bits:#x}\n"));
        }
    }
    for q in &x.quantities {
        out.push_str(&format!(
            "amount {} {} {:?} in sentence {}\n",
            q.value, q.unit, q.bound, q.clause
        ));
    }
    out
}

#[doc(hidden)]
/// The subject terms of a memory's directive with their weights (for building and checking the
/// common-word list: `memsync-feedback-eval --terms`).
pub fn terms(text: &str) -> Vec<(String, u32)> {
    analyze(text)
        .map(|x| x.terms.into_iter().map(|t| (t.key, t.weight)).collect())
        .unwrap_or_default()
}

#[doc(hidden)]
/// Every pair of `a` × `b` with its verdict and the figures that rank it ([`rank_features`]),
/// for fitting the ranking (`memsync-feedback-eval --fit-ranking`).
pub fn pair_features(a: &[&str], b: &[&str]) -> Vec<PairFigures> {
    let mut out = Vec::new();
    each_pair(a, b, |i, j, judged| {
        out.push(PairFigures {
            a: i,
            b: j,
            verdict: judged.verdict,
            x: judged.x,
            words_silent: judged.words_silent,
        });
    });
    out
}

#[doc(hidden)]
/// One pair's verdict (kind, reason, likelihood) and figures, from [`pair_features`].
pub struct PairFigures {
    pub a: usize,
    pub b: usize,
    pub verdict: Option<(Kind, String, u32)>,
    pub x: [f32; RANK_FEATURES],
    /// Its rules left it without a verdict and to the model that relates such pairs.
    pub words_silent: bool,
}

#[doc(hidden)]
/// Subject figures of a pair, for tuning (`memsync-feedback-eval --stats`): the shared weight,
/// each side's total term weight, and the detector's verdict.
pub fn pair_stats(a: &str, b: &str) -> Option<(u32, u32, u32, Option<Kind>)> {
    let (xa, xb) = (analyze(a)?, analyze(b)?);
    let (w, _, _) = shared_subject(&xa, &xb);
    let total = |x: &Analysis| x.terms.iter().map(|t| t.weight).sum::<u32>();
    Some((
        w,
        total(&xa),
        total(&xb),
        judge(&xa, &xb).map(|(k, _, _)| k),
    ))
}
