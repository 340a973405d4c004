//! Live updates and large pulls (SPEC §10, docs/protocol.md "Paged pulls, long-poll and the
//! event stream"): pages that hold whole revisions and add up to the snapshot, long-polls woken
//! by a push (and a 304 when the wait ends), the event stream (revisions, heartbeats, resume,
//! review events for reviewers only, the end on revocation and shutdown, the per-token cap), and
//! negotiated compression — against the real server on a real PostgreSQL.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use memsync_e2e::*;
use serde_json::{Value, json};

const P: &str = "acme/api";

fn note(name: &str, body: &str) -> String {
    memory(
        name,
        &format!("about {name}"),
        "project",
        &format!("\n{body}\n"),
    )
}

/// Pushes `paths` as one batch (new files) and returns the new revision.
async fn push_new(c: &Client, paths: &[String]) -> i64 {
    let changes = paths
        .iter()
        .map(|p| put(p, &note(p, &format!("body of {p}")), None))
        .collect();
    let r = c.push(P, &batch(changes)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["revision"].as_i64().unwrap()
}

// ---------------------------------------------------------------------------------------------
// Pages

#[tokio::test]
async fn pages_hold_whole_revisions_and_add_up_to_the_snapshot() {
    let db = TestDb::new().await;
    let server = Server::start_with(Some(db.url.clone()), None, &["--max-pull-files", "7"]);
    let alice = server.client(&forge_token("alice", &[("acme", "member")], false));
    // Five revisions of 3 files (each also rewrites the root MEMORY.md), then one of 10.
    for b in 0..5 {
        push_new(
            &alice,
            &(0..3).map(|i| format!("b{b}/f{i}.md")).collect::<Vec<_>>(),
        )
        .await;
    }
    let big = push_new(
        &alice,
        &(0..10).map(|i| format!("big/f{i}.md")).collect::<Vec<_>>(),
    )
    .await;

    for bad in ["0", "-1", "many", "1.5"] {
        let r = alice
            .fetch(&format!("/v1/projects/{P}/changes?since=0&limit={bad}"))
            .await;
        assert_eq!(
            (r.status, r.code()),
            (400, "invalid_limit"),
            "{bad}: {}",
            r.text
        );
        assert!(r.text.contains("at most 7"), "{}", r.text);
    }

    // Without `limit` the server's cap (7) applies; with a larger one too.
    for query in ["", "&limit=1000", "&limit=2"] {
        let mut since = 0;
        let mut got: BTreeMap<String, (i64, String)> = BTreeMap::new();
        let mut pages = 0;
        loop {
            let r = alice
                .fetch(&format!("/v1/projects/{P}/changes?since={since}{query}"))
                .await;
            assert_eq!(r.status, 200, "{}", r.text);
            pages += 1;
            let b = &r.body;
            let (revision, head) = (b["revision"].as_i64().unwrap(), b["head"].as_i64().unwrap());
            let more = b["more"].as_bool().unwrap();
            assert_eq!(
                r.headers["etag"].to_str().unwrap(),
                format!("\"r{revision}\""),
                "a page's tag names what the client will have"
            );
            let changes = b["changes"].as_array().unwrap();
            let limit = if query == "&limit=2" { 2 } else { 7 };
            let revs: Vec<i64> = changes
                .iter()
                .map(|c| c["revision"].as_i64().unwrap())
                .collect();
            if changes.len() > limit {
                assert!(
                    revs.iter().all(|r| *r == revs[0]),
                    "only one revision alone may exceed the limit: {revs:?}"
                );
            }
            assert!(
                revs.iter().all(|r| *r > since && *r <= revision),
                "{revs:?} in ({since}, {revision}]"
            );
            for c in changes {
                let path = c["path"].as_str().unwrap().to_owned();
                assert!(!got.contains_key(&path), "{path} sent twice");
                got.insert(
                    path,
                    (
                        c["revision"].as_i64().unwrap(),
                        c["sha256"].as_str().unwrap_or("").to_owned(),
                    ),
                );
            }
            if !more {
                assert_eq!(revision, head, "the last page is complete up to the head");
                break;
            }
            assert!(revision < head);
            since = revision;
        }
        assert_eq!(
            got.len(),
            5 * 3 + 10 + 1 + 6,
            "every file, the root MEMORY.md and the six directories' MEMORY.md, once ({query})"
        );
        assert!(pages >= 3, "{pages} pages with {query}");
        assert!(got.values().all(|(r, _)| *r <= big));
    }

    // A file changed between two pages comes in a later page, at its new state.
    let first = alice
        .fetch(&format!("/v1/projects/{P}/changes?since=0&limit=4"))
        .await;
    assert!(first.body["more"].as_bool().unwrap());
    let page_rev = first.body["revision"].as_i64().unwrap();
    let changed = first.body["changes"][0].clone();
    let path = changed["path"].as_str().unwrap();
    let r = alice
        .push(
            P,
            &batch(vec![put(
                path,
                &note(path, "edited between pages"),
                changed["sha256"].as_str(),
            )]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let new_sha = sha_of(&r.body, path).unwrap();
    let mut since = page_rev;
    let mut seen_again = false;
    loop {
        let r = alice
            .fetch(&format!("/v1/projects/{P}/changes?since={since}&limit=4"))
            .await;
        for c in r.body["changes"].as_array().unwrap() {
            if c["path"] == path {
                assert_eq!(c["sha256"], new_sha.as_str());
                seen_again = true;
            }
        }
        if !r.body["more"].as_bool().unwrap() {
            break;
        }
        since = r.body["revision"].as_i64().unwrap();
    }
    assert!(
        seen_again,
        "{path} edited after the first page reaches the client"
    );
}

// ---------------------------------------------------------------------------------------------
// Long-poll

#[tokio::test]
async fn a_long_poll_answers_when_a_push_lands_and_304_when_the_wait_ends() {
    let db = TestDb::new().await;
    // The long-poll outlives --request-timeout: its limit is the wait plus that.
    let server = Server::start_with(Some(db.url.clone()), None, &["--request-timeout", "2s"]);
    let alice = server.client(&forge_token("alice", &[("acme", "member")], false));
    let bob = server.client(&forge_token("bob", &[("acme", "member")], false));
    let rev = push_new(&alice, &["a.md".to_owned()]).await;

    for bad in ["61", "-1", "soon"] {
        let r = bob
            .fetch(&format!("/v1/projects/{P}/changes?since={rev}&wait={bad}"))
            .await;
        assert_eq!((r.status, r.code()), (400, "invalid_wait"), "{}", r.text);
    }
    // Something new is answered at once, wait or not.
    let t = Instant::now();
    let r = bob
        .fetch(&format!("/v1/projects/{P}/changes?since=0&wait=30"))
        .await;
    assert_eq!(r.status, 200);
    assert!(t.elapsed() < Duration::from_secs(5));

    // Nothing new: the wait ends in a 304 naming the current revision, after the wait, and not
    // in a 504 although it outlasts --request-timeout.
    let t = Instant::now();
    let r = bob
        .fetch(&format!("/v1/projects/{P}/changes?since={rev}&wait=3"))
        .await;
    let waited = t.elapsed();
    assert_eq!(r.status, 304, "{}", r.text);
    assert_eq!(r.headers["etag"].to_str().unwrap(), format!("\"r{rev}\""));
    assert!(
        waited >= Duration::from_millis(2900),
        "answered after {waited:?}"
    );

    // A push wakes it (also one waiting with If-None-Match only).
    let mut delays = Vec::new();
    let mut since = rev;
    for round in 0..5 {
        let waiter = {
            let bob = bob.clone();
            let (url, inm) = if round % 2 == 0 {
                (
                    format!("/v1/projects/{P}/changes?since={since}&wait=30"),
                    None,
                )
            } else {
                (
                    format!("/v1/projects/{P}/changes?since={since}&wait=30"),
                    Some(format!("\"r{since}\"")),
                )
            };
            tokio::spawn(async move {
                let mut req = bob.get(&url);
                if let Some(inm) = inm {
                    req = req.header("if-none-match", inm);
                }
                let r = bob.send(req).await;
                (r, Instant::now())
            })
        };
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            !waiter.is_finished(),
            "the long-poll waits while nothing changes"
        );
        let r = alice
            .push(
                P,
                &batch(vec![put(
                    &format!("w{round}.md"),
                    &note("w", "woken"),
                    None,
                )]),
            )
            .await;
        let pushed = Instant::now();
        assert_eq!(r.status, 200, "{}", r.text);
        let (answer, at) = waiter.await.unwrap();
        assert_eq!(answer.status, 200, "{}", answer.text);
        let paths: Vec<&str> = answer.body["changes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["path"].as_str().unwrap())
            .collect();
        assert!(
            paths.contains(&format!("w{round}.md").as_str()),
            "{paths:?}"
        );
        since = answer.body["revision"].as_i64().unwrap();
        delays.push(at.saturating_duration_since(pushed));
    }
    println!("push → long-poll answer on the same replica: {delays:?}");
    assert!(
        delays.iter().all(|d| *d < Duration::from_secs(2)),
        "{delays:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// The event stream

/// One SSE event as the stream sent it (a comment has `comment` set and nothing else).
#[derive(Debug, Default, Clone)]
struct Sse {
    event: Option<String>,
    id: Option<String>,
    data: String,
    comment: Option<String>,
    retry: Option<String>,
}

impl Sse {
    fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or(Value::Null)
    }
}

struct Stream {
    resp: reqwest::Response,
    buf: String,
}

impl Stream {
    async fn open(c: &Client, query: &str, last_id: Option<&str>) -> Result<Stream, Resp> {
        let mut req = c.get(&format!("/v1/projects/{P}/events{query}"));
        if let Some(id) = last_id {
            req = req.header("last-event-id", id);
        }
        let resp = c.http.execute(req.build().unwrap()).await.unwrap();
        if resp.status() != 200 {
            let status = resp.status().as_u16();
            let headers = resp.headers().clone();
            let text = resp.text().await.unwrap();
            return Err(Resp {
                status,
                headers,
                body: serde_json::from_str(&text).unwrap_or(Value::Null),
                text,
            });
        }
        assert_eq!(resp.headers()["content-type"], "text/event-stream");
        assert!(resp.headers().get("content-encoding").is_none());
        Ok(Stream {
            resp,
            buf: String::new(),
        })
    }

    async fn ok(c: &Client, query: &str, last_id: Option<&str>) -> Stream {
        match Stream::open(c, query, last_id).await {
            Ok(s) => s,
            Err(r) => panic!("the stream was refused: {} {}", r.status, r.text),
        }
    }

    /// The next event or comment, or None when the stream ends or `within` passes.
    async fn next(&mut self, within: Duration) -> Option<Sse> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..end + 2).collect();
                let mut e = Sse::default();
                for line in block.lines() {
                    if let Some(c) = line.strip_prefix(':') {
                        e.comment = Some(c.trim().to_owned());
                    } else if let Some((k, v)) = line.split_once(':') {
                        let v = v.strip_prefix(' ').unwrap_or(v).to_owned();
                        match k {
                            "event" => e.event = Some(v),
                            "id" => e.id = Some(v),
                            "data" => e.data.push_str(&v),
                            "retry" => e.retry = Some(v),
                            other => panic!("unknown field {other}"),
                        }
                    }
                }
                return Some(e);
            }
            match tokio::time::timeout_at(deadline, self.resp.chunk()).await {
                Ok(Ok(Some(bytes))) => self.buf.push_str(std::str::from_utf8(&bytes).unwrap()),
                _ => return None,
            }
        }
    }

    /// The next named event (not a heartbeat, not the `retry:` block).
    async fn next_event(&mut self, within: Duration) -> Option<Sse> {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let e = self.next(left).await?;
            if e.event.is_some() {
                return Some(e);
            }
        }
    }
}

#[tokio::test]
async fn the_event_stream_sends_revisions_heartbeats_and_resumes() {
    let db = TestDb::new().await;
    let server = Server::start_with(Some(db.url.clone()), None, &["--events-heartbeat", "300ms"]);
    let alice = server.client(&forge_token("alice", &[("acme", "member")], false));
    let bob = server.client(&forge_token("bob", &[("acme", "member")], false));
    let stranger = server.client(&forge_token("eve", &[("other", "member")], false));
    let rev = push_new(&alice, &["a.md".to_owned()]).await;

    assert_eq!(
        Stream::open(&stranger, "", None)
            .await
            .err()
            .unwrap()
            .status,
        404
    );
    let bad = Stream::open(&bob, "", Some("nope")).await.err().unwrap();
    assert_eq!(
        (bad.status, bad.code()),
        (400, "invalid_since"),
        "{}",
        bad.text
    );

    let mut s = Stream::ok(&bob, "", None).await;
    let retry = s.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(retry.retry.as_deref(), Some("2000"));
    let first = s.next_event(Duration::from_secs(5)).await.unwrap();
    assert_eq!(first.event.as_deref(), Some("revision"));
    assert_eq!(first.id, Some(rev.to_string()));
    assert_eq!(first.json(), json!({"project": P, "revision": rev}));

    // A heartbeat comes while nothing happens.
    let hb = s.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(hb.comment.as_deref(), Some("heartbeat"));

    let pushed = Instant::now();
    let next = push_new(&alice, &["b.md".to_owned()]).await;
    let e = s.next_event(Duration::from_secs(5)).await.unwrap();
    println!("push → event on the same replica: {:?}", pushed.elapsed());
    assert_eq!(
        (e.event.as_deref(), e.id.clone()),
        (Some("revision"), Some(next.to_string()))
    );
    assert_eq!(e.json()["revision"], next);
    drop(s);

    // Resume: a client that has seen `next` gets nothing until something new; one that has seen
    // `rev` gets `next` at once.
    let mut s = Stream::ok(&bob, "", Some(&next.to_string())).await;
    s.next(Duration::from_secs(5)).await.unwrap(); // retry
    let quiet = s.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(
        quiet.comment.as_deref(),
        Some("heartbeat"),
        "nothing new: {quiet:?}"
    );
    drop(s);
    let mut s = Stream::ok(&bob, &format!("?since={rev}"), None).await;
    let e = s.next_event(Duration::from_secs(5)).await.unwrap();
    assert_eq!(e.id, Some(next.to_string()));

    // A burst is coalesced for a reader that is not reading: it gets the newest, not a backlog.
    for i in 0..5 {
        push_new(&alice, &[format!("burst{i}.md")]).await;
    }
    let newest = alice.pull(P, 0).await.body["revision"].as_i64().unwrap();
    let mut ids = Vec::new();
    while let Some(e) = s.next_event(Duration::from_millis(800)).await {
        ids.push(e.id.unwrap().parse::<i64>().unwrap());
        if *ids.last().unwrap() == newest {
            break;
        }
    }
    assert_eq!(ids.last(), Some(&newest), "{ids:?}");
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
}

#[tokio::test]
async fn reviewers_hear_of_proposals_and_members_do_not() {
    let db = TestDb::new().await;
    let server = Server::start_with(Some(db.url.clone()), None, &["--events-heartbeat", "200ms"]);
    let ann = server.client(&forge_token("ann", &[("acme", "admin")], false));
    let bob = server.client(&forge_token("bob", &[("acme", "member")], false));
    push_new(&ann, &["a.md".to_owned()]).await;
    let r = ann
        .send(
            ann.http
                .put(format!("{}/v1/admin/projects/{P}/settings", server.url))
                .bearer_auth(&ann.token)
                .json(&json!({ "review": "required", "review_after_days": null })),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);

    let mut admin = Stream::ok(&ann, "", None).await;
    let mut member = Stream::ok(&bob, "", None).await;
    admin.next_event(Duration::from_secs(5)).await.unwrap(); // the current revision
    member.next_event(Duration::from_secs(5)).await.unwrap();
    let r = bob
        .push(
            P,
            &batch(vec![put("proposed.md", &note("p", "please review"), None)]),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let id = r.body["proposed"][0]["id"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| r.body["proposed"][0]["id"].to_string());
    let e = admin.next_event(Duration::from_secs(5)).await.unwrap();
    assert_eq!(e.event.as_deref(), Some("review"), "{e:?}");
    assert!(e.id.is_none(), "review events leave Last-Event-ID alone");
    assert_eq!(e.json()["project"], P);
    assert_eq!(e.json()["proposal"].as_str().unwrap(), id.trim_matches('"'));
    assert_eq!(e.json()["status"], "pending");
    assert!(
        member.next_event(Duration::from_secs(1)).await.is_none(),
        "a member's stream carries no review events"
    );
}

#[tokio::test]
async fn streams_are_capped_per_token_and_end_on_revocation_and_shutdown() {
    let db = TestDb::new().await;
    let mut server = Server::start_with(
        Some(db.url.clone()),
        None,
        &[
            "--max-streams-per-token",
            "2",
            "--events-heartbeat",
            "200ms",
        ],
    );
    let out = server.cli(&["token", "issue", "--user", "root", "--admin"]);
    let root = server.client(String::from_utf8_lossy(&out.stdout).trim());
    let carol_token = server.token("carol", &["acme"]);
    let carol = server.client(&carol_token);
    push_new(&carol, &["a.md".to_owned()]).await;

    let one = Stream::ok(&carol, "", None).await;
    let mut two = Stream::ok(&carol, "", None).await;
    assert_eq!(
        two.next_event(Duration::from_secs(5))
            .await
            .unwrap()
            .event
            .as_deref(),
        Some("revision")
    );
    let over = Stream::open(&carol, "", None).await.err().unwrap();
    assert_eq!(
        (over.status, over.code()),
        (429, "too_many_streams"),
        "{}",
        over.text
    );
    assert!(over.headers.contains_key("retry-after"));
    assert!(
        over.text.contains("--max-streams-per-token"),
        "{}",
        over.text
    );
    let poll = carol
        .fetch(&format!("/v1/projects/{P}/changes?since=1&wait=5"))
        .await;
    assert_eq!(
        (poll.status, poll.code()),
        (429, "too_many_streams"),
        "long-polls count too"
    );
    // Another token is not affected.
    let mut other = Stream::ok(&root, "", None).await;
    assert_eq!(
        other
            .next_event(Duration::from_secs(5))
            .await
            .unwrap()
            .event
            .as_deref(),
        Some("revision")
    );
    // A closed stream frees its place (the server notices at its next write).
    drop(one);
    let deadline = Instant::now() + Duration::from_secs(10);
    let three = loop {
        match Stream::open(&carol, "", None).await {
            Ok(s) => break s,
            Err(r) if r.status == 429 && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await
            }
            Err(r) => panic!("the place was never freed: {}", r.text),
        }
    };
    drop(three);

    // Revoked: the stream says so and ends.
    let jti = token_jti(&carol_token);
    let r = root
        .send(
            root.http
                .delete(format!("{}/v1/admin/tokens/{jti}", server.url))
                .bearer_auth(&root.token),
        )
        .await;
    assert_eq!(r.status, 204, "{}", r.text);
    let revoked = Instant::now();
    let end = two.next_event(Duration::from_secs(5)).await.unwrap();
    assert_eq!(end.event.as_deref(), Some("end"), "{end:?}");
    assert_eq!(end.json()["reason"], "revoked");
    assert!(
        revoked.elapsed() < Duration::from_secs(2),
        "{:?}",
        revoked.elapsed()
    );
    assert!(
        two.next(Duration::from_secs(5)).await.is_none(),
        "the stream closes"
    );

    // Shutdown: streams end with `shutdown` and do not hold the server up.
    let stopping = Instant::now();
    let stopper = std::thread::spawn(move || {
        let status = server.stop();
        (status, stopping.elapsed())
    });
    let end = other.next_event(Duration::from_secs(10)).await.unwrap();
    assert_eq!(end.event.as_deref(), Some("end"), "{end:?}");
    assert_eq!(end.json()["reason"], "shutdown");
    let (status, took) = stopper.join().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(
        took < Duration::from_secs(10),
        "shutdown took {took:?} with a stream open"
    );
}

// ---------------------------------------------------------------------------------------------
// Compression

#[tokio::test]
async fn pulls_are_compressed_as_the_client_accepts() {
    let (server, _db) = Server::start().await;
    let token = forge_token("alice", &[("acme", "member")], false);
    let alice = server.client(&token);
    push_new(
        &alice,
        &(0..20).map(|i| format!("n{i}.md")).collect::<Vec<_>>(),
    )
    .await;
    let raw = reqwest::Client::builder()
        .no_proxy()
        .no_gzip()
        .no_zstd()
        .build()
        .unwrap();
    let get = |accept: Option<&'static str>, path: String| {
        let mut req = raw.get(format!("{}{path}", server.url)).bearer_auth(&token);
        if let Some(a) = accept {
            req = req.header("accept-encoding", a);
        }
        req.send()
    };
    let plain = get(None, format!("/v1/projects/{P}/changes?since=0"))
        .await
        .unwrap();
    assert!(plain.headers().get("content-encoding").is_none());
    let plain_len = plain.bytes().await.unwrap().len();
    assert!(plain_len > 1024, "{plain_len}");
    for (accept, want) in [
        ("gzip", "gzip"),
        ("zstd", "zstd"),
        ("gzip, zstd", "zstd"),
        ("gzip, deflate, br", "gzip"),
    ] {
        let r = get(Some(accept), format!("/v1/projects/{P}/changes?since=0"))
            .await
            .unwrap();
        assert_eq!(
            r.headers()["content-encoding"],
            want,
            "Accept-Encoding: {accept}"
        );
        let len = r.bytes().await.unwrap().len();
        assert!(len < plain_len / 2, "{accept}: {len} of {plain_len} bytes");
    }
    // What the decoding client reads is the same document.
    let decoded = alice.pull(P, 0).await;
    assert_eq!(decoded.body["changes"].as_array().unwrap().len(), 21);
    // Small answers are left alone.
    let small = get(Some("zstd"), "/v1/me".into()).await.unwrap();
    assert!(small.headers().get("content-encoding").is_none());
}
