//! The admin API and `memsync admin`: audit log, history, delete/restore for everyone, purge,
//! tokens, projects.

use memsync_e2e::*;
use serde_json::{Value, json};

const ORIGIN: &str = "git@github.com:acme/api.git";

fn note(name: &str, body: &str) -> String {
    memory(name, &format!("about {name}"), "project", body)
}

async fn get(c: &Client, path: &str) -> Resp {
    c.send(c.get(path)).await
}

async fn post(c: &Client, path: &str, body: Value) -> Resp {
    c.send(
        c.http
            .post(format!("{}{path}", c.base))
            .bearer_auth(&c.token)
            .json(&body),
    )
    .await
}

#[tokio::test]
async fn audit_history_show_diff_and_permissions() {
    let (server, db) = Server::start().await;
    let ann = server.client(&server.token("ann", &["acme:admin"]));
    let bob = server.client(&server.token("bob", &["acme"]));
    let eve = server.client(&server.token("eve", &["globex:admin"]));
    let v1 = note("plan", "First plan.\n");
    let r = bob
        .push("acme/api", &batch(vec![put("plan.md", &v1, None)]))
        .await;
    let sha1 = sha_of(&r.body, "plan.md").unwrap();
    let v2 = note("plan", "Second plan.\n");
    assert_eq!(
        ann.push("acme/api", &batch(vec![put("plan.md", &v2, Some(&sha1))]))
            .await
            .status,
        200
    );

    // Who wrote what: the audit log, filtered and paged, newest first.
    let r = get(
        &ann,
        "/v1/admin/audit?project=acme/api&path=plan.md&action=write",
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let events = r.body["events"].as_array().unwrap();
    assert_eq!(events.len(), 2);
    assert_eq!(events[0]["actor"], "ann");
    assert_eq!(events[1]["actor"], "bob");
    let page1 = get(&ann, "/v1/admin/audit?team=acme&limit=1").await;
    let cursor = page1.body["next_cursor"].as_i64().expect("a next page");
    let page2 = get(
        &ann,
        &format!("/v1/admin/audit?team=acme&limit=1&cursor={cursor}"),
    )
    .await;
    assert!(
        page2.body["events"][0]["id"].as_i64().unwrap()
            < page1.body["events"][0]["id"].as_i64().unwrap()
    );
    let csv = ann
        .send(ann.get("/v1/admin/audit?team=acme&format=csv"))
        .await;
    assert!(
        csv.text
            .starts_with("id,at,team,project,actor,action,path,revision,request_id,details\n"),
        "{}",
        csv.text
    );
    assert!(csv.text.contains("\"bob\""));

    // Members can't, other teams' admins see nothing of acme.
    assert_eq!(get(&bob, "/v1/admin/audit").await.status, 403);
    let r = get(&eve, "/v1/admin/audit?team=acme").await;
    assert_eq!(r.body["events"], json!([]));
    assert_eq!(
        get(&eve, "/v1/admin/projects/acme/api/history?path=plan.md")
            .await
            .status,
        404
    );
    assert_eq!(
        get(&bob, "/v1/admin/projects/acme/api/history?path=plan.md")
            .await
            .status,
        403
    );

    // History, one version's content (audited), and a diff.
    let h = get(&ann, "/v1/admin/projects/acme/api/history?path=plan.md").await;
    let versions = h.body["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 2);
    assert_eq!(
        (
            versions[0]["revision"].as_i64(),
            versions[0]["author"].as_str()
        ),
        (Some(2), Some("ann"))
    );
    assert_eq!(
        (
            versions[1]["revision"].as_i64(),
            versions[1]["author"].as_str()
        ),
        (Some(1), Some("bob"))
    );
    assert_eq!(versions[1]["size"].as_i64().unwrap() as usize, v1.len());
    let show = get(
        &ann,
        "/v1/admin/projects/acme/api/version?path=plan.md&revision=1",
    )
    .await;
    assert_eq!(show.body["content"], v1.as_str());
    let diff = get(
        &ann,
        "/v1/admin/projects/acme/api/diff?path=plan.md&from=1&to=2",
    )
    .await;
    let d = diff.body["diff"].as_str().unwrap();
    assert!(
        d.contains("-First plan.") && d.contains("+Second plan."),
        "{d}"
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM audit_log WHERE action = 'content_read' AND actor_sub = 'ann'"
        )
        .await,
        2
    );
}

#[tokio::test]
async fn delete_and_restore_reach_every_client() {
    let (server, _db) = Server::start().await;
    let alice = User::new(&server, "alice", &["acme"], ORIGIN);
    let bob = User::new(&server, "bob", &["acme"], ORIGIN);
    let admin = User::new(&server, "ann", &["acme:admin"], ORIGIN);
    alice.write("plan.md", &note("plan", "v1\n"));
    assert_eq!(alice.run(&["push"]).code, 0);
    alice.write("plan.md", &note("plan", "v2\n"));
    assert_eq!(alice.run(&["push"]).code, 0);
    assert_eq!(bob.run(&["pull"]).code, 0);
    assert!(bob.read("plan.md").unwrap().contains("v2"));

    let r = admin.run(&["admin", "rm", "plan.md", "--reason", "outdated", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for u in [&alice, &bob] {
        assert_eq!(u.run(&["pull"]).code, 0);
        assert!(u.read("plan.md").is_none(), "{} still has it", u.name);
    }
    let h = admin.run(&["admin", "history", "plan.md", "--json"]).json();
    let first = h["versions"].as_array().unwrap().last().unwrap()["revision"]
        .as_i64()
        .unwrap();
    let r = admin.run(&[
        "admin",
        "restore",
        "plan.md",
        "--revision",
        &first.to_string(),
        "--reason",
        "v1 was right",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for u in [&alice, &bob] {
        assert_eq!(u.run(&["pull"]).code, 0);
        assert!(u.read("plan.md").unwrap().contains("v1"), "{}", u.name);
    }
    // The admin commands print the audit trail too.
    let a = admin
        .run(&["admin", "audit", "--action", "admin_restore", "--json"])
        .json();
    assert_eq!(a["events"][0]["details"]["reason"], "v1 was right");
}

#[tokio::test]
async fn purge_leaves_no_trace_of_the_content() {
    let (server, db) = Server::start().await;
    let ann = server.client(&server.token("ann", &["acme:admin"]));
    let canary = format!("PURGEME{}", uuid::Uuid::new_v4().simple());
    let r = ann
        .push(
            "acme/api",
            &batch(vec![put(
                "leak.md",
                &note("leak", &format!("{canary}\n")),
                None,
            )]),
        )
        .await;
    let sha = sha_of(&r.body, "leak.md").unwrap();
    let r = ann
        .push_with_key(
            "acme/api",
            &batch(vec![put(
                "leak.md",
                &note("leak", &format!("{canary} again\n")),
                Some(&sha),
            )]),
            "k-leak",
        )
        .await;
    assert_eq!(r.status, 200);
    let r = post(
        &ann,
        "/v1/admin/projects/acme/api/purge",
        json!({ "path": "leak.md", "reason": "leaked secret" }),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    // Two versions with content, and the deletion the purge made first.
    assert_eq!(r.body["versions_purged"], 3);

    // No API answer returns it.
    for path in [
        "/v1/projects/acme/api/changes?since=0".to_owned(),
        "/v1/admin/projects/acme/api/history?path=leak.md".to_owned(),
        "/v1/admin/projects/acme/api/version?path=leak.md&revision=1".to_owned(),
        "/v1/admin/projects/acme/api/diff?path=leak.md&from=1&to=2".to_owned(),
        "/v1/admin/audit?team=acme".to_owned(),
    ] {
        let r = get(&ann, &path).await;
        assert!(
            !r.text.contains(&canary),
            "{path} returns the purged content"
        );
    }
    let replay = ann
        .push_with_key("acme/api", &batch(vec![]), "k-leak")
        .await;
    assert!(!replay.text.contains(&canary));
    // No database row holds it.
    let tables = assert_no_row_contains(&db, &canary).await;
    assert!(tables >= 8, "only {tables} tables searched");
    // The audit log keeps who purged what and why.
    let a = get(&ann, "/v1/admin/audit?action=purge").await;
    assert_eq!(a.body["events"][0]["path"], "leak.md");
    assert_eq!(a.body["events"][0]["details"]["reason"], "leaked secret");
    assert_eq!(a.body["events"][0]["actor"], "ann");
}

#[tokio::test]
async fn tokens_and_projects_through_the_api() {
    let (server, _db) = Server::start().await;
    let out = server.cli(&["token", "issue", "--user", "root", "--admin"]);
    let root = server.client(String::from_utf8_lossy(&out.stdout).trim());
    let ann = server.client(&server.token("ann", &["acme:admin"]));
    assert_eq!(get(&ann, "/v1/admin/tokens").await.status, 403);

    let r = post(
        &root,
        "/v1/admin/tokens",
        json!({ "user": "carol", "teams": { "acme": "member" }, "ttl_days": 7 }),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let carol = server.client(r.body["token"].as_str().unwrap());
    let jti = r.body["jti"].as_str().unwrap().to_owned();
    assert_eq!(
        carol
            .push(
                "acme/api",
                &batch(vec![put("a.md", &note("a", "A\n"), None)])
            )
            .await
            .status,
        200
    );
    let list = get(&root, "/v1/admin/tokens").await;
    assert!(list.text.contains(&jti) && !list.text.contains(&carol.token));
    let r = root
        .send(
            root.http
                .delete(format!("{}/v1/admin/tokens/{jti}", server.url))
                .bearer_auth(&root.token),
        )
        .await;
    assert_eq!(r.status, 204);
    assert_eq!(
        carol.pull("acme/api", 0).await.status,
        401,
        "revoked on this server at once"
    );

    let p = get(&ann, "/v1/admin/projects").await;
    let projects = p.body["projects"].as_array().unwrap();
    assert_eq!(projects.len(), 1);
    assert_eq!(projects[0]["project"], "acme/api");
    assert!(projects[0]["files"].as_i64().unwrap() >= 1);
    let r = post(
        &ann,
        "/v1/admin/projects/acme/api/archive",
        json!({ "archived": true }),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let refused = ann
        .push(
            "acme/api",
            &batch(vec![put("b.md", &note("b", "B\n"), None)]),
        )
        .await;
    assert_eq!((refused.status, refused.code()), (422, "project_archived"));
    assert_eq!(
        ann.pull("acme/api", 0).await.status,
        200,
        "an archived project stays readable"
    );
    post(
        &ann,
        "/v1/admin/projects/acme/api/archive",
        json!({ "archived": false }),
    )
    .await;
    assert_eq!(
        ann.push(
            "acme/api",
            &batch(vec![put("b.md", &note("b", "B\n"), None)])
        )
        .await
        .status,
        200
    );
}

#[tokio::test]
async fn an_index_is_never_deleted_or_purged_by_itself_and_a_restore_brings_back_only_its_own_lines()
 {
    let (server, db) = Server::start().await;
    let admin = User::new(&server, "ann", &["acme:admin"], ORIGIN);
    let ann = server.client(&server.token("ann", &["acme:admin"]));
    let r = ann
        .push(
            "acme/api",
            &batch(vec![
                put("plan.md", &note("plan", "The plan.\n"), None),
                put("infra/db.md", &note("db", "The database.\n"), None),
            ]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let before = ann.pull("acme/api", 0).await;
    assert_eq!(before.status, 200, "{}", before.text);
    for index in ["MEMORY.md", "infra/MEMORY.md"] {
        assert!(change_of(&before.body, index).is_some(), "{}", before.text);
    }
    let versions = "SELECT count(*) FROM memory_versions";
    let events = "SELECT count(*) FROM audit_log";
    let (versions_before, events_before) = (count(&db, versions).await, count(&db, events).await);

    for index in ["MEMORY.md", "infra/MEMORY.md"] {
        for what in ["delete", "purge"] {
            let r = post(
                &ann,
                &format!("/v1/admin/projects/acme/api/{what}"),
                json!({ "path": index, "reason": "tidy up" }),
            )
            .await;
            assert_eq!((r.status, r.code()), (400, "invalid_path"), "{}", r.text);
            let message = r.body["error"]["message"].as_str().unwrap();
            for want in [
                format!("an admin {what} cannot target {index}"),
                "the server derives from the memories there".to_owned(),
                format!("{what} the memories instead"),
            ] {
                assert!(message.contains(&want), "missing {want:?}: {message}");
            }
        }
    }
    // The client passes the server's answer on.
    let r = admin.run(&["admin", "rm", "MEMORY.md", "--reason", "tidy up"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("delete the memories instead"),
        "{}",
        r.stderr
    );

    // Nothing changed: the same revision, the same indexes, no version or audit event written.
    let after = ann.pull("acme/api", 0).await;
    assert_eq!(after.body["revision"], before.body["revision"]);
    assert_eq!(after.body["changes"], before.body["changes"]);
    assert_eq!(count(&db, versions).await, versions_before);
    assert_eq!(count(&db, events).await, events_before);

    // A restore of an index version is different: it brings back the index's own lines
    // (headings, prose) merged over the current index, while the entries still follow the
    // memories.
    let cur = change_of(&after.body, "MEMORY.md").unwrap();
    let entries = cur["content"].as_str().unwrap();
    let curated = format!("# Team notes\n\nRead these first.\n{entries}");
    let r = ann
        .push(
            "acme/api",
            &batch(vec![put("MEMORY.md", &curated, cur["sha256"].as_str())]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let curated_revision = r.body["revision"].as_i64().unwrap();
    let r = ann
        .push(
            "acme/api",
            &batch(vec![
                put(
                    "MEMORY.md",
                    entries,
                    sha_of(&r.body, "MEMORY.md").as_deref(),
                ),
                put("notes.md", &note("notes", "Notes.\n"), None),
            ]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let index = &change_of(&r.body, "MEMORY.md").unwrap()["content"];
    assert!(!index.as_str().unwrap().contains("# Team notes"), "{index}");
    let plan_sha = sha_of(&before.body, "plan.md").unwrap();
    let r = ann
        .push("acme/api", &batch(vec![delete("plan.md", Some(&plan_sha))]))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = post(
        &ann,
        "/v1/admin/projects/acme/api/restore",
        json!({ "path": "MEMORY.md", "revision": curated_revision, "reason": "the headings" }),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let index = change_of(&r.body, "MEMORY.md").unwrap()["content"]
        .as_str()
        .unwrap();
    assert!(
        index.starts_with("# Team notes\n\nRead these first.\n"),
        "{index}"
    );
    assert!(
        index.contains("(notes.md)"),
        "the live memory keeps its entry: {index}"
    );
    assert!(
        !index.contains("(plan.md)"),
        "the deleted memory gets none: {index}"
    );
}
