//! The client retries only what is safe to repeat. A proxy on loopback between the real `memsync`
//! and the real server forwards the first matching request, lets the server apply it and answer,
//! and then loses the answer (it withholds it until the client times out, or cuts the
//! connection). A write with an `Idempotency-Key` (token issue, purge, push) is sent again with
//! the same key and done exactly once; a write without one (allowlist add, token revoke) is sent
//! once, and the client says it may or may not have been applied.

use std::sync::{Arc, Mutex};

use memsync_e2e::*;
use serde_json::Value;

const ORIGIN: &str = "git@github.com:acme/api.git";

/// The client's time limit per attempt in these tests: short, since the first attempt of each
/// faulted request waits it out.
const TIMEOUT: &str = "3s";

/// How the proxy loses the answer to the first matching request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// Keeps the connection open without a word until the client gives up (its timeout).
    Withhold,
    /// Closes the connection without an answer.
    Cut,
}

/// One request that went through the proxy.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    key: Option<String>,
    /// The server's status for it.
    status: u16,
    /// The server's answer carried `idempotent-replayed: true`.
    replayed: bool,
    /// Its answer was lost on purpose.
    faulted: bool,
}

struct Proxy {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Proxy {
    /// The requests seen with this method on this path.
    fn matching(&self, method: &str, path: &str) -> Vec<Seen> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.method == method && s.path == path)
            .cloned()
            .collect()
    }
}

/// A proxy in front of `upstream`, on its own thread and runtime (the test blocks on the
/// `memsync` process meanwhile). The first request with `method` on `path` gets `fault` after
/// the server has answered it; every other request passes through. One request per connection.
fn faulty_proxy(upstream: &str, method: &str, path: &str, fault: Fault) -> Proxy {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let (log, upstream) = (seen.clone(), upstream.trim_end_matches('/').to_owned());
    let (method, path) = (method.to_owned(), path.to_owned());
    let _ = rustls::crypto::ring::default_provider().install_default();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let http = reqwest::Client::builder().no_proxy().build().unwrap();
            let armed = Arc::new(std::sync::atomic::AtomicBool::new(true));
            loop {
                let Ok((sock, _)) = listener.accept().await else {
                    return;
                };
                let ctx = (
                    http.clone(),
                    upstream.clone(),
                    log.clone(),
                    armed.clone(),
                    method.clone(),
                    path.clone(),
                );
                tokio::spawn(async move {
                    let (http, upstream, log, armed, method, path) = ctx;
                    let _ =
                        relay(sock, &http, &upstream, &log, &armed, &method, &path, fault).await;
                });
            }
        });
    });
    Proxy { url, seen }
}

#[allow(clippy::too_many_arguments)]
async fn relay(
    mut sock: tokio::net::TcpStream,
    http: &reqwest::Client,
    upstream: &str,
    log: &Mutex<Vec<Seen>>,
    armed: &std::sync::atomic::AtomicBool,
    fault_method: &str,
    fault_path: &str,
    fault: Fault,
) -> anyhow::Result<()> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let ProxiedRequest {
        method,
        target,
        headers,
        body,
    } = read_proxied_request(&mut sock).await?;
    let method = method.as_str().to_owned();
    let path = target.split('?').next().unwrap_or_default().to_owned();
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let faulted = method == fault_method
        && path == fault_path
        && armed.swap(false, std::sync::atomic::Ordering::SeqCst);
    // The server gets the request and answers it, faulted or not: what is lost is the answer.
    let resp = http
        .request(
            reqwest::Method::from_bytes(method.as_bytes())?,
            format!("{upstream}{target}"),
        )
        .headers(headers)
        .body(body)
        .send()
        .await?;
    let status = resp.status();
    let resp_headers = resp.headers().clone();
    let bytes = resp.bytes().await?;
    log.lock().unwrap().push(Seen {
        method,
        path,
        key,
        status: status.as_u16(),
        replayed: resp_headers
            .get("idempotent-replayed")
            .is_some_and(|v| v == "true"),
        faulted,
    });
    if faulted {
        match fault {
            Fault::Withhold => {
                // Until the client hangs up.
                let mut rest = [0u8; 256];
                while matches!(sock.read(&mut rest).await, Ok(n) if n > 0) {}
            }
            Fault::Cut => drop(sock),
        }
        return Ok(());
    }
    let mut out = format!(
        "HTTP/1.1 {} {}\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or("")
    );
    for (k, v) in &resp_headers {
        if matches!(
            k.as_str(),
            "content-length" | "transfer-encoding" | "connection"
        ) {
            continue;
        }
        out.push_str(&format!("{k}: {}\r\n", v.to_str().unwrap_or_default()));
    }
    out.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n",
        bytes.len()
    ));
    sock.write_all(out.as_bytes()).await?;
    sock.write_all(&bytes).await?;
    sock.shutdown().await?;
    Ok(())
}

/// `memsync --timeout 3s <args>` through `proxy` with `token`.
fn through(u: &User, proxy: &Proxy, token: &str, args: &[&str]) -> Run {
    let mut all = vec!["--timeout", TIMEOUT];
    all.extend_from_slice(args);
    u.run_with(
        &all,
        &[
            ("MEMSYNC_SERVER", proxy.url.as_str()),
            ("MEMSYNC_TOKEN", token),
        ],
    )
}

/// The faulted request and its retry: two, with one key, the retry answered from the server's
/// record of the first.
fn assert_retried_once_with_one_key(seen: &[Seen]) {
    assert_eq!(seen.len(), 2, "{seen:#?}");
    assert!(seen[0].faulted && !seen[1].faulted, "{seen:#?}");
    let key = seen[0].key.as_deref().expect("an Idempotency-Key");
    assert!(!key.is_empty());
    assert_eq!(
        seen[1].key.as_deref(),
        Some(key),
        "the retry reuses the key"
    );
    assert!(!seen[0].replayed, "{seen:#?}");
    assert!(
        seen[1].replayed,
        "the retry gets the stored answer: {seen:#?}"
    );
    assert_eq!(seen[0].status, seen[1].status);
}

#[tokio::test]
async fn a_token_issue_whose_answer_is_lost_issues_exactly_one_token() {
    let (server, db) = Server::start().await;
    let root_token = server.token_with("root", &["--admin"]);
    let root = User::with_token(&server, "root", &root_token, ORIGIN);
    let before = count(&db, "SELECT count(*) FROM tokens").await;
    let proxy = faulty_proxy(&server.url, "POST", "/v1/admin/tokens", Fault::Withhold);

    let r = through(
        &root,
        &proxy,
        &root_token,
        &[
            "admin", "tokens", "issue", "--user", "zed", "--team", "acme", "--ttl", "30d",
        ],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_retried_once_with_one_key(&proxy.matching("POST", "/v1/admin/tokens"));
    assert!(
        r.stderr.contains("applied by an earlier attempt"),
        "{}",
        r.stderr
    );

    // One token on the server, and it is the one printed, once.
    assert_eq!(count(&db, "SELECT count(*) FROM tokens").await, before + 1);
    assert_eq!(
        count(&db, "SELECT count(*) FROM tokens WHERE sub = 'zed'").await,
        1
    );
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{}", r.stdout);
    let token = lines[0];
    let jti = token_jti(token);
    assert_eq!(
        count(
            &db,
            &format!("SELECT count(*) FROM tokens WHERE sub = 'zed' AND jti = '{jti}'")
        )
        .await,
        1
    );
    let listed = server.client(&root_token).fetch("/v1/admin/tokens").await;
    let zeds: Vec<&Value> = listed.body["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["sub"] == "zed")
        .collect();
    assert_eq!(zeds.len(), 1, "{}", listed.text);
    let me = server.client(token).fetch("/v1/me").await;
    assert_eq!(me.status, 200, "{}", me.text);
    assert_eq!(me.body["sub"], "zed");
}

#[tokio::test]
async fn a_purge_whose_answer_is_lost_is_reported_done_and_happens_once() {
    let (server, db) = Server::start().await;
    let alice = User::new(&server, "alice", &["acme"], ORIGIN);
    alice.write(
        "leak.md",
        &memory(
            "leak",
            "a leak",
            "project",
            "The staging password is hunter2-violet-17.\n",
        ),
    );
    let r = alice.run(&["push"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let ann_token = server.token("ann", &["acme:admin"]);
    let ann = User::with_token(&server, "ann", &ann_token, ORIGIN);
    let purge = "/v1/admin/projects/acme/api/purge";
    let proxy = faulty_proxy(&server.url, "POST", purge, Fault::Cut);

    let r = through(
        &ann,
        &proxy,
        &ann_token,
        &[
            "admin", "purge", "leak.md", "--reason", "a leak", "--yes", "--json",
        ],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_retried_once_with_one_key(&proxy.matching("POST", purge));
    // Done, with what the server said of it.
    let done = r.json();
    assert_eq!(done["path"], "leak.md", "{done}");
    assert_eq!(done["project"], "acme/api", "{done}");
    assert!(done["versions_purged"].as_i64().unwrap() >= 1, "{done}");
    assert!(
        r.stderr
            .contains("the purge was applied by an earlier attempt"),
        "{}",
        r.stderr
    );

    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM audit_log WHERE action = 'purge' AND path = 'leak.md'"
        )
        .await,
        1
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM memory_versions WHERE path = 'leak.md' AND (content IS NOT NULL OR NOT purged)"
        )
        .await,
        0
    );
    assert_no_row_contains(&db, "hunter2-violet-17").await;
}

#[tokio::test]
async fn a_push_whose_answer_is_lost_is_applied_once_and_reads_are_retried() {
    let (server, db) = Server::start().await;
    let token = server.token("alice", &["acme"]);
    let alice = User::with_token(&server, "alice", &token, ORIGIN);
    alice.write("a.md", &memory("a", "about a", "project", "One.\n"));
    let push = "/v1/projects/acme/api/push";
    let proxy = faulty_proxy(&server.url, "POST", push, Fault::Cut);
    let r = through(&alice, &proxy, &token, &["push", "--json"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_retried_once_with_one_key(&proxy.matching("POST", push));
    assert_eq!(r.json()["push"]["pushed"][0], "a.md", "{}", r.stdout);
    assert_eq!(count(&db, "SELECT count(*) FROM revisions").await, 1);
    let r = alice.run(&["status", "--json"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);

    // A pull is a GET: retried after its answer is withheld, and it brings bob the file.
    let bob_token = server.token("bob", &["acme"]);
    let bob = User::with_token(&server, "bob", &bob_token, ORIGIN);
    let changes = "/v1/projects/acme/api/changes";
    let proxy = faulty_proxy(&server.url, "GET", changes, Fault::Withhold);
    let r = through(&bob, &proxy, &bob_token, &["pull"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let pulls = proxy.matching("GET", changes);
    assert!(pulls.len() >= 2 && pulls[0].faulted, "{pulls:#?}");
    assert_eq!(bob.read("a.md").as_deref(), alice.read("a.md").as_deref());
}

#[tokio::test]
async fn a_write_without_a_key_is_sent_once_and_said_to_be_uncertain() {
    let (server, db) = Server::start().await;
    let ann_token = server.token("ann", &["acme:admin"]);
    let ann = User::with_token(&server, "ann", &ann_token, ORIGIN);
    // A member's first push creates the project.
    ann.write("a.md", &memory("a", "about a", "project", "One.\n"));
    let r = ann.run(&["push"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let allowlist = "/v1/projects/acme/api/allowlist";
    let proxy = faulty_proxy(&server.url, "POST", allowlist, Fault::Withhold);
    let fingerprint = memsync_core::Sha256::of(b"a test value").to_hex();
    let r = through(
        &ann,
        &proxy,
        &ann_token,
        &[
            "allowlist",
            "add",
            &fingerprint,
            "--rule",
            "generic_secret",
            "--reason",
            "a test value",
        ],
    );
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    let seen = proxy.matching("POST", allowlist);
    assert_eq!(seen.len(), 1, "sent again: {seen:#?}");
    assert!(seen[0].faulted && seen[0].key.is_none(), "{seen:#?}");
    for said in [
        "may or may not have been applied",
        "only once",
        "`memsync allowlist list`",
    ] {
        assert!(r.stderr.contains(said), "{said}: {}", r.stderr);
    }
    // It was applied (the server answered 201): the reason it must not be sent twice.
    assert_eq!(seen[0].status, 201);
    assert_eq!(count(&db, "SELECT count(*) FROM scan_allowlist").await, 1);

    // A DELETE without a key: the same.
    let root_token = server.token_with("root", &["--admin"]);
    let jti = token_jti(&server.token("temp", &["acme"]));
    let revoke = format!("/v1/admin/tokens/{jti}");
    let proxy = faulty_proxy(&server.url, "DELETE", &revoke, Fault::Cut);
    let r = through(
        &ann,
        &proxy,
        &root_token,
        &["admin", "tokens", "revoke", &jti],
    );
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    let seen = proxy.matching("DELETE", &revoke);
    assert_eq!(seen.len(), 1, "sent again: {seen:#?}");
    assert!(
        r.stderr.contains("may or may not have been applied"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("`memsync admin tokens list`"),
        "{}",
        r.stderr
    );
    assert_eq!(seen[0].status, 204);
    assert_eq!(
        count(
            &db,
            &format!("SELECT count(*) FROM tokens WHERE jti = '{jti}' AND revoked_at IS NOT NULL")
        )
        .await,
        1
    );
}
