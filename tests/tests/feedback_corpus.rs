//! The feedback checker on the labeled corpus (`memsync_e2e::feedback_corpus`): precision and
//! recall of `contradiction` findings over the full private × team cross product, and every
//! wrong case explained. Needs no database.

use std::collections::HashSet;

use memsync_core::{MemoryDoc, MemoryType};
use memsync_e2e::feedback_corpus::{self, EXPLAINED};

#[test]
fn precision_and_recall_on_the_corpus() {
    let report = feedback_corpus::evaluate();
    println!("{}", report.summary());
    println!(
        "confusion (rows: label, columns: checker):\n{}",
        report.matrix()
    );
    for o in report.errors() {
        println!(
            "wrong: {} x {}: expected {}, got {}; {}",
            o.private,
            o.team,
            o.expected.unwrap_or("nothing"),
            o.got.unwrap_or("nothing"),
            o.explained.unwrap_or("NOT EXPLAINED")
        );
    }
    // The figures the corpus had when it became the regression set (issue 16): 0.973 / 0.982.
    assert!(
        report.precision() >= 0.973,
        "contradiction precision {:.3} < 0.973",
        report.precision()
    );
    assert!(
        report.recall() >= 0.982,
        "contradiction recall {:.3} < 0.982",
        report.recall()
    );

    let unexplained: Vec<String> = report
        .errors()
        .filter(|o| o.explained.is_none())
        .map(|o| format!("{} x {}", o.private, o.team))
        .collect();
    assert!(
        unexplained.is_empty(),
        "wrong cases not explained in feedback_corpus::EXPLAINED: {unexplained:#?}"
    );
    for (p, t, _) in EXPLAINED {
        assert!(
            report.errors().any(|o| o.private == *p && o.team == *t),
            "{p} x {t} is in EXPLAINED but the checker gets it right now: remove it"
        );
    }
}

#[test]
fn the_corpus_is_well_formed() {
    let pairs = feedback_corpus::pairs();
    assert!(pairs.len() >= 80, "{} pairs", pairs.len());
    let count = |k: Option<&str>| pairs.iter().filter(|p| p.expected == k).count();
    let (c, r, n) = (
        count(Some("contradiction")),
        count(Some("related")),
        count(None),
    );
    assert_eq!(
        c + r + n,
        pairs.len(),
        "labels are contradiction, related or None"
    );
    assert!(
        c >= 30 && r >= 20 && n >= 10,
        "{c} contradictions, {r} related, {n} unrelated"
    );
    let foreign = pairs
        .iter()
        .filter(|p| {
            [&p.private, &p.team]
                .iter()
                .any(|t| t.chars().any(|ch| ch.is_alphabetic() && !ch.is_ascii()))
        })
        .count();
    assert!(foreign >= 10, "{foreign} pairs in other languages");

    for p in &pairs {
        for text in [&p.private, &p.team] {
            let doc = MemoryDoc::parse(text).unwrap_or_else(|e| panic!("{e}: {text}"));
            assert_eq!(doc.memory_type(), Some(MemoryType::Feedback), "{text}");
            assert!(
                doc.name().is_some() && doc.description().is_some(),
                "{text}"
            );
        }
        assert!(!p.note.is_empty());
    }

    let private = feedback_corpus::private_set();
    let team = feedback_corpus::team_set();
    let private_paths: HashSet<&str> = private.iter().map(|(p, _)| p.as_str()).collect();
    let team_paths: HashSet<&str> = team.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        private_paths.len(),
        private.len(),
        "private paths are unique"
    );
    assert_eq!(team_paths.len(), team.len(), "team paths are unique");

    let mut seen = HashSet::new();
    for (p, t, kind, note) in feedback_corpus::cross_labels() {
        assert!(
            private_paths.contains(p) && team_paths.contains(t),
            "{p} x {t}"
        );
        assert!(matches!(kind, "contradiction" | "related"), "{kind}");
        assert!(seen.insert((p, t)), "{p} x {t} is labeled twice");
        assert!(!note.is_empty());
    }
    for (p, t, why) in EXPLAINED {
        assert!(
            private_paths.contains(p) && team_paths.contains(t),
            "{p} x {t}"
        );
        assert!(!why.is_empty());
    }
}
