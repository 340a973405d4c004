//! Clones through `/git/` on several replicas: only a copy known to be current and free of
//! purged content is served. `memsync-server` processes on one PostgreSQL, each with its own
//! export directory (no shared disk) or none: the one that runs the export serves `git clone`;
//! the others serve their own copy only when it is current, and otherwise forward the clone to
//! the exporter (when they have no copy, when it is behind, and when it was written before a
//! purge, whose canary is never served). With no exporter, clones are refused with 503 and a
//! message git prints. With a shared export directory all serve. Real PostgreSQL, the real
//! server binary, real git.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use memsync_e2e::*;
use serde_json::{Value, json};

const P: &str = "acme/api";

fn note(name: &str, body: &str) -> String {
    memory(name, &format!("about {name}"), "project", body)
}

fn clone_url(server: &Server, token: &str) -> String {
    let host = server.url.strip_prefix("http://").expect("http url");
    format!("http://x:{token}@{host}/git/{P}.git")
}

/// `git clone` of the project through `server` into a fresh directory under `tmp`.
fn clone(server: &Server, token: &str, tmp: &Path) -> (Output, PathBuf) {
    let dest = tmp.join(format!("clone-{}", uuid::Uuid::new_v4().simple()));
    let out = git_output(
        None,
        &[
            "clone",
            "-q",
            &clone_url(server, token),
            dest.to_str().expect("utf8"),
        ],
    );
    (out, dest)
}

/// A clone that must succeed: its branch head's revision.
fn clone_ok(server: &Server, token: &str, tmp: &Path) -> (PathBuf, i64) {
    let (out, dest) = clone(server, token, tmp);
    assert!(
        out.status.success(),
        "git clone through {} failed: {}",
        server.url,
        String::from_utf8_lossy(&out.stderr)
    );
    let rev = head_revision(&dest.join(".git")).expect("the clone has a head");
    (dest, rev)
}

/// A clone that must be refused: git fails, says 503 and prints the server's message; nothing
/// is left behind. Returns what git printed.
fn clone_refused(server: &Server, token: &str, tmp: &Path, why: &str) -> String {
    let (out, dest) = clone(server, token, tmp);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "git clone through {} was served ({why})",
        server.url
    );
    assert!(stderr.contains("503"), "{stderr}");
    assert!(
        stderr.contains("remote: ") && stderr.contains("retry in a few seconds"),
        "git prints the server's message: {stderr}"
    );
    assert!(stderr.contains(why), "git says {why:?}: {stderr}");
    assert!(!dest.exists(), "a refused clone leaves nothing");
    stderr
}

/// Whether any object of the repository (every one the clone received) contains `needle`.
fn objects_contain(git_dir: &Path, needle: &str) -> bool {
    let out = git_output(
        None,
        &[&gd(git_dir), "cat-file", "--batch-all-objects", "--batch"],
    );
    assert!(out.status.success() && out.stdout.len() > 100, "cat-file");
    out.stdout
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

fn local_copy(server: &Server) -> PathBuf {
    server.data_dir.join("git/acme/api.git")
}

/// Waits until `copy`'s branch head carries revision `n`.
async fn wait_copy(copy: &Path, n: i64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let got = head_revision(copy);
        if got == Some(n) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{} did not reach revision {n}: it is at {got:?}",
            copy.display()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Which of `servers` (the living ones) runs the export; waits until exactly one does.
async fn leader(servers: &[&Server]) -> usize {
    export_leader(servers, Duration::from_secs(30)).await
}

async fn push_ok(c: &Client, changes: Vec<Value>) -> Value {
    let r = c.push(P, &batch(changes)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body
}

async fn purge(server: &Server, admin: &str, path: &str) {
    let c = server.client(admin);
    let r = c
        .send(
            c.http
                .post(format!("{}/v1/admin/projects/{P}/purge", server.url))
                .bearer_auth(admin)
                .json(&json!({ "path": path, "reason": "leaked secret" })),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["export_rewritten"], true, "{}", r.text);
}

/// `GET info/refs` through `server` as `user_agent`: (status, Retry-After, Content-Type, body).
async fn info_refs(
    http: &reqwest::Client,
    server: &Server,
    token: &str,
    user_agent: &str,
) -> (u16, Option<String>, String, String) {
    let r = http
        .get(format!(
            "{}/git/{P}.git/info/refs?service=git-upload-pack",
            server.url
        ))
        .basic_auth("x", Some(token))
        .header("user-agent", user_agent)
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .expect("info/refs");
    let header = |name: &str| {
        r.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let (status, retry, ct) = (
        r.status().as_u16(),
        header("retry-after"),
        header("content-type").unwrap_or_default(),
    );
    (status, retry, ct, r.text().await.expect("body"))
}

/// The refusal as an API client and as git see it: 503 `unavailable` with `Retry-After`, JSON
/// for the one, the same message as plain text for the other.
async fn assert_refused_over_http(server: &Server, token: &str, why: &str) {
    let http = reqwest::Client::new();
    let (status, retry, ct, body) = info_refs(&http, server, token, "memsync-test").await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(retry.as_deref(), Some("2"));
    assert!(ct.starts_with("application/json"), "{ct}");
    let v: Value = serde_json::from_str(&body).expect("a JSON error");
    assert_eq!(v["error"]["code"], "unavailable", "{body}");
    let message = v["error"]["message"].as_str().expect("message");
    assert!(message.contains(why), "{message}");
    assert!(message.contains("retry in a few seconds"), "{message}");
    let (status, retry, ct, text) = info_refs(&http, server, token, "git/2.47.3").await;
    assert_eq!(status, 503);
    assert_eq!(retry.as_deref(), Some("2"));
    assert!(ct.starts_with("text/plain"), "{ct}");
    assert_eq!(text.trim_end(), message);
}

/// Median of `n` `info/refs` round trips through `server` on one connection, in milliseconds
/// (printed, not asserted: what serving or refusing costs a request).
async fn info_refs_ms(server: &Server, token: &str, n: usize) -> (u16, f64) {
    let http = reqwest::Client::new();
    let mut ms = Vec::new();
    let mut status = 0;
    for _ in 0..n {
        let t = Instant::now();
        status = info_refs(&http, server, token, "git/2.47.3").await.0;
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    ms.sort_by(f64::total_cmp);
    (status, ms[ms.len() / 2])
}

#[tokio::test]
async fn a_replica_without_a_current_copy_forwards_clones_to_the_exporter() {
    let db = TestDb::new().await;
    let tmp = tempfile::tempdir().expect("tmp");
    let mut r = start_replicas(&db, 2, &["--export-interval", "200ms"]);
    let alice_t = r[0].token("alice", &["acme"]);
    let ann_t = r[0].token("ann", &["acme:admin"]);
    let a = leader(&[&r[0], &r[1]]).await;
    let b = 1 - a;

    // Three revisions through the replica that does not export; the first carries a canary that
    // is purged later.
    let canary = format!("PURGEME{}", uuid::Uuid::new_v4().simple());
    let alice = r[b].client(&alice_t);
    let first = push_ok(
        &alice,
        vec![put("leak.md", &note("leak", &format!("{canary}\n")), None)],
    )
    .await;
    let leak_sha = sha_of(&first, "leak.md").expect("sha");
    push_ok(&alice, vec![put("one.md", &note("one", "one\n"), None)]).await;
    push_ok(&alice, vec![put("two.md", &note("two", "two\n"), None)]).await;
    wait_copy(&local_copy(&r[a]), 3).await;

    // The exporter serves its copy; the other replica has none and forwards the clone to it.
    let (_, rev) = clone_ok(&r[a], &alice_t, tmp.path());
    assert_eq!(rev, 3);
    let (_, rev) = clone_ok(&r[b], &alice_t, tmp.path());
    assert_eq!(rev, 3, "forwarded to the exporter");
    assert_eq!(
        head_revision(&local_copy(&r[b])),
        None,
        "nothing written here"
    );
    let (served, served_ms) = info_refs_ms(&r[a], &alice_t, 21).await;
    let (forwarded, forwarded_ms) = info_refs_ms(&r[b], &alice_t, 21).await;
    assert_eq!((served, forwarded), (200, 200));
    println!(
        "info/refs p50 over 21 requests: served by the exporter {served_ms:.2} ms, forwarded by the other replica {forwarded_ms:.2} ms"
    );

    // The exporter dies: the other replica takes the export over and writes its own copy. The
    // first comes back with its copy at revision 3, which is current: it serves it itself.
    r[a].kill();
    assert_eq!(leader(&[&r[b]]).await, 0);
    wait_copy(&local_copy(&r[b]), 3).await;
    r[a].restart();
    assert_eq!(leader(&[&r[0], &r[1]]).await, b);
    let (_, rev) = clone_ok(&r[a], &alice_t, tmp.path());
    assert_eq!(rev, 3, "a current copy on a replica that does not export");

    // Pushes move on; the copy of the replica that no longer exports is behind: never served,
    // the clone gets the exporter's current one.
    let alice = r[a].client(&alice_t);
    push_ok(&alice, vec![put("three.md", &note("three", "3\n"), None)]).await;
    push_ok(&alice, vec![delete("leak.md", Some(&leak_sha))]).await;
    wait_copy(&local_copy(&r[b]), 5).await;
    assert_eq!(head_revision(&local_copy(&r[a])), Some(3));
    let (_, rev) = clone_ok(&r[a], &alice_t, tmp.path());
    assert_eq!(rev, 5, "the exporter's copy, not this replica's revision 3");
    let (_, rev) = clone_ok(&r[b], &alice_t, tmp.path());
    assert_eq!(rev, 5);

    // The export moves back to the first replica, which catches its copy up; the second keeps
    // its copy at revision 5: both are current, and both hold the canary, not purged yet.
    r[b].kill();
    assert_eq!(leader(&[&r[a]]).await, 0);
    wait_copy(&local_copy(&r[a]), 5).await;
    r[b].restart();
    assert_eq!(leader(&[&r[0], &r[1]]).await, a);
    let (before, rev) = clone_ok(&r[b], &alice_t, tmp.path());
    assert_eq!(rev, 5);
    assert!(objects_contain(&before.join(".git"), &canary));

    // The deleted file is purged through the replica that does not export: no new revision, so
    // its copy is still at the current revision, but written before the purge. It is never
    // served: clones through it get the exporter's rewritten copy, without the canary.
    purge(&r[b], &ann_t, "leak.md").await;
    let revision = count(
        &db,
        "SELECT revision FROM projects WHERE project = 'acme/api'",
    )
    .await;
    assert_eq!(revision, 5, "purging a deleted file makes no revision");
    assert_eq!(head_revision(&local_copy(&r[b])), Some(5));
    assert!(
        objects_contain(&local_copy(&r[b]), &canary),
        "the stale copy does hold the purged content"
    );
    for s in [&r[b], &r[b], &r[a]] {
        let (after, rev) = clone_ok(s, &alice_t, tmp.path());
        assert_eq!(rev, 5);
        assert!(
            !objects_contain(&after.join(".git"), &canary),
            "no object a clone through {} got holds the purged canary",
            s.url
        );
        let files = git(Some(&after), &["ls-files"]);
        assert!(
            files.lines().any(|f| f == "two.md") && !files.contains("leak.md"),
            "{files}"
        );
    }
    // The exporter keeps being served after the purge, at each new revision, through both.
    let alice = r[a].client(&alice_t);
    push_ok(&alice, vec![put("four.md", &note("four", "4\n"), None)]).await;
    wait_copy(&local_copy(&r[a]), 6).await;
    for s in [&r[a], &r[b]] {
        let (latest, rev) = clone_ok(s, &alice_t, tmp.path());
        assert_eq!(rev, 6);
        assert!(!objects_contain(&latest.join(".git"), &canary));
    }
}

/// A cluster as deploy/k8s runs it: one replica with an export directory (the export
/// StatefulSet) and two stateless API replicas without one. Only the exporter holds the export;
/// clones through any replica work; with no exporter, clones are refused with a message git
/// prints, and a new exporter with an empty directory rebuilds the same history.
#[tokio::test]
async fn stateless_replicas_forward_clones_to_the_one_exporter() {
    let db = TestDb::new().await;
    let tmp = tempfile::tempdir().expect("tmp");
    let mut exporter =
        Server::start_with(Some(db.url.clone()), None, &["--export-interval", "200ms"]);
    let api: Vec<Server> = (0..2)
        .map(|_| Server::start_stateless(&db.url, &["--export-interval", "200ms"]))
        .collect();
    let alice_t = api[0].token("alice", &["acme"]);
    assert_eq!(leader(&[&exporter, &api[0], &api[1]]).await, 0);

    let alice = api[0].client(&alice_t);
    push_ok(&alice, vec![put("one.md", &note("one", "one\n"), None)]).await;
    let alice = api[1].client(&alice_t);
    push_ok(&alice, vec![put("two.md", &note("two", "two\n"), None)]).await;
    wait_copy(&local_copy(&exporter), 2).await;
    let mut heads = Vec::new();
    for s in [&exporter, &api[0], &api[1]] {
        let (dest, rev) = clone_ok(s, &alice_t, tmp.path());
        assert_eq!(rev, 2, "through {}", s.url);
        heads.push(git(Some(&dest), &["rev-parse", "HEAD"]));
        let files = git(Some(&dest), &["ls-files"]);
        assert_eq!(
            files.lines().collect::<Vec<_>>(),
            ["MEMORY.md", "one.md", "two.md"]
        );
    }
    assert!(heads.iter().all(|h| *h == heads[0]), "{heads:?}");
    // Only the exporter holds an export; the API replicas wrote nothing.
    for s in &api {
        assert!(
            !s.data_dir.join("git").exists(),
            "{} wrote an export",
            s.url
        );
        assert!(
            s.log().contains("does not run the git export"),
            "the API replica says it does not export"
        );
    }
    // A token of another team gets 404 through a forwarding replica too, and no credentials 401.
    let bob_t = api[0].token("bob", &["other"]);
    let (out, _) = clone(&api[1], &bob_t, tmp.path());
    assert!(!out.status.success());
    let http = reqwest::Client::new();
    let (status, ..) = info_refs(&http, &api[0], &bob_t, "git/2.47.3").await;
    assert_eq!(status, 404);

    // No exporter: clones through the API replicas are refused, saying why, in git's words.
    exporter.kill();
    let stderr = clone_refused(
        &api[0],
        &alice_t,
        tmp.path(),
        "no replica runs the git export now",
    );
    println!("git with no exporter:\n{stderr}");
    assert_refused_over_http(&api[1], &alice_t, "no replica runs the git export now").await;
    // API writes go on meanwhile.
    push_ok(&alice, vec![put("three.md", &note("three", "3\n"), None)]).await;

    // A new exporter with an empty export directory (a new volume) takes over, rebuilds the
    // history from PostgreSQL with the same commit ids, and clones through any replica work.
    let fresh = Server::start_with(Some(db.url.clone()), None, &["--export-interval", "200ms"]);
    assert_eq!(leader(&[&fresh, &api[0], &api[1]]).await, 0);
    wait_copy(&local_copy(&fresh), 3).await;
    for s in [&fresh, &api[0], &api[1]] {
        let (dest, rev) = clone_ok(s, &alice_t, tmp.path());
        assert_eq!(rev, 3, "through {}", s.url);
        let second = git(Some(&dest), &["rev-parse", "HEAD~1"]);
        assert_eq!(second, heads[0], "the same history, rebuilt");
    }
}

#[tokio::test]
async fn replicas_sharing_the_export_directory_all_serve_current_clones() {
    let db = TestDb::new().await;
    let tmp = tempfile::tempdir().expect("tmp");
    let shared = tmp.path().join("shared-export");
    std::fs::create_dir_all(&shared).expect("shared dir");
    let shared_arg = shared.to_str().expect("utf8").to_owned();
    let r = start_replicas(
        &db,
        2,
        &["--export-dir", &shared_arg, "--export-interval", "200ms"],
    );
    let alice_t = r[0].token("alice", &["acme"]);
    let ann_t = r[0].token("ann", &["acme:admin"]);
    let a = leader(&[&r[0], &r[1]]).await;
    let b = 1 - a;
    let copy = shared.join("acme/api.git");

    let canary = format!("PURGEME{}", uuid::Uuid::new_v4().simple());
    let alice = r[b].client(&alice_t);
    push_ok(
        &alice,
        vec![put("leak.md", &note("leak", &format!("{canary}\n")), None)],
    )
    .await;
    push_ok(&alice, vec![put("one.md", &note("one", "one\n"), None)]).await;
    wait_copy(&copy, 2).await;
    for s in [&r[a], &r[b]] {
        let (_, rev) = clone_ok(s, &alice_t, tmp.path());
        assert_eq!(rev, 2, "served through {}", s.url);
    }

    push_ok(&alice, vec![put("two.md", &note("two", "two\n"), None)]).await;
    wait_copy(&copy, 3).await;
    for s in [&r[a], &r[b]] {
        let (_, rev) = clone_ok(s, &alice_t, tmp.path());
        assert_eq!(rev, 3, "served through {}", s.url);
    }

    // A purge (of a live file: its delete is revision 4) rewrites the one shared copy; both
    // replicas serve it, and no clone holds the canary.
    purge(&r[b], &ann_t, "leak.md").await;
    wait_copy(&copy, 4).await;
    for s in [&r[a], &r[b]] {
        let (dest, rev) = clone_ok(s, &alice_t, tmp.path());
        assert_eq!(rev, 4, "served through {}", s.url);
        assert!(!objects_contain(&dest.join(".git"), &canary));
    }
}
