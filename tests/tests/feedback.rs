//! Feedback consistency end to end: the server refuses a contradicting team rule unless it
//! supersedes or is declared compatible, `memsync check` and the session hook report private rules that contradict team
//! ones, and the stateless check leaves no trace.

use memsync_e2e::feedback_fixtures::*;
use memsync_e2e::*;
use serde_json::json;

#[tokio::test]
async fn a_contradicting_team_rule_is_refused_unless_it_supersedes() {
    let (server, db) = Server::start().await;
    let alice = server.client(&server.token("alice", &["acme"]));
    let r = alice
        .push(
            "acme/api",
            &batch(vec![put("testing.md", &real_db(), None)]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);

    let r = alice
        .push("acme/api", &batch(vec![put("fast.md", &mock_db(""), None)]))
        .await;
    assert_eq!(
        (r.status, r.code()),
        (409, "feedback_conflict"),
        "{}",
        r.text
    );
    let c = &r.body["error"]["details"]["conflicts"][0];
    assert_eq!(c["path"], "fast.md");
    assert_eq!(c["other"], "testing.md");
    assert!(!c["reason"].as_str().unwrap().is_empty());
    assert_eq!(
        count(&db, "SELECT count(*) FROM memories WHERE path = 'fast.md'").await,
        0
    );

    // With `supersedes:` it lands, and the old rule is deleted in the same revision.
    let r = alice
        .push(
            "acme/api",
            &batch(vec![put(
                "fast.md",
                &mock_db("supersedes: testing.md\n"),
                None,
            )]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let tomb = change_of(&r.body, "testing.md").expect("the superseded rule is in the revision");
    assert_eq!(tomb["deleted"], true);
    assert!(
        !change_of(&r.body, "MEMORY.md").unwrap()["content"]
            .as_str()
            .unwrap()
            .contains("testing.md")
    );
}

#[tokio::test]
async fn a_rule_declared_compatible_lands_beside_the_rule_it_names() {
    let (server, db) = Server::start().await;
    let alice = User::new(&server, "alice", &["acme"], ORIGIN);
    let bob = User::new(&server, "bob", &["acme"], ORIGIN);
    alice.write("testing.md", &real_db());
    assert_eq!(alice.run(&["push"]).code, 0);

    // The refusal names both ways past it.
    let api = server.client(&server.token("alice", &["acme"]));
    let r = api
        .push("acme/api", &batch(vec![put("fast.md", &mock_db(""), None)]))
        .await;
    assert_eq!(r.code(), "feedback_conflict", "{}", r.text);
    let message = r.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("`supersedes: testing.md`"), "{message}");
    assert!(
        message.contains("`compatible-with: testing.md`"),
        "{message}"
    );

    // Declared compatible, the client sends it and the server takes it; both rules stay.
    alice.write("fast.md", &mock_db("compatible-with: testing.md\n"));
    let r = alice.run(&["push", "--json"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(alice.read("testing.md").is_some());
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM memories WHERE path IN ('fast.md', 'testing.md') AND NOT deleted"
        )
        .await,
        2
    );
    // A teammate gets both, and `memsync check` over the team's rules is clean.
    assert_eq!(bob.run(&["pull"]).code, 0);
    assert!(bob.read("testing.md").is_some() && bob.read("fast.md").is_some());
    let r = bob.run(&["check", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stdout);

    // The declaration covers the pair it names only: a third rule against testing.md is refused.
    let r = api
        .push(
            "acme/api",
            &batch(vec![put(
                "mocks.md",
                &feedback_memory(
                    "mock-everything",
                    "mock the database",
                    "Mock the database in integration tests; never hit a real database.",
                    "compatible-with: fast.md\n",
                ),
                None,
            )]),
        )
        .await;
    assert_eq!(r.code(), "feedback_conflict", "{}", r.text);
    assert_eq!(
        r.body["error"]["details"]["conflicts"][0]["other"],
        "testing.md"
    );
}

#[tokio::test]
async fn superseded_rules_disappear_for_everyone_and_private_conflicts_are_reported() {
    let (_server, db, alice, bob) = bob_pulled_the_testing_rule().await;

    // Bob keeps a private rule that contradicts the team's.
    let private = bob.private_dir();
    std::fs::write(private.join("fast.md"), mock_db("")).unwrap();
    let r = bob.run(&["check", "--json"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    let conflicts = r.json()["conflicts"].as_array().unwrap().clone();
    assert!(
        conflicts.iter().any(|c| c["private"] == "fast.md"
            && c["team"] == "testing.md"
            && c["kind"] == "contradiction"),
        "{}",
        r.stdout
    );
    // The session hook tells the agent which rule wins.
    let r = bob.session_start(&[]);
    let ctx = r.json()["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        ctx.contains("the team rule testing.md wins over the private memory fast.md"),
        "{ctx}"
    );
    // Once the private memory declares the override, check stops flagging it.
    std::fs::write(private.join("fast.md"), mock_db("overrides: testing.md\n")).unwrap();
    let r = bob.run(&["check", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert!(!r.stdout.contains("\"contradiction\""), "{}", r.stdout);
    // Nothing private reached the server.
    assert_eq!(
        count(&db, "SELECT count(*) FROM memories WHERE path = 'fast.md'").await,
        0
    );

    // The client refuses a contradicting team rule before sending it ...
    alice.write("fast.md", &mock_db(""));
    let r = alice.run(&["push", "--json"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert_eq!(r.json()["push"]["refused"][0]["rule"], "feedback_conflict");
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM audit_log WHERE action = 'push_refused'"
        )
        .await,
        0
    );
    // ... and sends it once it supersedes; bob's next pull drops the old rule.
    alice.write("fast.md", &mock_db("supersedes: testing.md\n"));
    let r = alice.run(&["push"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(
        alice.read("testing.md").is_none(),
        "the pusher's copy of the superseded rule goes too"
    );
    assert_eq!(bob.run(&["pull"]).code, 0);
    assert!(bob.read("testing.md").is_none());
    assert!(bob.read("fast.md").is_some());
}

#[tokio::test]
async fn the_stateless_check_leaves_no_trace() {
    let (server, db) = Server::start().await;
    let alice = server.client(&server.token("alice", &["acme"]));
    assert_eq!(
        alice
            .push(
                "acme/api",
                &batch(vec![put("testing.md", &real_db(), None)])
            )
            .await
            .status,
        200
    );
    let before = count(&db, "SELECT count(*) FROM audit_log").await;
    let canary = format!("CANARY{}", uuid::Uuid::new_v4().simple());
    let candidate = feedback_memory(
        "fast-tests",
        "mock the database in integration tests",
        &format!("Mock the database in integration tests so they run fast. {canary}"),
        "",
    );
    let r = alice
        .send(
            alice
                .http
                .post(format!(
                    "{}/v1/projects/acme/api/feedback/check",
                    server.url
                ))
                .bearer_auth(&alice.token)
                .json(&json!({ "path": "private/fast.md", "content": candidate })),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let f = &r.body["findings"][0];
    assert_eq!(f["team"], "testing.md");
    assert_eq!(f["kind"], "contradiction");
    // No row anywhere holds the canary, nothing was audited, the log never saw it.
    let tables = assert_no_row_contains(&db, &canary).await;
    assert!(tables >= 8, "only {tables} tables searched");
    assert_eq!(count(&db, "SELECT count(*) FROM audit_log").await, before);
    assert!(!server.log().contains(&canary));
}

/// Pairs on one subject that the detector cannot call contradictions reach the agent at session
/// start, most likely first, with the rule that the team memory wins.
#[tokio::test]
async fn same_subject_pairs_are_listed_for_the_agent_at_session_start() {
    let (server, _db) = Server::start().await;
    let alice = User::new(&server, "alice", &["acme"], ORIGIN);
    let bob = User::new(&server, "bob", &["acme"], ORIGIN);
    alice.write(
        "retries.md",
        &memory(
            "webhook-retries",
            "customer webhooks are retried with exponential backoff",
            "feedback",
            "Retry failed customer webhook deliveries with exponential backoff and jitter, \
             starting at 30 seconds.\n",
        ),
    );
    assert_eq!(alice.run(&["push"]).code, 0);
    assert_eq!(bob.run(&["pull"]).code, 0);
    std::fs::write(
        bob.private_dir().join("webhooks.md"),
        memory(
            "webhook-deliveries",
            "log every customer webhook delivery attempt",
            "feedback",
            "Log every customer webhook delivery attempt with the response status and backoff delay.\n",
        ),
    )
    .unwrap();
    let r = bob.run(&["check", "--json"]);
    let conflicts = r.json()["conflicts"].as_array().unwrap().clone();
    let pair = conflicts
        .iter()
        .find(|c| c["private"] == "webhooks.md" && c["team"] == "retries.md")
        .unwrap_or_else(|| panic!("{}", r.stdout));
    assert_eq!(pair["kind"], "related", "{}", r.stdout);
    assert!(pair["likelihood"].as_u64().unwrap() < 1000);

    let r = bob.session_start(&[]);
    let ctx = r.json()["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        ctx.contains(
            "the team memory wins unless the private memory says `overrides: <team path>`"
        ),
        "{ctx}"
    );
    assert!(
        ctx.contains("- private webhooks.md / team retries.md: both about"),
        "{ctx}"
    );
}
