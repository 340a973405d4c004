//! Rate limits and quotas (docs/limits.md), against the real server: a token over its rate gets
//! 429 with a `Retry-After` from its bucket while another token goes on; a token issued with
//! `--rate` has its own; pushes per minute per token and per team; a project over its storage
//! quota refuses a push with 413 and stores nothing, while deletes and smaller versions pass;
//! live updates per team; a slow body and a huge one don't hold up anybody else; and
//! `/metrics` counts every refusal.
//!
//! No assertion is on a duration: outcomes are counted, and where a count depends on time the
//! bound is computed from the time that actually passed.

use std::time::{Duration, Instant};

use memsync_e2e::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A configuration file with `text`, kept as long as the returned guard.
fn config_file(text: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("memsync.toml");
    std::fs::write(&path, text).expect("write the config file");
    let path = path.display().to_string();
    (dir, path)
}

/// `memsync_limit_refusals_total{limit="<limit>"}` as `/metrics` serves it now.
async fn refusals(server: &Server, limit: &str) -> u64 {
    let text = reqwest::get(format!("{}/metrics", server.url))
        .await
        .expect("scrape")
        .text()
        .await
        .expect("metrics text");
    let series = format!("memsync_limit_refusals_total{{limit=\"{limit}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&series))
        .unwrap_or_else(|| panic!("no {series} in:\n{text}"))
        .trim()
        .parse()
        .expect("a count")
}

/// The `Retry-After` of an answer, in seconds.
fn retry_after(r: &Resp) -> u64 {
    r.headers
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no Retry-After in {:?}", r.headers))
}

/// Rows of what a push stores: memories, versions, revisions, idempotency keys.
async fn rows(db: &TestDb) -> [i64; 4] {
    [
        count(db, "SELECT count(*) FROM memories").await,
        count(db, "SELECT count(*) FROM memory_versions").await,
        count(db, "SELECT count(*) FROM revisions").await,
        count(db, "SELECT count(*) FROM idempotency_keys").await,
    ]
}

fn note(name: &str, size: usize) -> String {
    memory(
        name,
        &format!("about {name}"),
        "project",
        &format!("{}\n", "x".repeat(size)),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_over_its_rate_gets_429_with_retry_after_and_others_go_on() {
    let db = TestDb::new().await;
    // 1 request a second, bursts of 10: a burst is easy to exceed however slow the machine.
    let server = Server::start_with(Some(db.url.clone()), None, &["--token-rate", "1/10"]);
    let ann = server.client(&server.token("ann", &["acme"]));
    let bob = server.client(&server.token("bob", &["acme"]));
    let before = refusals(&server, "token_requests").await;

    let start = Instant::now();
    let (mut ok, mut limited) = (0u64, Vec::new());
    for _ in 0..40 {
        let r = ann.fetch("/v1/me").await;
        match r.status {
            200 => ok += 1,
            429 => limited.push(r),
            s => panic!("unexpected {s}: {}", r.text),
        }
    }
    let elapsed = start.elapsed().as_secs();
    println!(
        "ann: {ok} answered, {} refused in {elapsed} s",
        limited.len()
    );
    // The burst, plus what refilled meanwhile (one a second).
    assert!(ok >= 10, "{ok} answered: the burst is 10");
    assert!(
        ok <= 10 + elapsed + 1,
        "{ok} answered in {elapsed} s at 1/s after a burst of 10"
    );
    assert!(!limited.is_empty());
    for r in &limited {
        assert_eq!(r.code(), "rate_limited", "{}", r.text);
        assert_eq!(r.body["error"]["details"]["limit"], "token_requests");
        // One request a second: never more than a second's wait.
        assert_eq!(retry_after(r), 1, "{}", r.text);
        assert_eq!(r.body["error"]["details"]["retry_after"], 1);
        assert!(
            r.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("--rate"),
            "{}",
            r.text
        );
    }
    // Another token is not affected.
    for _ in 0..5 {
        assert_eq!(bob.fetch("/v1/me").await.status, 200);
    }
    // Waiting as told gets ann in again.
    tokio::time::sleep(Duration::from_secs(retry_after(&limited[0]))).await;
    assert_eq!(ann.fetch("/v1/me").await.status, 200);
    // The refusals are counted, exactly.
    assert_eq!(
        refusals(&server, "token_requests").await - before,
        limited.len() as u64
    );

    // A token issued with its own rate has it, above or below the default.
    let fast = server.client(&server.token_with("ci", &["--team", "acme", "--rate", "100/200"]));
    for _ in 0..40 {
        let r = fast.fetch("/v1/me").await;
        assert_eq!(r.status, 200, "a token of 100/200: {}", r.text);
    }
    let slow = server.client(&server.token_with("ro", &["--team", "acme", "--rate", "1/3"]));
    let start = Instant::now();
    let mut ok = 0u64;
    for _ in 0..10 {
        ok += u64::from(slow.fetch("/v1/me").await.status == 200);
    }
    let elapsed = start.elapsed().as_secs();
    assert!(
        (3..=3 + elapsed + 1).contains(&ok),
        "{ok} answered in {elapsed} s at 1/s after a burst of 3"
    );

    // Unauthenticated routes count against nothing.
    for _ in 0..30 {
        let r = reqwest::get(format!("{}/healthz", server.url))
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushes_per_minute_per_token_and_per_team() {
    let db = TestDb::new().await;
    let (_dir, config) = config_file("[limits.teams.acme]\npushes_per_minute = 5\n");
    let server = Server::start_with(
        Some(db.url.clone()),
        None,
        &["--config", &config, "--token-pushes-per-minute", "3"],
    );
    let ann = server.client(&server.token("ann", &["acme"]));
    let bob = server.client(&server.token("bob", &["acme"]));
    let cy = server.client(&server.token("cy", &["beta"]));

    let push = |c: &Client, i: usize, team: &str| {
        let c = c.clone();
        let project = format!("{team}/api");
        let body = batch(vec![put(
            &format!("n{i}.md"),
            &note(&format!("n{i}"), 10),
            None,
        )]);
        async move { c.push(&project, &body).await }
    };
    let mut statuses = Vec::new();
    let mut last = None;
    for i in 0..5 {
        let r = push(&ann, i, "acme").await;
        statuses.push(r.status);
        if r.status == 429 {
            last = Some(r);
        }
    }
    // Three a minute for a token: the fourth and fifth wait. (A minute is far longer than the
    // loop: nothing refills in between.)
    assert_eq!(statuses, [200, 200, 200, 429, 429]);
    let r = last.unwrap();
    assert_eq!(r.code(), "rate_limited");
    assert_eq!(r.body["error"]["details"]["limit"], "token_pushes");
    let wait = retry_after(&r);
    assert!(
        (1..=20).contains(&wait),
        "a third of a minute at most: {wait}"
    );
    // Pulls are not pushes.
    assert_eq!(ann.pull("acme/api", 0).await.status, 200);

    // Team acme: five a minute, ann used three.
    let first = push(&bob, 10, "acme").await;
    assert_eq!(first.status, 200, "{}", first.text);
    let second = push(&bob, 11, "acme").await;
    assert_eq!(second.status, 200, "{}", second.text);
    let third = push(&bob, 12, "acme").await;
    assert_eq!((third.status, third.code()), (429, "rate_limited"));
    assert_eq!(third.body["error"]["details"]["limit"], "team_pushes");
    assert!(
        third.text.contains("team `acme`") && third.text.contains("[limits.teams.acme]"),
        "{}",
        third.text
    );
    // Another team has its own.
    for i in 0..3 {
        assert_eq!(push(&cy, i, "beta").await.status, 200);
    }
    assert_eq!(refusals(&server, "token_pushes").await, 2);
    assert_eq!(refusals(&server, "team_pushes").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_over_its_quota_refuses_growth_stores_nothing_and_lets_shrinking_through() {
    let db = TestDb::new().await;
    let (_dir, config) = config_file("[limits.teams.acme]\nmax_project_bytes = 4000\n");
    let server = Server::start_with(Some(db.url.clone()), None, &["--config", &config]);
    let ann = server.client(&server.token("ann", &["acme"]));
    let cy = server.client(&server.token("cy", &["beta"]));

    let one = ann
        .push(
            "acme/api",
            &batch(vec![put("a.md", &note("a", 1500), None)]),
        )
        .await;
    assert_eq!(one.status, 200, "{}", one.text);
    let two = ann
        .push(
            "acme/api",
            &batch(vec![put("b.md", &note("b", 1500), None)]),
        )
        .await;
    assert_eq!(two.status, 200, "{}", two.text);
    let info = ann.fetch("/v1/projects/acme/api").await;
    let used = info.body["bytes"].as_i64().unwrap();
    assert!((3000..4000).contains(&used), "{used} bytes");

    let before = rows(&db).await;
    let key = uuid::Uuid::new_v4().to_string();
    let third = batch(vec![put("c.md", &note("c", 1500), None)]);
    let refused = ann.push_with_key("acme/api", &third, &key).await;
    assert_eq!(
        (refused.status, refused.code()),
        (413, "quota_exceeded"),
        "{}",
        refused.text
    );
    let message = refused.body["error"]["message"].as_str().unwrap();
    for part in [
        "acme/api",
        "over its quota of 3.9 KiB (4000 bytes)",
        "nothing was applied",
        "Delete or shorten memories",
        "`max_project_bytes` in [limits.teams.acme]",
    ] {
        assert!(message.contains(part), "{part} in: {message}");
    }
    let details = &refused.body["error"]["details"];
    assert_eq!(details["quota_bytes"], 4000);
    assert_eq!(details["used_bytes"], used);
    assert!(details["would_use_bytes"].as_i64().unwrap() > 4000);
    assert_eq!(rows(&db).await, before, "a refused push stores nothing");
    // The same request again is refused again, not answered from a stored refusal...
    let again = ann.push_with_key("acme/api", &third, &key).await;
    assert_eq!(again.status, 413);
    assert!(again.headers.get("idempotent-replayed").is_none());
    assert_eq!(rows(&db).await, before);

    // ... a smaller version passes, and so does a delete, whatever the usage ...
    let a_sha = sha_of(&one.body, "a.md").unwrap();
    let smaller = ann
        .push(
            "acme/api",
            &batch(vec![put("a.md", &note("a", 1000), Some(&a_sha))]),
        )
        .await;
    assert_eq!(smaller.status, 200, "{}", smaller.text);
    let b_sha = sha_of(&two.body, "b.md").unwrap();
    let deleted = ann
        .push("acme/api", &batch(vec![delete("b.md", Some(&b_sha))]))
        .await;
    assert_eq!(deleted.status, 200, "{}", deleted.text);
    // ... and once there is room, the refused request with its key is applied.
    let retried = ann.push_with_key("acme/api", &third, &key).await;
    assert_eq!(retried.status, 200, "{}", retried.text);
    assert!(sha_of(&retried.body, "c.md").is_some());

    // Another team has the default quota (100 MiB).
    for name in ["a", "b", "c"] {
        let r = cy
            .push(
                "beta/api",
                &batch(vec![put(&format!("{name}.md"), &note(name, 1500), None)]),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    assert_eq!(refusals(&server, "project_bytes").await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_team_holds_at_most_its_live_updates() {
    let db = TestDb::new().await;
    let server = Server::start_with(
        Some(db.url.clone()),
        None,
        &["--max-streams-per-team", "2", "--events-heartbeat", "200ms"],
    );
    let ann = server.client(&server.token("ann", &["acme"]));
    let bob = server.client(&server.token("bob", &["acme"]));
    let cy = server.client(&server.token("cy", &["beta"]));
    for (c, p) in [(&ann, "acme/api"), (&cy, "beta/api")] {
        let r = c
            .push(p, &batch(vec![put("a.md", &note("a", 10), None)]))
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    let open = |c: &Client, project: &str| {
        let req = c
            .get(&format!("/v1/projects/{project}/events"))
            .build()
            .unwrap();
        let http = c.http.clone();
        async move { http.execute(req).await.expect("events") }
    };
    let one = open(&ann, "acme/api").await;
    let two = open(&ann, "acme/api").await;
    assert_eq!((one.status().as_u16(), two.status().as_u16()), (200, 200));
    // The team holds two: bob's first is one too many, and so is a long-poll.
    let over = open(&bob, "acme/api").await;
    assert_eq!(over.status(), 429);
    assert!(over.headers().contains_key("retry-after"));
    let text = over.text().await.unwrap();
    assert!(
        text.contains("too_many_streams") && text.contains("team `acme`"),
        "{text}"
    );
    let poll = bob
        .fetch("/v1/projects/acme/api/changes?since=1&wait=5")
        .await;
    assert_eq!((poll.status, poll.code()), (429, "too_many_streams"));
    // Another team's are its own.
    let other = open(&cy, "beta/api").await;
    assert_eq!(other.status(), 200);
    // A closed stream frees the team's place (the server notices at its next heartbeat).
    drop(one);
    let deadline = Instant::now() + Duration::from_secs(30);
    let three = loop {
        let r = open(&bob, "acme/api").await;
        if r.status() == 200 {
            break r;
        }
        assert!(Instant::now() < deadline, "the place was never freed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    drop((two, three, other));
    assert!(refusals(&server, "team_streams").await >= 2);
}

/// `host:port` of a server URL.
fn addr(server: &Server) -> String {
    server.url.strip_prefix("http://").unwrap().to_owned()
}

/// Reads what the server sends until it closes the connection or `within` passes.
async fn read_answer(s: &mut TcpStream, within: Duration) -> String {
    let mut got = Vec::new();
    let _ = tokio::time::timeout(within, async {
        let mut buf = [0u8; 4096];
        while let Ok(n) = s.read(&mut buf).await {
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
            if got.windows(4).any(|w| w == b"\r\n\r\n") && got.starts_with(b"HTTP/1.1 413") {
                break;
            }
        }
    })
    .await;
    String::from_utf8_lossy(&got).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_body_and_a_huge_one_hold_up_nobody_else() {
    let db = TestDb::new().await;
    let server = Server::start_with(
        Some(db.url.clone()),
        None,
        &["--request-timeout", "3s", "--max-body-bytes", "65536"],
    );
    let token = server.token("ann", &["acme"]);
    let c = server.client(&token);
    let first = c
        .push("acme/api", &batch(vec![put("a.md", &note("a", 10), None)]))
        .await;
    assert_eq!(first.status, 200, "{}", first.text);
    let head = |len: &str| {
        format!(
            "POST /v1/projects/acme/api/push HTTP/1.1\r\nHost: memsync\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n{len}\r\n"
        )
    };

    // A trickles a 60,000-byte body, a byte every 100 ms, until the server gives up on it.
    let at = addr(&server);
    let trickle_head = head("Content-Length: 60000\r\n");
    let trickle = tokio::spawn(async move {
        let mut s = TcpStream::connect(&at).await.unwrap();
        s.write_all(trickle_head.as_bytes()).await.unwrap();
        let start = Instant::now();
        let mut sent = 0;
        while sent < 60_000 && start.elapsed() < Duration::from_secs(60) {
            if s.write_all(b" ").await.is_err() {
                break;
            }
            sent += 1;
            let mut peek = [0u8; 1];
            let answered =
                tokio::time::timeout(Duration::from_millis(100), s.peek(&mut peek)).await;
            if matches!(answered, Ok(Ok(n)) if n > 0) {
                break; // the server answered
            }
        }
        (sent, read_answer(&mut s, Duration::from_secs(5)).await)
    });

    // B announces 10 MB: refused before a byte of it is read.
    let mut big = TcpStream::connect(addr(&server)).await.unwrap();
    big.write_all(head("Content-Length: 10000000\r\n").as_bytes())
        .await
        .unwrap();
    let answer = read_answer(&mut big, Duration::from_secs(30)).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");

    // B' sends 1 MiB in chunks without announcing it: refused once it passes the limit.
    let at = addr(&server);
    let chunked_head = head("Transfer-Encoding: chunked\r\n");
    let chunked = tokio::spawn(async move {
        let mut s = TcpStream::connect(&at).await.unwrap();
        s.write_all(chunked_head.as_bytes()).await.unwrap();
        let chunk = format!("4000\r\n{}\r\n", "y".repeat(0x4000));
        for _ in 0..64 {
            if s.write_all(chunk.as_bytes()).await.is_err() {
                break;
            }
        }
        read_answer(&mut s, Duration::from_secs(30)).await
    });

    // C meanwhile: every request is answered as usual.
    let (mut pulls, mut pushes) = (0, 0);
    let mut base = sha_of(&first.body, "a.md").unwrap();
    for i in 0..20 {
        let r = c.pull("acme/api", 0).await;
        assert_eq!(r.status, 200, "pull {i}: {}", r.text);
        pulls += 1;
        if i % 5 == 0 {
            let r = c
                .push(
                    "acme/api",
                    &batch(vec![put("a.md", &note("a", 11 + i), Some(&base))]),
                )
                .await;
            assert_eq!(r.status, 200, "push {i}: {}", r.text);
            base = sha_of(&r.body, "a.md").unwrap();
            pushes += 1;
        }
    }
    println!(
        "while one client trickled and another sent too much: {pulls} pulls, {pushes} pushes answered"
    );

    let answer = chunked.await.unwrap();
    println!("the chunked body got: {:?}", answer.lines().next());
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 413"),
        "the chunked body is refused (or the connection closed): {answer}"
    );
    let (sent, answer) = trickle.await.unwrap();
    println!(
        "the trickle sent {sent} bytes before: {:?}",
        answer.lines().next()
    );
    assert!(sent < 60_000, "the server waited for the whole trickle");
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 504"),
        "the trickle is cut off by --request-timeout: {answer}"
    );
}
