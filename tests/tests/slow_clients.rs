//! Clients that open connections and never finish a request, too many connections at once, and
//! request heads over the limits: the server closes the idle ones after the header-read timeout,
//! keeps serving everyone else, holds its connection cap (measured in file descriptors), and
//! answers oversized heads in the JSON error shape.
//!
//! No assertion is on a duration: the figures are printed, and the bounds are ten times what
//! they need to be.

use std::time::{Duration, Instant};

use memsync_e2e::*;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// `host:port` of a server URL.
fn addr(server: &Server) -> String {
    server
        .url
        .strip_prefix("http://")
        .expect("http URL")
        .to_owned()
}

/// Ways of never finishing a request: say nothing, half a request line, a request line and
/// half the headers.
const STALLS: [&[u8]; 3] = [
    b"",
    b"GET /hea",
    b"GET /healthz HTTP/1.1\r\nHost: memsync\r\nX-Slow: 1",
];

async fn stall(addr: &str, i: usize) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    let part = STALLS[i % STALLS.len()];
    if !part.is_empty() {
        s.write_all(part).await.expect("send a partial request");
    }
    s
}

/// Waits until `pid` has at least (`at_least`) or at most (`!at_least`) `n` open descriptors;
/// returns the last count seen.
async fn wait_fds(pid: u32, n: usize, at_least: bool, limit: Duration) -> usize {
    let deadline = Instant::now() + limit;
    loop {
        let fds = open_fds(pid);
        if (at_least && fds >= n) || (!at_least && fds <= n) || Instant::now() > deadline {
            return fds;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The highest descriptor count of a process while it is sampled (every 10 ms).
struct FdPeak {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    task: tokio::task::JoinHandle<usize>,
}

impl FdPeak {
    fn sample(pid: u32) -> FdPeak {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let task = tokio::spawn(async move {
            let mut peak = 0;
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(open_fds(pid));
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            peak.max(open_fds(pid))
        });
        FdPeak { stop, task }
    }

    async fn stop(self) -> usize {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.task.await.expect("sampler")
    }
}

/// Resident memory of `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Reads until the server closes; returns the bytes it sent (a reset counts as a close).
async fn read_to_close(s: &mut TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match s.read(&mut buf).await {
            Ok(0) | Err(_) => return out,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
}

/// A raw HTTP/1.1 answer.
struct Raw {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Raw {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

fn parse(bytes: &[u8]) -> Raw {
    let text = String::from_utf8_lossy(bytes);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    Raw {
        status,
        headers,
        body: body.to_owned(),
    }
}

/// Sends `request` on a fresh connection and reads the answer until the server closes (the
/// request says `Connection: close`, or the server closes on its own).
async fn raw(addr: &str, request: &[u8]) -> Raw {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    // The server may answer and close before it read everything; that is what is tested.
    let _ = s.write_all(request).await;
    parse(&read_to_close(&mut s).await)
}

fn assert_error_shape(r: &Raw, status: u16, code: &str) {
    assert_eq!(r.status, status, "{}", r.body);
    assert!(
        r.header("content-type")
            .is_some_and(|t| t.starts_with("application/json")),
        "content-type: {:?}",
        r.header("content-type")
    );
    let body = r.json();
    assert_eq!(body["error"]["code"], code, "{}", r.body);
    assert!(body["error"]["message"].is_string(), "{}", r.body);
    assert!(body["error"]["details"].is_object(), "{}", r.body);
}

#[tokio::test]
async fn idle_half_open_connections_are_closed_after_the_header_timeout() {
    const IDLE: usize = 600;
    const TIMEOUT: Duration = Duration::from_secs(5);
    let db = TestDb::new().await;
    let server = Server::start_with(Some(db.url.clone()), None, &["--header-read-timeout", "5s"]);
    let addr = addr(&server);
    let pid = server.pid();
    let alice = server.client(&forge_token("alice", &[("acme", "member")], false));
    // Warm the database pool so that its connections are part of the baseline.
    assert_eq!(alice.send(alice.get("/readyz")).await.status, 200);
    assert_eq!(
        alice.send(alice.get("/v1/projects/acme/api")).await.status,
        404
    );
    let before = open_fds(pid);
    let rss_before = rss_kib(pid);

    // Each idle connection measures how long the server keeps it, from its own opening.
    let peak = FdPeak::sample(pid);
    let opening = Instant::now();
    let idle: Vec<_> = (0..IDLE)
        .map(|i| {
            let addr = addr.clone();
            tokio::spawn(async move {
                let mut s = stall(&addr, i).await;
                let opened = Instant::now();
                let got = tokio::time::timeout(Duration::from_secs(60), read_to_close(&mut s))
                    .await
                    .expect("the server closes an idle connection within 60 s");
                (opened.elapsed(), got.len())
            })
        })
        .collect();
    let during = wait_fds(pid, before + IDLE, true, Duration::from_secs(3)).await;
    let open_took = opening.elapsed();
    let rss_during = rss_kib(pid);

    // Normal requests are answered while the idle connections are held.
    let mut slowest = Duration::ZERO;
    for _ in 0..20 {
        let t = Instant::now();
        assert_eq!(alice.send(alice.get("/v1/me")).await.status, 200);
        assert_eq!(alice.send(alice.get("/healthz")).await.status, 200);
        slowest = slowest.max(t.elapsed());
    }

    // Every idle connection is closed by the server, without an answer.
    let mut kept = Vec::with_capacity(IDLE);
    let mut answered = 0;
    for conn in idle {
        let (held_for, bytes) = conn.await.expect("join");
        kept.push(held_for);
        answered += usize::from(bytes > 0);
    }
    kept.sort();
    let after = wait_fds(pid, before + 5, false, Duration::from_secs(10)).await;
    let peak = peak.stop().await;
    println!(
        "{IDLE} idle connections (silent, half a request line, half the headers), all open after \
         {open_took:.2?}; server fds: {before} before, {during} during (peak {peak}), {after} after; \
         each closed {:.2?} (first) / {:.2?} (median) / {:.2?} (last) after it opened, header \
         timeout {TIMEOUT:?}; {answered} got bytes before the close; slowest normal request \
         meanwhile {slowest:.2?}; server RSS {rss_before} KiB before, {rss_during} KiB during, \
         {} KiB after",
        kept[0],
        kept[IDLE / 2],
        kept[IDLE - 1],
        rss_kib(pid),
    );
    assert!(
        peak >= before + IDLE / 2,
        "the idle connections were not held at all ({before} -> peak {peak} fds)"
    );
    assert_eq!(answered, 0, "an idle connection got an answer");
    assert!(
        kept[0] >= TIMEOUT - Duration::from_secs(2),
        "an idle connection was closed long before the timeout: {:?}",
        kept[0]
    );
    assert!(
        after <= before + 5,
        "file descriptors leaked: {before} before, {after} after"
    );
    assert_eq!(alice.send(alice.get("/v1/me")).await.status, 200);
}

#[tokio::test]
async fn the_connection_cap_holds_and_over_cap_connections_get_503_json() {
    const CAP: usize = 40;
    const OVER: usize = 100;
    /// Over-cap connections the server answers at once (`MAX_REJECTING` in http/serve.rs).
    const MAX_REJECTING: usize = 256;
    let db = TestDb::new().await;
    let server = Server::start_with(
        Some(db.url.clone()),
        None,
        &["--max-connections", "40", "--header-read-timeout", "8s"],
    );
    let addr = addr(&server);
    let pid = server.pid();
    let alice = server.client(&forge_token("alice", &[("acme", "member")], false));
    assert_eq!(alice.send(alice.get("/readyz")).await.status, 200);
    // The client's pooled connection would hold a slot: start from none.
    drop(alice);
    let before = wait_fds(pid, 0, false, Duration::from_millis(500)).await;

    let mut held = Vec::with_capacity(CAP);
    for i in 0..CAP {
        held.push(stall(&addr, i + 1).await);
    }
    let at_cap = wait_fds(pid, before + CAP, true, Duration::from_secs(5)).await;

    // Over the cap: every connection gets the 503 at once, in the JSON error shape.
    let peak = FdPeak::sample(pid);
    let started = Instant::now();
    let answers: Vec<_> = (0..OVER)
        .map(|_| {
            let addr = addr.clone();
            tokio::spawn(async move {
                let t = Instant::now();
                let r = raw(&addr, b"GET /healthz HTTP/1.1\r\nHost: memsync\r\n\r\n").await;
                (r, t.elapsed())
            })
        })
        .collect();
    let mut slowest = Duration::ZERO;
    for a in answers {
        let (r, took) = a.await.expect("join");
        assert_error_shape(&r, 503, "unavailable");
        assert_eq!(r.header("retry-after"), Some("2"));
        assert_eq!(r.header("connection"), Some("close"));
        assert!(r.header("x-request-id").is_some());
        slowest = slowest.max(took);
    }
    let rejecting_took = started.elapsed();
    // The rejected connections close as soon as the server sees the clients close them.
    let settled = wait_fds(pid, before + CAP, false, Duration::from_secs(10)).await;
    let peak = peak.stop().await;

    let mut closed = 0;
    for mut s in held {
        let got = tokio::time::timeout(Duration::from_secs(60), read_to_close(&mut s))
            .await
            .expect("the server closes a held idle connection within 60 s");
        assert!(got.is_empty(), "a held idle connection got an answer");
        closed += 1;
    }
    let after = wait_fds(pid, before, false, Duration::from_secs(10)).await;
    println!(
        "cap {CAP}: server fds {before} before, {at_cap} with {CAP} idle connections, peak {peak} \
         while {OVER} over-cap connections were answered 503 (slowest answer {slowest:.2?}, all \
         in {rejecting_took:.2?}), {settled} once they closed, {after} after the {closed} idle \
         ones timed out"
    );
    assert!(
        at_cap >= before + CAP,
        "the idle connections were not held ({before} -> {at_cap} fds)"
    );
    assert!(
        peak <= before + CAP + MAX_REJECTING + 2,
        "more connections open than the cap and the rejections in flight: {before} -> peak {peak}"
    );
    assert!(
        settled <= before + CAP + 2,
        "more connections than the cap stay open: {before} -> {settled} fds (cap {CAP})"
    );
    assert!(
        after <= before + 2,
        "file descriptors leaked: {before} before, {after} after"
    );
    let alice = server.client(&forge_token("alice", &[("acme", "member")], false));
    assert_eq!(alice.send(alice.get("/v1/me")).await.status, 200);
}

#[tokio::test]
async fn oversized_urls_and_headers_are_answered_in_the_json_error_shape() {
    let (server, _db) = Server::start().await;
    let addr = addr(&server);
    let get = |target: &str, headers: &str| {
        format!("GET {target} HTTP/1.1\r\nHost: memsync\r\nConnection: close\r\n{headers}\r\n")
            .into_bytes()
    };

    // Up to the documented limits, an ordinary answer.
    let long_ok = format!("/healthz?pad={}", "a".repeat(8_000));
    assert_eq!(raw(&addr, &get(&long_ok, "")).await.status, 200);
    let many_ok: String = (0..95).map(|i| format!("X-H{i}: v\r\n")).collect();
    assert_eq!(raw(&addr, &get("/healthz", &many_ok)).await.status, 200);
    let big_ok = format!("X-Big: {}\r\n", "a".repeat(30_000));
    assert_eq!(raw(&addr, &get("/healthz", &big_ok)).await.status, 200);

    // Over them: JSON, with a request id.
    let too_long = format!("/healthz?pad={}", "a".repeat(9_000));
    let r = raw(&addr, &get(&too_long, "")).await;
    assert_error_shape(&r, 414, "uri_too_long");
    assert!(r.header("x-request-id").is_some());
    let r = raw(
        &addr,
        &get(
            &format!("/v1/projects/acme/api/changes?since={}", "1".repeat(9_000)),
            "",
        ),
    )
    .await;
    assert_error_shape(&r, 414, "uri_too_long");

    let too_many: String = (0..150).map(|i| format!("X-H{i}: v\r\n")).collect();
    let r = raw(&addr, &get("/healthz", &too_many)).await;
    assert_error_shape(&r, 431, "headers_too_large");
    assert!(r.header("x-request-id").is_some());
    let too_big = format!("X-Big: {}\r\n", "a".repeat(40_000));
    let r = raw(&addr, &get("/v1/me", &too_big)).await;
    assert_error_shape(&r, 431, "headers_too_large");

    // Past what the server parses at all: hyper's bare answer, then the connection is closed
    // (documented as the one exception to the JSON shape).
    // (The 256 KiB backstop is not sent here: the server closes with the rest of such a head
    // unread, which resets the connection and may destroy the answer before it is read.)
    let hundreds: String = (0..300).map(|i| format!("X-H{i}: v\r\n")).collect();
    let r = raw(&addr, &get("/healthz", &hundreds)).await;
    assert_eq!((r.status, r.body.as_str()), (431, ""));
    let r = raw(
        &addr,
        &get(&format!("/healthz?pad={}", "a".repeat(70_000)), ""),
    )
    .await;
    assert_eq!((r.status, r.body.as_str()), (414, ""));
    println!(
        "JSON 414 at 9,000 bytes of URL, JSON 431 at 150 fields and at 40,000 bytes of headers; \
         bare 431 at 300 fields and bare 414 at 70,000 bytes of URL"
    );

    // The server is unharmed.
    let alice = server.client(&forge_token("alice", &[("acme", "member")], false));
    assert_eq!(alice.send(alice.get("/v1/me")).await.status, 200);
}

#[tokio::test]
async fn graceful_shutdown_finishes_a_request_in_flight_and_closes_idle_connections() {
    let db = TestDb::new().await;
    let mut server =
        Server::start_with(Some(db.url.clone()), None, &["--header-read-timeout", "3s"]);
    let addr = addr(&server);
    let token = forge_token("alice", &[("acme", "member")], false);
    let mut idle = Vec::new();
    for i in 0..30 {
        idle.push(stall(&addr, i).await);
    }

    // A push whose body is half sent when the server is told to stop.
    let body = serde_json::to_vec(&batch(vec![put(
        "db.md",
        &memory("db", "the database", "project", "Use PostgreSQL.\n"),
        None,
    )]))
    .expect("json");
    let (first, rest) = body.split_at(body.len() / 2);
    let mut push = TcpStream::connect(&addr).await.expect("connect");
    let head = format!(
        "POST /v1/projects/acme/api/push HTTP/1.1\r\nHost: memsync\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    push.write_all(head.as_bytes()).await.expect("head");
    push.write_all(first).await.expect("half the body");
    tokio::time::sleep(Duration::from_millis(300)).await;

    let stopping = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server.pid() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("SIGTERM");
    // The listener closes at once...
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(&addr).await.is_ok() {
        assert!(
            Instant::now() < deadline,
            "still accepting 10 s after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let refused_after = stopping.elapsed();
    // ...and the request in flight still gets its answer.
    push.write_all(rest).await.expect("the rest of the body");
    let r = parse(&read_to_close(&mut push).await);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["revision"], 1, "{}", r.body);
    assert_eq!(r.header("connection"), Some("close"));

    let status = tokio::task::spawn_blocking(move || server.stop())
        .await
        .expect("join");
    let exited_after = stopping.elapsed();
    let mut closed = 0;
    for mut s in idle {
        let _ = tokio::time::timeout(Duration::from_secs(5), read_to_close(&mut s))
            .await
            .expect("an idle connection outlived the server");
        closed += 1;
    }
    println!(
        "SIGTERM: new connections refused after {refused_after:.2?}, the half-sent push answered 200, \
         {status} after {exited_after:.2?} ({closed} idle connections closed, header timeout 3 s)"
    );
    assert!(status.success(), "exit status {status}");
}
