//! The feedback detector on the labelled evaluation sets of `tests/feedback-eval/`
//! (`memsync_e2e::feedback_eval`). Needs no database.
//!
//! The development sets are what the detector is tuned on: `dev`, and `dev2` to `dev12`, which
//! were held-out sets until the round that scored them (a scored set is spent). Their figures
//! together are held as floors so a change that loses ground shows. `heldout12`, written by
//! someone who never saw the detector, was scored once in round twelve (`docs/protocol.md`); its
//! figures are printed, never asserted (a test that failed on them would invite tuning on them).
//! Scored, it is spent: the next round that changes the detector tunes on it and needs a fresh
//! held-out set. The same with the optional embedding model: `feedback_model.rs`.

use memsync_e2e::feedback_eval::{
    DEV_SETS, EvalSet, HELD_OUT, Label, Ranked, Score, check_ranking, check_relate, set_dir,
};

fn load(name: &str) -> EvalSet {
    EvalSet::load(&set_dir(name)).unwrap_or_else(|e| panic!("{name}: {e:#}"))
}

#[test]
fn the_sets_are_well_formed_and_large_enough() {
    for name in DEV_SETS.iter().copied().chain([HELD_OUT]) {
        let set = load(name);
        let count = |l: Label| set.labels.values().filter(|(x, _)| *x == l).count();
        assert!(set.topics >= 50, "{name}: {} topics", set.topics);
        assert!(
            set.labels.len() >= 180,
            "{name}: {} labels",
            set.labels.len()
        );
        for l in [
            Label::Contradiction,
            Label::Compatible,
            Label::DifferentScope,
            Label::Unrelated,
        ] {
            assert!(count(l) >= 30, "{name}: {} {}", count(l), l.name());
        }
        let foreign = set.private.iter().filter(|m| m.lang != "en").count();
        assert!(
            foreign >= 20,
            "{name}: {foreign} non-English private memories"
        );
        // Every memory is a feedback memory the detector reads.
        for m in set.private.iter().chain(&set.team) {
            assert!(
                memsync_core::policy::is_feedback(&m.text),
                "{name}: {} is not read as feedback",
                m.path
            );
        }
    }
}

#[test]
fn the_sets_pass_the_validator_their_readmes_name() {
    // `dev` to `dev3` were written before the shared validator, in looser formats the loader
    // still reads; from `dev4` on each set's README tells how to check it with `../validate.py`.
    let root = set_dir("dev4")
        .parent()
        .expect("sets directory")
        .to_path_buf();
    for name in [
        "dev4", "dev5", "dev6", "dev7", "dev8", "dev9", "dev10", "dev11", "dev12", HELD_OUT,
    ] {
        let out = std::process::Command::new("python3")
            .arg(root.join("validate.py"))
            .arg(".")
            .current_dir(set_dir(name))
            .output()
            .expect("python3 runs");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.starts_with("OK: "),
            "{name}: {text}"
        );
    }
}

#[test]
fn development_set_figures_hold() {
    let mut all = Score::default();
    for name in DEV_SETS {
        let set = load(name);
        let findings = set.findings();
        let s = set.score(&findings);
        println!("{}", s.summary(name));
        all.merge(&s);
        // The notice at session start: more pairs listed, never fewer contradictions reached,
        // and listing all of them reaches every contradiction the detector pairs at all.
        let curve = set.notice_curve(&findings, 10, &[Some(0), Some(5), Some(8), None]);
        for w in curve.windows(2) {
            assert!(
                w[1].recall >= w[0].recall && w[1].lines >= w[0].lines,
                "{name}: {curve:?}"
            );
        }
        assert!(
            (curve[3].recall - s.reach()).abs() < 1e-9,
            "{name}: {curve:?}"
        );
        assert!(
            (curve[0].recall - s.recall()).abs() < 1e-9,
            "{name}: {curve:?}"
        );
    }
    println!("{}", all.summary("development sets together"));
    // Measured when the detector was last tuned, over the twelve sets (precision 0.700, recall
    // 0.351, reach 0.948, same-subject recall 0.863, 0.85 findings per 100 unrelated pairs, the
    // budget the model relating silent pairs is fitted to); the floors leave room for a few
    // pairs.
    assert!(all.precision() >= 0.69, "precision {:.3}", all.precision());
    assert!(all.recall() >= 0.33, "recall {:.3}", all.recall());
    assert!(all.reach() >= 0.93, "reach {:.3}", all.reach());
    assert!(
        all.same_subject_recall() >= 0.85,
        "same-subject recall {:.3}",
        all.same_subject_recall()
    );
    assert!(
        all.unrelated_findings_per_100() <= 1.0,
        "{:.2} findings per 100 unrelated pairs",
        all.unrelated_findings_per_100()
    );
}

#[test]
fn related_pairs_are_ranked_by_the_model_fitted_on_the_development_sets() {
    let sets: Vec<Ranked> = DEV_SETS.iter().map(|n| Ranked::load(n)).collect();
    let notice = check_ranking(&sets, &memsync_core::feedback::RANK_WORDS);
    // 0.820 when fitted on the twelve sets (0.821 with each set ranked by a model fitted on the
    // other eleven; 0.78 when pairs were ranked by their closeness alone).
    println!("notice at 8 pairs, mean of the development sets: {notice:.3}");
    assert!(notice >= 0.80, "notice at 8 pairs reaches {notice:.3}");
    // And the model that relates the pairs the words leave silent, with its threshold.
    check_relate(
        &sets,
        (
            "RELATE_WORDS",
            &memsync_core::feedback::RELATE_WORDS,
            memsync_core::feedback::RELATE_WORDS_THRESHOLD,
        ),
    );
}

#[test]
fn held_out_set_is_scored() {
    let set = load(HELD_OUT);
    let findings = set.findings();
    let s = set.score(&findings);
    println!(
        "{}",
        s.summary(&format!("{HELD_OUT} (printed, never asserted)"))
    );
    for p in set.notice_curve(&findings, 10, &[Some(0), Some(5), Some(8), Some(10), None]) {
        println!(
            "  notice listing at most {:?} related pairs: {:.1} lines, contradictions reaching the agent {:.3}",
            p.cap, p.lines, p.recall
        );
    }
}
