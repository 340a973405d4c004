//! Regressions from the hardening probe: paths that clash on disk, NUL and control characters in
//! stored text, admin actions that must commit with their audit rows, and purges that must stay
//! done.

use memsync_e2e::*;
use serde_json::{Value, json};

const ORIGIN: &str = "git@github.com:acme/api.git";

fn note(name: &str, body: &str) -> String {
    memory(name, &format!("about {name}"), "project", body)
}

fn rules(r: &Resp) -> Vec<String> {
    r.body["error"]["details"]["failures"]
        .as_array()
        .map(|f| {
            f.iter()
                .map(|x| x["rule"].as_str().unwrap_or("").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_team_index_survives_any_push_a_member_can_make() {
    let (server, db) = Server::start().await;
    let bob = server.client(&server.token("bob", &["acme"]));
    let r = bob
        .push(
            "acme/api",
            &batch(vec![
                put("seed.md", &note("seed", "Seed.\n"), None),
                put("Notes.md", &note("notes", "Notes.\n"), None),
                put("Infra/db.md", &note("db", "Postgres 15.\n"), None),
            ]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let before = live_paths(&bob, "acme/api").await;

    // Each of these was accepted before, and one of them hid the team index from everyone.
    let attacks: Vec<(&str, Vec<Value>)> = vec![
        (
            "index as a directory",
            vec![put("MEMORY.md/x.md", &note("x", "x\n"), None)],
        ),
        (
            "deeper",
            vec![put("MEMORY.md/x.md/y.md", &note("y", "y\n"), None)],
        ),
        (
            "file as a directory",
            vec![put("seed.md/x.md", &note("x", "x\n"), None)],
        ),
        (
            "file and directory in one batch",
            vec![
                put("new.md", &note("new", "n\n"), None),
                put("new.md/x.md", &note("x", "x\n"), None),
            ],
        ),
        (
            "directory over a file",
            vec![put("Infra/db.md/z.md", &note("z", "z\n"), None)],
        ),
        (
            "a subdirectory's index as a directory",
            vec![put("Infra/MEMORY.md/z.md", &note("z", "z\n"), None)],
        ),
        (
            "case variant",
            vec![put("notes.md", &note("notes", "other\n"), None)],
        ),
        (
            "index case variant",
            vec![put("memory.md", &note("m", "m\n"), None)],
        ),
        (
            "index case variant 2",
            vec![put("Memory.md", &note("m", "m\n"), None)],
        ),
        (
            "directory case variant",
            vec![put("infra/cache.md", &note("c", "c\n"), None)],
        ),
        (
            "case variants in one batch",
            vec![
                put("Plan.md", &note("plan", "p\n"), None),
                put("plan.md", &note("plan", "q\n"), None),
            ],
        ),
    ];
    for (what, changes) in attacks {
        let r = bob.push("acme/api", &batch(changes)).await;
        assert_eq!(r.status, 422, "{what}: {}", r.text);
        assert_eq!(r.code(), "validation_failed", "{what}");
        assert!(
            rules(&r).contains(&"path_clash".to_owned()),
            "{what}: {}",
            r.text
        );
        let msg = r.body["error"]["message"].as_str().unwrap();
        assert!(
            msg.contains('`'),
            "{what}: the message names the paths: {msg}"
        );
    }
    // Nothing changed, and the refusals are audited with their rule.
    assert_eq!(live_paths(&bob, "acme/api").await, before);
    assert!(
        count(
            &db,
            "SELECT count(*) FROM audit_log WHERE action = 'push_refused' AND details->'rules' ? 'path_clash'"
        )
        .await
            >= 11
    );

    // A file may become a directory when the same push deletes the file.
    let sha = sha_of(&bob.pull("acme/api", 0).await.body, "seed.md").unwrap();
    let r = bob
        .push(
            "acme/api",
            &batch(vec![
                delete("seed.md", Some(&sha)),
                put("seed.md/x.md", &note("x", "Now a directory.\n"), None),
            ]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    // Rewriting a path in its own spelling is no clash.
    let sha = sha_of(&bob.pull("acme/api", 0).await.body, "Notes.md").unwrap();
    let r = bob
        .push(
            "acme/api",
            &batch(vec![put(
                "Notes.md",
                &note("notes", "Edited.\n"),
                Some(&sha),
            )]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);

    // A teammate's pull gets a team dir whose index is a file listing every memory.
    let carol = User::new(&server, "carol", &["acme"], ORIGIN);
    let r = carol.run(&["pull", "--json"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let index = std::fs::read_to_string(carol.team_dir().join("MEMORY.md")).unwrap();
    for link in ["(Notes.md)", "(Infra/MEMORY.md)", "(seed.md/MEMORY.md)"] {
        assert!(index.contains(link), "{link} missing from {index}");
    }
    assert!(carol.team_dir().join("seed.md").is_dir());
    assert!(carol.team_dir().join("seed.md/x.md").is_file());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_never_turns_a_file_into_a_directory() {
    // A server holding paths that collide (stored before the server refused them).
    let home = tempfile::tempdir().unwrap();
    let repo = home.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let team = home.path().join("team");
    let index = "- [Seed](seed.md) — the seed\n- [Notes](Notes.md) — notes\n";
    let url = hostile_server(json!([
        file_state("MEMORY.md", index),
        file_state("MEMORY.md/x.md", &note("x", "x\n")),
        file_state("seed.md", &note("seed", "Seed.\n")),
        file_state("seed.md/x.md", &note("x", "x\n")),
        file_state("Notes.md", &note("notes", "Notes.\n")),
        file_state("notes.md", &note("notes", "notes\n")),
    ]))
    .await;
    let team_s = team.to_string_lossy().into_owned();
    for attempt in 0..2 {
        let r = run_env(
            home.path(),
            &repo,
            &url,
            &["pull", "--json", "--team-dir", &team_s],
        );
        assert_eq!(r.code, 1, "attempt {attempt}: {}\n{}", r.stdout, r.stderr);
        let j = r.json();
        let skipped: Vec<&str> = j["pull"]["skipped"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["path"].as_str().unwrap())
            .collect();
        assert_eq!(
            skipped,
            ["MEMORY.md/x.md", "seed.md/x.md", "notes.md"],
            "{}",
            r.stdout
        );
        let reasons = j["pull"]["skipped"].to_string();
        assert!(reasons.contains("collides"), "{reasons}");
        // Not reported as a local change, and the revision is not recorded: the next pull
        // reports the same problem instead of forgetting it.
        assert_eq!(j["pull"]["kept"], json!([]), "{}", r.stdout);
        assert_ne!(j["pull"]["revision"], 9, "{}", r.stdout);
    }
    assert_eq!(
        std::fs::read_to_string(team.join("MEMORY.md")).unwrap(),
        index
    );
    assert!(team.join("seed.md").is_file());
    assert!(team.join("Notes.md").is_file());
    assert!(!team.join("notes.md").exists());

    // The session-start hook still gives the agent the index, and says what was not written.
    let out = std::process::Command::new(bin_path("memsync"))
        .args(["hook", "session-start", "--team-dir", &team_s])
        .current_dir(&repo)
        .env("HOME", home.path())
        .env("MEMSYNC_SERVER", &url)
        .env("MEMSYNC_TOKEN", "test-token")
        .env("MEMSYNC_PROJECT", "acme/api")
        .env_remove("XDG_STATE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("CLAUDE_CONFIG_DIR")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ctx = j["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(ctx.contains("[Seed](seed.md)"), "{ctx}");
    assert!(ctx.contains("collide"), "{ctx}");
    assert!(ctx.contains("seed.md/x.md"), "{ctx}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nul_anywhere_is_a_400_and_nothing_is_stored() {
    let (server, db) = Server::start().await;
    let out = server.cli(&["token", "issue", "--user", "root", "--admin"]);
    assert!(out.status.success());
    let root = server.client(String::from_utf8_lossy(&out.stdout).trim());
    let ann = server.client(&server.token("ann", &["acme:admin"]));
    let r = ann
        .push(
            "acme/api",
            &batch(vec![put("a.md", &note("a", "A.\n"), None)]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let sha = sha_of(&r.body, "a.md").unwrap();
    let fp = "ab".repeat(32);

    let before = snapshot(&db).await;

    let nul = "why\u{0}not";
    let posts: Vec<(&Client, &str, Value)> = vec![
        (
            &ann,
            "/v1/projects/acme/api/allowlist",
            json!({ "fingerprint": fp, "rule": "aws\u{0}", "reason": "ok" }),
        ),
        (
            &ann,
            "/v1/projects/acme/api/allowlist",
            json!({ "fingerprint": fp, "rule": "aws", "reason": nul }),
        ),
        (
            &root,
            "/v1/admin/tokens",
            json!({ "user": "mal\u{0}lory", "teams": { "acme": "member" } }),
        ),
        (
            &root,
            "/v1/admin/tokens",
            json!({ "user": "mallory", "email": "m\u{0}@x", "teams": { "acme": "member" } }),
        ),
        (
            &ann,
            "/v1/admin/projects/acme/api/delete",
            json!({ "path": "a.md", "reason": nul }),
        ),
        (
            &ann,
            "/v1/admin/projects/acme/api/restore",
            json!({ "path": "a.md", "revision": 1, "reason": nul }),
        ),
        (
            &ann,
            "/v1/admin/projects/acme/api/purge",
            json!({ "path": "a.md", "reason": nul }),
        ),
        (
            &ann,
            "/v1/admin/projects/acme/api/purge",
            json!({ "path": "a.md", "reason": "escape \u{1b}[2J" }),
        ),
    ];
    for (c, path, body) in posts {
        let r = c.post(path, &body).await;
        assert_eq!(r.status, 400, "{path} {body}: {}", r.text);
        assert_eq!(r.code(), "invalid_text", "{path}: {}", r.text);
        assert!(
            r.text.contains("U+0000") || r.text.contains("U+001B"),
            "{}",
            r.text
        );
    }
    for filter in ["actor", "path", "action", "team", "project"] {
        let r = ann.fetch(&format!("/v1/admin/audit?{filter}=x%00y")).await;
        assert_eq!(r.status, 400, "{filter}: {}", r.text);
        assert_eq!(r.code(), "invalid_text", "{filter}: {}", r.text);
    }
    let r = ann
        .fetch("/v1/admin/projects/acme/api/history?path=a%00.md")
        .await;
    assert_eq!(r.status, 400, "{}", r.text);
    let r = ann
        .send(
            ann.http
                .delete(format!(
                    "{}/v1/projects/acme/api/allowlist/ab%00cd",
                    ann.base
                ))
                .bearer_auth(&ann.token),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text);

    // Nothing was stored or changed: the memory is live, unerased, and no audit row was added.
    assert_eq!(snapshot(&db).await, before);
    let live = ann.pull("acme/api", 0).await;
    assert_eq!(sha_of(&live.body, "a.md").as_deref(), Some(sha.as_str()));
}

/// Row counts of every table a refused request could have written to.
async fn snapshot(db: &TestDb) -> Vec<i64> {
    let mut n = Vec::new();
    for sql in [
        "SELECT count(*) FROM audit_log",
        "SELECT count(*) FROM tokens",
        "SELECT count(*) FROM scan_allowlist",
        "SELECT count(*) FROM memory_versions",
        "SELECT count(*) FROM memory_versions WHERE content IS NULL",
        "SELECT count(*) FROM revisions",
        "SELECT count(*) FROM purged_content",
    ] {
        n.push(count(db, sql).await);
    }
    n
}

/// Makes the audit insert of one action fail, as a broken disk or a bug between the two steps
/// would: the action must not happen either.
async fn break_audit_for(db: &TestDb, action: &str) {
    let mut conn = db.connect().await;
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "CREATE FUNCTION fail_audit() RETURNS trigger AS $$
         BEGIN
           IF NEW.action = '{action}' THEN RAISE EXCEPTION 'injected audit failure'; END IF;
           RETURN NEW;
         END $$ LANGUAGE plpgsql;
         CREATE TRIGGER fail_audit BEFORE INSERT ON audit_log
           FOR EACH ROW EXECUTE FUNCTION fail_audit();"
    )))
    .execute(&mut conn)
    .await
    .unwrap();
}

async fn repair_audit(db: &TestDb) {
    let mut conn = db.connect().await;
    sqlx::raw_sql("DROP TRIGGER fail_audit ON audit_log; DROP FUNCTION fail_audit();")
        .execute(&mut conn)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_action_and_its_audit_row_commit_together() {
    let (server, db) = Server::start().await;
    let out = server.cli(&["token", "issue", "--user", "root", "--admin"]);
    let root = server.client(String::from_utf8_lossy(&out.stdout).trim());
    let ann = server.client(&server.token("ann", &["acme:admin"]));
    let canary = format!("KEEPME{}", uuid::Uuid::new_v4().simple());
    let r = ann
        .push(
            "acme/api",
            &batch(vec![put("a.md", &note("a", &format!("{canary}\n")), None)]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let sha = sha_of(&r.body, "a.md").unwrap();
    let revision = r.body["revision"].as_i64().unwrap();

    for (action, path, body) in [
        (
            "admin_delete",
            "/v1/admin/projects/acme/api/delete",
            json!({ "path": "a.md", "reason": "cleanup" }),
        ),
        (
            "purge",
            "/v1/admin/projects/acme/api/purge",
            json!({ "path": "a.md", "reason": "leak" }),
        ),
        (
            "admin_delete",
            "/v1/admin/projects/acme/api/purge",
            json!({ "path": "a.md", "reason": "leak" }),
        ),
    ] {
        break_audit_for(&db, action).await;
        let r = ann.post(path, &body).await;
        assert_eq!(r.status, 500, "{path} with {action} failing: {}", r.text);
        repair_audit(&db).await;
        // Still live, same version, same revision, content not erased.
        let p = ann.pull("acme/api", 0).await;
        assert_eq!(p.body["revision"], revision, "{path}/{action}");
        assert_eq!(sha_of(&p.body, "a.md").as_deref(), Some(sha.as_str()));
        assert_eq!(
            count(
                &db,
                &format!("SELECT count(*) FROM memory_versions WHERE content LIKE '%{canary}%'")
            )
            .await,
            1,
            "{path}/{action}: the content was erased without its audit row"
        );
        assert_eq!(count(&db, "SELECT count(*) FROM purged_content").await, 0);
    }

    // Token issue and revoke: no token without its record, no revocation without its record.
    break_audit_for(&db, "token_issue").await;
    let r = root
        .post(
            "/v1/admin/tokens",
            &json!({ "user": "dave", "teams": { "acme": "member" } }),
        )
        .await;
    assert_eq!(r.status, 500, "{}", r.text);
    let out = server.cli(&["token", "issue", "--user", "erin", "--team", "acme"]);
    assert!(!out.status.success());
    assert!(out.stdout.is_empty(), "a token was printed");
    repair_audit(&db).await;
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM tokens WHERE sub IN ('dave', 'erin')"
        )
        .await,
        0
    );
    let issued = root
        .post(
            "/v1/admin/tokens",
            &json!({ "user": "dave", "teams": { "acme": "member" } }),
        )
        .await;
    assert_eq!(issued.status, 201, "{}", issued.text);
    let jti = issued.body["jti"].as_str().unwrap().to_owned();
    break_audit_for(&db, "token_revoke").await;
    let r = root
        .send(
            root.http
                .delete(format!("{}/v1/admin/tokens/{jti}", root.base))
                .bearer_auth(&root.token),
        )
        .await;
    assert_eq!(r.status, 500, "{}", r.text);
    repair_audit(&db).await;
    assert_eq!(
        count(
            &db,
            &format!("SELECT count(*) FROM tokens WHERE jti = '{jti}' AND revoked_at IS NULL")
        )
        .await,
        1
    );
    let dave = server.client(issued.body["token"].as_str().unwrap());
    assert_eq!(dave.pull("acme/api", 0).await.status, 200);

    // With the audit log working, the purge commits whole: deleted, erased, audited.
    let r = ann
        .post(
            "/v1/admin/projects/acme/api/purge",
            &json!({ "path": "a.md", "reason": "leak" }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM audit_log WHERE action IN ('purge', 'admin_delete')"
        )
        .await,
        2
    );
    assert_no_row_contains(&db, &canary).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_purged_memory_cannot_come_back_through_a_retry() {
    let (server, db) = Server::start().await;
    let ann = server.client(&server.token("ann", &["acme:admin"]));
    let bob = server.client(&server.token("bob", &["acme"]));
    let secret = format!("leaked-{}", uuid::Uuid::new_v4().simple());
    let content = note("leak", &format!("The staging password is {secret}.\n"));
    let push = batch(vec![put("leak.md", &content, None)]);
    let r = bob.push_with_key("acme/api", &push, "retry-me").await;
    assert_eq!(r.status, 200, "{}", r.text);

    let r = ann
        .post(
            "/v1/admin/projects/acme/api/purge",
            &json!({ "path": "leak.md", "reason": "leaked password" }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["versions_purged"], 2);

    // The client's retry of the original push (same key, same body) is answered "purged".
    let r = bob.push_with_key("acme/api", &push, "retry-me").await;
    assert_eq!(r.status, 410, "{}", r.text);
    assert_eq!(r.code(), "purged");
    assert!(!r.text.contains(&secret));
    // The same content under a new key, or under another name, is refused.
    for path in ["leak.md", "again.md"] {
        let r = bob
            .push("acme/api", &batch(vec![put(path, &content, None)]))
            .await;
        assert_eq!(r.status, 422, "{path}: {}", r.text);
        assert_eq!(rules(&r), ["purged_content"], "{path}");
        assert!(!r.text.contains(&secret));
        let message = r.body["error"]["details"]["failures"][0]["message"]
            .as_str()
            .unwrap();
        assert!(
            message.contains("cannot be pushed again; delete it locally")
                && !message.contains("  "),
            "one sentence, no runs of spaces: {message:?}"
        );
    }
    // A member cannot override it; a team admin can, explicitly.
    let mut over = batch(vec![put("leak.md", &content, None)]);
    over["allow_purged"] = json!(true);
    assert_eq!(bob.push("acme/api", &over).await.status, 422);
    let live = live_paths(&ann, "acme/api").await;
    assert!(!live.contains(&"leak.md".to_owned()), "{live:?}");
    let r = ann.push("acme/api", &over).await;
    assert_eq!(r.status, 200, "{}", r.text);
    // Other content is unaffected.
    let r = bob
        .push(
            "acme/api",
            &batch(vec![put("fine.md", &note("fine", "Fine.\n"), None)]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        count(&db, "SELECT count(*) FROM idempotency_keys WHERE purged").await,
        1
    );
    // The step docs/admin.md gives operators to finish a purge inside PostgreSQL runs as written.
    let mut conn = db.connect().await;
    // (Two statements: VACUUM cannot run inside the implicit transaction of a multi-statement
    // query.)
    for sql in [
        "VACUUM (FULL, ANALYZE) memory_versions, memories, idempotency_keys",
        "CHECKPOINT",
    ] {
        sqlx::raw_sql(sql).execute(&mut conn).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_writes_with_an_idempotency_key_apply_once() {
    let (server, db) = Server::start().await;
    let out = server.cli(&["token", "issue", "--user", "root", "--admin"]);
    let root = server.client(String::from_utf8_lossy(&out.stdout).trim());
    let ann = server.client(&server.token("ann", &["acme:admin"]));
    let post = |c: &Client, path: &str, body: Value, key: &str| {
        let req = c
            .http
            .post(format!("{}{path}", c.base))
            .bearer_auth(&c.token)
            .header("idempotency-key", key)
            .json(&body);
        let c = c.clone();
        async move { c.send(req).await }
    };

    // Token issue: the retry gets the same token, and only one exists.
    let body = json!({ "user": "dave", "teams": { "acme": "member" } });
    let first = post(&root, "/v1/admin/tokens", body.clone(), "issue-1").await;
    assert_eq!(first.status, 201, "{}", first.text);
    let again = post(&root, "/v1/admin/tokens", body.clone(), "issue-1").await;
    assert_eq!(again.status, 201, "{}", again.text);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    assert_eq!(again.body["token"], first.body["token"]);
    assert_eq!(again.body["jti"], first.body["jti"]);
    assert_eq!(
        count(&db, "SELECT count(*) FROM tokens WHERE sub = 'dave'").await,
        1
    );
    assert_eq!(
        count(&db, "SELECT count(*) FROM audit_log WHERE action = 'token_issue' AND details->>'sub' = 'dave'").await,
        1
    );
    // The stored answer names the token; it does not hold it.
    let token = first.body["token"].as_str().unwrap();
    assert_no_row_contains(&db, token).await;
    let other = post(
        &root,
        "/v1/admin/tokens",
        json!({ "user": "erin", "teams": { "acme": "member" } }),
        "issue-1",
    )
    .await;
    assert_eq!(
        (other.status, other.code()),
        (422, "idempotency_key_reused")
    );

    // Delete and purge: a retry after the action committed is answered as the first was.
    let r = ann
        .push(
            "acme/api",
            &batch(vec![
                put("a.md", &note("a", "A.\n"), None),
                put("b.md", &note("b", "B.\n"), None),
            ]),
        )
        .await;
    assert_eq!(r.status, 200);
    let del = json!({ "path": "a.md", "reason": "stale" });
    let d1 = post(
        &ann,
        "/v1/admin/projects/acme/api/delete",
        del.clone(),
        "del-1",
    )
    .await;
    assert_eq!(d1.status, 200, "{}", d1.text);
    let d2 = post(
        &ann,
        "/v1/admin/projects/acme/api/delete",
        del.clone(),
        "del-1",
    )
    .await;
    assert_eq!(d2.status, 200, "{}", d2.text);
    assert_eq!(d2.body, d1.body);
    // Without the key, the same request is a new one: the file is gone.
    assert_eq!(
        ann.post("/v1/admin/projects/acme/api/delete", &del)
            .await
            .status,
        404
    );
    let pg = json!({ "path": "b.md", "reason": "leak" });
    let p1 = post(
        &ann,
        "/v1/admin/projects/acme/api/purge",
        pg.clone(),
        "purge-1",
    )
    .await;
    assert_eq!(p1.status, 200, "{}", p1.text);
    let p2 = post(
        &ann,
        "/v1/admin/projects/acme/api/purge",
        pg.clone(),
        "purge-1",
    )
    .await;
    assert_eq!(p2.status, 200, "{}", p2.text);
    assert_eq!(p2.headers["idempotent-replayed"], "true");
    assert_eq!(p2.body["versions_purged"], p1.body["versions_purged"]);
    assert_eq!(
        count(&db, "SELECT count(*) FROM audit_log WHERE action = 'purge'").await,
        1
    );
}

/// Every request leaves one INFO access-log line (status, latency, and from the request span
/// the method, path and request id), with nothing of its query, headers or body.
#[tokio::test]
async fn every_request_leaves_an_access_log_line_without_its_secrets() {
    let (server, _db) = Server::start().await;
    let token = server.token("ann", &["acme:admin"]);
    let ann = server.client(&token);
    let body = note("a", "The canary-4471 deploy note.\n");
    let r = ann
        .push("acme/api", &batch(vec![put("a.md", &body, None)]))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let http = reqwest::Client::new();
    let r = http
        .get(format!(
            "{}/v1/projects/acme/api/changes?since=0&canary=query-9913",
            server.url
        ))
        .bearer_auth(&token)
        .header("x-request-id", "trace-me-42")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = http
        .get(format!("{}/v1/nowhere", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);

    // The line is written once the answer's head is sent: wait for it (at most 5 s).
    let mut lines: Vec<Value> = Vec::new();
    for _ in 0..100 {
        lines = server
            .log()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["target"] == "memsync_server::access")
            .collect();
        if lines.len() >= 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let find = |method: &str, path: &str| {
        lines
            .iter()
            .find(|v| v["span"]["method"] == method && v["span"]["path"] == path)
            .unwrap_or_else(|| panic!("no access line for {method} {path}: {lines:#?}"))
    };
    let push = find("POST", "/v1/projects/acme/api/push");
    assert_eq!(push["level"], "INFO");
    assert_eq!(
        push["span"]["route"], "/v1/projects/{team}/{name}/push",
        "{push}"
    );
    assert_eq!(push["status"], 200);
    assert!(
        push["latency_ms"].as_f64().is_some_and(|ms| ms >= 0.0),
        "{push}"
    );
    let pull = find("GET", "/v1/projects/acme/api/changes");
    assert_eq!(pull["status"], 200);
    assert_eq!(pull["span"]["request_id"], "trace-me-42");
    let nowhere = find("GET", "/v1/nowhere");
    assert_eq!(nowhere["status"], 404);
    assert_eq!(nowhere["span"]["route"], "unmatched");
    let log = server.log();
    for secret in [token.as_str(), "canary-4471", "query-9913"] {
        assert!(!log.contains(secret), "{secret} is in the server log");
    }
}
