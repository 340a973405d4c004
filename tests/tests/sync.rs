//! Pull/push round trips against the real server and a real PostgreSQL.

use memsync_e2e::*;
use serde_json::json;

const P: &str = "acme/api";

#[tokio::test]
async fn round_trip_snapshot_incremental_304_and_tombstones() {
    let (server, db) = Server::start().await;
    let alice = server.client(&server.token("alice", &["acme"]));
    let a = memory(
        "testing-policy",
        "tests hit a real db",
        "feedback",
        "Use a real database.\n",
    );
    let b = memory(
        "deploys",
        "how we deploy",
        "project",
        "Deploys go through CI.\n",
    );
    let r = alice
        .push(
            P,
            &batch(vec![
                put("testing.md", &a, None),
                put("ops/deploy.md", &b, None),
            ]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["revision"], 1);
    // The server keeps every directory's index: root links the file and the subdir index.
    let root_index = change_of(&r.body, "MEMORY.md").expect("root index")["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(root_index.contains("(testing.md)"), "{root_index}");
    assert!(root_index.contains("(ops/MEMORY.md)"), "{root_index}");
    assert!(
        change_of(&r.body, "ops/MEMORY.md").unwrap()["content"]
            .as_str()
            .unwrap()
            .contains("(deploy.md)")
    );

    // Full snapshot from 0, byte for byte.
    let full = alice.pull(P, 0).await;
    assert_eq!(full.status, 200);
    assert_eq!(full.body["revision"], 1);
    assert_eq!(
        change_of(&full.body, "testing.md").unwrap()["content"],
        a.as_str()
    );
    assert_eq!(
        change_of(&full.body, "ops/deploy.md").unwrap()["content"],
        b.as_str()
    );
    let etag = full.headers["etag"].to_str().unwrap().to_owned();

    // Nothing changed: 304 with the same ETag.
    let nm = alice
        .send(
            alice
                .get(&format!("/v1/projects/{P}/changes?since=1"))
                .header("if-none-match", &etag),
        )
        .await;
    assert_eq!(nm.status, 304);
    assert!(nm.text.is_empty());

    // A second revision: edit one file, delete the other.
    let a2 = a.replace("real database", "real PostgreSQL");
    let r2 = alice
        .push(
            P,
            &batch(vec![
                put(
                    "testing.md",
                    &a2,
                    sha_of(&full.body, "testing.md").as_deref(),
                ),
                delete(
                    "ops/deploy.md",
                    sha_of(&full.body, "ops/deploy.md").as_deref(),
                ),
            ]),
        )
        .await;
    assert_eq!(r2.status, 200, "{}", r2.text);
    assert_eq!(r2.body["revision"], 2);

    // The ETag no longer matches.
    let changed = alice
        .send(
            alice
                .get(&format!("/v1/projects/{P}/changes?since=1"))
                .header("if-none-match", &etag),
        )
        .await;
    assert_eq!(changed.status, 200);
    // Incremental pull from 1: only what revision 2 touched, with the tombstones.
    let paths: Vec<&str> = changed.body["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert!(
        paths.contains(&"testing.md") && paths.contains(&"ops/deploy.md"),
        "{paths:?}"
    );
    let tomb = change_of(&changed.body, "ops/deploy.md").unwrap();
    assert_eq!(tomb["deleted"], true);
    assert!(tomb.get("content").is_none() && tomb.get("sha256").is_none());
    // The emptied directory's index is tombstoned too, and root no longer links it.
    assert_eq!(
        change_of(&changed.body, "ops/MEMORY.md").unwrap()["deleted"],
        true
    );
    let root = change_of(&changed.body, "MEMORY.md").unwrap()["content"]
        .as_str()
        .unwrap();
    assert!(!root.contains("ops/MEMORY.md"), "{root}");

    // A client that was behind (at revision 0) gets the tombstones in a full snapshot.
    let bob = server.client(&server.token("bob", &["acme"]));
    let behind = bob.pull(P, 0).await;
    assert_eq!(
        change_of(&behind.body, "ops/deploy.md").unwrap()["deleted"],
        true
    );
    assert_eq!(
        change_of(&behind.body, "testing.md").unwrap()["content"],
        a2.as_str()
    );

    // A stale client still holding the deleted file with its old base cannot resurrect it.
    let stale = bob
        .push(
            P,
            &batch(vec![put(
                "ops/deploy.md",
                &(b.clone() + "more\n"),
                sha_of(&full.body, "ops/deploy.md").as_deref(),
            )]),
        )
        .await;
    assert_eq!(stale.status, 409, "{}", stale.text);
    assert_eq!(stale.code(), "conflict");
    let c = &stale.body["error"]["details"]["conflicts"][0];
    assert_eq!(c["reason"], "deleted_on_server");
    assert_eq!(c["server"]["deleted"], true);
    // A stale delete of a file that changed since is a conflict too, never a silent loss.
    let stale_del = bob
        .push(
            P,
            &batch(vec![delete(
                "testing.md",
                sha_of(&full.body, "testing.md").as_deref(),
            )]),
        )
        .await;
    assert_eq!(stale_del.status, 409);
    assert_eq!(
        stale_del.body["error"]["details"]["conflicts"][0]["reason"],
        "changed_on_server"
    );
    assert_eq!(count(&db, "SELECT revision FROM projects").await, 2);

    // Deliberately re-creating it (no base) is allowed.
    let again = bob
        .push(P, &batch(vec![put("ops/deploy.md", &b, None)]))
        .await;
    assert_eq!(again.status, 200, "{}", again.text);

    // Every version is kept.
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM memory_versions WHERE path = 'ops/deploy.md'"
        )
        .await,
        3
    );
    // A client ahead of the server is told to start over.
    let ahead = alice.pull(P, 99).await;
    assert_eq!((ahead.status, ahead.code()), (400, "since_ahead"));
}

#[tokio::test]
async fn three_way_merge_and_overlap_conflict() {
    let (server, _db) = Server::start().await;
    let alice = server.client(&server.token("alice", &["acme"]));
    let bob = server.client(&server.token("bob", &["acme"]));
    let base = memory(
        "style",
        "code style notes",
        "project",
        "Para one.\n\nPara two.\n\nPara three.\n",
    );
    let r = alice
        .push(P, &batch(vec![put("style.md", &base, None)]))
        .await;
    let base_sha = sha_of(&r.body, "style.md").unwrap();

    let ours = base.replace("Para one.", "Para one, edited by alice.");
    let theirs = base.replace("Para three.", "Para three, edited by bob.");
    assert_eq!(
        alice
            .push(P, &batch(vec![put("style.md", &ours, Some(&base_sha))]))
            .await
            .status,
        200
    );
    let merged = bob
        .push(P, &batch(vec![put("style.md", &theirs, Some(&base_sha))]))
        .await;
    assert_eq!(merged.status, 200, "{}", merged.text);
    assert_eq!(merged.body["merged"], json!(["style.md"]));
    let text = change_of(&merged.body, "style.md").unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        text.contains("edited by alice") && text.contains("edited by bob"),
        "{text}"
    );

    // Same line edited by both: 409 with the server's version; nothing applied.
    let merged_sha = sha_of(&merged.body, "style.md").unwrap();
    let a2 = text.replace("Para two.", "Para two (alice).");
    let b2 = text.replace("Para two.", "Para two (bob).");
    assert_eq!(
        alice
            .push(P, &batch(vec![put("style.md", &a2, Some(&merged_sha))]))
            .await
            .status,
        200
    );
    let conflict = bob
        .push(P, &batch(vec![put("style.md", &b2, Some(&merged_sha))]))
        .await;
    assert_eq!(conflict.status, 409, "{}", conflict.text);
    let c = &conflict.body["error"]["details"]["conflicts"][0];
    assert_eq!(c["reason"], "overlapping_edit");
    assert_eq!(c["server"]["content"], a2.as_str());
    let now = alice.pull(P, 0).await;
    assert_eq!(
        change_of(&now.body, "style.md").unwrap()["content"],
        a2.as_str()
    );

    // Two edits that merge cleanly but whose result breaks a rule (over 100 KiB) are a conflict,
    // never a stored invalid file.
    let big = memory(
        "big",
        "large notes",
        "project",
        &format!("Top.\n\n{}\n\nBottom.\n", "filler line\n".repeat(4000)),
    );
    let r = alice.push(P, &batch(vec![put("big.md", &big, None)])).await;
    let big_sha = sha_of(&r.body, "big.md").unwrap();
    let pad = "x".repeat(60) + "\n";
    let top = big.replace("Top.\n", &format!("Top.\n{}", pad.repeat(500)));
    let bottom = big.replace("Bottom.\n", &format!("Bottom.\n{}", pad.repeat(500)));
    assert_eq!(
        alice
            .push(P, &batch(vec![put("big.md", &top, Some(&big_sha))]))
            .await
            .status,
        200
    );
    let r = bob
        .push(P, &batch(vec![put("big.md", &bottom, Some(&big_sha))]))
        .await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(
        r.body["error"]["details"]["conflicts"][0]["reason"],
        "merge_invalid"
    );
}

#[tokio::test]
async fn index_entries_added_at_once_both_land() {
    let (server, _db) = Server::start().await;
    let alice = server.client(&server.token("alice", &["acme"]));
    let bob = server.client(&server.token("bob", &["acme"]));
    let r = alice
        .push(
            P,
            &batch(vec![put(
                "a.md",
                &memory("a", "first", "project", "A\n"),
                None,
            )]),
        )
        .await;
    let idx0 = change_of(&r.body, "MEMORY.md").unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    let idx_sha = sha_of(&r.body, "MEMORY.md").unwrap();
    // Both add a file and their own index entry (with a hand-written hook) from the same base.
    let ia = format!("{idx0}- [Alice note](b.md) — alice's own words\n");
    let ib = format!("{idx0}- [Bob note](c.md) — bob's own words\n");
    let ra = alice
        .push(
            P,
            &batch(vec![
                put("b.md", &memory("b", "second", "project", "B\n"), None),
                put("MEMORY.md", &ia, Some(&idx_sha)),
            ]),
        )
        .await;
    assert_eq!(ra.status, 200, "{}", ra.text);
    let rb = bob
        .push(
            P,
            &batch(vec![
                put("c.md", &memory("c", "third", "project", "C\n"), None),
                put("MEMORY.md", &ib, Some(&idx_sha)),
            ]),
        )
        .await;
    assert_eq!(rb.status, 200, "{}", rb.text);
    let idx = change_of(&rb.body, "MEMORY.md").unwrap()["content"]
        .as_str()
        .unwrap();
    assert!(
        idx.contains("- [Alice note](b.md) — alice's own words"),
        "{idx}"
    );
    assert!(
        idx.contains("- [Bob note](c.md) — bob's own words"),
        "{idx}"
    );
    assert!(idx.contains("(a.md)"), "{idx}");
    assert_eq!(rb.body["merged"], json!(["MEMORY.md"]));

    // A dangling entry pushed by a client is dropped; a file without an entry gets one.
    let cur_sha = sha_of(&rb.body, "MEMORY.md").unwrap();
    let bad = "- [Gone](gone.md) — no such file\n- [A](a.md) — first\n";
    let r = alice
        .push(P, &batch(vec![put("MEMORY.md", bad, Some(&cur_sha))]))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let idx = change_of(&r.body, "MEMORY.md").unwrap()["content"]
        .as_str()
        .unwrap();
    assert!(!idx.contains("gone.md"), "{idx}");
    for f in ["a.md", "b.md", "c.md"] {
        assert!(idx.contains(&format!("({f})")), "{f} missing: {idx}");
    }
}

#[tokio::test]
async fn idempotent_retry_applies_once() {
    let (server, db) = Server::start().await;
    let alice = server.client(&server.token("alice", &["acme"]));
    let body = batch(vec![put("x.md", &memory("x", "x", "project", "X\n"), None)]);
    let first = alice.push_with_key(P, &body, "key-1").await;
    assert_eq!(first.status, 200);
    let again = alice.push_with_key(P, &body, "key-1").await;
    assert_eq!(again.status, 200);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    assert_eq!(again.body, first.body);
    assert_eq!(count(&db, "SELECT revision FROM projects").await, 1);
    // The same key with another body is refused, not applied.
    let other = batch(vec![put("y.md", &memory("y", "y", "project", "Y\n"), None)]);
    let reused = alice.push_with_key(P, &other, "key-1").await;
    assert_eq!(
        (reused.status, reused.code()),
        (422, "idempotency_key_reused")
    );
    assert_eq!(
        count(&db, "SELECT count(*) FROM memories WHERE path = 'y.md'").await,
        0
    );
    // Concurrent retries of one push: still applied once.
    let body3 = batch(vec![put("z.md", &memory("z", "z", "project", "Z\n"), None)]);
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let c = alice.clone();
            let b = body3.clone();
            tokio::spawn(async move { c.push_with_key(P, &b, "key-z").await.status })
        })
        .collect();
    for t in tasks {
        assert_eq!(t.await.unwrap(), 200);
    }
    assert_eq!(count(&db, "SELECT revision FROM projects").await, 2);
}

#[tokio::test]
async fn mass_delete_is_held_unless_allowed() {
    let (server, db) = Server::start().await;
    let alice = server.client(&server.token("alice", &["acme"]));
    let mut changes = Vec::new();
    for i in 0..60 {
        changes.push(put(
            &format!("d{}/m{i}.md", i / 30),
            &memory(&format!("m{i}"), "note", "project", "x\n"),
            None,
        ));
    }
    let r = alice.push(P, &batch(changes)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let dels: Vec<_> = (0..60)
        .map(|i| {
            let path = format!("d{}/m{i}.md", i / 30);
            let sha = sha_of(&r.body, &path);
            delete(&path, sha.as_deref())
        })
        .collect();
    let held = alice.push(P, &batch(dels.clone())).await;
    assert_eq!(held.status, 422, "{}", held.text);
    assert_eq!(
        held.body["error"]["details"]["failures"][0]["rule"],
        "mass_delete"
    );
    assert_eq!(
        count(&db, "SELECT count(*) FROM memories WHERE deleted").await,
        0
    );
    let allowed = alice
        .push(P, &json!({ "changes": dels, "allow_mass_delete": true }))
        .await;
    assert_eq!(allowed.status, 200, "{}", allowed.text);
    assert_eq!(count(&db, "SELECT files::bigint FROM projects").await, 0);
}

#[tokio::test]
async fn audit_log_records_writes_and_refusals_and_is_append_only() {
    let (server, db) = Server::start().await;
    let alice = server.client(&server.token("alice", &["acme"]));
    alice
        .push(
            P,
            &batch(vec![put("a.md", &memory("a", "a", "project", "A\n"), None)]),
        )
        .await;
    alice
        .push(
            P,
            &batch(vec![put(
                "me.md",
                &memory("me", "me", "user", "I like tabs\n"),
                None,
            )]),
        )
        .await;
    assert_eq!(count(&db, "SELECT count(*) FROM audit_log WHERE action = 'write' AND path = 'a.md' AND revision = 1").await, 1);
    assert_eq!(
        count(&db, "SELECT count(*) FROM audit_log WHERE action = 'push_refused' AND details->'rules' ? 'type_user_in_team'").await,
        1
    );
    // The refusal names the rule, never the content.
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM audit_log WHERE details::text LIKE '%I like tabs%'"
        )
        .await,
        0
    );
    let mut conn = db.connect().await;
    for sql in [
        "UPDATE audit_log SET action = 'x'",
        "DELETE FROM audit_log",
        "TRUNCATE audit_log",
    ] {
        let err = sqlx::query(sql).execute(&mut conn).await.expect_err(sql);
        assert!(err.to_string().contains("append-only"), "{sql}: {err}");
    }
}
