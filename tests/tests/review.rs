//! Controlled release on the server: a project's release policy, reviewers, proposals made by
//! members' pushes under `review = required`, the review queue, approve and reject, due items,
//! and disabled memories. Real server, forged tokens.

use memsync_e2e::*;
use serde_json::{Value, json};

const P: &str = "acme/api";

fn note(name: &str, body: &str) -> String {
    memory(name, &format!("about {name}"), "project", body)
}

fn feedback(name: &str, description: &str, rule: &str, extra: &str) -> String {
    format!(
        "---\nname: {name}\ndescription: {description}\ntype: feedback\n{extra}---\n{rule}\n\n**Why:** it bit us before.\n**How to apply:** every change under tests/.\n"
    )
}

struct Team {
    ann: Client,
    bob: Client,
    carol: Client,
}

fn team(server: &Server) -> Team {
    Team {
        ann: server.client(&forge_token("ann", &[("acme", "admin")], false)),
        bob: server.client(&forge_token("bob", &[("acme", "member")], false)),
        carol: server.client(&forge_token("carol", &[("acme", "member")], false)),
    }
}

async fn send_json(c: &Client, method: reqwest::Method, path: &str, body: Option<Value>) -> Resp {
    let mut req = c
        .http
        .request(method, format!("{}{path}", c.base))
        .bearer_auth(&c.token);
    if let Some(b) = body {
        req = req.json(&b);
    }
    c.send(req).await
}

async fn set_review(c: &Client, review: &str, after: Option<u32>) -> Resp {
    send_json(
        c,
        reqwest::Method::PUT,
        &format!("/v1/admin/projects/{P}/settings"),
        Some(json!({ "review": review, "review_after_days": after })),
    )
    .await
}

async fn approve(c: &Client, id: i64, body: Value) -> Resp {
    c.post(&format!("/v1/proposals/{id}/approve"), &body).await
}

async fn reject(c: &Client, id: i64, reason: &str) -> Resp {
    c.post(
        &format!("/v1/proposals/{id}/reject"),
        &json!({ "reason": reason }),
    )
    .await
}

async fn list(c: &Client, query: &str) -> Vec<Value> {
    let r = c.fetch(&format!("/v1/proposals?{query}")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["proposals"].as_array().unwrap().clone()
}

/// The one proposal a 202 push answer lists.
fn proposed(r: &Resp, path: &str) -> (i64, String) {
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(r.body["created_revision"], false, "{}", r.text);
    assert_eq!(r.body["changes"], json!([]));
    let p = r.body["proposed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["path"] == path)
        .unwrap_or_else(|| panic!("{path} not proposed: {}", r.text));
    (
        p["id"].as_i64().unwrap(),
        p["status"].as_str().unwrap().to_owned(),
    )
}

/// The content of `path` in a full pull, if it is live.
async fn pulled(c: &Client, path: &str) -> Option<String> {
    let r = c.pull(P, 0).await;
    assert_eq!(r.status, 200, "{}", r.text);
    change_of(&r.body, path)
        .filter(|f| f["deleted"] == false)
        .map(|f| f["content"].as_str().unwrap().to_owned())
}

async fn audited(db: &TestDb, action: &str) -> i64 {
    count(
        db,
        &format!("SELECT count(*) FROM audit_log WHERE action = '{action}'"),
    )
    .await
}

#[tokio::test]
async fn a_members_changes_wait_for_a_reviewer() {
    let (server, db) = Server::start().await;
    let t = team(&server);

    // The policy: team admins only, audited, shown to members.
    let r = set_review(&t.bob, "required", None).await;
    assert_eq!((r.status, r.code()), (403, "forbidden"), "{}", r.text);
    let r = set_review(&t.ann, "required", Some(0)).await;
    assert_eq!(
        (r.status, r.code()),
        (400, "invalid_settings"),
        "{}",
        r.text
    );
    let r = set_review(&t.ann, "required", None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.body,
        json!({ "review": "required", "review_after_days": null })
    );
    let r = t.bob.fetch(&format!("/v1/projects/{P}")).await;
    assert_eq!(r.body["review"], "required", "{}", r.text);
    let r = t
        .ann
        .fetch(&format!("/v1/admin/projects/{P}/settings"))
        .await;
    assert_eq!(r.body["review"], "required");
    assert_eq!(audited(&db, "settings_changed").await, 1);

    // A member's new memory is proposed: nobody else sees it, not even in the index.
    let v1 = note("plan", "First plan.\n");
    let r = t.bob.push(P, &batch(vec![put("plan.md", &v1, None)])).await;
    let (first, status) = proposed(&r, "plan.md");
    assert_eq!(status, "pending");
    assert_eq!(r.body["revision"], 0);
    assert_eq!(pulled(&t.carol, "plan.md").await, None);
    assert_eq!(pulled(&t.carol, "MEMORY.md").await, None);
    assert_eq!(count(&db, "SELECT count(*) FROM memory_versions").await, 0);

    // The same push again is the same proposal; a retry with its key replays the 202.
    let body = batch(vec![put("plan.md", &v1, None)]);
    let r = t.bob.push_with_key(P, &body, "k-plan").await;
    assert_eq!(proposed(&r, "plan.md").0, first);
    let again = t.bob.push_with_key(P, &body, "k-plan").await;
    assert_eq!(again.status, 202, "{}", again.text);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    assert_eq!(again.body, r.body);
    assert_eq!(count(&db, "SELECT count(*) FROM proposals").await, 1);

    // A newer version supersedes it.
    let v2 = note("plan", "Second plan.\nWith a second line.\n");
    let r = t.bob.push(P, &batch(vec![put("plan.md", &v2, None)])).await;
    let (second, _) = proposed(&r, "plan.md");
    assert_ne!(second, first);
    let mine = list(&t.bob, &format!("project={P}&status=all")).await;
    let statuses: Vec<(i64, &str)> = mine
        .iter()
        .map(|p| (p["id"].as_i64().unwrap(), p["status"].as_str().unwrap()))
        .collect();
    assert_eq!(statuses, vec![(second, "pending"), (first, "superseded")]);

    // Who sees what: the author and the reviewers; another member nothing.
    assert!(list(&t.carol, &format!("project={P}")).await.is_empty());
    let r = t.carol.fetch(&format!("/v1/proposals/{second}")).await;
    assert_eq!(r.status, 404, "{}", r.text);
    let queue = list(&t.ann, &format!("project={P}")).await;
    assert_eq!(queue.len(), 1);
    assert_eq!(queue[0]["id"], second);
    assert_eq!(queue[0]["author"], "bob");
    assert_eq!(queue[0]["op"], "put");
    assert_eq!(queue[0]["lifecycle"], "evergreen");
    let detail = t.ann.fetch(&format!("/v1/proposals/{second}")).await;
    assert_eq!(detail.status, 200, "{}", detail.text);
    assert_eq!(detail.body["content"], v2.as_str());
    assert_eq!(detail.body["stale"], false);
    assert_eq!(detail.body["provenance"]["author"], "bob");
    let diff = detail.body["diff"].as_str().unwrap();
    assert!(diff.contains("+Second plan."), "{diff}");
    let reads =
        "SELECT count(*) FROM audit_log WHERE action = 'content_read' AND actor_sub = 'ann'";
    assert_eq!(count(&db, reads).await, 1);
    let own = t.bob.fetch(&format!("/v1/proposals/{second}")).await;
    assert_eq!(own.status, 200, "{}", own.text);
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM audit_log WHERE action = 'content_read'"
        )
        .await,
        1
    );

    // Only reviewers approve.
    let r = approve(&t.bob, second, json!({})).await;
    assert_eq!((r.status, r.code()), (403, "forbidden"), "{}", r.text);
    let r = approve(&t.ann, second, json!({ "note": "good plan" })).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["proposal"]["status"], "approved");
    let revision = r.body["push"]["revision"].as_i64().unwrap();
    assert_eq!(
        pulled(&t.carol, "plan.md").await.as_deref(),
        Some(v2.as_str())
    );
    assert!(
        pulled(&t.carol, "MEMORY.md")
            .await
            .unwrap()
            .contains("(plan.md)")
    );
    let r = approve(&t.ann, second, json!({})).await;
    assert_eq!((r.status, r.code()), (409, "conflict"), "{}", r.text);
    assert_eq!(r.body["error"]["details"]["status"], "approved");
    let detail = t.bob.fetch(&format!("/v1/proposals/{second}")).await;
    assert_eq!(detail.body["reviewed_by"], "ann");
    assert_eq!(detail.body["note"], "good plan");
    assert_eq!(detail.body["published_revision"], revision);
    // The version carries the author's provenance and who approved it.
    let mut conn = db.connect().await;
    let (kind, prov): (String, Value) = sqlx::query_as(
        "SELECT r.kind, v.provenance FROM memory_versions v JOIN revisions r USING (team, project, revision)
         WHERE v.path = 'plan.md'",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(kind, "approve");
    assert_eq!(prov["author"], "bob");
    assert_eq!(prov["approved_by"], "ann");
    assert_eq!(prov["proposal_id"], second);

    // A member's delete waits too.
    let sha = sha256_hex(&v2);
    let r = t
        .bob
        .push(P, &batch(vec![delete("plan.md", Some(&sha))]))
        .await;
    let (del, _) = proposed(&r, "plan.md");
    assert_eq!(r.body["proposed"][0]["op"], "delete");
    assert!(pulled(&t.carol, "plan.md").await.is_some());
    let r = approve(&t.ann, del, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(pulled(&t.carol, "plan.md").await, None);

    // A rejected proposal reaches nobody; its author sees why, and proposing it again says so.
    let idea = note("idea", "Rewrite it in Fortran.\n");
    let r = t
        .bob
        .push(P, &batch(vec![put("idea.md", &idea, None)]))
        .await;
    let (rejected, _) = proposed(&r, "idea.md");
    let r = reject(&t.ann, rejected, " ").await;
    assert_eq!((r.status, r.code()), (400, "invalid_reason"), "{}", r.text);
    let r = reject(&t.ann, rejected, "not a team rule").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["proposal"]["status"], "rejected");
    assert_eq!(pulled(&t.carol, "idea.md").await, None);
    let mine = list(&t.bob, &format!("project={P}")).await;
    let row = mine.iter().find(|p| p["id"] == rejected).unwrap();
    assert_eq!(
        (row["status"].as_str(), row["reason"].as_str()),
        (Some("rejected"), Some("not a team rule"))
    );
    let r = t
        .bob
        .push(P, &batch(vec![put("idea.md", &idea, None)]))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(
        r.body["proposed"][0],
        json!({ "path": "idea.md", "id": rejected, "op": "put", "status": "rejected", "reason": "not a team rule" })
    );

    // An author may withdraw their own pending proposal; it is not open afterwards.
    let r = t
        .bob
        .push(
            P,
            &batch(vec![put("draft.md", &note("draft", "Draft.\n"), None)]),
        )
        .await;
    let (draft, _) = proposed(&r, "draft.md");
    let r = reject(&t.bob, draft, "not ready").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = reject(&t.ann, draft, "late").await;
    assert_eq!((r.status, r.code()), (409, "conflict"), "{}", r.text);

    // Guards still refuse: a secret is a 422, not a proposal.
    let secret = note("aws", &format!("key = {}\n", aws_key_id(7)));
    let before = count(&db, "SELECT count(*) FROM proposals").await;
    let r = t
        .bob
        .push(P, &batch(vec![put("aws.md", &secret, None)]))
        .await;
    assert_eq!(
        (r.status, r.code()),
        (422, "validation_failed"),
        "{}",
        r.text
    );
    assert_eq!(count(&db, "SELECT count(*) FROM proposals").await, before);

    // A team admin's own push publishes at once.
    let r = t
        .ann
        .push(
            P,
            &batch(vec![put("admin.md", &note("admin", "Now.\n"), None)]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(pulled(&t.carol, "admin.md").await.is_some());

    // Another project of the team, review off: a member's push publishes as always.
    let r = t
        .bob
        .push(
            "acme/web",
            &batch(vec![put("w.md", &note("w", "W.\n"), None)]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.body.get("proposed").is_none(), "{}", r.text);

    // Every transition left its audit row, none with content.
    for (action, n) in [
        ("proposed", 7),
        ("proposal_superseded", 1),
        ("proposal_approved", 2),
        ("proposal_rejected", 2),
        ("push_refused", 1),
    ] {
        assert_eq!(audited(&db, action).await, n, "{action}");
    }
    let leaks = "SELECT count(*) FROM audit_log WHERE details::text LIKE '%Second plan%' OR details::text LIKE '%Fortran%'";
    assert_eq!(count(&db, leaks).await, 0);
}

fn sha256_hex(text: &str) -> String {
    memsync_core::Sha256::of(text.as_bytes()).to_hex()
}

#[tokio::test]
async fn a_granted_reviewer_publishes_and_approves_others_but_not_their_own() {
    let (server, db) = Server::start().await;
    let t = team(&server);
    let dave = server.client(&forge_token("dave", &[("acme", "member")], false));
    let eve = server.client(&forge_token("eve", &[("globex", "admin")], false));
    assert_eq!(set_review(&t.ann, "required", None).await.status, 200);

    // Dave proposes before he is a reviewer.
    let r = dave
        .push(P, &batch(vec![put("d.md", &note("d", "Dave's.\n"), None)]))
        .await;
    let (his, _) = proposed(&r, "d.md");

    let url = "/v1/admin/teams/acme/reviewers/dave";
    let r = send_json(&t.bob, reqwest::Method::PUT, url, None).await;
    assert_eq!((r.status, r.code()), (403, "forbidden"), "{}", r.text);
    let r = send_json(&eve, reqwest::Method::PUT, url, None).await;
    assert_eq!((r.status, r.code()), (404, "not_found"), "{}", r.text);
    let r = send_json(&t.ann, reqwest::Method::PUT, url, None).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.body["reviewers"][0]["user"], "dave");
    assert_eq!(r.body["reviewers"][0]["added_by"], "ann");
    let r = send_json(&t.ann, reqwest::Method::PUT, url, None).await;
    assert_eq!(r.status, 200, "PUT is idempotent: {}", r.text);
    let r = t.ann.fetch("/v1/admin/teams/acme/reviewers").await;
    assert_eq!(
        r.body["reviewers"].as_array().unwrap().len(),
        1,
        "{}",
        r.text
    );
    let me = dave.fetch("/v1/me").await;
    assert_eq!(me.body["reviewer"], json!(["acme"]), "{}", me.text);

    // A reviewer's push publishes.
    let r = dave
        .push(P, &batch(vec![put("e.md", &note("e", "Direct.\n"), None)]))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(pulled(&t.carol, "e.md").await.is_some());

    // He approves others' proposals, not his own.
    let r = t
        .bob
        .push(P, &batch(vec![put("b.md", &note("b", "Bob's.\n"), None)]))
        .await;
    let (bobs, _) = proposed(&r, "b.md");
    let queue = list(&dave, &format!("project={P}")).await;
    assert_eq!(queue.len(), 2, "{queue:?}");
    let r = approve(&dave, bobs, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = approve(&dave, his, json!({})).await;
    assert_eq!((r.status, r.code()), (403, "forbidden"), "{}", r.text);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("may not approve their own"),
        "{}",
        r.text
    );
    assert_eq!(approve(&t.ann, his, json!({})).await.status, 200);

    // A reviewer disables and enables (the release actions); a plain member may not.
    let release = |c: &'static str| format!("/v1/admin/projects/{P}/{c}");
    let body = json!({ "path": "e.md", "reason": "checking it" });
    let r = send_json(
        &t.bob,
        reqwest::Method::POST,
        &release("disable"),
        Some(body.clone()),
    )
    .await;
    assert_eq!((r.status, r.code()), (403, "forbidden"), "{}", r.text);
    assert!(
        r.text.contains("only reviewers of team `acme`"),
        "{}",
        r.text
    );
    let r = send_json(
        &dave,
        reqwest::Method::POST,
        &release("disable"),
        Some(body.clone()),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(pulled(&t.carol, "e.md").await.is_none());
    let r = send_json(&dave, reqwest::Method::POST, &release("enable"), Some(body)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(pulled(&t.carol, "e.md").await.is_some());

    // Removing the grant: once, then 404 with a message.
    let r = send_json(&t.ann, reqwest::Method::DELETE, url, None).await;
    assert_eq!(r.status, 204, "{}", r.text);
    let r = send_json(&t.ann, reqwest::Method::DELETE, url, None).await;
    assert_eq!((r.status, r.code()), (404, "not_found"), "{}", r.text);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not a granted reviewer")
    );
    let r = dave
        .push(P, &batch(vec![put("f.md", &note("f", "Again.\n"), None)]))
        .await;
    assert_eq!(r.status, 202, "a member again: {}", r.text);
    let r = send_json(
        &dave,
        reqwest::Method::POST,
        &format!("/v1/admin/projects/{P}/disable"),
        Some(json!({ "path": "e.md" })),
    )
    .await;
    assert_eq!((r.status, r.code()), (403, "forbidden"), "{}", r.text);
    assert_eq!(audited(&db, "reviewer_added").await, 1);
    assert_eq!(audited(&db, "reviewer_removed").await, 1);
}

#[tokio::test]
async fn a_contradicting_rule_is_proposed_and_approved_as_superseding() {
    let (server, _db) = Server::start().await;
    let t = team(&server);
    let real_db = feedback(
        "testing-policy",
        "integration tests hit a real database",
        "Integration tests must hit a real database, not mocks.",
        "",
    );
    let mock_db = feedback(
        "fast-tests",
        "mock the database in integration tests",
        "Mock the database in integration tests so they run fast.",
        "",
    );
    let r = t
        .ann
        .push(P, &batch(vec![put("testing.md", &real_db, None)]))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(set_review(&t.ann, "required", None).await.status, 200);

    // The contradiction does not refuse the proposal: the reviewer sees it.
    let r = t
        .bob
        .push(P, &batch(vec![put("fast.md", &mock_db, None)]))
        .await;
    let (id, _) = proposed(&r, "fast.md");
    let d = t.ann.fetch(&format!("/v1/proposals/{id}")).await;
    let findings = d.body["feedback"].as_array().unwrap();
    assert!(
        findings
            .iter()
            .any(|f| f["team"] == "testing.md" && f["kind"] == "contradiction"),
        "{}",
        d.text
    );

    // Approving it as is would publish two contradicting rules: refused, still pending.
    let r = approve(&t.ann, id, json!({})).await;
    assert_eq!(
        (r.status, r.code()),
        (409, "feedback_conflict"),
        "{}",
        r.text
    );
    let r = approve(&t.ann, id, json!({ "supersedes": ["nope.md"] })).await;
    assert_eq!(
        (r.status, r.code()),
        (400, "invalid_supersedes"),
        "{}",
        r.text
    );
    assert_eq!(list(&t.ann, &format!("project={P}")).await.len(), 1);

    let r = approve(&t.ann, id, json!({ "supersedes": ["testing.md"] })).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let published = pulled(&t.carol, "fast.md").await.unwrap();
    assert!(
        published.contains("supersedes: testing.md\n"),
        "{published}"
    );
    assert!(published.ends_with(mock_db.split("---\n").nth(2).unwrap()));
    assert_eq!(pulled(&t.carol, "testing.md").await, None);
    assert!(
        !pulled(&t.carol, "MEMORY.md")
            .await
            .unwrap()
            .contains("testing.md")
    );
}

#[tokio::test]
async fn approving_a_stale_proposal_merges_or_reports_the_conflict() {
    let (server, _db) = Server::start().await;
    let t = team(&server);
    let base = note("doc", "one\ntwo\nthree\nfour\nfive\nsix\nseven\n");
    let r = t
        .ann
        .push(P, &batch(vec![put("doc.md", &base, None)]))
        .await;
    let sha = sha_of(&r.body, "doc.md").unwrap();
    assert_eq!(set_review(&t.ann, "required", None).await.status, 200);

    // Bob edits the top; ann the bottom, published meanwhile: the approval merges both.
    let bobs = base.replace("one\n", "ONE\n");
    let r = t
        .bob
        .push(P, &batch(vec![put("doc.md", &bobs, Some(&sha))]))
        .await;
    let (id, _) = proposed(&r, "doc.md");
    let anns = base.replace("seven\n", "SEVEN\n");
    let r = t
        .ann
        .push(P, &batch(vec![put("doc.md", &anns, Some(&sha))]))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let d = t.ann.fetch(&format!("/v1/proposals/{id}")).await;
    assert_eq!(d.body["stale"], true, "{}", d.text);
    let r = approve(&t.ann, id, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(
        r.body["push"]["merged"]
            .as_array()
            .unwrap()
            .contains(&json!("doc.md")),
        "{}",
        r.text
    );
    let merged = pulled(&t.carol, "doc.md").await.unwrap();
    assert!(
        merged.contains("ONE\n") && merged.contains("SEVEN\n"),
        "{merged}"
    );

    // Overlapping edits: 409 with the server's version, the proposal stays pending.
    let now = sha256_hex(&merged);
    let r = t
        .bob
        .push(
            P,
            &batch(vec![put(
                "doc.md",
                &merged.replace("three\n", "3 (bob)\n"),
                Some(&now),
            )]),
        )
        .await;
    let (id, _) = proposed(&r, "doc.md");
    let r = t
        .ann
        .push(
            P,
            &batch(vec![put(
                "doc.md",
                &merged.replace("three\n", "3 (ann)\n"),
                Some(&now),
            )]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = approve(&t.ann, id, json!({})).await;
    assert_eq!((r.status, r.code()), (409, "conflict"), "{}", r.text);
    assert_eq!(
        r.body["error"]["details"]["conflicts"][0]["reason"],
        "overlapping_edit"
    );
    let open = list(&t.ann, &format!("project={P}")).await;
    assert_eq!((open.len(), &open[0]["status"]), (1, &json!("pending")));
}

#[tokio::test]
async fn memories_not_changed_or_confirmed_for_review_after_days_become_due() {
    let (server, db) = Server::start().await;
    let t = team(&server);
    let r = t
        .ann
        .push(
            P,
            &batch(vec![
                put("old.md", &note("old", "Old.\n"), None),
                put("2025-03-01-outage.md", &note("outage", "Down.\n"), None),
                put("fresh.md", &note("fresh", "Fresh.\n"), None),
            ]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = set_review(&t.ann, "off", Some(90)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let mut conn = db.connect().await;
    sqlx::query(
        "UPDATE memories SET updated_at = now() - interval '97 days 1 hour'
         WHERE path IN ('old.md', '2025-03-01-outage.md')",
    )
    .execute(&mut conn)
    .await
    .unwrap();

    // Members see none of it; reviewers see one due item per old memory, once.
    assert!(list(&t.bob, &format!("project={P}")).await.is_empty());
    let due = list(&t.ann, &format!("project={P}")).await;
    assert_eq!(list(&t.ann, "").await.len(), 2);
    let mut paths: Vec<&str> = due.iter().map(|d| d["path"].as_str().unwrap()).collect();
    paths.sort();
    assert_eq!(paths, vec!["2025-03-01-outage.md", "old.md"]);
    let old = due.iter().find(|d| d["path"] == "old.md").unwrap();
    assert_eq!(old["status"], "due");
    assert_eq!(old["op"], "put");
    assert_eq!(old["author"], "ann");
    assert_eq!(old["lifecycle"], "evergreen");
    assert_eq!(
        old["reason"],
        "not changed or confirmed for 97 days (review_after = 90)"
    );
    let outage = due.iter().find(|d| d["path"] != "old.md").unwrap();
    assert_eq!(outage["lifecycle"], "dated");
    assert_eq!(audited(&db, "review_due").await, 2);

    // Approving confirms it: it leaves the open list and stays published.
    let id = old["id"].as_i64().unwrap();
    let r = approve(&t.ann, id, json!({ "note": "still true" })).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["proposal"]["status"], "approved");
    assert!(r.body.get("push").is_none(), "{}", r.text);
    let confirmed = "SELECT count(*) FROM memories WHERE path = 'old.md' AND confirmed_at > now() - interval '1 minute'";
    assert_eq!(count(&db, confirmed).await, 1);
    let open = list(&t.ann, &format!("project={P}")).await;
    assert_eq!(open.len(), 1, "{open:?}");
    assert_eq!(audited(&db, "memory_confirmed").await, 1);

    // Rewriting the other one closes its due item.
    let outage_id = open[0]["id"].as_i64().unwrap();
    let r = t.ann.fetch(&format!("/v1/proposals/{outage_id}")).await;
    let sha = r.body["sha256"].as_str().unwrap().to_owned();
    let r = t
        .ann
        .push(
            P,
            &batch(vec![put(
                "2025-03-01-outage.md",
                &note("outage", "Down for an hour.\n"),
                Some(&sha),
            )]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(list(&t.ann, &format!("project={P}")).await.is_empty());
    let all = list(&t.ann, &format!("project={P}&status=superseded")).await;
    assert_eq!(all.len(), 1);
    assert_eq!(audited(&db, "proposal_superseded").await, 1);
}

#[tokio::test]
async fn a_disabled_memory_comes_back_only_through_a_reviewer() {
    let (server, db) = Server::start().await;
    let t = team(&server);
    let text = note("flaky", "Retry the flaky test.\n");
    let r = t
        .ann
        .push(P, &batch(vec![put("flaky.md", &text, None)]))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = t
        .ann
        .post(
            &format!("/v1/admin/projects/{P}/disable"),
            &json!({ "path": "flaky.md", "reason": "flaky advice" }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(pulled(&t.carol, "flaky.md").await, None);

    for review in ["off", "required"] {
        assert_eq!(set_review(&t.ann, review, None).await.status, 200);
        let r = t
            .bob
            .push(P, &batch(vec![put("flaky.md", &text, None)]))
            .await;
        assert_eq!(
            (r.status, r.code()),
            (422, "validation_failed"),
            "{}",
            r.text
        );
        let f = &r.body["error"]["details"]["failures"][0];
        assert_eq!(f["rule"], "memory_disabled");
        assert_eq!(f["path"], "flaky.md");
        assert!(
            f["message"]
                .as_str()
                .unwrap()
                .contains("memsync admin enable flaky.md"),
            "{}",
            r.text
        );
    }
    assert_eq!(count(&db, "SELECT count(*) FROM proposals").await, 0);
    let r = t
        .ann
        .push(P, &batch(vec![put("flaky.md", &text, None)]))
        .await;
    assert_eq!(r.status, 200, "a reviewer's deliberate write: {}", r.text);
    assert_eq!(
        pulled(&t.carol, "flaky.md").await.as_deref(),
        Some(text.as_str())
    );
}

#[tokio::test]
async fn the_queue_refuses_bad_queries_and_hides_other_teams() {
    let (server, _db) = Server::start().await;
    let t = team(&server);
    let eve = server.client(&forge_token("eve", &[("globex", "admin")], false));
    assert_eq!(set_review(&t.ann, "required", None).await.status, 200);
    let r = t
        .bob
        .push(P, &batch(vec![put("x.md", &note("x", "X.\n"), None)]))
        .await;
    let (id, _) = proposed(&r, "x.md");

    for (query, code) in [
        ("status=nonsense", "invalid_status"),
        ("project=acme", "invalid_project"),
        ("project=ACME/api", "invalid_project"),
        ("limit=x", "invalid_query"),
    ] {
        let r = t.ann.fetch(&format!("/v1/proposals?{query}")).await;
        assert_eq!((r.status, r.code()), (400, code), "{query}: {}", r.text);
    }
    let r = eve.fetch(&format!("/v1/proposals?project={P}")).await;
    assert_eq!((r.status, r.code()), (404, "not_found"), "{}", r.text);
    assert!(list(&eve, "").await.is_empty());
    for path in [
        format!("/v1/proposals/{id}"),
        "/v1/proposals/999999".to_owned(),
    ] {
        let r = eve.fetch(&path).await;
        assert_eq!((r.status, r.code()), (404, "not_found"), "{}", r.text);
    }
    let r = approve(&eve, id, json!({})).await;
    assert_eq!(r.status, 404, "{}", r.text);
    assert_eq!(list(&t.ann, "limit=1&status=all").await.len(), 1);
    assert_eq!(list(&t.bob, "mine=true").await.len(), 1);
}

#[tokio::test]
async fn proposals_are_held_and_refused_like_pushes_and_decisions_replay() {
    let (server, db) = Server::start().await;
    let t = team(&server);
    let files: Vec<Value> = (0..60)
        .map(|i| put(&format!("n{i}.md"), &note(&format!("n{i}"), "N.\n"), None))
        .collect();
    let r = t.ann.push(P, &batch(files)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let shas: Vec<(String, String)> = r.body["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["path"] != "MEMORY.md")
        .map(|c| {
            (
                c["path"].as_str().unwrap().to_owned(),
                c["sha256"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(set_review(&t.ann, "required", None).await.status, 200);

    // Deleting every memory is held, as a push would be.
    let wipe: Vec<Value> = shas.iter().map(|(p, s)| delete(p, Some(s))).collect();
    let r = t.bob.push(P, &batch(wipe)).await;
    assert_eq!(
        (r.status, r.code()),
        (422, "validation_failed"),
        "{}",
        r.text
    );
    assert_eq!(
        r.body["error"]["details"]["failures"][0]["rule"],
        "mass_delete"
    );
    assert_eq!(count(&db, "SELECT count(*) FROM proposals").await, 0);

    // A decision with an Idempotency-Key is made once; its retry gets the same answer.
    let r = t
        .bob
        .push(P, &batch(vec![delete(&shas[0].0, Some(&shas[0].1))]))
        .await;
    let (id, _) = proposed(&r, &shas[0].0);
    let send = || {
        t.ann.send(
            t.ann
                .http
                .post(format!("{}/v1/proposals/{id}/reject", t.ann.base))
                .bearer_auth(&t.ann.token)
                .header("idempotency-key", "k-reject")
                .json(&json!({ "reason": "keep it" })),
        )
    };
    let first = send().await;
    assert_eq!(first.status, 200, "{}", first.text);
    let retry = send().await;
    assert_eq!(retry.status, 200, "{}", retry.text);
    assert_eq!(retry.headers["idempotent-replayed"], "true");
    assert_eq!(retry.body, first.body);
    assert_eq!(audited(&db, "proposal_rejected").await, 1);

    // An archived project takes no proposals either.
    let r = t
        .ann
        .post(
            &format!("/v1/admin/projects/{P}/archive"),
            &json!({ "archived": true }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = t
        .bob
        .push(
            P,
            &batch(vec![put("late.md", &note("late", "Late.\n"), None)]),
        )
        .await;
    assert_eq!(
        (r.status, r.code()),
        (422, "project_archived"),
        "{}",
        r.text
    );
    assert_eq!(count(&db, "SELECT count(*) FROM proposals").await, 1);
}

/// A scanner rule the server does not have built in, for a rescan (`--scan-rules`).
const ACME_RULE: &str = "[[rule]]\nid = \"acme-internal-token\"\ncategory = \"secret\"\npattern = 'ACME-[0-9A-Z]{16}'\ndescription = \"ACME internal token\"\n";

#[tokio::test]
async fn flagged_and_due_items_are_decided_by_enabling_and_disabling() {
    let (mut server, db) = Server::start().await;
    let t = team(&server);
    let token = ["AC", "ME-", &aws_key_id(11)[4..]].concat();
    let staging = note("staging", &format!("token {token}\n"));
    let r = t
        .ann
        .push(
            P,
            &batch(vec![
                put("staging.md", &staging, None),
                put(
                    "staging2.md",
                    &note("staging2", &format!("also {token}\n")),
                    None,
                ),
                put("style.md", &note("style", "Tabs.\n"), None),
            ]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(set_review(&t.ann, "required", Some(30)).await.status, 200);
    let mut conn = db.connect().await;
    sqlx::query(
        "UPDATE memories SET updated_at = now() - interval '40 days' WHERE path = 'style.md'",
    )
    .execute(&mut conn)
    .await
    .unwrap();

    // A rescan with a new rule disables the two memories and flags them for review.
    server.kill();
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.toml");
    std::fs::write(&rules, ACME_RULE).unwrap();
    let out = server.cli(&["rescan", "--scan-rules", rules.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Back without the rule: what it flagged passes today's guards again.
    server.restart();
    let t = team(&server);
    assert_eq!(pulled(&t.carol, "staging.md").await, None);
    let open = list(&t.ann, &format!("project={P}")).await;
    let item = |path: &str| {
        let i = open
            .iter()
            .find(|i| i["path"] == path)
            .unwrap_or_else(|| panic!("{path}: {open:?}"));
        (
            i["id"].as_i64().unwrap(),
            i["status"].as_str().unwrap().to_owned(),
        )
    };
    let (flagged, status) = item("staging.md");
    assert_eq!(status, "flagged");
    let (flagged2, _) = item("staging2.md");
    let (due, status) = item("style.md");
    assert_eq!(status, "due");

    // Approving a flagged item enables the memory; rejecting one leaves it disabled.
    let r = approve(&t.ann, flagged, json!({ "note": "a test token" })).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["proposal"]["status"], "approved");
    assert!(r.body["push"]["revision"].as_i64().is_some(), "{}", r.text);
    assert_eq!(
        pulled(&t.carol, "staging.md").await.as_deref(),
        Some(staging.as_str())
    );
    let r = reject(&t.ann, flagged2, "a real leak").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["proposal"]["status"], "rejected");
    assert_eq!(pulled(&t.carol, "staging2.md").await, None);

    // Rejecting a due item disables the memory, with the reason.
    let r = reject(&t.ann, due, "outdated").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["proposal"]["status"], "rejected");
    assert_eq!(r.body["proposal"]["reason"], "outdated");
    assert_eq!(pulled(&t.carol, "style.md").await, None);
    let disabled = "SELECT count(*) FROM memories WHERE path = 'style.md' AND disabled";
    assert_eq!(count(&db, disabled).await, 1);
    assert!(list(&t.ann, &format!("project={P}")).await.is_empty());
    let r = approve(&t.ann, due, json!({})).await;
    assert_eq!((r.status, r.code()), (409, "conflict"), "{}", r.text);
    assert_eq!(r.body["error"]["details"]["status"], "rejected");
    // Each decision is audited once, with the revision that made it.
    let decided = "SELECT count(*) FROM audit_log WHERE action IN ('proposal_approved', 'proposal_rejected') AND revision IS NOT NULL";
    assert_eq!(count(&db, decided).await, 2);
    assert_eq!(audited(&db, "proposal_rejected").await, 2);
}
