//! Stateless replicas: one PostgreSQL and three `memsync-server` processes on it, each with its
//! own data and export directory (they share no disk), clients pointed at different replicas. The
//! one shared place the git export lands is the mirror (bare repositories in a temporary
//! directory standing in for the team's git host). Shown here: a push through one replica wakes
//! a long-poll and an event stream on the others (the delays printed); a revocation through one
//! replica is refused on the others within a second, and ends their open event streams; every revision reaches the mirror exactly once, in
//! order and authored as the revision says; and killing the replica that runs the exporter moves
//! the export to another one with nothing lost, even when the replica that takes over holds a
//! stale copy written before a purge. Real PostgreSQL, the real server binary, real git.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use memsync_e2e::*;
use serde_json::json;

const P: &str = "acme/api";

fn note(name: &str, body: &str) -> String {
    memory(name, &format!("about {name}"), "project", body)
}

#[derive(Debug, Clone, PartialEq)]
struct Commit {
    id: String,
    parents: usize,
    author: String,
    revision: String,
    project: String,
}

/// The mirror branch's commits, oldest first (empty while it has none).
fn commits(repo: &Path) -> Vec<Commit> {
    let out = git_output(
        None,
        &[
            &gd(repo),
            "log",
            "--reverse",
            "--format=%H%x1f%P%x1f%an <%ae>%x1f%(trailers:key=Memsync-Revision,valueonly,separator=%x2C)%x1f%(trailers:key=Memsync-Project,valueonly,separator=%x2C)%x1e",
            "main",
        ],
    );
    if !out.status.success() {
        return Vec::new();
    }
    String::from_utf8(out.stdout)
        .expect("utf8")
        .split('\x1e')
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(|r| {
            let f: Vec<&str> = r.split('\x1f').collect();
            Commit {
                id: f[0].to_owned(),
                parents: f[1].split_whitespace().count(),
                author: f[2].to_owned(),
                revision: f[3].trim().to_owned(),
                project: f[4].trim().to_owned(),
            }
        })
        .collect()
}

fn revisions(repo: &Path) -> Vec<String> {
    commits(repo).into_iter().map(|c| c.revision).collect()
}

fn one_to(n: i64) -> Vec<String> {
    (1..=n).map(|r| r.to_string()).collect()
}

/// Every change of every commit reachable in the repository, as text.
fn all_patches(repo: &Path) -> String {
    git(None, &[&gd(repo), "log", "-p", "--all"])
}

fn local_export(server: &Server) -> PathBuf {
    server.data_dir.join("git/acme/api.git")
}

async fn wait_for(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The mirror reaches revision `n`: one commit per revision from 1, nothing else.
async fn wait_mirror(mirror: &Path, n: i64) {
    let want = one_to(n);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = revisions(mirror);
        if got == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the mirror did not reach revision {n}: it has revisions {got:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Which of `servers` (the living ones) runs the export; waits until exactly one does.
async fn leader(servers: &[&Server]) -> usize {
    export_leader(servers, Duration::from_secs(20)).await
}

/// Which of `servers` (index, server) own a session holding the export's advisory lock in this
/// database (the server's key `0x6d656d73796e6301`, whose halves PostgreSQL shows as
/// classid/objid), found by the session's client port.
async fn lock_holders(db: &TestDb, servers: &[(usize, &Server)]) -> Vec<usize> {
    let mut conn = db.connect().await;
    let ports: Vec<i32> = sqlx::query_scalar(
        "SELECT a.client_port FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
         WHERE l.locktype = 'advisory' AND l.granted
           AND l.classid = 1835363699::bigint::oid AND l.objid = 2037277441::bigint::oid
           AND l.objsubid = 1
           AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())",
    )
    .fetch_all(&mut conn)
    .await
    .expect("pg_locks");
    assert_eq!(ports.len(), 1, "one session holds the export lock");
    let port = u16::try_from(ports[0]).expect("a TCP port");
    servers
        .iter()
        .filter(|(_, s)| owns_local_port(s.pid(), port))
        .map(|(i, _)| *i)
        .collect()
}

/// One single-file push; its revision.
async fn push_one(c: &Client, path: &str, body: &str) -> i64 {
    let r = c
        .push(P, &batch(vec![put(path, &note(path, body), None)]))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["revision"].as_i64().expect("revision")
}

/// `n` pushes of new files by `who`, one after the other; (revision, who) of each.
async fn pushes(c: &Client, who: &str, tag: &str, n: usize) -> Vec<(i64, String)> {
    let mut out = Vec::new();
    for i in 0..n {
        let r = push_one(
            c,
            &format!("{who}-{tag}-{i}.md"),
            &format!("{who} {tag} {i}\n"),
        )
        .await;
        out.push((r, who.to_owned()));
    }
    out
}

/// The mirror's history is one commit per revision 1..=n, each with one parent (but the first),
/// of this project, authored by whoever made the revision (as `revisions` records it, and as the
/// pushes answered when `by` knows the revision).
async fn assert_history(db: &TestDb, mirror: &Path, n: i64, by: &BTreeMap<i64, String>) {
    let got = commits(mirror);
    assert_eq!(
        got.iter().map(|c| c.revision.clone()).collect::<Vec<_>>(),
        one_to(n),
        "one commit per revision, in order, no gaps or repeats"
    );
    let mut conn = db.connect().await;
    let authors: Vec<(i64, String, Option<String>)> = sqlx::query_as(
        "SELECT revision, author_name, author_email FROM revisions
         WHERE team = 'acme' AND project = $1 ORDER BY revision",
    )
    .bind(P)
    .fetch_all(&mut conn)
    .await
    .expect("revisions");
    assert_eq!(authors.len() as i64, n);
    for (c, (revision, name, email)) in got.iter().zip(&authors) {
        assert_eq!(c.parents, usize::from(*revision > 1), "{c:?}");
        assert_eq!(c.project, P);
        let email = email.clone().expect("every token here has an email");
        assert_eq!(c.author, format!("{name} <{email}>"), "revision {revision}");
        if let Some(who) = by.get(revision) {
            assert_eq!(&email, &format!("{who}@example.com"), "revision {revision}");
        }
    }
}

/// One server-sent event: its name (`message` when unnamed), id and data.
#[derive(Debug)]
struct Sse {
    event: String,
    id: Option<String>,
    data: String,
}

/// Opens `GET …/events` of the project on `server` (with `Last-Event-ID` when given) and reads it
/// in a task: each event, with the time it arrived, comes out of the channel; comments
/// (heartbeats) and `retry:` lines are skipped.
async fn events(
    server: &Server,
    token: &str,
    last_event_id: Option<i64>,
) -> tokio::sync::mpsc::UnboundedReceiver<(Sse, Instant)> {
    let c = server.client(token);
    let mut req = c.get(&format!("/v1/projects/{P}/events"));
    if let Some(id) = last_event_id {
        req = req.header("last-event-id", id.to_string());
    }
    let mut resp = req.send().await.expect("GET events");
    assert_eq!(resp.status(), 200);
    assert!(
        resp.headers()[reqwest::header::CONTENT_TYPE]
            .to_str()
            .expect("ascii")
            .starts_with("text/event-stream")
    );
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut buf = String::new();
        while let Ok(Some(bytes)) = resp.chunk().await {
            let at = Instant::now();
            buf.push_str(&String::from_utf8_lossy(&bytes));
            while let Some(end) = buf.find("\n\n") {
                let block: String = buf.drain(..end + 2).collect();
                let mut e = Sse {
                    event: "message".into(),
                    id: None,
                    data: String::new(),
                };
                let mut any = false;
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        e.event = v.trim().to_owned();
                        any = true;
                    } else if let Some(v) = line.strip_prefix("id:") {
                        e.id = Some(v.trim().to_owned());
                    } else if let Some(v) = line.strip_prefix("data:") {
                        e.data.push_str(v.trim());
                        any = true;
                    }
                }
                if any && tx.send((e, at)).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

/// Prints p50, p99 and the maximum of `delays` under `what`; returns the maximum.
fn report(what: &str, delays: &mut [Duration]) -> Duration {
    delays.sort();
    let n = delays.len();
    let at = |q: f64| delays[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{what}: n={n} p50={:.1} ms p99={:.1} ms max={:.1} ms",
        ms(at(0.50)),
        ms(at(0.99)),
        ms(delays[n - 1])
    );
    delays[n - 1]
}

#[tokio::test]
async fn a_push_through_one_replica_wakes_a_long_poll_and_an_event_stream_on_the_others() {
    let db = TestDb::new().await;
    let replicas = start_replicas(&db, 3, &[]);
    let (a, b, c) = (&replicas[0], &replicas[1], &replicas[2]);
    let alice = a.client(&a.token("alice", &["acme"]));
    let bob_t = b.token("bob", &["acme"]);
    let carol_t = c.token("carol", &["acme"]);
    let mut revision = push_one(&alice, "live-0.md", "0\n").await;
    let mut stream = events(c, &carol_t, Some(revision)).await;
    let mut pushed_at = BTreeMap::new();
    let mut wakes = Vec::new();
    for i in 1..=50 {
        let since = revision;
        let waiter = {
            let bob = b.client(&bob_t);
            tokio::spawn(async move {
                let r = bob
                    .send(bob.get(&format!("/v1/projects/{P}/changes?since={since}&wait=30")))
                    .await;
                (r, Instant::now())
            })
        };
        // Time for the long-poll to reach B; had it not, it would be answered at once (and be
        // measured all the same).
        tokio::time::sleep(Duration::from_millis(20)).await;
        let path = format!("live-{i}.md");
        revision = push_one(&alice, &path, &format!("{i}\n")).await;
        let answered = Instant::now();
        pushed_at.insert(revision, answered);
        let (r, woke) = waiter.await.expect("long-poll");
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["revision"], revision, "{}", r.text);
        assert!(r.text.contains(&path), "{}", r.text);
        wakes.push(woke.saturating_duration_since(answered));
    }
    let worst = report(
        "long-poll on B answered after a push answered through A (0 when it came first)",
        &mut wakes,
    );
    assert!(worst < Duration::from_secs(2), "a wake took {worst:?}");

    // The stream on C had a `revision` event for the newest revision (a reader that falls behind
    // gets only the newest, so not necessarily every one), in order.
    let mut seen = Vec::new();
    let mut delays = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while seen.last() != Some(&revision) {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(Some((e, at))) = tokio::time::timeout(left, stream.recv()).await else {
            panic!("no `revision` event for {revision} on C; it had {seen:?}");
        };
        assert_eq!(e.event, "revision", "{e:?}");
        let id: i64 = e.id.as_deref().expect("an id").parse().expect("a revision");
        let data: serde_json::Value = serde_json::from_str(&e.data).expect("json data");
        assert_eq!(data, json!({ "project": P, "revision": id }));
        assert!(seen.last().is_none_or(|&l| l < id), "{seen:?} then {id}");
        seen.push(id);
        if let Some(pushed) = pushed_at.get(&id) {
            delays.push(at.saturating_duration_since(*pushed));
        }
    }
    println!(
        "the stream on C had {} of the {} revision events",
        seen.len(),
        pushed_at.len()
    );
    let worst = report(
        "event stream on C got the revision after the push answered through A (0 when it came first)",
        &mut delays,
    );
    assert!(worst < Duration::from_secs(2), "an event took {worst:?}");
}

#[tokio::test]
async fn a_revocation_through_one_replica_is_refused_on_the_others_within_a_second() {
    let db = TestDb::new().await;
    let replicas = start_replicas(&db, 3, &[]);
    let (a, b, c) = (&replicas[0], &replicas[1], &replicas[2]);
    let root = a.client(&a.token_with("root", &["--admin"]));
    let (mut delays, mut stream_delays) = (Vec::new(), Vec::new());
    for i in 0..5 {
        let token = a.token(&format!("carol{i}"), &["acme"]);
        let (on_b, on_c) = (b.client(&token), c.client(&token));
        push_one(&on_c, &format!("c{i}.md"), "carol\n").await;
        assert_eq!(on_b.pull(P, 0).await.status, 200);
        let mut stream = events(c, &token, None).await;
        let r = root
            .send(
                root.http
                    .delete(format!("{}/v1/admin/tokens/{}", a.url, token_jti(&token)))
                    .bearer_auth(&root.token),
            )
            .await;
        assert_eq!(r.status, 204, "{}", r.text);
        let revoked = Instant::now();
        // C is polled every 50 ms until it refuses the token.
        let refused_at = loop {
            let r = on_c.pull(P, 0).await;
            if r.status == 401 {
                assert!(r.text.contains("revoked"), "{}", r.text);
                break revoked.elapsed();
            }
            assert_eq!(r.status, 200, "{}", r.text);
            assert!(
                revoked.elapsed() < Duration::from_secs(10),
                "replica C still takes a token revoked through A 10 s ago"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        delays.push(refused_at);
        // The open event stream on C ends with `revoked`.
        let ended = loop {
            let left =
                (revoked + Duration::from_secs(10)).saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, stream.recv()).await {
                Ok(Some((e, at))) if e.event == "end" => {
                    let data: serde_json::Value = serde_json::from_str(&e.data).expect("json");
                    assert_eq!(data["reason"], "revoked", "{e:?}");
                    break at.saturating_duration_since(revoked);
                }
                Ok(Some((e, _))) => assert_eq!(e.event, "revision", "{e:?}"),
                _ => panic!("the event stream on C did not end within 10 s of the revocation"),
            }
        };
        stream_delays.push(ended);
        // B too, and a push is refused like a pull.
        let deadline = Instant::now() + Duration::from_secs(10);
        while on_b.pull(P, 0).await.status != 401 {
            assert!(Instant::now() < deadline, "replica B still takes the token");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let r = on_b
            .push(P, &batch(vec![put("late.md", &note("late", "x\n"), None)]))
            .await;
        assert_eq!(r.status, 401, "{}", r.text);
    }
    println!(
        "revocation through A refused on C after (ms, polled every 50 ms): {:?}",
        delays.iter().map(Duration::as_millis).collect::<Vec<_>>()
    );
    for d in &delays {
        assert!(*d < Duration::from_secs(1), "refused on C only after {d:?}");
    }
    // An open stream notices the revocation at its next check (every 250 ms).
    println!(
        "revocation through A ended the event stream on C after (ms): {:?}",
        stream_delays
            .iter()
            .map(Duration::as_millis)
            .collect::<Vec<_>>()
    );
    for d in &stream_delays {
        assert!(
            *d < Duration::from_secs(1),
            "the stream on C ended only after {d:?}"
        );
    }
}

#[tokio::test]
async fn every_revision_reaches_the_mirror_once_and_the_export_survives_its_replica() {
    let db = TestDb::new().await;
    let mirrors = tempfile::tempdir().expect("mirrors");
    let mirror = mirrors.path().join("acme-api.git");
    git(
        None,
        &["init", "-q", "--bare", mirror.to_str().expect("utf8")],
    );
    let template = format!("{}/{{team}}-{{name}}.git", mirrors.path().display());
    let args = [
        "--mirror-url-template",
        &template,
        "--export-interval",
        "200ms",
    ];
    let mut replicas = start_replicas(&db, 3, &args);
    let ann_t = replicas[0].token("ann", &["acme:admin"]);
    let users = ["alice", "bob", "carol"];
    let tokens: Vec<String> = users
        .iter()
        .map(|u| replicas[0].token(u, &["acme"]))
        .collect();
    let first = leader(&replicas.iter().collect::<Vec<_>>()).await;
    let all: Vec<(usize, &Server)> = replicas.iter().enumerate().collect();
    assert_eq!(lock_holders(&db, &all).await, [first]);

    // A burst through all three replicas, one user on each; the first push carries a canary that
    // is purged later.
    let canary = format!("PURGEME{}", uuid::Uuid::new_v4().simple());
    let alice = replicas[0].client(&tokens[0]);
    let mut by: BTreeMap<i64, String> = BTreeMap::new();
    by.insert(
        push_one(&alice, "leak.md", &format!("{canary}\n")).await,
        "alice".into(),
    );
    let clients: Vec<Client> = (0..3).map(|i| replicas[i].client(&tokens[i])).collect();
    let (x, y, z) = tokio::join!(
        pushes(&clients[0], users[0], "burst", 8),
        pushes(&clients[1], users[1], "burst", 8),
        pushes(&clients[2], users[2], "burst", 8),
    );
    by.extend(x.into_iter().chain(y).chain(z));
    let n = *by.keys().last().expect("pushes");
    assert_eq!(n, 25);
    wait_mirror(&mirror, n).await;
    assert_history(&db, &mirror, n, &by).await;
    let mut written = 0.0;
    for s in &replicas {
        written += metric_value(s, "memsync_export_commits_total ")
            .await
            .expect("commits metric");
    }
    assert_eq!(written, n as f64, "no replica wrote a commit twice");
    let before_kill = commits(&mirror);

    // SIGKILL the replica that runs the export while pushes go on through the other two.
    let survivors: Vec<usize> = (0..3).filter(|&i| i != first).collect();
    let running = {
        let jobs: Vec<_> = survivors
            .iter()
            .map(|&i| {
                let c = replicas[i].client(&tokens[i]);
                let who = users[i];
                tokio::spawn(async move { pushes(&c, who, "failover", 8).await })
            })
            .collect();
        jobs
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    replicas[first].kill();
    let killed = Instant::now();
    let second = {
        let living: Vec<&Server> = survivors.iter().map(|&i| &replicas[i]).collect();
        survivors[leader(&living).await]
    };
    println!(
        "the export moved from replica {first} to replica {second} {} ms after the SIGKILL (--export-interval 200ms)",
        killed.elapsed().as_millis()
    );
    for job in running {
        by.extend(job.await.expect("pushes through a survivor"));
    }
    let n = *by.keys().last().expect("pushes");
    assert_eq!(n, 41);
    wait_mirror(&mirror, n).await;
    assert_history(&db, &mirror, n, &by).await;
    assert_eq!(
        commits(&mirror)[..before_kill.len()],
        before_kill[..],
        "the new exporter's commits are the same: the mirror was fast-forwarded"
    );
    let living: Vec<(usize, &Server)> = survivors.iter().map(|&i| (i, &replicas[i])).collect();
    assert_eq!(lock_holders(&db, &living).await, [second]);

    // A purge through the replica that does not run the export: answered once the exporter has
    // rewritten the history, and the mirror is force-updated without the canary.
    assert!(all_patches(&mirror).contains(&canary));
    let third = 3 - first - second;
    let ann = replicas[third].client(&ann_t);
    let r = ann
        .send(
            ann.http
                .post(format!(
                    "{}/v1/admin/projects/{P}/purge",
                    replicas[third].url
                ))
                .bearer_auth(&ann_t)
                .json(&json!({ "path": "leak.md", "reason": "leaked secret" })),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let n = n + 1;
    wait_mirror(&mirror, n).await;
    wait_for("the mirror's rewrite", 30, || {
        !all_patches(&mirror).contains(&canary)
    })
    .await;
    assert!(!all_patches(&local_export(&replicas[second])).contains(&canary));

    // The first exporter comes back with its copy from before the purge. It does not run the
    // export, so it pushes nothing to the mirror.
    let old_copy = local_export(&replicas[first]);
    assert!(all_patches(&old_copy).contains(&canary));
    replicas[first].restart();
    let back = replicas[first].client(&tokens[first]);
    by.extend(pushes(&back, users[first], "back", 2).await);
    let n = n + 2;
    wait_mirror(&mirror, n).await;
    assert!(!all_patches(&mirror).contains(&canary));

    // Both others are killed: the replica with the stale copy takes over. It must rebuild that
    // copy from PostgreSQL, not continue it, or the purged content would return to the mirror.
    replicas[second].kill();
    replicas[third].kill();
    let killed = Instant::now();
    assert_eq!(leader(&[&replicas[first]]).await, 0);
    println!(
        "the export moved to the replica with the stale copy {} ms after the SIGKILLs",
        killed.elapsed().as_millis()
    );
    by.extend(pushes(&back, users[first], "last", 3).await);
    let n = n + 3;
    wait_mirror(&mirror, n).await;
    assert_history(&db, &mirror, n, &by).await;
    assert!(!all_patches(&mirror).contains(&canary));
    let objects = git_output(
        None,
        &[&gd(&old_copy), "cat-file", "--batch-all-objects", "--batch"],
    );
    assert!(objects.status.success() && objects.stdout.len() > 1000);
    assert!(
        !objects
            .stdout
            .windows(canary.len())
            .any(|w| w == canary.as_bytes()),
        "the stale copy was rebuilt, not continued"
    );
    assert_eq!(
        git(None, &[&gd(&old_copy), "rev-parse", "main"]),
        git(None, &[&gd(&mirror), "rev-parse", "main"])
    );
    assert_eq!(
        lock_holders(&db, &[(first, &replicas[first])]).await,
        [first]
    );
    assert_eq!(count(&db, "SELECT count(*) FROM export_outbox").await, 0);
}
