//! The client's prediction and the server's answer agree: generated batches, pushed to a real
//! server over a generated project state, get the verdict `memsync_core::policy::judge` (what the
//! client runs before uploading) predicts: accepted (with the same superseded memories), or
//! refused with the same rule ids.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};

use memsync_core::policy::{self, Limits, ProjectState, Verdict};
use memsync_core::wire::{PushChange, PushOp, PushRequest};
use memsync_e2e::*;
use proptest::prelude::*;
use serde_json::Value;

const LIMITS: Limits = Limits {
    max_file_bytes: 102_400,
    max_changes_per_push: 2000,
};

fn mem(name: &str, kind: &str, body: &str, extra: &str) -> String {
    format!("---\nname: {name}\ndescription: about {name}\ntype: {kind}\n{extra}---\n{body}\n")
}

/// What a generated change writes.
#[derive(Debug, Clone)]
enum Content {
    Project,
    Tabs,
    Spaces { supersedes: bool },
    UserType,
    NoFrontmatter,
    Secret(u64),
    Index,
    IndexNul,
}

impl Content {
    fn text(&self, name: &str) -> String {
        match self {
            Content::Project => mem(name, "project", &format!("Notes about {name}."), ""),
            Content::Tabs => mem(name, "feedback", "Always indent Python code with tabs.", ""),
            Content::Spaces { supersedes } => mem(
                name,
                "feedback",
                "Never indent Python code with tabs; use four spaces.",
                if *supersedes {
                    "supersedes: tabs.md\n"
                } else {
                    ""
                },
            ),
            Content::UserType => mem(name, "user", "I prefer short answers.", ""),
            Content::NoFrontmatter => format!("just text about {name}\n"),
            Content::Secret(seed) => mem(
                name,
                "reference",
                &format!(
                    "aws_access_key_id = {}\naws_secret_access_key = {}",
                    aws_key_id(*seed),
                    aws_secret(*seed)
                ),
                "",
            ),
            Content::Index => "- [Notes](notes.md) — notes\n".to_owned(),
            Content::IndexNul => "- [Notes](notes.md) — no\u{0}tes\n".to_owned(),
        }
    }
}

fn content() -> impl Strategy<Value = Content> {
    prop_oneof![
        4 => Just(Content::Project),
        2 => Just(Content::Tabs),
        2 => any::<bool>().prop_map(|supersedes| Content::Spaces { supersedes }),
        1 => Just(Content::UserType),
        1 => Just(Content::NoFrontmatter),
        1 => (1u64..1_000_000).prop_map(Content::Secret),
    ]
}

fn path() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "notes.md",
        "Notes.md",
        "tabs.md",
        "spaces.md",
        "seed.md",
        "seed.md/x.md",
        "infra/db.md",
        "Infra/cache.md",
        "memory.md",
        "MEMORY.md/x.md",
    ])
}

#[derive(Debug, Clone)]
enum Gen {
    Put(&'static str, Content),
    Delete(&'static str),
    PutIndex(Content),
}

fn change() -> impl Strategy<Value = Gen> {
    prop_oneof![
        6 => (path(), content()).prop_map(|(p, c)| Gen::Put(p, c)),
        2 => path().prop_map(Gen::Delete),
        1 => prop_oneof![Just(Content::Index), Just(Content::IndexNul)].prop_map(Gen::PutIndex),
    ]
}

/// The seed: valid memories at distinct, non-clashing paths; optionally many, for the
/// mass-delete hold.
#[derive(Debug, Clone)]
struct Case {
    seed: Vec<(&'static str, bool)>,
    bulk: usize,
    changes: Vec<Gen>,
    delete_bulk: usize,
    allow_mass_delete: bool,
}

fn case() -> impl Strategy<Value = Case> {
    let seed = prop::collection::btree_map(
        prop::sample::select(vec![
            "notes.md",
            "tabs.md",
            "seed.md",
            "infra/db.md",
            "spaces.md",
        ]),
        any::<bool>(),
        0..5,
    )
    .prop_map(|m| m.into_iter().collect::<Vec<_>>());
    let bulk = prop_oneof![4 => Just(0usize), 1 => Just(60usize)];
    (
        seed,
        bulk,
        prop::collection::vec(change(), 1..5),
        0usize..60,
        any::<bool>(),
    )
        .prop_map(
            |(seed, bulk, changes, delete_bulk, allow_mass_delete)| Case {
                seed,
                delete_bulk: delete_bulk.min(bulk),
                bulk,
                changes,
                allow_mass_delete,
            },
        )
}

fn put(path: &str, content: String) -> PushChange {
    PushChange {
        path: path.into(),
        op: PushOp::Put,
        base_sha256: None,
        content: Some(content),
        named_paths: Vec::new(),
    }
}

/// The server's verdict, in the policy's terms.
fn server_verdict(r: &Resp) -> Verdict {
    match (r.status, r.code()) {
        (200, _) => Verdict::Accepted {
            superseded: Vec::new(),
        },
        (409, "feedback_conflict") => Verdict::FeedbackConflict(Vec::new()),
        (422, "validation_failed") => Verdict::Refused(
            r.body["error"]["details"]["failures"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|f| serde_json::from_value(f.clone()).expect("a failure"))
                .collect(),
        ),
        _ => panic!("unexpected answer {}: {}", r.status, r.text),
    }
}

#[test]
fn the_clients_prediction_is_the_servers_answer() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (server, _db) = rt.block_on(Server::start());
    let alice = server.client(&server.token("alice", &["acme"]));
    let n = AtomicUsize::new(0);
    let (accepted, refused) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let config = ProptestConfig {
        cases: 48,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    proptest!(config, |(case in case())| {
        let project = format!("acme/p{}", n.fetch_add(1, Ordering::Relaxed));
        // Seed the project with one accepted push.
        let mut seed: Vec<PushChange> = case
            .seed
            .iter()
            .map(|(p, feedback)| {
                let name = p.trim_end_matches(".md").replace('/', "-");
                let text = if *feedback && *p == "tabs.md" {
                    Content::Tabs.text(&name)
                } else {
                    Content::Project.text(&name)
                };
                put(p, text)
            })
            .collect();
        seed.extend((0..case.bulk).map(|i| put(&format!("bulk/m{i}.md"), mem(&format!("m{i}"), "project", "x", ""))));
        seed.push(put("base.md", mem("base", "project", "The base.", "")));
        let r = rt.block_on(alice.push(&project, &serde_json::to_value(PushRequest {
            changes: seed,
            allow_mass_delete: false,
            allow_purged: false,
            provenance: None,
        }).unwrap()));
        prop_assert_eq!(r.status, 200, "seed: {}", r.text);
        let pulled = rt.block_on(alice.pull(&project, 0));
        let mut state = ProjectState::default();
        let mut shas: BTreeMap<String, String> = BTreeMap::new();
        for c in pulled.body["changes"].as_array().unwrap() {
            if c["deleted"] == false {
                let p = c["path"].as_str().unwrap().to_owned();
                state.live.insert(p.clone(), c["content"].as_str().unwrap().to_owned());
                shas.insert(p, c["sha256"].as_str().unwrap().to_owned());
            }
        }

        // The batch, with correct bases (no edit conflicts: those are not policy).
        let mut changes = Vec::new();
        let mut used = BTreeSet::new();
        for g in &case.changes {
            let (p, op, text) = match g {
                Gen::Put(p, c) => (p.to_string(), PushOp::Put, Some(c.text(&p.trim_end_matches(".md").replace('/', "-").to_lowercase()))),
                Gen::Delete(p) => (p.to_string(), PushOp::Delete, None),
                Gen::PutIndex(c) => ("MEMORY.md".to_owned(), PushOp::Put, Some(c.text("MEMORY"))),
            };
            if !used.insert(p.clone()) || (op == PushOp::Delete && !shas.contains_key(&p)) {
                continue;
            }
            let base = shas.get(&p).map(|s| s.parse().unwrap());
            changes.push(PushChange { path: p, op, base_sha256: base, content: text, named_paths: Vec::new(), });
        }
        for i in 0..case.delete_bulk {
            let p = format!("bulk/m{i}.md");
            let base = shas.get(&p).map(|s| s.parse().unwrap());
            changes.push(PushChange { path: p, op: PushOp::Delete, base_sha256: base, content: None, named_paths: Vec::new(), });
        }
        let req = PushRequest {
            changes,
            allow_mass_delete: case.allow_mass_delete,
            allow_purged: false,
            provenance: None,
        };
        let predicted = policy::judge(&req, &state, LIMITS);
        let r = rt.block_on(alice.push(&project, &serde_json::to_value(&req).unwrap()));
        let answered = server_verdict(&r);
        prop_assert_eq!(predicted.rules(), answered.rules(), "{:?}\nserver: {}", case, r.text);
        if let (Verdict::Accepted { superseded }, 200) = (&predicted, r.status) {
            accepted.fetch_add(1, Ordering::Relaxed);
            // The superseded memory is deleted in the same revision.
            for p in superseded {
                let gone = r.body["changes"].as_array().unwrap().iter().any(|c: &Value| c["path"] == p.as_str() && c["deleted"] == true);
                prop_assert!(gone, "{} not deleted: {}", p, r.text);
            }
        } else {
            refused.fetch_add(1, Ordering::Relaxed);
        }
    });
    let (a, f) = (accepted.into_inner(), refused.into_inner());
    println!("{a} batches accepted, {f} refused, all as predicted");
    // Both outcomes were exercised, or the agreement says little.
    assert!(a >= 5 && f >= 5, "accepted {a}, refused {f}");
}
