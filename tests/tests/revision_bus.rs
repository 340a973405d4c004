//! The revision bus: a pull asking for what the client already has is answered from the
//! replica's memory, with no database round trip — shown by holding an exclusive lock on
//! `projects` (any query of it would wait for the request timeout) while such pulls are answered
//! at once and a pull that needs the database is not. A client that has just pushed is never told
//! its own write is missing, and a change made elsewhere reaches the next pull.

use std::time::{Duration, Instant};

use memsync_e2e::*;
use sqlx::Connection;

const P: &str = "acme/api";

/// Pulls `since` with `If-None-Match: etag`, until `ok` accepts the answer or 10 s pass.
async fn pull_until(
    c: &Client,
    since: i64,
    etag: Option<&str>,
    ok: impl Fn(&Resp) -> bool,
) -> Resp {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut req = c.get(&format!("/v1/projects/{P}/changes?since={since}"));
        if let Some(e) = etag {
            req = req.header("if-none-match", e);
        }
        let r = c.send(req).await;
        if ok(&r) || Instant::now() > deadline {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Pushes `a.md` as a new file; the revision it made.
async fn push_a(c: &Client) -> i64 {
    let r = c
        .push(
            P,
            &batch(vec![put(
                "a.md",
                &memory("A", "a", "project", "\nA\n"),
                None,
            )]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["revision"].as_i64().unwrap()
}

#[tokio::test]
async fn up_to_date_pulls_are_answered_without_the_database() {
    let db = TestDb::new().await;
    let server = Server::start_with(Some(db.url.clone()), None, &["--request-timeout", "3s"]);
    let alice = server.client(&forge_token("alice", &[("acme", "member")], false));
    let revision = push_a(&alice).await;
    let etag = format!("\"r{revision}\"");
    let tag = pull_until(&alice, 0, Some(&etag), |r| r.status == 304).await;
    assert_eq!(tag.status, 304, "the ETag names the current revision");

    // Nobody may read `projects` now: a pull that needs the database waits for the lock.
    let mut lock = db.connect().await;
    let mut tx = lock.begin().await.unwrap();
    sqlx::query("LOCK TABLE projects IN ACCESS EXCLUSIVE MODE")
        .execute(&mut *tx)
        .await
        .unwrap();
    let up_to_date = pull_until(&alice, 0, Some(&etag), |r| r.status == 304).await;
    assert_eq!(up_to_date.status, 304, "{}", up_to_date.text);
    let from_current = alice.pull(P, revision).await;
    assert_eq!(from_current.status, 200, "{}", from_current.text);
    assert_eq!(from_current.body["revision"], revision);
    assert_eq!(from_current.body["changes"], serde_json::json!([]));
    let needs_db = alice.pull(P, 0).await;
    assert_eq!(
        needs_db.status, 504,
        "a pull with changes to send reads the database, which the lock holds: {}",
        needs_db.text
    );
    tx.rollback().await.unwrap();

    // A change made by someone else reaches the next pull of the old ETag.
    let bob = server.client(&forge_token("bob", &[("acme", "member")], false));
    let r = bob
        .push(
            P,
            &batch(vec![put(
                "b.md",
                &memory("B", "b", "project", "\nB\n"),
                None,
            )]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let newer = r.body["revision"].as_i64().unwrap();
    let changed = pull_until(&alice, revision, Some(&etag), |r| r.status == 200).await;
    assert_eq!(changed.status, 200, "{}", changed.text);
    assert_eq!(changed.body["revision"], newer);
    assert!(changed.text.contains("b.md"), "{}", changed.text);
}

#[tokio::test]
async fn a_pusher_is_never_told_its_own_write_is_missing() {
    let (server, _db) = Server::start().await;
    let alice = server.client(&forge_token("alice", &[("acme", "member")], false));
    let mut sha: Option<String> = None;
    for i in 0..40 {
        let body = memory("A", "a", "project", &format!("\nversion {i}\n"));
        let r = alice
            .push(P, &batch(vec![put("a.md", &body, sha.as_deref())]))
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
        sha = sha_of(&r.body, "a.md");
        let revision = r.body["revision"].as_i64().unwrap();
        // Straight after the push, from the revision it made: the answer is that revision, never
        // an error or an older one, whether the bus has heard of it yet or not.
        let after = alice.pull(P, revision).await;
        assert_eq!(after.status, 200, "{}", after.text);
        assert_eq!(after.body["revision"], revision);
        // And from the revision before it, the write itself comes back.
        let before = alice.pull(P, revision - 1).await;
        assert_eq!(before.status, 200, "{}", before.text);
        assert_eq!(before.body["revision"], revision, "{}", before.text);
        assert!(
            before.text.contains(&format!("version {i}")),
            "{}",
            before.text
        );
    }
}

/// The next notification on `listener` within `within`, as `(channel, payload)`.
async fn next_note(
    listener: &mut sqlx::postgres::PgListener,
    within: Duration,
) -> Option<(String, String)> {
    match tokio::time::timeout(within, listener.recv()).await {
        Ok(Ok(n)) => Some((n.channel().to_owned(), n.payload().to_owned())),
        Ok(Err(e)) => panic!("the listener failed: {e}"),
        Err(_) => None,
    }
}

/// Waits until both announcements of `project` at `revision` were heard (revision bus and
/// exporter), ignoring others; false after 5 s.
async fn heard_both(
    listener: &mut sqlx::postgres::PgListener,
    project: &str,
    revision: i64,
) -> bool {
    let want_rev = format!("{project} {revision}");
    let (mut rev, mut export) = (false, false);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !(rev && export) {
        let left = deadline.saturating_duration_since(Instant::now());
        let Some((channel, payload)) = next_note(listener, left).await else {
            return false;
        };
        rev |= channel == "memsync_revision" && payload == want_rev;
        export |= channel == "memsync_export" && payload == project;
    }
    true
}

/// A client push keeps `pg_notify` out of its transaction (notifying transactions commit one at
/// a time) and its replica announces the revision right after the commit; every other writer is
/// announced by the triggers in its own transaction, as before.
#[tokio::test]
async fn a_push_is_announced_after_its_commit_and_other_writers_by_the_triggers() {
    let db = TestDb::new().await;
    let server = Server::start_with(Some(db.url.clone()), None, &[]);
    let mut listener = sqlx::postgres::PgListener::connect(&db.url).await.unwrap();
    listener
        .listen_all(["memsync_revision", "memsync_export"])
        .await
        .unwrap();
    let alice = server.client(&forge_token("alice", &[("acme", "member")], false));
    let pushed = push_a(&alice).await;
    assert!(
        heard_both(&mut listener, P, pushed).await,
        "the push's revision was announced to the bus and the exporter"
    );

    // The triggers are silent in a transaction that takes the announcement upon itself...
    let mut c = db.connect().await;
    let mut tx = c.begin().await.unwrap();
    sqlx::query("SELECT set_config('memsync.notify_after_commit', 'on', true)")
        .execute(&mut *tx)
        .await
        .unwrap();
    sqlx::query("UPDATE projects SET revision = revision + 1 WHERE project = $1")
        .bind(P)
        .execute(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        next_note(&mut listener, Duration::from_millis(500)).await,
        None,
        "nothing announced from inside the transaction"
    );
    // ...and the setting does not outlive it: the next writer on the connection is announced.
    sqlx::query("UPDATE projects SET revision = revision + 1 WHERE project = $1")
        .bind(P)
        .execute(&mut c)
        .await
        .unwrap();
    assert_eq!(
        next_note(&mut listener, Duration::from_secs(5)).await,
        Some(("memsync_revision".into(), format!("{P} {}", pushed + 2)))
    );

    // An admin's write (not a client push) is announced by the triggers at its commit.
    let ann = server.client(&forge_token("ann", &[("acme", "admin")], false));
    let r = ann
        .send(
            ann.http
                .post(format!("{}/v1/admin/projects/{P}/delete", ann.base))
                .bearer_auth(&ann.token)
                .json(&serde_json::json!({ "path": "a.md", "reason": "cleanup" })),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let deleted = r.body["revision"].as_i64().unwrap();
    assert_eq!(deleted, pushed + 3);
    assert!(heard_both(&mut listener, P, deleted).await);
}
