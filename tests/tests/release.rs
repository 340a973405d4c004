//! Controlled release on the server: disable, enable and rollback of published memories as
//! members' pulls see them, history with kinds, notes and provenance, the git export of those
//! revisions (published content only), purges reaching the review queue, and the rescan of
//! published memories when the scanner's rules change (`--scan-rules`, `memsync-server rescan`).
//! Real PostgreSQL, the real server binary, forged tokens, real git.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use memsync_core::scan::{Category, ExtraRule, Scanner};
use memsync_e2e::*;
use serde_json::{Value, json};

const P: &str = "acme/api";
const A: &str = "/v1/admin/projects/acme/api";

fn note(name: &str, body: &str) -> String {
    memory(name, &format!("about {name}"), "project", body)
}

fn tokens() -> (String, String, String) {
    (
        forge_token("ann", &[("acme", "admin")], false),
        forge_token("bob", &[("acme", "member")], false),
        forge_token("carol", &[("acme", "member")], false),
    )
}

/// POST without an `Idempotency-Key` (nothing of the answer is stored).
async fn post(c: &Client, path: &str, body: &Value) -> Resp {
    c.post(path, body).await
}

async fn post_with_key(c: &Client, path: &str, body: &Value, key: &str) -> Resp {
    c.send(
        c.http
            .post(format!("{}{path}", c.base))
            .bearer_auth(&c.token)
            .header("idempotency-key", key)
            .json(body),
    )
    .await
}

async fn push_ok(c: &Client, changes: Vec<Value>) -> Value {
    let r = c.push(P, &batch(changes)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body
}

/// A member's view: every path's state after pulling from `since`, and the revision reached.
async fn pull_from(c: &Client, since: i64) -> (i64, Vec<Value>) {
    let r = c.pull(P, since).await;
    assert_eq!(r.status, 200, "{}", r.text);
    (
        r.body["revision"].as_i64().expect("revision"),
        r.body["changes"].as_array().expect("changes").clone(),
    )
}

fn state<'a>(changes: &'a [Value], path: &str) -> Option<&'a Value> {
    changes.iter().find(|c| c["path"] == path)
}

async fn history(c: &Client, path: &str) -> Vec<Value> {
    let r = c.fetch(&format!("{A}/history?path={path}")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["versions"].as_array().expect("versions").clone()
}

async fn audit(c: &Client, action: &str) -> Vec<Value> {
    let r = c
        .fetch(&format!("/v1/admin/audit?project={P}&action={action}"))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["events"].as_array().expect("events").clone()
}

fn conflict_reason(r: &Resp) -> &str {
    r.body["error"]["details"]["conflicts"][0]["reason"]
        .as_str()
        .unwrap_or("")
}

#[tokio::test]
async fn disable_enable_and_rollback_reach_every_members_pull() {
    let (server, db) = Server::start().await;
    let (ann_t, bob_t, carol_t) = tokens();
    let (ann, bob, carol) = (
        server.client(&ann_t),
        server.client(&bob_t),
        server.client(&carol_t),
    );
    let v1 = note("deploy", "Deploy with make release.\n");
    let v2 = note("deploy", "Deploy with make release, then tag.\n");
    let other = note("style", "Tabs.\n");
    // A push with provenance, as the client's SessionEnd hook sends it.
    let r = bob
        .push(
            P,
            &json!({
                "changes": [put("deploy.md", &v1, None), put("style.md", &other, None)],
                "provenance": {
                    "client_version": "memsync/0.1.0", "session_id": "sess-42",
                    "head": "0123abcd", "branch": "main",
                },
            }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let rev1 = r.body["revision"].as_i64().unwrap();
    let r = push_ok(
        &bob,
        vec![put(
            "deploy.md",
            &v2,
            sha_of(&r.body, "deploy.md").as_deref(),
        )],
    )
    .await;
    let rev2 = r["revision"].as_i64().unwrap();

    let (seen, all) = pull_from(&carol, 0).await;
    assert_eq!(state(&all, "deploy.md").unwrap()["content"], v2.as_str());
    let index_before = state(&all, "MEMORY.md").unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(index_before.contains("(deploy.md)"), "{index_before}");

    // Disable: a member may not; a team admin does, with a reason.
    let body = json!({ "path": "deploy.md", "reason": "wrong release target" });
    assert_eq!(post(&bob, &format!("{A}/disable"), &body).await.status, 403);
    let r = post_with_key(&ann, &format!("{A}/disable"), &body, "disable-1").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["created_revision"], true);
    let disabled_at = r.body["revision"].as_i64().unwrap();
    // A retry with the same key gets the same answer, and no second revision.
    let again = post_with_key(&ann, &format!("{A}/disable"), &body, "disable-1").await;
    assert_eq!((again.status, &again.body), (200, &r.body));
    let r = post(&ann, &format!("{A}/disable"), &body).await;
    assert_eq!(
        (r.status, conflict_reason(&r)),
        (409, "already_disabled"),
        "{}",
        r.text
    );

    // Every member's next pull: the file is a tombstone and the index lost its entry.
    let (seen2, changes) = pull_from(&carol, seen).await;
    assert_eq!(seen2, disabled_at);
    assert_eq!(state(&changes, "deploy.md").unwrap()["deleted"], true);
    let index = state(&changes, "MEMORY.md").unwrap()["content"]
        .as_str()
        .unwrap();
    assert!(
        !index.contains("deploy.md") && index.contains("(style.md)"),
        "{index}"
    );
    let (_, snapshot) = pull_from(&bob, 0).await;
    assert_eq!(state(&snapshot, "deploy.md").unwrap()["deleted"], true);

    // History shows what made each revision, and where each version came from.
    let h = history(&ann, "deploy.md").await;
    assert_eq!(
        (
            &h[0]["kind"],
            &h[0]["note"],
            &h[0]["deleted"],
            &h[0]["disabled"]
        ),
        (
            &json!("disable"),
            &json!("wrong release target"),
            &json!(true),
            &json!(true)
        )
    );
    assert_eq!(h[0]["provenance"]["author_sub"], "ann");
    let first = h.iter().find(|v| v["revision"] == rev1).unwrap();
    assert_eq!(first["kind"], "push");
    assert!(first.get("note").is_none(), "{first}");
    let p = &first["provenance"];
    assert_eq!(
        (
            &p["author_sub"],
            &p["session_id"],
            &p["head"],
            &p["branch"],
            &p["client_version"]
        ),
        (
            &json!("bob"),
            &json!("sess-42"),
            &json!("0123abcd"),
            &json!("main"),
            &json!("memsync/0.1.0")
        )
    );
    // The push's audit rows carry the same provenance.
    let writes = audit(&ann, "write").await;
    let w = writes
        .iter()
        .find(|e| e["path"] == "deploy.md" && e["revision"] == rev1)
        .expect("write event");
    assert_eq!(w["details"]["provenance"]["session_id"], "sess-42");
    let d = audit(&ann, "memory_disabled").await;
    assert_eq!(
        (
            &d[0]["actor"],
            &d[0]["details"]["reason"],
            &d[0]["revision"]
        ),
        (
            &json!("ann"),
            &json!("wrong release target"),
            &json!(disabled_at)
        )
    );

    // Enable: both come back, byte for byte.
    let r = post(
        &ann,
        &format!("{A}/enable"),
        &json!({ "path": "deploy.md" }),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let (seen3, changes) = pull_from(&carol, seen2).await;
    assert_eq!(
        state(&changes, "deploy.md").unwrap()["content"],
        v2.as_str()
    );
    assert_eq!(
        state(&changes, "MEMORY.md").unwrap()["content"],
        index_before.as_str()
    );
    let e = audit(&ann, "memory_enabled").await;
    assert_eq!(
        (
            &e[0]["details"]["from_revision"],
            &e[0]["details"]["reason"]
        ),
        (&json!(rev2), &Value::Null)
    );
    let r = post(
        &ann,
        &format!("{A}/enable"),
        &json!({ "path": "deploy.md" }),
    )
    .await;
    assert_eq!(
        (r.status, conflict_reason(&r)),
        (409, "not_disabled"),
        "{}",
        r.text
    );

    // Rollback to the first version reaches everyone.
    let body = json!({ "path": "deploy.md", "revision": rev1, "reason": "the tag step is wrong" });
    let r = post(&ann, &format!("{A}/rollback"), &body).await;
    assert_eq!(
        (r.status, &r.body["created_revision"]),
        (200, &json!(true)),
        "{}",
        r.text
    );
    let rolled = r.body["revision"].as_i64().unwrap();
    let (_, changes) = pull_from(&carol, seen3).await;
    assert_eq!(
        state(&changes, "deploy.md").unwrap()["content"],
        v1.as_str()
    );
    let h = history(&ann, "deploy.md").await;
    assert_eq!(
        (&h[0]["kind"], &h[0]["note"]),
        (
            &json!("rollback"),
            &json!(format!("to revision {rev1}: the tag step is wrong"))
        )
    );
    let rb = audit(&ann, "memory_rolled_back").await;
    assert_eq!(
        (&rb[0]["revision"], &rb[0]["details"]["to_revision"]),
        (&json!(rolled), &json!(rev1))
    );
    // Rolling back to what is published changes nothing.
    let r = post(&ann, &format!("{A}/rollback"), &body).await;
    assert_eq!(
        (r.status, &r.body["created_revision"]),
        (200, &json!(false))
    );
    assert_eq!(r.body["revision"], rolled);
    assert_eq!(audit(&ann, "memory_rolled_back").await.len(), 1);
    // A revision that wrote no content of the path, or none at all.
    let r = post(
        &ann,
        &format!("{A}/rollback"),
        &json!({ "path": "deploy.md", "revision": disabled_at }),
    )
    .await;
    assert_eq!(
        (r.status, r.code()),
        (422, "nothing_to_roll_back"),
        "{}",
        r.text
    );
    let r = post(
        &ann,
        &format!("{A}/rollback"),
        &json!({ "path": "deploy.md", "revision": 999 }),
    )
    .await;
    assert_eq!((r.status, r.code()), (404, "not_found"));

    // A rollback over a disabled memory publishes that version (and ends the disable).
    assert_eq!(
        post(
            &ann,
            &format!("{A}/disable"),
            &json!({ "path": "deploy.md" })
        )
        .await
        .status,
        200
    );
    let r = post(
        &ann,
        &format!("{A}/rollback"),
        &json!({ "path": "deploy.md", "revision": rev2 }),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let (_, snapshot) = pull_from(&bob, 0).await;
    assert_eq!(
        state(&snapshot, "deploy.md").unwrap()["content"],
        v2.as_str()
    );

    // Deletes never come back through these: restore is the way.
    let sha = state(&snapshot, "style.md").unwrap()["sha256"]
        .as_str()
        .map(str::to_owned);
    push_ok(&bob, vec![delete("style.md", sha.as_deref())]).await;
    for (route, body) in [
        ("enable", json!({ "path": "style.md" })),
        ("disable", json!({ "path": "style.md" })),
        ("rollback", json!({ "path": "style.md", "revision": rev1 })),
    ] {
        let r = post(&ann, &format!("{A}/{route}"), &body).await;
        assert_eq!(
            (r.status, conflict_reason(&r)),
            (409, "deleted"),
            "{route}: {}",
            r.text
        );
        assert!(
            r.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("deleted")
        );
    }
    let (_, snapshot) = pull_from(&bob, 0).await;
    assert_eq!(state(&snapshot, "style.md").unwrap()["deleted"], true);

    // Bad targets.
    for (route, body, status, code) in [
        (
            "disable",
            json!({ "path": "MEMORY.md" }),
            400,
            "invalid_path",
        ),
        ("enable", json!({ "path": "nope.md" }), 404, "not_found"),
        ("disable", json!({ "path": "../x.md" }), 400, "invalid_path"),
        (
            "disable",
            json!({ "path": "deploy.md", "reason": "x".repeat(1001) }),
            400,
            "invalid_reason",
        ),
        (
            "rollback",
            json!({ "path": "deploy.md" }),
            400,
            "malformed_json",
        ),
    ] {
        let r = post(&ann, &format!("{A}/{route}"), &body).await;
        assert_eq!(
            (r.status, r.code()),
            (status, code),
            "{route} {body}: {}",
            r.text
        );
    }
    // Another team's admin does not see the project.
    let eve = server.client(&forge_token("eve", &[("globex", "admin")], false));
    let r = post(
        &eve,
        &format!("{A}/disable"),
        &json!({ "path": "deploy.md" }),
    )
    .await;
    assert_eq!(r.status, 404);
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM revisions WHERE kind IN ('disable', 'enable', 'rollback')"
        )
        .await,
        5
    );
}

#[tokio::test]
async fn enable_puts_index_entries_back_where_they_were_and_keeps_later_index_edits() {
    let (server, _db) = Server::start().await;
    let (ann_t, bob_t, carol_t) = tokens();
    let (ann, bob, carol) = (
        server.client(&ann_t),
        server.client(&bob_t),
        server.client(&carol_t),
    );
    // The only memory of `notes/`: disabling it removes notes/MEMORY.md and the root's link.
    let text = note("deploy", "Deploy with make release.\n");
    push_ok(
        &bob,
        vec![
            put("notes/deploy.md", &text, None),
            put("style.md", &note("style", "Tabs.\n"), None),
        ],
    )
    .await;
    let (seen, before) = pull_from(&carol, 0).await;
    let root_before = state(&before, "MEMORY.md").unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    let notes_before = state(&before, "notes/MEMORY.md").unwrap()["content"].clone();
    assert!(root_before.contains("notes/MEMORY.md"), "{root_before}");
    let r = post(
        &ann,
        &format!("{A}/disable"),
        &json!({ "path": "notes/deploy.md" }),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let (seen, changes) = pull_from(&carol, seen).await;
    assert_eq!(state(&changes, "notes/MEMORY.md").unwrap()["deleted"], true);
    let root = state(&changes, "MEMORY.md").unwrap();
    assert!(
        !root["content"].as_str().unwrap().contains("notes/"),
        "{root}"
    );

    // Untouched since the disable: enable puts back exactly what was there.
    let r = post(
        &ann,
        &format!("{A}/enable"),
        &json!({ "path": "notes/deploy.md" }),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let (seen, changes) = pull_from(&carol, seen).await;
    assert_eq!(
        state(&changes, "notes/deploy.md").unwrap()["content"],
        text.as_str()
    );
    assert_eq!(
        state(&changes, "notes/MEMORY.md").unwrap()["content"],
        notes_before
    );
    assert_eq!(
        state(&changes, "MEMORY.md").unwrap()["content"],
        root_before.as_str()
    );

    // Edited while disabled: the edit stays, and the link comes back.
    assert_eq!(
        post(
            &ann,
            &format!("{A}/disable"),
            &json!({ "path": "notes/deploy.md" })
        )
        .await
        .status,
        200
    );
    let (seen, changes) = pull_from(&carol, seen).await;
    let root = state(&changes, "MEMORY.md").unwrap();
    let edited = format!("# Team memory\n\n{}", root["content"].as_str().unwrap());
    push_ok(
        &bob,
        vec![put("MEMORY.md", &edited, root["sha256"].as_str())],
    )
    .await;
    let r = post(
        &ann,
        &format!("{A}/enable"),
        &json!({ "path": "notes/deploy.md" }),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let (_, changes) = pull_from(&carol, seen).await;
    let root = state(&changes, "MEMORY.md").unwrap()["content"]
        .as_str()
        .unwrap();
    assert!(
        root.starts_with("# Team memory\n")
            && root.contains("notes/MEMORY.md")
            && root.contains("(style.md)"),
        "{root}"
    );
}

#[tokio::test]
async fn purge_erases_the_paths_proposed_content() {
    let (server, db) = Server::start().await;
    let (ann_t, bob_t, _) = tokens();
    let (ann, bob) = (server.client(&ann_t), server.client(&bob_t));
    push_ok(
        &bob,
        vec![put("leak.md", &note("leak", "old text\n"), None)],
    )
    .await;
    let marker = "proposed-marker-7f3a";
    let mut conn = db.connect().await;
    for status in ["pending", "rejected"] {
        sqlx::query(
            "INSERT INTO proposals (team, project, path, kind, op, status, sha256, content,
                                    author_sub, author_name, provenance)
             VALUES ('acme', 'acme/api', 'leak.md', 'change', 'put', $1, 'ab', $2, 'bob', 'bob',
                     '{\"author\":\"bob\",\"author_sub\":\"bob\",\"pushed_at\":\"2026-12-01T00:00:00.000Z\"}')",
        )
        .bind(status)
        .bind(note("leak", &format!("{marker}\n")))
        .execute(&mut conn)
        .await
        .expect("insert a proposal");
    }
    let r = post(
        &ann,
        &format!("{A}/purge"),
        &json!({ "path": "leak.md", "reason": "leaked" }),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM proposals WHERE content IS NULL AND sha256 IS NULL AND status = 'rejected'"
        )
        .await,
        2
    );
    assert_no_row_contains(&db, marker).await;
}

/// git with no user or system configuration, never prompting.
fn git_output(args: &[&str]) -> Output {
    let home = std::env::temp_dir().join("memsync-release-test-home");
    std::fs::create_dir_all(&home).expect("home");
    Command::new("git")
        .args(args)
        .env("HOME", &home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env_remove("GIT_DIR")
        .output()
        .expect("run git")
}

fn git(repo: &Path, args: &[&str]) -> String {
    let mut all = vec![format!("--git-dir={}", repo.display())];
    all.extend(args.iter().map(|a| (*a).to_owned()));
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    let out = git_output(&all);
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf8")
}

fn export_repo(server: &Server) -> PathBuf {
    server.data_dir.join("git/acme/api.git")
}

/// Waits until nothing is left to export or rebuild.
async fn wait_exported(db: &TestDb) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let pending = count(db, "SELECT count(*) FROM export_outbox").await
            + count(db, "SELECT count(*) FROM export_rebuilds").await;
        if pending == 0 {
            return;
        }
        assert!(Instant::now() < deadline, "the export did not catch up");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The head commit's full message and the files of its tree.
fn head(repo: &Path) -> (String, Vec<String>) {
    let message = git(repo, &["log", "-1", "--format=%B", "main"]);
    let files = git(repo, &["ls-tree", "-r", "--name-only", "main"])
        .lines()
        .map(str::to_owned)
        .collect();
    (message, files)
}

#[tokio::test]
async fn the_git_export_shows_what_each_revision_was_and_published_content_only() {
    let (server, db) = Server::start().await;
    let (ann_t, bob_t, _) = tokens();
    let (ann, bob) = (server.client(&ann_t), server.client(&bob_t));
    let text = note("deploy", "Deploy with make release.\n");
    let r = bob
        .push(
            P,
            &json!({
                "changes": [put("deploy.md", &text, None)],
                "provenance": { "session_id": "sess-9", "head": "abcdef1" },
            }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let first = r.body["revision"].as_i64().unwrap();
    push_ok(&bob, vec![put("style.md", &note("style", "Tabs.\n"), None)]).await;
    // A proposal is never a version: whatever the review queue holds stays out of the export.
    let proposed = "unpublished-proposal-5c1e";
    let mut conn = db.connect().await;
    sqlx::query(
        "INSERT INTO proposals (team, project, path, kind, op, status, sha256, content,
                                author_sub, author_name, provenance)
         VALUES ('acme', 'acme/api', 'deploy.md', 'change', 'put', 'pending', 'ab', $1, 'bob',
                 'bob', '{\"author\":\"bob\",\"author_sub\":\"bob\",\"pushed_at\":\"2026-12-01T00:00:00.000Z\"}')",
    )
    .bind(note("deploy", &format!("{proposed}\n")))
    .execute(&mut conn)
    .await
    .expect("insert a proposal");
    wait_exported(&db).await;
    let repo = export_repo(&server);
    let (message, files) = head(&repo);
    assert!(files.contains(&"deploy.md".to_owned()), "{files:?}");
    assert!(message.contains("Memsync-Kind: push\n"), "{message}");
    let first_message = git(
        &repo,
        &[
            "log",
            "--format=%B",
            "--grep",
            &format!("Memsync-Revision: {first}$"),
            "main",
        ],
    );
    assert!(
        first_message.contains("Memsync-Session: sess-9\n")
            && first_message.contains("Memsync-Head: abcdef1\n"),
        "{first_message}"
    );

    // Disable: a deletion in the tree, by a commit that says so.
    let r = post(
        &ann,
        &format!("{A}/disable"),
        &json!({ "path": "deploy.md", "reason": "wrong target" }),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    wait_exported(&db).await;
    let (message, files) = head(&repo);
    assert!(!files.contains(&"deploy.md".to_owned()), "{files:?}");
    assert!(files.contains(&"style.md".to_owned()), "{files:?}");
    assert!(
        message.starts_with(&format!(
            "memsync r{}: disable deploy.md: wrong target\n",
            r.body["revision"]
        )),
        "{message}"
    );
    assert!(message.contains("Memsync-Kind: disable\n"), "{message}");
    assert!(!git(&repo, &["show", "main:MEMORY.md"]).contains("deploy.md"));

    // Enable: back in the tree.
    let r = post(
        &ann,
        &format!("{A}/enable"),
        &json!({ "path": "deploy.md" }),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    wait_exported(&db).await;
    let (message, files) = head(&repo);
    assert!(files.contains(&"deploy.md".to_owned()), "{files:?}");
    assert!(
        message.starts_with(&format!(
            "memsync r{}: enable deploy.md\n",
            r.body["revision"]
        )),
        "{message}"
    );
    assert_eq!(git(&repo, &["show", "main:deploy.md"]), text);

    // Rollback.
    let edited = note("deploy", "Deploy with make ship.\n");
    let sha = sha_of(&r.body, "deploy.md");
    push_ok(&bob, vec![put("deploy.md", &edited, sha.as_deref())]).await;
    let r = post(
        &ann,
        &format!("{A}/rollback"),
        &json!({ "path": "deploy.md", "revision": first }),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    wait_exported(&db).await;
    let (message, _) = head(&repo);
    assert!(
        message.starts_with(&format!(
            "memsync r{}: roll back deploy.md to revision {first}\n",
            r.body["revision"]
        )),
        "{message}"
    );
    assert!(message.contains("Memsync-Kind: rollback\n"), "{message}");

    // Nothing but published content, ever, in the history; also after a rebuild.
    for pass in ["exported", "rebuilt"] {
        let log = git(&repo, &["log", "-p", "--all"]);
        assert!(
            !log.contains(proposed),
            "{pass}: a proposal reached the export"
        );
        for published in [&text, &edited] {
            let line = published.lines().last().unwrap();
            assert!(log.contains(line), "{pass}: {line} is missing");
        }
        let out = server.cli(&["export", "rebuild", "--project", P]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

const RULE_ID: &str = "acme-internal-token";
const RULE_PATTERN: &str = r"ACME-[0-9A-Z]{16}";

fn acme_rule() -> ExtraRule {
    ExtraRule {
        id: RULE_ID.into(),
        category: Category::Secret,
        pattern: RULE_PATTERN.into(),
        description: "ACME internal token".into(),
    }
}

/// A rules file with the ACME rule, in `dir`.
fn rules_file(dir: &Path) -> String {
    let path = dir.join("scan-rules.toml");
    std::fs::write(
        &path,
        format!(
            "[[rule]]\nid = \"{RULE_ID}\"\ncategory = \"secret\"\npattern = '{RULE_PATTERN}'\ndescription = \"ACME internal token\"\n"
        ),
    )
    .expect("write the rules file");
    path.to_string_lossy().into_owned()
}

/// An ACME token, made at run time.
fn acme_token(seed: u64) -> String {
    let key = aws_key_id(seed);
    ["AC", "ME-", &key[4..]].concat()
}

/// The fingerprint the server's scanner gives the ACME token in `text`.
fn fingerprint(text: &str) -> String {
    let scanner = Scanner::with_extra_rules(&[acme_rule()]).expect("rules");
    let f = scanner.scan(text);
    assert_eq!(f.len(), 1, "{f:?}");
    f[0].fingerprint.clone()
}

/// (table, rows whose text holds `needle`) for every table that has any.
async fn tables_holding(db: &TestDb, needle: &str) -> Vec<(String, i64)> {
    let mut conn = db.connect().await;
    let tables: Vec<String> =
        sqlx::query_scalar("SELECT tablename::text FROM pg_tables WHERE schemaname = 'public'")
            .fetch_all(&mut conn)
            .await
            .expect("list tables");
    let mut out = Vec::new();
    for t in tables {
        let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT count(*) FROM \"{t}\" x WHERE x::text LIKE $1"
        )))
        .bind(format!("%{needle}%"))
        .fetch_one(&mut conn)
        .await
        .expect("search a table");
        if n > 0 {
            out.push((t, n));
        }
    }
    out
}

async fn rule_set_of(db: &TestDb, path: &str) -> Option<String> {
    let mut conn = db.connect().await;
    sqlx::query_scalar("SELECT rule_set FROM memories WHERE path = $1")
        .bind(path)
        .fetch_one(&mut conn)
        .await
        .expect("rule_set")
}

async fn wait_until(what: &str, db: &TestDb, sql: &str, want: i64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if count(db, sql).await == want {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn new_scanner_rules_disable_what_they_find_at_the_next_start() {
    let (mut first, db) = Server::start().await;
    let (ann_t, bob_t, carol_t) = tokens();
    let (ann, bob) = (first.client(&ann_t), first.client(&bob_t));
    let token = acme_token(1);
    let kept_token = acme_token(2);
    let leak = note(
        "staging",
        &format!("The deploy bot signs in with {token} on weekdays.\n"),
    );
    let kept = note(
        "fixture",
        &format!("The mock server accepts {kept_token} only.\n"),
    );
    let clean = note("style", "Tabs, not spaces.\n");
    // Pushed without an Idempotency-Key, so that no stored answer holds the text.
    let r = post(
        &bob,
        &format!("/v1/projects/{P}/push"),
        &batch(vec![
            put("staging.md", &leak, None),
            put("fixture.md", &kept, None),
            put("style.md", &clean, None),
        ]),
    )
    .await;
    assert_eq!(r.status, 200, "the built-in rules pass it: {}", r.text);
    let written = r.body["revision"].as_i64().unwrap();
    let built_in = rule_set_of(&db, "style.md")
        .await
        .expect("a rule set is recorded");
    assert_eq!(
        rule_set_of(&db, "staging.md").await.as_deref(),
        Some(built_in.as_str())
    );
    // The fixture's token is allowlisted for the project.
    let r = ann
        .send(
            ann.http
                .post(format!("{}/v1/projects/{P}/allowlist", ann.base))
                .bearer_auth(&ann.token)
                .json(&json!({
                    "fingerprint": fingerprint(&kept), "rule": RULE_ID, "reason": "the mock's fake token",
                })),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);

    // The server starts again with a rule that matches the token.
    first.kill();
    let tmp = tempfile::tempdir().expect("tmp");
    let rules = rules_file(tmp.path());
    let server = Server::start_with(
        Some(db.url.clone()),
        Some(first.data_dir.clone()),
        &["--scan-rules", &rules],
    );
    wait_until(
        "the rescan",
        &db,
        &format!(
            "SELECT count(*) FROM memories WHERE NOT deleted AND path <> 'MEMORY.md'
             AND rule_set IS DISTINCT FROM '{built_in}'"
        ),
        2,
    )
    .await;
    wait_until(
        "the rescan's audit row",
        &db,
        "SELECT count(*) FROM audit_log WHERE action = 'rescan_disabled'",
        1,
    )
    .await;
    let (ann, bob, carol) = (
        server.client(&ann_t),
        server.client(&bob_t),
        server.client(&carol_t),
    );

    // Disabled: gone from every pull and from the index; the others untouched.
    let (_, snapshot) = pull_from(&carol, 0).await;
    assert_eq!(state(&snapshot, "staging.md").unwrap()["deleted"], true);
    let index = state(&snapshot, "MEMORY.md").unwrap()["content"]
        .as_str()
        .unwrap();
    assert!(
        !index.contains("staging.md") && index.contains("(style.md)"),
        "{index}"
    );
    for (path, text) in [("style.md", &clean), ("fixture.md", &kept)] {
        let s = state(&snapshot, path).unwrap();
        assert_eq!(
            (&s["content"], &s["revision"]),
            (&json!(text), &json!(written)),
            "{path}"
        );
    }
    let disabled = count(
        &db,
        "SELECT count(*) FROM memories WHERE path = 'staging.md' AND deleted AND disabled",
    )
    .await;
    assert_eq!(disabled, 1);
    let h = history(&ann, "staging.md").await;
    assert_eq!(
        (&h[0]["kind"], &h[0]["author"], &h[0]["disabled"]),
        (&json!("rescan"), &json!("memsync-server"), &json!(true))
    );
    assert!(h[0]["note"].as_str().unwrap().contains(RULE_ID), "{}", h[0]);

    // Queued for review, audited, and the secret is nowhere but in the version it disabled.
    let mut conn = db.connect().await;
    let (kind, status, op, author, content, findings, reason, provenance): (
        String,
        String,
        String,
        String,
        Option<String>,
        Value,
        String,
        Value,
    ) = sqlx::query_as(
        "SELECT kind, status, op, author_sub, content, findings, reason, provenance FROM proposals
         WHERE path = 'staging.md'",
    )
    .fetch_one(&mut conn)
    .await
    .expect("a flagged item");
    assert_eq!(
        (
            kind.as_str(),
            status.as_str(),
            op.as_str(),
            author.as_str(),
            content
        ),
        ("flagged", "flagged", "put", "memsync-server", None)
    );
    let fp = fingerprint(&leak);
    assert_eq!(
        findings,
        json!([{ "rule": RULE_ID, "line": 6, "column": 30, "fingerprint": fp }])
    );
    assert!(reason.contains(&format!("{RULE_ID} on line 6")), "{reason}");
    assert_eq!(provenance["author_sub"], "bob");
    let events = audit(&ann, "rescan_disabled").await;
    assert_eq!(events.len(), 1);
    assert_eq!(
        (
            &events[0]["actor"],
            &events[0]["path"],
            &events[0]["details"]["rules"]
        ),
        (
            &json!("memsync-server"),
            &json!("staging.md"),
            &json!([RULE_ID])
        )
    );
    assert_eq!(events[0]["details"]["fingerprints"], json!([fp]));
    assert_eq!(
        tables_holding(&db, &token).await,
        [("memory_versions".to_owned(), 1)]
    );

    // New content the rule matches is refused at push; an enable is held to today's rules.
    let r = bob
        .push(
            P,
            &batch(vec![put(
                "other.md",
                &note("other", &format!("use {}\n", acme_token(3))),
                None,
            )]),
        )
        .await;
    assert_eq!(
        (r.status, r.code()),
        (422, "validation_failed"),
        "{}",
        r.text
    );
    assert_eq!(r.body["error"]["details"]["failures"][0]["rule"], RULE_ID);
    let r = post(
        &ann,
        &format!("{A}/enable"),
        &json!({ "path": "staging.md" }),
    )
    .await;
    assert_eq!(
        (r.status, r.code()),
        (422, "validation_failed"),
        "{}",
        r.text
    );
    let message = r.body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("staging.md was not enabled") && message.contains("allowlist"),
        "{message}"
    );
    assert!(!r.text.contains(&token));
}

#[tokio::test]
async fn memsync_server_rescan_runs_it_now_and_says_what_it_did() {
    let (mut server, db) = Server::start().await;
    let (_, bob_t, _) = tokens();
    let bob = server.client(&bob_t);
    let token = acme_token(4);
    let r = post(
        &bob,
        &format!("/v1/projects/{P}/push"),
        &batch(vec![
            put(
                "staging.md",
                &note("staging", &format!("token {token}\n")),
                None,
            ),
            put("style.md", &note("style", "Tabs.\n"), None),
        ]),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    server.kill();
    let tmp = tempfile::tempdir().expect("tmp");
    let rules = rules_file(tmp.path());

    let run = |args: &[&str]| {
        let mut all = vec!["rescan", "--scan-rules", &rules];
        all.extend_from_slice(args);
        let out = server.cli(&all);
        assert!(
            out.status.success(),
            "rescan {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf8")
    };
    assert_eq!(run(&[]), "rescanned 2 memories in 1 project; disabled 1\n");
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM memories WHERE path = 'staging.md' AND deleted AND disabled"
        )
        .await,
        1
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM proposals WHERE kind = 'flagged' AND path = 'staging.md'"
        )
        .await,
        1
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM audit_log WHERE action = 'rescan_disabled'"
        )
        .await,
        1
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM revisions WHERE kind = 'rescan' AND author_sub = 'memsync-server'"
        )
        .await,
        1
    );
    // Nothing left that the current rules have not checked; `--all` rescans them anyway.
    assert_eq!(run(&[]), "rescanned 0 memories in 0 projects; disabled 0\n");
    let summary: Value = serde_json::from_str(&run(&["--all", "--json"])).expect("json");
    assert_eq!(
        (
            &summary["rescanned"],
            &summary["projects"],
            &summary["disabled"]
        ),
        (&json!(1), &json!(1), &json!(0))
    );
    assert_eq!(summary["rule_set"].as_str().map(str::len), Some(16));

    // A bad rules file stops the server and the command, naming the rule and the problem.
    let bad = tmp.path().join("bad.toml");
    std::fs::write(
        &bad,
        "[[rule]]\nid = \"ok-rule\"\ncategory = \"secret\"\npattern = 'X'\ndescription = \"x\"\n\n\
         [[rule]]\nid = \"aws-access-key-id\"\ncategory = \"secret\"\npattern = 'Y'\ndescription = \"y\"\n",
    )
    .unwrap();
    let bad = bad.to_string_lossy().into_owned();
    for args in [
        vec!["rescan", "--scan-rules", &bad],
        vec!["serve", "--listen", "127.0.0.1:0", "--scan-rules", &bad],
    ] {
        let out = server.cli(&args);
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("scan rule #2 `aws-access-key-id`") && err.contains("built-in"),
            "{err}"
        );
    }
}
