//! Scores `memsync_core::feedback` on the labeled corpus: precision and recall of
//! `contradiction` findings over the full private × team cross product, the confusion between
//! `contradiction`, `related` and nothing, and every miss and false alarm with its reason.
//!
//! `memsync-feedback-eval` prints the report; `--all` also lists the correct findings;
//! `--explain NAME` shows how the checker reads one corpus memory (by its `name`);
//! `--bench N` times N private × N team memories (the corpus, repeated);
//! `--pair SET TOPIC/p1 TOPIC/t1` shows how one pair of a set is read, and `--texts RULE RULE`
//! two rules given on the command line.
//!
//! `--set dev+` scores the development sets apart and prints their sum; `--set
//! dev|dev2|…|dev12|heldout12|DIR` scores a labelled set of `tests/feedback-eval/` instead (see
//! `memsync_e2e::feedback_eval`); `--misses` then lists every wrong in-topic pair and every
//! cross-topic finding, with the label's reason and the finding's; `--all` lists the right ones too.
//!
//! `--fit-ranking` fits, on the development sets, the logistic model that ranks related pairs
//! for the session-start notice and prints its weights for `core/src/feedback/mod.rs`, with the
//! notice of each set ranked by a model fitted on the others, and the model (and threshold) that
//! decides which pairs the words leave silent are related; with `--model DIR` it fits the ones
//! that read the meaning too. `--figures SET` prints every pair's label,
//! verdict and ranking figures, tab-separated. `--model DIR` installs the embedding model first.

use std::time::Instant;

use memsync_core::feedback::{self, Note};
use memsync_e2e::feedback_corpus::{self, Outcome};
use memsync_e2e::feedback_eval::{
    self, EvalSet, Label, Ranked, fit_logistic, fit_relate, relate_figures,
};

fn show(o: &Outcome) -> String {
    let mut s = format!(
        "  {} x {}\n    expected {}, got {}",
        o.private,
        o.team,
        o.expected.unwrap_or("nothing"),
        o.got.unwrap_or("nothing")
    );
    if !o.note.is_empty() {
        s.push_str(&format!("  [{}]", o.note));
    }
    if let Some(r) = &o.reason {
        s.push_str(&format!("\n    reason: {r}"));
    }
    match o.explained {
        Some(why) => s.push_str(&format!("\n    why: {why}")),
        None if !o.correct() => {
            s.push_str("\n    why: NOT EXPLAINED in feedback_corpus::EXPLAINED")
        }
        None => {}
    }
    s
}

fn bench(n: usize) {
    let private = feedback_corpus::private_set();
    let team = feedback_corpus::team_set();
    let grow = |set: &[(String, String)]| -> Vec<(String, String)> {
        (0..n)
            .map(|i| {
                let (p, t) = &set[i % set.len()];
                (format!("{i}-{p}"), t.clone())
            })
            .collect()
    };
    let (pa, pb) = (grow(&private), grow(&team));
    let a: Vec<Note<'_>> = pa.iter().map(|(p, t)| Note { path: p, text: t }).collect();
    let b: Vec<Note<'_>> = pb.iter().map(|(p, t)| Note { path: p, text: t }).collect();
    // The lexicon is compiled on first use, once per process.
    let start = Instant::now();
    let _ = feedback::compare(&a[..1], &b[..1]);
    let warm = start.elapsed();
    let start = Instant::now();
    let _ = feedback::compare(&a, &[]);
    let _ = feedback::compare(&b, &[]);
    let read = start.elapsed();
    let start = Instant::now();
    let findings = feedback::compare(&a, &b);
    let elapsed = start.elapsed();
    println!(
        "{n} x {n} memories: {} findings in {:.1} ms (reading the {} memories alone: {:.1} ms; \
         first use, compiling the lexicon: {:.1} ms)",
        findings.len(),
        elapsed.as_secs_f64() * 1000.0,
        2 * n,
        read.as_secs_f64() * 1000.0,
        warm.as_secs_f64() * 1000.0,
    );
}

fn kind_of(f: Option<&feedback::Finding>) -> &'static str {
    match f.map(|f| f.kind) {
        Some(feedback::Kind::Contradiction) => "contradiction",
        Some(feedback::Kind::Related) => "related",
        None => "nothing",
    }
}

fn kind_of_kind(k: Option<feedback::Kind>) -> &'static str {
    match k {
        Some(feedback::Kind::Contradiction) => "contradiction",
        Some(feedback::Kind::Related) => "related",
        None => "nothing",
    }
}

fn score_set(which: &str, misses: bool, all: bool) {
    let dir = match which {
        n if feedback_eval::DEV_SETS.contains(&n) || n == feedback_eval::HELD_OUT => {
            feedback_eval::set_dir(which)
        }
        other => other.into(),
    };
    let set = match EvalSet::load(&dir) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("memsync-feedback-eval: {e:#}");
            std::process::exit(2);
        }
    };
    let start = Instant::now();
    let findings = set.findings();
    let elapsed = start.elapsed();
    let score = set.score(&findings);
    print!(
        "{}",
        score.summary(&format!("set {} ({} topics)", set.name, set.topics))
    );
    println!("  compared in {:.1} ms", elapsed.as_secs_f64() * 1000.0);
    // The model judge classifies only the detector's candidate pairs. A stand-in that answers
    // each candidate as it is labelled shows the most a judge can reach on top of this detector.
    let oracle: Vec<Option<memsync_core::feedback_judge::Answer>> = findings
        .iter()
        .map(|f| {
            use memsync_core::feedback_judge::{Answer, Verdict};
            let verdict = match set.label(&f.a, &f.b) {
                Label::Contradiction => Verdict::Contradiction,
                Label::Compatible => Verdict::Compatible,
                Label::DifferentScope => Verdict::DifferentScope,
                Label::Unrelated => Verdict::Unrelated,
            };
            Some(Answer {
                verdict,
                reason: "as labelled".into(),
            })
        })
        .collect();
    let judged = memsync_core::feedback_judge::apply(findings.clone(), &oracle, "stand-in");
    let js = set.score(&judged);
    println!(
        "  with a model judge answering each candidate pair as labelled (stand-in): precision {:.3}, recall {:.3}",
        js.precision(),
        js.recall()
    );
    let per_user = 10;
    println!(
        "  session-start notice, {} users of {per_user} private memories each against all {} team memories:",
        set.private.len().div_ceil(per_user),
        set.team.len()
    );
    for p in set.notice_curve(
        &findings,
        per_user,
        &[Some(0), Some(3), Some(5), Some(8), Some(10), Some(20), None],
    ) {
        println!(
            "    related pairs listed at most {:>4}: {:>5.1} lines per session, contradictions reaching the agent {:.3}",
            p.cap.map_or("all".to_owned(), |c| c.to_string()),
            p.lines,
            p.recall
        );
    }
    if std::env::var_os("MEMSYNC_EVAL_DUMP").is_some() {
        for f in &findings {
            eprintln!(
                "{}\t{}\t{}\t{} x {}\t{}",
                set.label(&f.a, &f.b).name(),
                kind_of(Some(f)),
                f.likelihood,
                f.a,
                f.b,
                f.reason
            );
        }
    }
    if !misses {
        return;
    }
    let by_pair: std::collections::HashMap<(&str, &str), &feedback::Finding> = findings
        .iter()
        .map(|f| ((f.a.as_str(), f.b.as_str()), f))
        .collect();
    let mut rows: Vec<_> = set.labels.iter().collect();
    rows.sort();
    for want in [
        Label::Contradiction,
        Label::Compatible,
        Label::DifferentScope,
        Label::Unrelated,
    ] {
        println!("\nlabelled {}:", want.name());
        for ((p, t), (label, why)) in rows.iter().filter(|(_, (l, _))| *l == want) {
            let f = by_pair.get(&(p.as_str(), t.as_str())).copied();
            let got = kind_of(f);
            let ok = match label {
                Label::Contradiction => got == "contradiction",
                Label::Compatible | Label::DifferentScope => got == "related",
                Label::Unrelated => got == "nothing",
            };
            if ok && !all {
                continue;
            }
            let mark = if ok { "right" } else { "got" };
            println!("  {p} x {t}: {mark} {got}\n    label: {why}");
            if let Some(f) = f {
                println!("    reason: {}", f.reason);
            }
        }
    }
    println!("\ncross-topic findings:");
    for f in &findings {
        if !set.labels.contains_key(&(f.a.clone(), f.b.clone())) {
            println!(
                "  {} x {}: {}\n    reason: {}",
                f.a,
                f.b,
                kind_of(Some(f)),
                f.reason
            );
        }
    }
}

/// `--fit-ranking`: fits the model that ranks related pairs on the development sets (with
/// `--model DIR`, the one that reads the meaning's cosine too), prints it for
/// `core/src/feedback/mod.rs`, and scores the notice of each set ranked by a model fitted on the
/// other sets, next to the detector's ranking as built.
fn fit_ranking() {
    let sets: Vec<Ranked> = feedback_eval::DEV_SETS
        .iter()
        .map(|n| Ranked::load(n))
        .collect();
    let all: Vec<_> = sets.iter().flat_map(Ranked::samples).collect();
    let model = fit_logistic(&all, 1.0);
    let name = if feedback::embed::installed() {
        "RANK_MEANING"
    } else {
        "RANK_WORDS"
    };
    let positives = all.iter().filter(|(_, y)| *y).count();
    println!(
        "fitted on {} related findings of the development sets ({positives} labelled contradictions):",
        all.len()
    );
    let nums: Vec<String> = model.iter().map(|v| format!("{v:.4}")).collect();
    println!(
        "const {name}: [f32; RANK_FEATURES + 1] = [{}];",
        nums.join(", ")
    );
    println!(
        "notice reach at 3 / 5 / 8 related pairs, each set ranked by a model fitted on the others:"
    );
    let (mut built, mut held) = (vec![0.0; 3], vec![0.0; 3]);
    // The sets but the `k`th.
    let others = |k: usize| -> Vec<&Ranked> {
        sets.iter()
            .enumerate()
            .filter(|(j, _)| *j != k)
            .map(|(_, r)| r)
            .collect()
    };
    for (k, s) in sets.iter().enumerate() {
        let samples: Vec<_> = others(k).into_iter().flat_map(Ranked::samples).collect();
        let m = fit_logistic(&samples, 1.0);
        let (b, h) = (s.notice(None), s.notice(Some(&m)));
        println!(
            "  {}: as built {:.3} / {:.3} / {:.3}; fitted on the others {:.3} / {:.3} / {:.3}",
            s.set.name, b[0], b[1], b[2], h[0], h[1], h[2]
        );
        for i in 0..3 {
            built[i] += b[i] / sets.len() as f64;
            held[i] += h[i] / sets.len() as f64;
        }
    }
    println!(
        "  mean: as built {:.3} / {:.3} / {:.3}; fitted on the others {:.3} / {:.3} / {:.3}",
        built[0], built[1], built[2], held[0], held[1], held[2]
    );
    // Which pairs the words leave silent are related, by their figures (with the meaning's
    // cosine among them when the model is installed).
    let (relate_name, committed) = if feedback::embed::installed() {
        (
            "RELATE_MEANING",
            (feedback::RELATE_MEANING, feedback::RELATE_THRESHOLD),
        )
    } else {
        (
            "RELATE_WORDS",
            (feedback::RELATE_WORDS, feedback::RELATE_WORDS_THRESHOLD),
        )
    };
    let refs: Vec<&Ranked> = sets.iter().collect();
    let (relate, threshold) = fit_relate(&refs, feedback::RELATE_PER_100);
    let nums: Vec<String> = relate.iter().map(|v| format!("{v:.4}")).collect();
    println!(
        "pairs the words leave silent, fitted on {} of them:",
        sets.iter().map(|r| r.silent.len()).sum::<usize>()
    );
    println!(
        "const {relate_name}: [f32; RANK_FEATURES + 1] = [{}];",
        nums.join(", ")
    );
    println!("const {relate_name}_THRESHOLD: f32 = {threshold:.4};");
    println!(
        "same-subject recall and findings per 100 unrelated pairs, each set by a model and threshold fitted on the others (as built):"
    );
    let show = |c: [usize; 4]| {
        format!(
            "{:.3} at {:.2} per 100",
            c[0] as f64 / c[1].max(1) as f64,
            100.0 * c[2] as f64 / c[3].max(1) as f64
        )
    };
    let (mut held, mut built) = ([0usize; 4], [0usize; 4]);
    for (k, s) in sets.iter().enumerate() {
        let (m, t) = fit_relate(&others(k), feedback::RELATE_PER_100);
        let h = relate_figures(s, &m, t);
        let b = relate_figures(s, &committed.0, committed.1);
        for i in 0..4 {
            held[i] += h[i];
            built[i] += b[i];
        }
        println!("  {}: {} ({})", s.set.name, show(h), show(b));
    }
    println!("  together: {} ({})", show(held), show(built));
}

/// The development sets, each scored over its own cross product, and their sum.
fn score_dev_sets() {
    let mut total = feedback_eval::Score::default();
    for name in feedback_eval::DEV_SETS {
        let set = EvalSet::load(&feedback_eval::set_dir(name)).expect("set");
        let s = set.score(&set.findings());
        println!(
            "{name}: precision {:.3}  recall {:.3}  reach {:.3}  same-subject {:.3}  per 100 unrelated {:.2}",
            s.precision(),
            s.recall(),
            s.reach(),
            s.same_subject_recall(),
            s.unrelated_findings_per_100()
        );
        total.merge(&s);
    }
    print!("{}", total.summary("development sets together"));
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(i) = args.iter().position(|a| a == "--model") {
        // The optional sentence-embedding model (a directory with model.safetensors and
        // vocab.txt): findings then also come from what the memories mean.
        let Some(dir) = args.get(i + 1).cloned() else {
            eprintln!("memsync-feedback-eval: --model needs the model's directory");
            std::process::exit(2);
        };
        args.drain(i..i + 2);
        let start = Instant::now();
        match feedback::embed::Model::load_dir(std::path::Path::new(&dir)) {
            Ok(m) => {
                feedback::embed::install(m);
                eprintln!(
                    "model loaded from {dir} in {:.0} ms",
                    start.elapsed().as_secs_f64() * 1000.0
                );
            }
            Err(e) => {
                eprintln!("memsync-feedback-eval: {e}");
                std::process::exit(2);
            }
        }
    }
    if let Some(i) = args.iter().position(|a| a == "--terms") {
        // Document frequency of subject terms over the topics of a set: how many topics use a
        // term (a term many topics use names no subject).
        let which = args.get(i + 1).map(String::as_str).unwrap_or("dev");
        let set = EvalSet::load(&feedback_eval::set_dir(which)).expect("set");
        let mut df: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
            Default::default();
        for m in set.private.iter().chain(&set.team) {
            let topic = m.path.split('/').next().unwrap_or("").to_owned();
            for (k, w) in feedback::terms(&m.text) {
                df.entry(format!("{k}\t{w}"))
                    .or_default()
                    .insert(topic.clone());
            }
        }
        let mut rows: Vec<(usize, String)> = df.into_iter().map(|(k, t)| (t.len(), k)).collect();
        rows.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        for (n, k) in rows.iter().filter(|(n, _)| *n >= 3) {
            println!("{n}\t{k}");
        }
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--figures") {
        // `--figures SET`: every pair's label, verdict and ranking figures, tab-separated.
        let which = args.get(i + 1).map(String::as_str).unwrap_or("dev");
        let set = EvalSet::load(&feedback_eval::set_dir(which)).expect("set");
        let a: Vec<&str> = set.private.iter().map(|n| n.text.as_str()).collect();
        let b: Vec<&str> = set.team.iter().map(|n| n.text.as_str()).collect();
        for p in feedback::pair_features(&a, &b) {
            let (pa, tb) = (&set.private[p.a].path, &set.team[p.b].path);
            let kind = kind_of_kind(p.verdict.as_ref().map(|v| v.0));
            let x: Vec<String> = p.x.iter().map(|v| format!("{v:.4}")).collect();
            println!(
                "{}\t{kind}\t{}\t{}\t{pa}\t{tb}",
                set.label(pa, tb).name(),
                u8::from(p.words_silent),
                x.join("\t")
            );
        }
        return;
    }
    if args.iter().any(|a| a == "--fit-ranking") {
        fit_ranking();
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--stats") {
        let which = args.get(i + 1).map(String::as_str).unwrap_or("dev");
        let set = EvalSet::load(&feedback_eval::set_dir(which)).expect("set");
        for p in &set.private {
            for t in &set.team {
                let label = set.label(&p.path, &t.path);
                if let Some((w, ta, tb, k)) = feedback::pair_stats(&p.text, &t.text)
                    && w > 0
                {
                    println!(
                        "{}\t{w}\t{ta}\t{tb}\t{}\t{} x {}",
                        label.name(),
                        kind_of_kind(k),
                        p.path,
                        t.path
                    );
                }
            }
        }
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--set") {
        let which = args.get(i + 1).map(String::as_str).unwrap_or("dev");
        if which == "dev+" {
            score_dev_sets();
            return;
        }
        score_set(
            which,
            args.iter().any(|a| a == "--misses" || a == "--all"),
            args.iter().any(|a| a == "--all"),
        );
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--bench") {
        let n = args.get(i + 1).and_then(|s| s.parse().ok()).unwrap_or(300);
        bench(n);
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--texts") {
        // `--texts RULE RULE`: how the detector reads two feedback rules given on the command line.
        let fb = |k: usize| {
            format!(
                "---\nname: n\ndescription: d\ntype: feedback\n---\n\n{}\n",
                args.get(i + k).map(String::as_str).unwrap_or("")
            )
        };
        let (p, t) = (fb(1), fb(2));
        println!("{}\n\n{}", feedback::explain(&p), feedback::explain(&t));
        let (pn, tn) = (
            Note {
                path: "a",
                text: &p,
            },
            Note {
                path: "b",
                text: &t,
            },
        );
        println!("finding: {:?}", feedback::compare(&[pn], &[tn]));
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--pair") {
        // `--pair SET TOPIC/p1 TOPIC/t1`: how the detector reads one pair of a set.
        let get = |k: usize| args.get(i + k).map(String::as_str).unwrap_or("");
        let set = EvalSet::load(&feedback_eval::set_dir(get(1))).expect("set");
        let find = |v: &[feedback_eval::Memory], id: &str| {
            v.iter()
                .find(|m| m.path == format!("{id}.md"))
                .map(|m| m.text.clone())
                .unwrap_or_default()
        };
        let (p, t) = (find(&set.private, get(2)), find(&set.team, get(3)));
        println!("{}\n\n{}", feedback::explain(&p), feedback::explain(&t));
        let pn = Note {
            path: "p",
            text: &p,
        };
        let tn = Note {
            path: "t",
            text: &t,
        };
        println!(
            "label: {:?}",
            set.labels
                .get(&(format!("{}.md", get(2)), format!("{}.md", get(3))))
        );
        println!("finding: {:?}", feedback::compare(&[pn], &[tn]));
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--explain") {
        let name = args.get(i + 1).map(String::as_str).unwrap_or("");
        let path = format!("{name}.md");
        for (p, t) in feedback_corpus::private_set()
            .into_iter()
            .chain(feedback_corpus::team_set())
        {
            if p == path {
                println!("{p}\n{}", feedback::explain(&t));
            }
        }
        return;
    }
    let all = args.iter().any(|a| a == "--all");
    let report = feedback_corpus::evaluate();
    print!("{}", report.summary());
    println!(
        "\nconfusion (rows: label, columns: checker):\n{}",
        report.matrix()
    );

    let misses: Vec<&Outcome> = report
        .errors()
        .filter(|o| o.expected == Some("contradiction"))
        .collect();
    let false_alarms: Vec<&Outcome> = report
        .errors()
        .filter(|o| o.got == Some("contradiction"))
        .collect();
    let other: Vec<&Outcome> = report
        .errors()
        .filter(|o| o.expected != Some("contradiction") && o.got != Some("contradiction"))
        .collect();
    println!("missed contradictions ({}):", misses.len());
    for o in &misses {
        println!("{}", show(o));
    }
    println!("\nfalse contradiction alarms ({}):", false_alarms.len());
    for o in &false_alarms {
        println!("{}", show(o));
    }
    println!("\nrelated / nothing confused ({}):", other.len());
    for o in &other {
        println!("{}", show(o));
    }
    if all {
        println!("\ncorrect findings:");
        for o in report.outcomes.iter().filter(|o| o.correct()) {
            println!("{}", show(o));
        }
    }
    let unexplained = report.errors().filter(|o| o.explained.is_none()).count();
    if unexplained > 0 {
        println!("\n{unexplained} wrong case(s) are not explained in feedback_corpus::EXPLAINED");
    }
}
