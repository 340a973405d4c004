//! The labelled feedback evaluation sets of `tests/feedback-eval/` (`dev/` to `dev12/` to tune
//! on, `heldout12/` to score once), and their scoring.
//!
//! Each set is a directory of topic files (see the set's README): private and team feedback
//! memories about one subject, every private × team combination within the topic labelled
//! `contradiction`, `compatible`, `different_scope` or `unrelated`. Scoring runs
//! [`feedback::compare`] over the full private × team cross product of the whole set, so a
//! finding between memories of two different topics counts: those pairs are `unrelated`.
//!
//! Figures (what issue 16 targets):
//! - contradiction precision and recall: a `contradiction` finding against the label;
//! - reach: the share of labelled contradictions that get any finding (`contradiction` or
//!   `related`): what reaches the session, where the agent reads both memories;
//! - same-subject recall: the share of `contradiction`, `compatible` and `different_scope`
//!   pairs with any finding;
//! - related findings per 100 unrelated pairs (in-topic traps and cross-topic pairs).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use memsync_core::feedback::{self, Finding, Kind, Note};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct TopicFile {
    topic: String,
    lang: String,
    private: Vec<Mem>,
    team: Vec<Mem>,
    labels: Vec<LabelRow>,
}

#[derive(Debug, Deserialize)]
struct Mem {
    id: String,
    name: String,
    description: String,
    body: String,
}

#[derive(Debug, Deserialize)]
struct LabelRow {
    private: String,
    team: String,
    label: String,
    reason: String,
}

/// A labelled label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Label {
    Contradiction,
    Compatible,
    DifferentScope,
    Unrelated,
}

impl Label {
    fn parse(s: &str) -> Option<Label> {
        Some(match s {
            "contradiction" => Label::Contradiction,
            "compatible" => Label::Compatible,
            "different_scope" => Label::DifferentScope,
            "unrelated" => Label::Unrelated,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Label::Contradiction => "contradiction",
            Label::Compatible => "compatible",
            Label::DifferentScope => "different_scope",
            Label::Unrelated => "unrelated",
        }
    }

    pub fn same_subject(self) -> bool {
        self != Label::Unrelated
    }
}

/// One memory of a set, rendered as a file.
#[derive(Debug, Clone)]
pub struct Memory {
    /// `<topic file stem>/<id>.md`.
    pub path: String,
    pub text: String,
    pub lang: String,
}

/// A loaded set.
pub struct EvalSet {
    pub name: String,
    pub private: Vec<Memory>,
    pub team: Vec<Memory>,
    /// In-topic labels, by (private path, team path), with the labeller's reason.
    pub labels: HashMap<(String, String), (Label, String)>,
    pub topics: usize,
}

fn render(m: &Mem) -> String {
    // JSON strings are YAML double-quoted scalars.
    let q = |s: &str| serde_json::to_string(s).unwrap_or_default();
    format!(
        "---\nname: {}\ndescription: {}\ntype: feedback\n---\n\n{}\n",
        q(&m.name),
        q(&m.description),
        m.body.trim_end()
    )
}

impl EvalSet {
    /// Loads every `*.json` topic of `dir`; a malformed file is an error naming it.
    pub fn load(dir: &Path) -> anyhow::Result<EvalSet> {
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .map_err(|e| anyhow::anyhow!("reading {}: {e}", dir.display()))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        let mut set = EvalSet {
            name: dir
                .file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
            private: Vec::new(),
            team: Vec::new(),
            labels: HashMap::new(),
            topics: 0,
        };
        for f in files {
            let stem = f
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let raw = std::fs::read_to_string(&f)?;
            let t: TopicFile =
                serde_json::from_str(&raw).map_err(|e| anyhow::anyhow!("{}: {e}", f.display()))?;
            anyhow::ensure!(!t.topic.is_empty(), "{}: empty topic", f.display());
            let path = |id: &str| format!("{stem}/{id}.md");
            for (side, out) in [(&t.private, &mut set.private), (&t.team, &mut set.team)] {
                for m in side {
                    out.push(Memory {
                        path: path(&m.id),
                        text: render(m),
                        lang: t.lang.clone(),
                    });
                }
            }
            for l in &t.labels {
                let label = Label::parse(&l.label)
                    .ok_or_else(|| anyhow::anyhow!("{}: label {:?}", f.display(), l.label))?;
                anyhow::ensure!(
                    t.private.iter().any(|m| m.id == l.private)
                        && t.team.iter().any(|m| m.id == l.team),
                    "{}: label names unknown ids {} x {}",
                    f.display(),
                    l.private,
                    l.team
                );
                set.labels
                    .insert((path(&l.private), path(&l.team)), (label, l.reason.clone()));
            }
            anyhow::ensure!(
                t.labels.len() == t.private.len() * t.team.len(),
                "{}: {} labels for {} x {} memories",
                f.display(),
                t.labels.len(),
                t.private.len(),
                t.team.len()
            );
            set.topics += 1;
        }
        Ok(set)
    }

    /// The label of a pair: in-topic as written, cross-topic `unrelated`.
    pub fn label(&self, private: &str, team: &str) -> Label {
        self.labels
            .get(&(private.to_owned(), team.to_owned()))
            .map(|(l, _)| *l)
            .unwrap_or(Label::Unrelated)
    }

    /// The detector's findings over the full cross product.
    pub fn findings(&self) -> Vec<Finding> {
        let notes = |v: &[Memory]| -> Vec<(String, String)> {
            v.iter().map(|m| (m.path.clone(), m.text.clone())).collect()
        };
        let (p, t) = (notes(&self.private), notes(&self.team));
        let a: Vec<Note<'_>> = p.iter().map(|(p, t)| Note { path: p, text: t }).collect();
        let b: Vec<Note<'_>> = t.iter().map(|(p, t)| Note { path: p, text: t }).collect();
        feedback::compare(&a, &b)
    }

    pub fn score(&self, findings: &[Finding]) -> Score {
        let mut got: HashMap<(&str, &str), &Finding> = HashMap::new();
        for f in findings {
            got.insert((f.a.as_str(), f.b.as_str()), f);
        }
        let mut s = Score {
            pairs: self.private.len() * self.team.len(),
            ..Score::default()
        };
        for ((p, t), (label, _)) in &self.labels {
            *s.labelled.entry(*label).or_default() += 1;
            let lang = self
                .private
                .iter()
                .find(|m| &m.path == p)
                .map(|m| m.lang.clone())
                .unwrap_or_default();
            let kind = got.get(&(p.as_str(), t.as_str())).map(|f| f.kind);
            *s.confusion.entry((*label, kind_name(kind))).or_default() += 1;
            if *label == Label::Contradiction {
                let e = s.by_lang.entry(lang).or_default();
                e.0 += 1;
                e.1 += usize::from(kind == Some(Kind::Contradiction));
                e.2 += usize::from(kind.is_some());
            }
        }
        s.cross_topic = s.pairs - self.labels.len();
        for f in findings {
            if !self.labels.contains_key(&(f.a.clone(), f.b.clone())) {
                *s.confusion
                    .entry((Label::Unrelated, kind_name(Some(f.kind))))
                    .or_default() += 1;
                s.cross_topic_findings += 1;
            }
        }
        *s.confusion
            .entry((Label::Unrelated, "nothing"))
            .or_default() += s.cross_topic - s.cross_topic_findings;
        s
    }
}

fn kind_name(k: Option<Kind>) -> &'static str {
    match k {
        Some(Kind::Contradiction) => "contradiction",
        Some(Kind::Related) => "related",
        None => "nothing",
    }
}

/// Figures of one set.
#[derive(Debug, Default)]
pub struct Score {
    /// Private × team pairs scored.
    pub pairs: usize,
    pub cross_topic: usize,
    pub cross_topic_findings: usize,
    pub labelled: BTreeMap<Label, usize>,
    /// (label, `contradiction` | `related` | `nothing`) → pairs, cross-topic pairs included as
    /// `unrelated`.
    pub confusion: BTreeMap<(Label, &'static str), usize>,
    /// Language of the private side → (contradictions, found as such, reached).
    pub by_lang: BTreeMap<String, (usize, usize, usize)>,
}

impl Score {
    /// Adds another set's figures (the sets are scored apart: their topics overlap, so pairs
    /// across two sets are not labelled).
    pub fn merge(&mut self, other: &Score) {
        self.pairs += other.pairs;
        self.cross_topic += other.cross_topic;
        self.cross_topic_findings += other.cross_topic_findings;
        for (k, v) in &other.labelled {
            *self.labelled.entry(*k).or_default() += v;
        }
        for (k, v) in &other.confusion {
            *self.confusion.entry(*k).or_default() += v;
        }
        for (k, (a, b, c)) in &other.by_lang {
            let e = self.by_lang.entry(k.clone()).or_default();
            e.0 += a;
            e.1 += b;
            e.2 += c;
        }
    }

    fn n(&self, l: Label, k: &str) -> usize {
        self.confusion.get(&(l, k)).copied().unwrap_or(0)
    }

    fn row(&self, l: Label) -> usize {
        ["contradiction", "related", "nothing"]
            .iter()
            .map(|k| self.n(l, k))
            .sum()
    }

    pub fn precision(&self) -> f64 {
        let tp = self.n(Label::Contradiction, "contradiction");
        let all: usize = [
            Label::Contradiction,
            Label::Compatible,
            Label::DifferentScope,
            Label::Unrelated,
        ]
        .iter()
        .map(|l| self.n(*l, "contradiction"))
        .sum();
        if all == 0 {
            1.0
        } else {
            tp as f64 / all as f64
        }
    }

    pub fn recall(&self) -> f64 {
        ratio(
            self.n(Label::Contradiction, "contradiction"),
            self.row(Label::Contradiction),
        )
    }

    /// Labelled contradictions with any finding.
    pub fn reach(&self) -> f64 {
        ratio(
            self.row(Label::Contradiction) - self.n(Label::Contradiction, "nothing"),
            self.row(Label::Contradiction),
        )
    }

    /// Same-subject pairs (any label but `unrelated`) with any finding.
    pub fn same_subject_recall(&self) -> f64 {
        let labels = [
            Label::Contradiction,
            Label::Compatible,
            Label::DifferentScope,
        ];
        let all: usize = labels.iter().map(|l| self.row(*l)).sum();
        let found: usize = labels
            .iter()
            .map(|l| self.row(*l) - self.n(*l, "nothing"))
            .sum();
        ratio(found, all)
    }

    /// Findings of any kind per 100 unrelated pairs (in-topic and cross-topic).
    pub fn unrelated_findings_per_100(&self) -> f64 {
        let all = self.row(Label::Unrelated);
        let found = all - self.n(Label::Unrelated, "nothing");
        100.0 * ratio(found, all)
    }

    pub fn summary(&self, name: &str) -> String {
        let mut s = format!(
            "{name}: {} pairs ({} labelled in-topic, {} cross-topic); labels {}\n\
             \x20 contradiction precision {:.3}  recall {:.3}  reach (contradiction or related) {:.3}\n\
             \x20 same-subject recall {:.3}  findings per 100 unrelated pairs {:.2}\n",
            self.pairs,
            self.pairs - self.cross_topic,
            self.cross_topic,
            self.labelled
                .iter()
                .map(|(l, n)| format!("{} {n}", l.name()))
                .collect::<Vec<_>>()
                .join(", "),
            self.precision(),
            self.recall(),
            self.reach(),
            self.same_subject_recall(),
            self.unrelated_findings_per_100(),
        );
        s.push_str("  confusion (rows: label; columns: contradiction / related / nothing):\n");
        for l in [
            Label::Contradiction,
            Label::Compatible,
            Label::DifferentScope,
            Label::Unrelated,
        ] {
            s.push_str(&format!(
                "    {:<16} {:>5} {:>5} {:>6}\n",
                l.name(),
                self.n(l, "contradiction"),
                self.n(l, "related"),
                self.n(l, "nothing")
            ));
        }
        s.push_str("  contradictions by language of the private side (found / reached / all): ");
        let langs: Vec<String> = self
            .by_lang
            .iter()
            .map(|(l, (n, f, r))| format!("{l} {f}/{r}/{n}"))
            .collect();
        s.push_str(&langs.join(", "));
        s.push('\n');
        s
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 { 1.0 } else { a as f64 / b as f64 }
}

/// The development sets: tuned on, their figures held as floors. `dev2` and `dev3` were
/// held-out sets until they were scored (round two), `dev4` until round three, `dev5` until
/// round four, `dev6` until round five, `dev7` until round six, `dev8` until round seven, `dev9`
/// until round eight, `dev10` until round nine, `dev11` until round ten, `dev12` until round
/// eleven; a scored set is spent.
pub const DEV_SETS: [&str; 12] = [
    "dev", "dev2", "dev3", "dev4", "dev5", "dev6", "dev7", "dev8", "dev9", "dev10", "dev11",
    "dev12",
];
/// The held-out set: scored once, in round twelve (spent; the next round that changes the
/// detector tunes on it and needs a fresh one).
pub const HELD_OUT: &str = "heldout12";

/// The directory of a set shipped with the tests (`dev` to `dev12`, `heldout12`).
pub fn set_dir(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("feedback-eval")
        .join(name)
}

/// One point of the session-start notice's cost/recall curve.
#[derive(Debug, Clone)]
pub struct NoticePoint {
    /// Related pairs listed per session at most (`None`: all).
    pub cap: Option<usize>,
    /// Mean lines per session: one per contradiction, one per listed related pair, one header
    /// line when any is listed.
    pub lines: f64,
    /// Labelled contradictions that reach the session (a contradiction finding or a listed
    /// related pair), over all labelled contradictions.
    pub recall: f64,
}

impl EvalSet {
    /// Simulates sessions: the private memories are dealt round-robin to users of `per_user`
    /// memories each (so each user's memories span topics), each user's session compares them
    /// with every team memory, and the notice lists the contradictions and the `cap` most
    /// likely related pairs.
    pub fn notice_curve(
        &self,
        findings: &[Finding],
        per_user: usize,
        caps: &[Option<usize>],
    ) -> Vec<NoticePoint> {
        let users = self.private.len().div_ceil(per_user.max(1)).max(1);
        let user_of: HashMap<&str, usize> = self
            .private
            .iter()
            .enumerate()
            .map(|(i, m)| (m.path.as_str(), i % users))
            .collect();
        let mut per: Vec<Vec<&Finding>> = vec![Vec::new(); users];
        for f in findings {
            if let Some(&u) = user_of.get(f.a.as_str()) {
                per[u].push(f);
            }
        }
        let contradictions = self
            .labels
            .values()
            .filter(|(l, _)| *l == Label::Contradiction)
            .count();
        caps.iter()
            .map(|&cap| {
                let (mut lines, mut reached) = (0usize, 0usize);
                for fs in &per {
                    let mut related: Vec<&&Finding> =
                        fs.iter().filter(|f| f.kind == Kind::Related).collect();
                    related.sort_by_key(|y| std::cmp::Reverse(y.likelihood));
                    related.truncate(cap.unwrap_or(usize::MAX));
                    let shown = fs
                        .iter()
                        .filter(|f| f.kind == Kind::Contradiction)
                        .chain(related.iter().copied());
                    let mut n = 0;
                    for f in shown {
                        n += 1;
                        if self.label(&f.a, &f.b) == Label::Contradiction {
                            reached += 1;
                        }
                    }
                    lines += n + usize::from(!related.is_empty());
                }
                NoticePoint {
                    cap,
                    lines: lines as f64 / users as f64,
                    recall: ratio(reached, contradictions),
                }
            })
            .collect()
    }
}

/// A development set's findings with the figures that rank related pairs.
pub struct Ranked {
    pub set: EvalSet,
    /// Pairs the words left without a verdict (figures, labelled on one subject); their figures
    /// hold the embedding model's cosine when it is installed.
    pub silent: Vec<([f32; feedback::RANK_FEATURES], bool)>,
    /// Unrelated pairs (cross-topic included), and those of them the words found anyway.
    pub unrelated: (usize, usize),
    /// Pairs on one subject, and those of them the words found.
    pub same_subject: (usize, usize),
    pub findings: Vec<(Finding, [f32; feedback::RANK_FEATURES])>,
}

impl Ranked {
    pub fn load(name: &str) -> Ranked {
        let set = EvalSet::load(&set_dir(name)).expect("set");
        let a: Vec<&str> = set.private.iter().map(|n| n.text.as_str()).collect();
        let b: Vec<&str> = set.team.iter().map(|n| n.text.as_str()).collect();
        let pairs = feedback::pair_features(&a, &b);
        let label =
            |p: &feedback::PairFigures| set.label(&set.private[p.a].path, &set.team[p.b].path);
        let silent = pairs
            .iter()
            .filter(|p| p.words_silent)
            .map(|p| (p.x, label(p) != Label::Unrelated))
            .collect();
        // (pairs, pairs the words found) of those on one subject or not.
        let counts = |on_subject: bool| {
            let of = pairs
                .iter()
                .filter(|p| (label(p) != Label::Unrelated) == on_subject);
            (
                of.clone().count(),
                of.filter(|p| !p.words_silent && p.verdict.is_some())
                    .count(),
            )
        };
        let (unrelated, same_subject) = (counts(false), counts(true));
        let findings = pairs
            .into_iter()
            .filter_map(|p| {
                let (kind, reason, likelihood) = p.verdict?;
                let f = Finding {
                    a: set.private[p.a].path.clone(),
                    b: set.team[p.b].path.clone(),
                    kind,
                    reason,
                    likelihood,
                };
                Some((f, p.x))
            })
            .collect();
        Ranked {
            set,
            silent,
            unrelated,
            same_subject,
            findings,
        }
    }

    /// Related findings as (figures, labelled a contradiction).
    pub fn samples(&self) -> impl Iterator<Item = ([f32; feedback::RANK_FEATURES], bool)> + '_ {
        self.findings
            .iter()
            .filter(|(f, _)| f.kind == Kind::Related)
            .map(|(f, x)| (*x, self.set.label(&f.a, &f.b) == Label::Contradiction))
    }

    /// The notice's reach at 3, 5 and 8 pairs with related pairs ranked by `model`, or as the
    /// detector ranks them (`None`).
    pub fn notice(&self, model: Option<&[f32; feedback::RANK_FEATURES + 1]>) -> Vec<f64> {
        let findings: Vec<Finding> = self
            .findings
            .iter()
            .map(|(f, x)| {
                let mut f = f.clone();
                if let (Some(m), Kind::Related) = (model, f.kind) {
                    f.likelihood = (feedback::logistic(m, x) * 1000.0).round() as u32;
                }
                f
            })
            .collect();
        self.set
            .notice_curve(&findings, 10, &[Some(3), Some(5), Some(8)])
            .iter()
            .map(|p| p.recall)
            .collect()
    }
}

/// Logistic regression by Newton's method, with the L2 penalty ½‖w‖² on the weights (not the
/// intercept): the model `feedback::logistic` reads, weights then intercept.
pub fn fit_logistic(
    samples: &[([f32; feedback::RANK_FEATURES], bool)],
    positive_weight: f64,
) -> [f32; feedback::RANK_FEATURES + 1] {
    const D: usize = feedback::RANK_FEATURES + 1;
    let row = |x: &[f32; feedback::RANK_FEATURES]| -> [f64; D] {
        let mut r = [1.0; D];
        for (r, v) in r.iter_mut().zip(x) {
            *r = f64::from(*v);
        }
        r
    };
    let mut w = [0.0f64; D];
    for _ in 0..50 {
        // Gradient and Hessian of the penalised log loss.
        let mut grad = w;
        grad[D - 1] = 0.0;
        let mut hess = [[0.0f64; D]; D];
        for (k, h) in hess.iter_mut().enumerate().take(D - 1) {
            h[k] = 1.0;
        }
        for (x, y) in samples {
            let r = row(x);
            let z: f64 = r.iter().zip(&w).map(|(a, b)| a * b).sum();
            let p = 1.0 / (1.0 + (-z).exp());
            let c = if *y { positive_weight } else { 1.0 };
            let e = c * (p - f64::from(u8::from(*y)));
            for ((g, h), ri) in grad.iter_mut().zip(hess.iter_mut()).zip(&r) {
                *g += e * ri;
                for (hij, rj) in h.iter_mut().zip(&r) {
                    *hij += c * p * (1.0 - p) * ri * rj;
                }
            }
        }
        let step = solve(hess, grad);
        for (w, s) in w.iter_mut().zip(&step) {
            *w -= s;
        }
        if step.iter().map(|s| s.abs()).fold(0.0, f64::max) < 1e-9 {
            break;
        }
    }
    w.map(|v| v as f32)
}

/// Solves `m · x = g` by Gaussian elimination with partial pivoting.
fn solve<const D: usize>(mut m: [[f64; D]; D], mut g: [f64; D]) -> [f64; D] {
    for c in 0..D {
        let piv = (c..D)
            .max_by(|&a, &b| m[a][c].abs().total_cmp(&m[b][c].abs()))
            .unwrap_or(c);
        m.swap(c, piv);
        g.swap(c, piv);
        let (pivot, gc) = (m[c], g[c]);
        for (row, gr) in m.iter_mut().zip(g.iter_mut()).skip(c + 1) {
            let f = row[c] / pivot[c];
            for (x, p) in row.iter_mut().zip(&pivot).skip(c) {
                *x -= f * p;
            }
            *gr -= f * gc;
        }
    }
    let mut x = [0.0f64; D];
    for c in (0..D).rev() {
        let s: f64 = m[c].iter().zip(&x).skip(c + 1).map(|(a, b)| a * b).sum();
        x[c] = (g[c] - s) / m[c][c];
    }
    x
}

/// Holds the committed ranking model (`committed`, `feedback::RANK_WORDS` or `RANK_MEANING`,
/// whichever the process reads) to a fresh fit on `sets`: each weight within 0.05, so a change to
/// the detector that moves the figures is told to refit (`memsync-feedback-eval
/// --fit-ranking`). Returns the notice's reach at 8 related pairs as built, the mean over `sets`.
pub fn check_ranking(sets: &[Ranked], committed: &[f32; feedback::RANK_FEATURES + 1]) -> f64 {
    let all: Vec<_> = sets.iter().flat_map(Ranked::samples).collect();
    let fitted = fit_logistic(&all, 1.0);
    for (k, (c, f)) in committed.iter().zip(&fitted).enumerate() {
        assert!(
            (c - f).abs() <= 0.05,
            "ranking weight {k}: committed {c}, fitted {f}; run `memsync-feedback-eval \
             --fit-ranking` (with --model DIR for RANK_MEANING) and update \
             core/src/feedback/mod.rs: {fitted:?}"
        );
    }
    sets.iter().map(|s| s.notice(None)[2]).sum::<f64>() / sets.len() as f64
}

/// How much a pair on one subject weighs against an unrelated one when a relate model is fitted
/// (they are a few hundred among a hundred thousand).
pub const RELATE_POSITIVE_WEIGHT: f64 = 20.0;

/// Fits the model that decides, from their figures (the embedding model's cosine among them when
/// it is installed), which pairs the words left silent are on one subject, and the threshold at which all findings on the unrelated pairs of
/// `sets` come to `per_100` per 100 (the words' findings included).
pub fn fit_relate(sets: &[&Ranked], per_100: f64) -> ([f32; feedback::RANK_FEATURES + 1], f32) {
    let silent: Vec<_> = sets.iter().flat_map(|r| r.silent.iter().copied()).collect();
    let model = fit_logistic(&silent, RELATE_POSITIVE_WEIGHT);
    let (pairs, words) = sets
        .iter()
        .fold((0, 0), |(p, w), r| (p + r.unrelated.0, w + r.unrelated.1));
    let room = (per_100 / 100.0 * pairs as f64 - words as f64).max(0.0) as usize;
    let mut scores: Vec<f32> = silent
        .iter()
        .filter(|(_, y)| !*y)
        .map(|(x, _)| feedback::logistic(&model, x))
        .collect();
    scores.sort_by(|a, b| b.total_cmp(a));
    let threshold = scores.get(room).copied().unwrap_or(0.0);
    (model, threshold)
}

/// Fits the relate model on `sets` and holds the committed one (`model`, `threshold`) to it: its
/// weights within 0.1, its threshold within 0.02. `name` is the constant's, for the message.
pub fn check_relate(
    sets: &[Ranked],
    (name, model, threshold): (&str, &[f32; feedback::RANK_FEATURES + 1], f32),
) {
    let refs: Vec<&Ranked> = sets.iter().collect();
    let (fitted, fitted_threshold) = fit_relate(&refs, feedback::RELATE_PER_100);
    for (k, (c, f)) in model.iter().zip(&fitted).enumerate() {
        assert!(
            (c - f).abs() <= 0.1,
            "{name} weight {k}: committed {c}, fitted {f}; run `memsync-feedback-eval \
             --fit-ranking` (with --model DIR for RELATE_MEANING) and update \
             core/src/feedback/mod.rs"
        );
    }
    assert!(
        (threshold - fitted_threshold).abs() <= 0.02,
        "{name} threshold: committed {threshold}, fitted {fitted_threshold}"
    );
}

/// Pairs on one subject found, of all, and findings on unrelated pairs, of all, in `set` when
/// the pairs its words leave silent are related at `model`'s `threshold`.
pub fn relate_figures(
    set: &Ranked,
    model: &[f32; feedback::RANK_FEATURES + 1],
    threshold: f32,
) -> [usize; 4] {
    let (mut pos, mut neg) = (set.same_subject.1, set.unrelated.1);
    for (x, y) in &set.silent {
        if feedback::logistic(model, x) > threshold {
            if *y {
                pos += 1;
            } else {
                neg += 1;
            }
        }
    }
    [pos, set.same_subject.0, neg, set.unrelated.0]
}
