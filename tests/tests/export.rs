//! The git export: one commit per revision with the pusher as author and the revision in a
//! trailer, read-only clones over HTTP for members only, exactly-once export across crashes and
//! replicas, purges that rewrite history, the mirror, and `memsync-server export rebuild`.
//! Real PostgreSQL, the real server binary, real git.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use memsync_e2e::*;
use serde_json::{Value, json};

const P: &str = "acme/api";

fn note(name: &str, body: &str) -> String {
    memory(name, &format!("about {name}"), "project", body)
}

#[derive(Debug)]
struct Commit {
    id: String,
    author: String,
    committer: String,
    time: i64,
    subject: String,
    revision: i64,
    project: String,
}

/// The branch's commits, oldest first.
fn commits(repo: &Path) -> Vec<Commit> {
    let out = git(
        None,
        &[
            &gd(repo),
            "log",
            "--reverse",
            "--format=%H%x1f%an <%ae>%x1f%cn <%ce>%x1f%ct%x1f%s%x1f%(trailers:key=Memsync-Revision,valueonly,separator=%x2C)%x1f%(trailers:key=Memsync-Project,valueonly,separator=%x2C)%x1e",
            "main",
        ],
    );
    out.split('\x1e')
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(|r| {
            let f: Vec<&str> = r.split('\x1f').collect();
            Commit {
                id: f[0].to_owned(),
                author: f[1].to_owned(),
                committer: f[2].to_owned(),
                time: f[3].parse().expect("time"),
                subject: f[4].to_owned(),
                revision: f[5].trim().parse().unwrap_or(-1),
                project: f[6].trim().to_owned(),
            }
        })
        .collect()
}

fn revisions(repo: &Path) -> Vec<i64> {
    commits(repo).iter().map(|c| c.revision).collect()
}

fn files_at(repo: &Path, rev: &str) -> Vec<String> {
    git(None, &[&gd(repo), "ls-tree", "-r", "--name-only", rev])
        .lines()
        .map(str::to_owned)
        .collect()
}

fn export_repo(data_dir: &Path) -> PathBuf {
    data_dir.join("git/acme/api.git")
}

fn host(server: &Server) -> String {
    server
        .url
        .strip_prefix("http://")
        .expect("http url")
        .to_owned()
}

fn clone_url(server: &Server, token: &str, project: &str) -> String {
    format!("http://x:{token}@{}/git/{project}.git", host(server))
}

/// Waits until nothing is left to export, rebuild or mirror.
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

async fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn metric(server: &Server, line_prefix: &str) -> f64 {
    let c = server.client("");
    let text = c
        .http
        .get(format!("{}/metrics", server.url))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("body");
    text.lines()
        .find_map(|l| l.strip_prefix(line_prefix))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {line_prefix} in /metrics:\n{text}"))
}

/// Waits until the metric reads `value`: the export's backlog gauges are read from the
/// database in the background, every few seconds and soon after the exporter did something.
async fn metric_becomes(server: &Server, line_prefix: &str, value: f64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let now = metric(server, line_prefix).await;
        if now == value {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{line_prefix}is {now}, not {value}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn push_ok(c: &Client, project: &str, changes: Vec<Value>) -> Value {
    let r = c.push(project, &batch(changes)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body
}

async fn info_refs(server: &Server, auth: Option<(&str, &str)>, service: &str) -> Resp {
    let c = server.client("");
    let mut req = c.http.get(format!(
        "{}/git/acme/api.git/info/refs?service={service}",
        server.url
    ));
    req = match auth {
        Some(("bearer", t)) => req.bearer_auth(t),
        Some((user, t)) => req.basic_auth(user, Some(t)),
        None => req,
    };
    c.send(req).await
}

#[tokio::test]
async fn three_pushes_by_two_users_are_three_commits_cloned_over_http() {
    let (server, db) = Server::start().await;
    let alice_t = server.token("alice", &["acme"]);
    let bob_t = server.token("bob", &["acme"]);
    let eve_t = server.token("eve", &["globex"]);
    let (alice, bob) = (server.client(&alice_t), server.client(&bob_t));

    let plan1 = note("plan", "First plan.\n");
    let testing1 = note("testing", "Use a real database.\n");
    let r1 = push_ok(
        &alice,
        P,
        vec![
            put("plan.md", &plan1, None),
            put("notes/testing.md", &testing1, None),
        ],
    )
    .await;
    let plan2 = note("plan", "Second plan.\n");
    let old = note("old", "Soon gone.\n");
    let r2 = push_ok(
        &bob,
        P,
        vec![
            put("plan.md", &plan2, sha_of(&r1, "plan.md").as_deref()),
            put("old.md", &old, None),
        ],
    )
    .await;
    let testing2 = note("testing", "Use a real database, always.\n");
    push_ok(
        &alice,
        P,
        vec![
            delete("old.md", sha_of(&r2, "old.md").as_deref()),
            put(
                "notes/testing.md",
                &testing2,
                sha_of(&r1, "notes/testing.md").as_deref(),
            ),
        ],
    )
    .await;
    wait_exported(&db).await;

    // A member clones over HTTP with the token as the basic password.
    let tmp = tempfile::tempdir().expect("tmp");
    let dest = tmp.path().join("api");
    git(
        Some(tmp.path()),
        &["clone", "-q", &clone_url(&server, &alice_t, P), "api"],
    );
    let repo = dest.join(".git");
    let log = commits(&repo);
    assert_eq!(log.len(), 3, "{log:?}");
    let authors: Vec<&str> = log.iter().map(|c| c.author.as_str()).collect();
    assert_eq!(
        authors,
        [
            "alice <alice@example.com>",
            "bob <bob@example.com>",
            "alice <alice@example.com>"
        ]
    );
    for (i, c) in log.iter().enumerate() {
        assert_eq!(c.revision, i as i64 + 1);
        assert_eq!(c.project, P);
        assert_eq!(c.committer, "memsync <memsync@localhost>");
    }
    assert!(
        log[1].subject.starts_with("memsync r2: ")
            && log[1].subject.contains("add old.md")
            && log[1].subject.contains("update plan.md"),
        "{}",
        log[1].subject
    );
    assert!(
        log[2].subject.contains("delete old.md")
            && log[2].subject.contains("update notes/testing.md"),
        "{}",
        log[2].subject
    );
    // Commit times are the revisions' times.
    let mut conn = db.connect().await;
    let times: Vec<i64> = sqlx::query_scalar(
        "SELECT extract(epoch FROM created_at)::bigint FROM revisions ORDER BY revision",
    )
    .fetch_all(&mut conn)
    .await
    .expect("times");
    let commit_times: Vec<i64> = log.iter().map(|c| c.time).collect();
    for (t, ct) in times.iter().zip(&commit_times) {
        assert!((t - ct).abs() <= 1, "{times:?} vs {commit_times:?}");
    }

    // Each commit's tree is the team directory at that revision, deletions included.
    let at = |rev: &str| files_at(&repo, rev);
    assert!(at("HEAD~2").contains(&"plan.md".to_owned()));
    assert!(at("HEAD~2").contains(&"notes/testing.md".to_owned()));
    assert!(!at("HEAD~2").contains(&"old.md".to_owned()));
    assert!(at("HEAD~1").contains(&"old.md".to_owned()));
    assert!(!at("HEAD").contains(&"old.md".to_owned()));
    assert_eq!(git(Some(&dest), &["show", "HEAD~2:plan.md"]), plan1);
    assert_eq!(git(Some(&dest), &["show", "HEAD~1:plan.md"]), plan2);
    // The checkout is exactly the project's live files, byte for byte, and nothing else.
    let pulled = alice.pull(P, 0).await;
    let mut live: Vec<(String, String)> = pulled.body["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .filter(|c| c["deleted"] != true)
        .map(|c| {
            (
                c["path"].as_str().expect("path").to_owned(),
                c["content"].as_str().expect("content").to_owned(),
            )
        })
        .collect();
    live.sort();
    let mut tree = at("HEAD");
    tree.sort();
    assert_eq!(
        tree,
        live.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>()
    );
    for (p, content) in &live {
        assert_eq!(
            &std::fs::read_to_string(dest.join(p)).expect("file"),
            content
        );
    }

    // Bearer works too (git's http.extraHeader); a pull later fetches nothing new.
    let dest2 = tmp.path().join("api2");
    let header = format!("http.extraHeader=Authorization: Bearer {bob_t}");
    git(
        Some(tmp.path()),
        &[
            "-c",
            &header,
            "clone",
            "-q",
            &format!("http://{}/git/{P}.git", host(&server)),
            "api2",
        ],
    );
    assert_eq!(revisions(&dest2.join(".git")), [1, 2, 3]);

    // Another team's token: 404; no credentials: 401 with a basic challenge; a bad token: 401.
    assert_eq!(
        info_refs(&server, Some(("x", &eve_t)), "git-upload-pack")
            .await
            .status,
        404
    );
    assert_eq!(
        info_refs(&server, Some(("bearer", &eve_t)), "git-upload-pack")
            .await
            .status,
        404
    );
    let r = info_refs(&server, None, "git-upload-pack").await;
    assert_eq!(r.status, 401);
    assert_eq!(
        r.headers
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok()),
        Some("Basic realm=\"memsync\", charset=\"UTF-8\"")
    );
    assert_eq!(
        info_refs(&server, Some(("x", "not-a-token")), "git-upload-pack")
            .await
            .status,
        401
    );
    assert_eq!(
        info_refs(&server, Some(("x", &alice_t)), "git-upload-pack")
            .await
            .status,
        200
    );
    let out = git_output(
        Some(tmp.path()),
        &["clone", "-q", &clone_url(&server, &eve_t, P), "eve"],
    );
    assert!(!out.status.success());
    assert!(!tmp.path().join("eve/.git/objects").exists());
    let out = git_output(
        Some(tmp.path()),
        &[
            "clone",
            "-q",
            &format!("http://{}/git/{P}.git", host(&server)),
            "anon",
        ],
    );
    assert!(!out.status.success());

    // Read-only: pushes are refused, and nothing but the smart protocol is served.
    assert_eq!(
        info_refs(&server, Some(("x", &alice_t)), "git-receive-pack")
            .await
            .status,
        403
    );
    git(
        Some(&dest),
        &[
            "-c",
            "user.name=a",
            "-c",
            "user.email=a@b",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ],
    );
    assert!(
        !git_output(Some(&dest), &["push", "-q", "origin", "HEAD:main"])
            .status
            .success()
    );
    let c = server.client(&alice_t);
    let r = c.send(c.get("/git/acme/api.git/HEAD")).await;
    assert_eq!(r.status, 404);
    assert_eq!(revisions(&export_repo(&server.data_dir)), [1, 2, 3]);

    // The lag is a metric (read from the database in the background, so soon after).
    // The commits are counted just after they are written, and the gauges are the last values
    // read (a read from before the pushes also says 0): the count first, then the backlog.
    metric_becomes(&server, "memsync_export_commits_total ", 3.0).await;
    metric_becomes(&server, "memsync_export_pending_revisions ", 0.0).await;
    metric_becomes(&server, "memsync_export_lag_seconds ", 0.0).await;
}

#[tokio::test]
async fn a_crash_between_push_and_export_neither_loses_nor_repeats_a_commit() {
    let db = TestDb::new().await;
    let tmp = tempfile::tempdir().expect("tmp");
    let data = tmp.path().join("data");
    let repo = export_repo(&data);

    // Pushed while no exporter runs, then SIGKILL: the revision waits in the outbox.
    let mut s1 = Server::start_with(
        Some(db.url.clone()),
        Some(data.clone()),
        &["--export-paused"],
    );
    let alice = s1.client(&s1.token("alice", &["acme"]));
    push_ok(&alice, P, vec![put("a.md", &note("a", "one\n"), None)]).await;
    s1.kill();
    assert_eq!(count(&db, "SELECT count(*) FROM export_outbox").await, 1);
    assert!(!repo.exists());
    let mut s2 = Server::start_with(Some(db.url.clone()), Some(data.clone()), &[]);
    wait_exported(&db).await;
    assert_eq!(revisions(&repo), [1]);
    s2.kill();

    // The exporter dies right after writing commits, before recording them: on restart they
    // are recognised from the repository's own trailer, not written again.
    let pusher_dir = tmp.path().join("pusher");
    let pusher = Server::start_with(Some(db.url.clone()), Some(pusher_dir), &["--export-paused"]);
    let alice = pusher.client(&alice.token);
    let mut s3 = Server::start_with(
        Some(db.url.clone()),
        Some(data.clone()),
        &["--export-failpoint", "after-commit"],
    );
    push_ok(&alice, P, vec![put("b.md", &note("b", "two\n"), None)]).await;
    push_ok(&alice, P, vec![put("c.md", &note("c", "three\n"), None)]).await;
    wait_for("the exporter's crash", || {
        s3.log().contains("export failpoint after-commit")
    })
    .await;
    s3.kill();
    // It wrote commits it never recorded.
    let head = *revisions(&repo).last().expect("commits");
    assert!(head >= 2, "{head}");
    assert_eq!(count(&db, "SELECT count(*) FROM export_outbox").await, 2);
    let mut s4 = Server::start_with(Some(db.url.clone()), Some(data.clone()), &[]);
    wait_exported(&db).await;
    assert_eq!(revisions(&repo), [1, 2, 3]);

    // SIGKILL at arbitrary moments while revisions keep coming.
    for i in 4..=9 {
        push_ok(
            &alice,
            P,
            vec![put(
                &format!("m{i}.md"),
                &note("m", &format!("{i}\n")),
                None,
            )],
        )
        .await;
        tokio::time::sleep(Duration::from_millis(rand::random::<u64>() % 40)).await;
        s4.restart();
    }
    wait_exported(&db).await;
    assert_eq!(revisions(&repo), (1..=9).collect::<Vec<_>>());
    // The tree is complete too.
    assert_eq!(
        git(None, &[&gd(&repo), "show", "main:m9.md"]),
        note("m", "9\n")
    );
}

#[tokio::test]
async fn two_servers_on_one_database_export_every_revision_once() {
    let db = TestDb::new().await;
    let shared = tempfile::tempdir().expect("export dir");
    let export_dir = shared.path().to_str().expect("utf8").to_owned();
    let args = ["--export-dir", &export_dir, "--export-interval", "100ms"];
    let a = Server::start_with(Some(db.url.clone()), None, &args);
    let b = Server::start_with(Some(db.url.clone()), None, &args);
    let token = a.token("alice", &["acme"]);
    let (ca, cb) = (a.client(&token), b.client(&token));
    let pushes = |c: Client, who: &'static str| async move {
        for i in 0..12 {
            let path = format!("{who}{i}.md");
            let r = c
                .push(
                    P,
                    &batch(vec![put(&path, &note(who, &format!("{i}\n")), None)]),
                )
                .await;
            assert_eq!(r.status, 200, "{}", r.text);
        }
    };
    tokio::join!(pushes(ca, "a"), pushes(cb, "b"));
    wait_exported(&db).await;
    let repo = shared.path().join("acme/api.git");
    assert_eq!(revisions(&repo), (1..=24).collect::<Vec<_>>());
    // Between them the two processes wrote 24 commits: none was written twice.
    let total = metric(&a, "memsync_export_commits_total ").await
        + metric(&b, "memsync_export_commits_total ").await;
    assert_eq!(total, 24.0);
}

#[tokio::test]
async fn purge_rewrites_the_history_of_clones_and_the_mirror() {
    let db = TestDb::new().await;
    let mirrors = tempfile::tempdir().expect("mirrors");
    git(
        None,
        &[
            "init",
            "-q",
            "--bare",
            mirrors.path().join("acme-api.git").to_str().expect("utf8"),
        ],
    );
    let template = format!("{}/{{team}}-{{name}}.git", mirrors.path().display());
    let server = Server::start_with(
        Some(db.url.clone()),
        None,
        &["--mirror-url-template", &template],
    );
    let ann_t = server.token("ann", &["acme:admin"]);
    let ann = server.client(&ann_t);
    let bob = server.client(&server.token("bob", &["acme"]));
    let canary = format!("PURGEME{}", uuid::Uuid::new_v4().simple());

    let r = push_ok(
        &ann,
        P,
        vec![
            put("leak.md", &note("leak", &format!("{canary}\n")), None),
            put("keep.md", &note("keep", "Nothing secret.\n"), None),
        ],
    )
    .await;
    push_ok(
        &ann,
        P,
        vec![put(
            "leak.md",
            &note("leak", &format!("{canary} again\n")),
            sha_of(&r, "leak.md").as_deref(),
        )],
    )
    .await;
    push_ok(
        &bob,
        P,
        vec![put("other.md", &note("other", "Bob's.\n"), None)],
    )
    .await;
    // A project whose mirror repository does not exist: its pushes fail and are counted.
    push_ok(
        &bob,
        "acme/web",
        vec![put("w.md", &note("w", "web\n"), None)],
    )
    .await;
    wait_exported(&db).await;
    let mirror = mirrors.path().join("acme-api.git");
    let export = export_repo(&server.data_dir);
    wait_for("the mirror", || {
        git_output(None, &[&gd(&mirror), "rev-parse", "main"]).stdout
            == git_output(None, &[&gd(&export), "rev-parse", "main"]).stdout
    })
    .await;
    let tmp = tempfile::tempdir().expect("tmp");
    git(
        Some(tmp.path()),
        &["clone", "-q", &clone_url(&server, &ann_t, P), "before"],
    );
    let log_before = git(Some(&tmp.path().join("before")), &["log", "-p", "--all"]);
    assert!(
        log_before.contains(&canary),
        "the canary is exported before the purge"
    );
    assert!(git(None, &[&gd(&mirror), "log", "-p", "--all"]).contains(&canary));
    let deadline = Instant::now() + Duration::from_secs(30);
    while metric(
        &server,
        "memsync_export_mirror_pushes_total{result=\"error\"} ",
    )
    .await
        < 1.0
    {
        assert!(
            Instant::now() < deadline,
            "the failing mirror push is not counted"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let r = bob
        .send(
            bob.http
                .post(format!("{}/v1/admin/projects/{P}/purge", server.url))
                .bearer_auth(&bob.token)
                .json(&json!({ "path": "leak.md", "reason": "leaked secret" })),
        )
        .await;
    assert_eq!(r.status, 403, "members cannot purge");
    let r = ann
        .send(
            ann.http
                .post(format!("{}/v1/admin/projects/{P}/purge", server.url))
                .bearer_auth(&ann_t)
                .json(&json!({ "path": "leak.md", "reason": "leaked secret" })),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);

    // The purge answered after the rewrite: a fresh clone has no trace of the content.
    git(
        Some(tmp.path()),
        &["clone", "-q", &clone_url(&server, &ann_t, P), "after"],
    );
    let after = tmp.path().join("after");
    let log_after = git(Some(&after), &["log", "-p", "--all"]);
    assert!(!log_after.contains(&canary), "{log_after}");
    // Every revision is still a commit (the purge's delete is the fourth); the path is in none.
    assert_eq!(revisions(&after.join(".git")), [1, 2, 3, 4]);
    assert!(!git(Some(&after), &["log", "--all", "--name-only", "--format="]).contains("leak.md"));
    assert!(files_at(&after.join(".git"), "HEAD~3").contains(&"keep.md".to_owned()));
    // Not even an unreachable object on the server holds it.
    let objects = git_output(
        None,
        &[&gd(&export), "cat-file", "--batch-all-objects", "--batch"],
    );
    assert!(objects.status.success() && objects.stdout.len() > 1000);
    assert!(
        !objects
            .stdout
            .windows(canary.len())
            .any(|w| w == canary.as_bytes())
    );

    // The mirror is force-updated with the rewrite.
    wait_exported(&db).await;
    wait_for("the mirror's rewrite", || {
        git_output(None, &[&gd(&mirror), "rev-parse", "main"]).stdout
            == git_output(None, &[&gd(&export), "rev-parse", "main"]).stdout
    })
    .await;
    assert!(!git(None, &[&gd(&mirror), "log", "-p", "--all"]).contains(&canary));
    let from_mirror = tmp.path().join("from-mirror");
    git(
        None,
        &[
            "clone",
            "-q",
            mirror.to_str().expect("utf8"),
            from_mirror.to_str().expect("utf8"),
        ],
    );
    assert!(!git(Some(&from_mirror), &["log", "-p", "--all"]).contains(&canary));
    assert_eq!(metric(&server, "memsync_export_rebuilds_total ").await, 1.0);
    metric_becomes(&server, "memsync_export_pending_rebuilds ", 0.0).await;
}

#[tokio::test]
async fn export_rebuild_regenerates_the_same_commits() {
    let (server, db) = Server::start().await;
    let alice = server.client(&server.token("alice", &["acme"]));
    let bob = server.client(&server.token("bob", &["acme", "globex"]));
    let r = push_ok(&alice, P, vec![put("a.md", &note("a", "one\n"), None)]).await;
    push_ok(
        &bob,
        P,
        vec![put(
            "a.md",
            &note("a", "two\n"),
            sha_of(&r, "a.md").as_deref(),
        )],
    )
    .await;
    push_ok(
        &bob,
        "globex/site",
        vec![put("s.md", &note("s", "site\n"), None)],
    )
    .await;
    wait_exported(&db).await;
    let export = export_repo(&server.data_dir);
    let site = server.data_dir.join("git/globex/site.git");
    let ids = |repo: &Path| commits(repo).into_iter().map(|c| c.id).collect::<Vec<_>>();
    let (before, site_before) = (ids(&export), ids(&site));
    assert_eq!(before.len(), 2);

    // A lost repository: rebuilt by the CLI while the server runs.
    std::fs::remove_dir_all(&export).expect("rm");
    let out = server.cli(&["export", "rebuild", "--project", P]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(ids(&export), before, "commits are deterministic");
    let out = server.cli(&["export", "rebuild"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!((ids(&export), ids(&site)), (before, site_before));
    for bad in ["nope", "acme/nope"] {
        let out = server.cli(&["export", "rebuild", "--project", bad]);
        assert!(!out.status.success(), "{bad}");
    }

    // The server keeps exporting on top of the rebuilt repository.
    push_ok(&alice, P, vec![put("b.md", &note("b", "three\n"), None)]).await;
    wait_exported(&db).await;
    assert_eq!(revisions(&export), [1, 2, 3]);
    // A repository lost while the server was down is restored when it starts.
    let mut server = server;
    server.kill();
    std::fs::remove_dir_all(&export).expect("rm");
    server.restart();
    wait_for("the repository's restoration", || export.exists()).await;
    // It appears complete: built aside, then moved into place.
    assert_eq!(revisions(&export), [1, 2, 3]);
    // Only the repository remains, no scratch directory.
    let mut entries: Vec<String> = std::fs::read_dir(server.data_dir.join("git/acme"))
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    entries.sort();
    assert_eq!(entries, ["api.git"]);
}
