//! The feedback detector on the labelled evaluation sets of `tests/feedback-eval/`
//! (`memsync_e2e::feedback_eval`). Needs no database.
//!
//! The development set is what the detector was tuned on: its figures are held as floors so a
//! change that loses ground shows. The held-out sets are scored and printed, never asserted: a
//! test that failed on them would invite tuning on them. `heldout` was scored when the detector
//! was done and once more after a change the regression corpus asked for; `heldout2`, written
//! afterwards by someone who never saw the detector, was scored once, last. `heldout3`, written
//! the same way (328 pairs), is checked for form only and not scored yet: it is kept for the next
//! round of work on the detector, to be scored once when that is done.

use memsync_e2e::feedback_eval::{DEV_SETS, EvalSet, HELD_OUT, Label, Score, set_dir};

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
fn development_set_figures_hold() {
    let set = load("dev");
    let findings = set.findings();
    let s = set.score(&findings);
    println!("{}", s.summary("dev"));
    // Measured when the detector was last tuned (precision 0.806, recall 0.342, reach 0.863,
    // 0.77 findings per 100 unrelated pairs); the floors leave room for one or two pairs.
    assert!(s.precision() >= 0.78, "precision {:.3}", s.precision());
    assert!(s.recall() >= 0.32, "recall {:.3}", s.recall());
    assert!(s.reach() >= 0.86, "reach {:.3}", s.reach());
    assert!(
        s.unrelated_findings_per_100() <= 1.0,
        "{:.2} findings per 100 unrelated pairs",
        s.unrelated_findings_per_100()
    );
    // The notice at session start: more pairs listed, never fewer contradictions reached, and
    // listing all of them reaches every contradiction the detector pairs at all.
    let curve = set.notice_curve(&findings, 10, &[Some(0), Some(5), Some(8), None]);
    for w in curve.windows(2) {
        assert!(
            w[1].recall >= w[0].recall && w[1].lines >= w[0].lines,
            "{curve:?}"
        );
    }
    assert!((curve[3].recall - s.reach()).abs() < 1e-9, "{curve:?}");
    assert!((curve[0].recall - s.recall()).abs() < 1e-9, "{curve:?}");
}

#[test]
fn held_out_sets_are_scored() {
    for name in ["heldout", "heldout2"] {
        held_out(name);
    }
}

fn held_out(name: &str) {
    let set = load(name);
    let findings = set.findings();
    let s = set.score(&findings);
    println!(
        "{}",
        s.summary(&format!("{name} (printed, never asserted)"))
    );
    for p in set.notice_curve(&findings, 10, &[Some(0), Some(5), Some(8), Some(10), None]) {
        println!(
            "  notice listing at most {:?} related pairs: {:.1} lines, contradictions reaching the agent {:.3}",
            p.cap, p.lines, p.recall
        );
    }
}
