//! The feedback check's optional sentence-embedding model (`memsync_core::feedback::embed`):
//! the real weights (fetched by `scripts/fetch-feedback-model`, named by
//! MEMSYNC_TEST_FEEDBACK_MODEL, which `scripts/test` sets), read by memsync's own tokenizer and
//! forward pass, give the reference model's tokens and vectors; and, installed, they lift
//! same-subject recall on the development sets within the false-alarm budget; and the server
//! (`--feedback-model-dir`) and the client (MEMSYNC_FEEDBACK_MODEL) use it end to end. The tests
//! that score the sets install the model in this process (it is process-wide).

use std::path::PathBuf;
use std::sync::OnceLock;

use memsync_core::feedback;
use memsync_core::feedback::embed::{self, Model};
use memsync_e2e::feedback_eval::{
    DEV_SETS, EvalSet, HELD_OUT, Ranked, Score, check_ranking, check_relate, set_dir,
};
use memsync_e2e::*;
use serde_json::json;

fn model_dir() -> PathBuf {
    let dir = std::env::var_os("MEMSYNC_TEST_FEEDBACK_MODEL").expect(
        "MEMSYNC_TEST_FEEDBACK_MODEL is not set: run the tests with scripts/test, or fetch the \
         model with scripts/fetch-feedback-model and set it to the directory printed",
    );
    PathBuf::from(dir)
}

fn model() -> &'static Model {
    static M: OnceLock<Model> = OnceLock::new();
    M.get_or_init(|| Model::load_dir(&model_dir()).unwrap_or_else(|e| panic!("{e}")))
}

fn install() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        assert!(embed::install(
            Model::load_dir(&model_dir()).unwrap_or_else(|e| panic!("{e}"))
        ));
    });
}

#[test]
fn tokens_and_vectors_are_the_reference_models() {
    let m = model();
    // Token ids as the model's own tokenizer (Hugging Face `tokenizers`, tokenizer.json) gives
    // them: accents stripped, punctuation split, ideographs apart (unknown to this vocabulary),
    // a ligature kept whole.
    assert_eq!(
        m.tokens("Élan: don't use `date-fns`!\t数据库 OK — naïve café, größe ﬁle"),
        [
            101, 3449, 2319, 1024, 2123, 1005, 1056, 2224, 1036, 3058, 1011, 1042, 3619, 1036, 999,
            100, 100, 100, 7929, 1517, 15743, 7668, 1010, 24665, 2080, 17499, 1984, 2571, 102
        ]
    );
    assert_eq!(
        m.tokens("Use snake_case for Postgres column names; never camelCase."),
        [
            101, 2224, 7488, 1035, 2553, 2005, 2695, 17603, 2015, 5930, 3415, 1025, 2196, 19130,
            18382, 1012, 102
        ]
    );
    // At most 64 tokens, the last one [SEP].
    let long = m.tokens(&"word ".repeat(500));
    assert_eq!(long.len(), 64);
    assert_eq!(long.last(), Some(&102));
    // Vectors as sentence-transformers gives them (the first one is the model card's example).
    for (text, want) in [
        (
            "This is an example sentence",
            [0.067_657, 0.063_496, 0.048_713, 0.079_305, 0.037_448],
        ),
        (
            "Use snake_case for Postgres column names; never camelCase.",
            [0.016_896, 0.039_763, -0.057_401, 0.006_370, -0.096_034],
        ),
    ] {
        let v = m.embed(text);
        assert_eq!(v.len(), 384);
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "{norm}");
        for (got, want) in v.iter().zip(want) {
            assert!((got - want).abs() < 1e-4, "{text}: {:?}", &v[..5]);
        }
    }
    // One subject in other words is close; another subject is not.
    let a = m.embed("Use date-fns for dates in the frontend.");
    let b = m.embed("Our date library is dayjs.");
    let c = m.embed("Kubernetes pods need CPU and memory limits.");
    assert!(embed::cosine(&a, &b) > 0.44, "{}", embed::cosine(&a, &b));
    assert!(embed::cosine(&a, &c) < 0.2, "{}", embed::cosine(&a, &c));
}

#[test]
fn the_model_lifts_same_subject_recall_within_the_false_alarm_budget() {
    install();
    let mut all = Score::default();
    let mut notice = 0.0;
    for name in DEV_SETS {
        let set = EvalSet::load(&set_dir(name)).unwrap_or_else(|e| panic!("{name}: {e:#}"));
        let findings = set.findings();
        let s = set.score(&findings);
        println!("{}", s.summary(&format!("{name} with the model")));
        all.merge(&s);
        notice += set.notice_curve(&findings, 10, &[Some(8)])[0].recall / DEV_SETS.len() as f64;
    }
    // The notice at session start (8 related pairs at most), ranked by the model that reads the
    // meaning's cosine too: the mean over the twelve sets was 0.843 when it was fitted (0.845
    // with each set ranked by a model fitted on the other eleven; 0.80 when pairs were ranked by
    // their closeness alone, 0.820 without the model).
    println!("notice at 8 pairs, mean of the development sets: {notice:.3}");
    assert!(notice >= 0.82, "notice at 8 pairs reaches {notice:.3}");
    println!(
        "{}",
        all.summary("development sets together, with the model")
    );
    // Measured when the model that relates the pairs the words leave silent was fitted (twelve
    // sets): same-subject recall 0.919 (0.863 without the model), 0.85 findings per 100
    // unrelated pairs (fitted to 0.85); 0.916 at 0.85 with each set decided by a model and
    // threshold fitted on the others. Contradictions are the rules' alone.
    assert!(
        all.same_subject_recall() >= 0.89,
        "same-subject recall {:.3}",
        all.same_subject_recall()
    );
    assert!(all.reach() >= 0.96, "reach {:.3}", all.reach());
    assert!(
        all.unrelated_findings_per_100() <= 1.0,
        "{:.2} findings per 100 unrelated pairs",
        all.unrelated_findings_per_100()
    );
    assert!(all.precision() >= 0.68, "precision {:.3}", all.precision());
}

#[test]
fn related_pairs_are_ranked_by_the_model_fitted_with_the_meaning() {
    install();
    let sets: Vec<Ranked> = DEV_SETS.iter().map(|n| Ranked::load(n)).collect();
    let notice = check_ranking(&sets, &memsync_core::feedback::RANK_MEANING);
    assert!(notice >= 0.82, "notice at 8 pairs reaches {notice:.3}");
    // And the model that relates the pairs the words leave silent, with its threshold.
    check_relate(
        &sets,
        (
            "RELATE_MEANING",
            &feedback::RELATE_MEANING,
            feedback::RELATE_THRESHOLD,
        ),
    );
}

#[test]
fn held_out_set_is_scored_with_the_model() {
    install();
    let set = EvalSet::load(&set_dir(HELD_OUT)).unwrap_or_else(|e| panic!("{e:#}"));
    let findings = set.findings();
    let s = set.score(&findings);
    println!(
        "{}",
        s.summary(&format!(
            "{HELD_OUT} with the model (printed, never asserted)"
        ))
    );
    for p in set.notice_curve(&findings, 10, &[Some(0), Some(5), Some(8), Some(10), None]) {
        println!(
            "  notice listing at most {:?} related pairs: {:.1} lines, contradictions reaching the agent {:.3}",
            p.cap, p.lines, p.recall
        );
    }
}

const ORIGIN: &str = "git@github.com:acme/api.git";

fn feedback_memory(name: &str, description: &str, rule: &str) -> String {
    format!(
        "---\nname: {name}\ndescription: {description}\ntype: feedback\n---\n{rule}\n\n**Why:** it bit us before.\n"
    )
}

/// The team's rule.
fn keep_commits() -> String {
    feedback_memory(
        "history",
        "how branches land",
        "Keep every commit of a branch when it lands on main.",
    )
}

/// One on the same subject in other words: the detector alone pairs nothing, the model does.
fn squash() -> String {
    feedback_memory(
        "tidy-prs",
        "before merging",
        "Squash commits before merging a pull request.",
    )
}

/// The server's team check and `memsync check` on this machine, each with and without the
/// model: the pair the words miss is `related` by meaning only where the model is configured.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_and_the_client_find_a_pair_close_in_meaning() {
    let dir = model_dir();
    let dir = dir.to_str().unwrap();
    let db = TestDb::new().await;
    let plain = Server::start_with_env(&db.url, &[], &[]);
    let modelled = Server::start_with_env(&db.url, &[], &[("MEMSYNC_FEEDBACK_MODEL_DIR", dir)]);
    assert!(
        modelled.log().contains("feedback embedding model loaded"),
        "{}",
        modelled.log()
    );
    let alice = modelled.client(&modelled.token("alice", &["acme"]));
    let r = alice
        .push(
            "acme/api",
            &batch(vec![put("history.md", &keep_commits(), None)]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let ask = |server: &Server| {
        let c = server.client(&server.token("alice", &["acme"]));
        async move {
            c.post(
                "/v1/projects/acme/api/feedback/check",
                &json!({ "path": "tidy-prs.md", "content": squash() }),
            )
            .await
        }
    };
    let r = ask(&plain).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["findings"], json!([]), "{}", r.text);
    let r = ask(&modelled).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let f = &r.body["findings"][0];
    assert_eq!(f["team"], "history.md", "{}", r.text);
    assert_eq!(f["kind"], "related", "{}", r.text);
    assert!(
        f["reason"].as_str().unwrap().contains("close in meaning"),
        "{f}"
    );
    // Related is no conflict: the push passes.
    let r = alice
        .push(
            "acme/api",
            &batch(vec![put("tidy-prs.md", &squash(), None)]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let sha = sha_of(&r.body, "tidy-prs.md").expect("the push's sha256 of tidy-prs.md");
    let r = alice
        .push("acme/api", &batch(vec![delete("tidy-prs.md", Some(&sha))]))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);

    // The client: private feedback against the team's, on this machine.
    let bob = User::new(&modelled, "bob", &["acme"], ORIGIN);
    assert_eq!(bob.run(&["pull"]).code, 0);
    std::fs::write(bob.private_dir().join("tidy-prs.md"), squash()).unwrap();
    let r = bob.run(&["check", "--json"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.json()["conflicts"], json!([]), "{}", r.stdout);
    let r = bob.run_with(&["check", "--json"], &[("MEMSYNC_FEEDBACK_MODEL", dir)]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let c = &r.json()["conflicts"][0];
    assert_eq!(
        (
            c["private"].as_str(),
            c["team"].as_str(),
            c["kind"].as_str()
        ),
        (Some("tidy-prs.md"), Some("history.md"), Some("related")),
        "{}",
        r.stdout
    );
    // The vectors are kept for the next run (the SHA-256 of each text and its vector, never
    // the text): one per feedback memory read, private and team.
    let cache = bob.home.path().join(".cache/memsync/feedback-vectors.bin");
    let bytes = std::fs::read(&cache).expect("the vectors are kept");
    let header = b"memsync feedback vectors 1\n".len() + 32 + 4;
    assert_eq!((bytes.len() - header) % (32 + 4 * 384), 0);
    assert_eq!((bytes.len() - header) / (32 + 4 * 384), 2);
    assert!(!String::from_utf8_lossy(&bytes).contains("Squash commits"));
    // …and read instead of running the model: made all alike, the two are alike in full.
    let mut alike = bytes[..header].to_vec();
    for entry in bytes[header..].chunks_exact(32 + 4 * 384) {
        alike.extend_from_slice(&entry[..32]);
        alike.extend_from_slice(&1f32.to_le_bytes());
        alike.extend(std::iter::repeat_n(0u8, 4 * 383));
    }
    std::fs::write(&cache, &alike).unwrap();
    let r = bob.run_with(&["check", "--json"], &[("MEMSYNC_FEEDBACK_MODEL", dir)]);
    let reason = r.json()["conflicts"][0]["reason"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(reason.contains("(100% by the embedding model)"), "{reason}");
    // A damaged file is only a cache: the model runs again, and the file is written anew.
    std::fs::write(&cache, b"memsync feedback vectors 1\ngarbage").unwrap();
    let r = bob.run_with(&["check", "--json"], &[("MEMSYNC_FEEDBACK_MODEL", dir)]);
    let again = r.json()["conflicts"][0]["reason"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        again.contains("close in meaning") && !again.contains("(100%"),
        "{again}"
    );
    assert_eq!(std::fs::read(&cache).unwrap(), bytes);
    // The session-start notice lists it too.
    let r = bob.run_with(
        &["hook", "session-start"],
        &[("MEMSYNC_FEEDBACK_MODEL", dir)],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("tidy-prs.md") && r.stdout.contains("history.md"),
        "{}",
        r.stdout
    );

    // A directory without a model: `memsync check` fails naming the setting; the hook goes on
    // with the detector alone and says why.
    let empty = tempfile::tempdir().unwrap();
    let empty = empty.path().to_str().unwrap();
    let r = bob.run_with(&["check"], &[("MEMSYNC_FEEDBACK_MODEL", empty)]);
    assert_ne!(r.code, 0, "{}", r.stdout);
    assert!(
        r.stderr.contains("MEMSYNC_FEEDBACK_MODEL") && r.stderr.contains("model.safetensors"),
        "{}",
        r.stderr
    );
    let r = bob.run_with(
        &["hook", "session-start"],
        &[("MEMSYNC_FEEDBACK_MODEL", empty)],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("MEMSYNC_FEEDBACK_MODEL"), "{}", r.stdout);
}

/// A directory that holds no model stops the server, naming the setting.
#[test]
fn a_server_given_no_model_stops_naming_the_setting() {
    let data = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(bin_path("memsync-server"))
        .args(["--data-dir"])
        .arg(data.path())
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("MEMSYNC_JWT_SECRET", TEST_JWT_SECRET)
        .env("MEMSYNC_FEEDBACK_MODEL_DIR", empty.path())
        .env_remove("MEMSYNC_DATABASE_URL")
        .env_remove("DATABASE_URL")
        .output()
        .expect("run memsync-server");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--feedback-model-dir") && err.contains("model.safetensors"),
        "{err}"
    );
}
