//! Paged pulls, compression and the push's requests, with the real `memsync` and the real server.
//! A recording relay on loopback sits between them where a test needs to see the wire: the
//! requests the client sends, the `Content-Encoding` of what the server answers, and (when asked)
//! a delay on every answer, so a pull can be killed between two pages.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use memsync_e2e::*;
use serde_json::Value;

const ORIGIN: &str = "git@github.com:acme/api.git";
const PROJECT: &str = "acme/api";

/// Directories of seeded memories, one push (one revision) each.
const DIRS: usize = 12;
/// Memories per directory (each directory also gets its `MEMORY.md`).
const PER_DIR: usize = 100;

fn body(i: usize) -> String {
    format!("line one of {i}\n\nline two of {i}\n\nline three of {i}\n")
}

fn mem_path(dir: usize, i: usize) -> String {
    format!("d{dir:02}/m{i:03}.md")
}

fn mem_content(dir: usize, i: usize, text: &str) -> String {
    memory(
        &format!("m{dir:02}-{i:03}"),
        &format!("seeded memory {i} of directory {dir}"),
        "project",
        text,
    )
}

/// Pushes directories `dirs` (100 memories each, one revision per directory) through the API.
async fn seed(c: &Client, dirs: std::ops::Range<usize>) {
    for d in dirs {
        let changes = (0..PER_DIR)
            .map(|i| put(&mem_path(d, i), &mem_content(d, i, &body(i)), None))
            .collect();
        let r = c.push(PROJECT, &batch(changes)).await;
        assert_eq!(r.status, 200, "seed d{d:02}: {}", r.text);
    }
}

/// The project's state dir of a user (`~/.local/state/memsync/<project>-<hash>/`).
fn state_dir(u: &User) -> PathBuf {
    let root = u.home.path().join(".local/state/memsync");
    std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("state.json").is_file())
        .unwrap_or_else(|| panic!("no state under {}", root.display()))
}

fn recorded_revision(u: &User) -> i64 {
    let text = std::fs::read_to_string(state_dir(u).join("state.json")).unwrap_or_default();
    serde_json::from_str::<Value>(&text).map_or(0, |v| v["revision"].as_i64().unwrap_or(0))
}

/// Every file of a team dir, by path relative to it.
fn tree(root: &Path) -> std::collections::BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut std::collections::BTreeMap<String, String>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read_to_string(&p).unwrap());
            }
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// What went through a [`relay`].
#[derive(Debug, Default)]
struct Wire {
    opened: usize,
    closed: usize,
    /// `METHOD /path?query`, in order per connection.
    requests: Vec<String>,
    /// `Accept-Encoding` of each request.
    accepts: Vec<String>,
    /// `Content-Encoding` of each answer that had one.
    encodings: Vec<String>,
    /// Bytes the server sent, all connections together.
    down_bytes: usize,
}

impl Wire {
    /// What one connection carried: its requests' lines and `Accept-Encoding`s, its answers'
    /// `Content-Encoding`s.
    fn record(&mut self, up: &[u8], down: &[u8]) {
        use std::sync::LazyLock;
        static REQUEST: LazyLock<regex::Regex> = LazyLock::new(|| {
            regex::Regex::new(r"(?m)^(GET|POST|PUT|DELETE|HEAD|PATCH) (\S+) HTTP/1\.1\r$").unwrap()
        });
        static ACCEPT: LazyLock<regex::Regex> =
            LazyLock::new(|| regex::Regex::new(r"(?mi)^accept-encoding: *([^\r]*)\r$").unwrap());
        static ENCODING: LazyLock<regex::Regex> =
            LazyLock::new(|| regex::Regex::new(r"(?mi)^content-encoding: *([^\r]*)\r$").unwrap());
        let up = String::from_utf8_lossy(up);
        let down_text = String::from_utf8_lossy(down);
        self.requests.extend(
            REQUEST
                .captures_iter(&up)
                .map(|c| format!("{} {}", &c[1], &c[2])),
        );
        self.accepts
            .extend(ACCEPT.captures_iter(&up).map(|c| c[1].to_owned()));
        self.encodings
            .extend(ENCODING.captures_iter(&down_text).map(|c| c[1].to_owned()));
        self.down_bytes += down.len();
    }
}

/// A TCP relay to `upstream` on loopback that records what passes (read when a connection
/// closes) and holds every chunk of an answer `delay_ms` (changeable while it runs) before
/// passing it on.
async fn relay(upstream: &str, delay_ms: Arc<AtomicU64>) -> (String, Arc<Mutex<Wire>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let addr = upstream.trim_start_matches("http://").to_owned();
    let wire = Arc::new(Mutex::new(Wire::default()));
    let w = wire.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            w.lock().unwrap().opened += 1;
            let (addr, w, delay_ms) = (addr.clone(), w.clone(), delay_ms.clone());
            tokio::spawn(async move {
                let Ok(server) = tokio::net::TcpStream::connect(&addr).await else {
                    w.lock().unwrap().closed += 1;
                    return;
                };
                let (mut cr, mut cw) = client.into_split();
                let (mut sr, mut sw) = server.into_split();
                let up = async {
                    let mut seen = Vec::new();
                    let mut buf = vec![0u8; 65536];
                    loop {
                        let n = cr.read(&mut buf).await.unwrap_or(0);
                        if n == 0 || sw.write_all(&buf[..n]).await.is_err() {
                            let _ = sw.shutdown().await;
                            return seen;
                        }
                        seen.extend_from_slice(&buf[..n]);
                    }
                };
                let down = async {
                    let mut seen = Vec::new();
                    let mut buf = vec![0u8; 65536];
                    loop {
                        let n = sr.read(&mut buf).await.unwrap_or(0);
                        if n == 0 {
                            let _ = cw.shutdown().await;
                            return seen;
                        }
                        let delay = delay_ms.load(Ordering::Relaxed);
                        if delay > 0 {
                            tokio::time::sleep(Duration::from_millis(delay)).await;
                        }
                        if cw.write_all(&buf[..n]).await.is_err() {
                            return seen;
                        }
                        seen.extend_from_slice(&buf[..n]);
                    }
                };
                let (up, down) = tokio::join!(up, down);
                let mut w = w.lock().unwrap();
                w.record(&up, &down);
                w.closed += 1;
            });
        }
    });
    (url, wire)
}

/// Waits until every connection through the relay has closed (the client has exited), then
/// takes what was recorded.
async fn settled(wire: &Arc<Mutex<Wire>>) -> Wire {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        {
            let w = wire.lock().unwrap();
            if w.opened == w.closed || Instant::now() > until {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    std::mem::take(&mut *wire.lock().unwrap())
}

/// A user whose every command goes to `server_url` (a relay) with their token.
fn through(u: &User, token: &str, server_url: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut all = vec![("MEMSYNC_SERVER", server_url), ("MEMSYNC_TOKEN", token)];
    all.extend_from_slice(env);
    u.run_with(args, &all)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_pull_of_1200_memories_comes_in_pages_compressed() {
    let (server, _db) = Server::start().await;
    let alice_token = server.token("alice", &["acme"]);
    seed(&server.client(&alice_token), 0..DIRS).await;
    let (relay_url, wire) = relay(&server.url, Arc::default()).await;
    let bob = User::new(&server, "bob", &["acme"], ORIGIN);
    let bob_token = server.token("bob", &["acme"]);

    // The client's own page size (500 files): whole revisions of 101 files each, 4 per page.
    let started = Instant::now();
    let r = through(&bob, &bob_token, &relay_url, &["pull", "--json"], &[]);
    let took = started.elapsed();
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let pull = &r.json()["pull"];
    let files = DIRS * (PER_DIR + 1) + 1;
    assert_eq!(pull["updated"].as_array().unwrap().len(), files, "{pull}");
    assert_eq!(tree(&bob.team_dir()).len(), files);
    let pages = pull["pages"].as_u64().unwrap();
    let w = settled(&wire).await;
    let pulls: Vec<&String> = w
        .requests
        .iter()
        .filter(|r| r.contains("/changes?"))
        .collect();
    println!(
        "first pull of {files} files: {took:?}, {pages} pages, {} bytes on the wire, encodings {:?}",
        w.down_bytes, w.encodings
    );
    assert!(
        pages >= 3,
        "{pages} pages for {files} files at 500 per page"
    );
    assert_eq!(pulls.len() as u64, pages, "one request per page: {pulls:?}");
    assert!(pulls.iter().all(|r| r.contains("limit=500")), "{pulls:?}");
    // Each page asks from where the previous one ended.
    let sinces: Vec<i64> = pulls
        .iter()
        .map(|r| {
            let q = r.split_once('?').unwrap().1;
            q.split('&')
                .find_map(|kv| kv.strip_prefix("since="))
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert_eq!(sinces[0], 0);
    assert!(sinces.windows(2).all(|w| w[0] < w[1]), "{sinces:?}");
    // Compression: asked for, and the pages came compressed.
    assert!(
        w.accepts
            .iter()
            .all(|a| a.contains("gzip") && a.contains("zstd")),
        "{:?}",
        w.accepts
    );
    assert!(
        w.encodings.len() as u64 >= pages && w.encodings.iter().all(|e| e == "zstd" || e == "gzip"),
        "the pull's answers were not compressed: {:?}",
        w.encodings
    );

    // A tiny page: one revision per page (a revision is never cut), 12 pages + the root index's.
    let carol = User::new(&server, "carol", &["acme"], ORIGIN);
    let r = carol.run_with(&["pull", "--json"], &[("MEMSYNC_PULL_PAGE", "1")]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let pages = r.json()["pull"]["pages"].as_u64().unwrap();
    assert!(pages >= DIRS as u64, "{pages} pages");
    assert_eq!(tree(&carol.team_dir()), tree(&bob.team_dir()));
    // Nothing new: one 304, no page.
    let r = carol.run(&["pull", "--json"]);
    assert_eq!(r.json()["pull"]["not_modified"], true, "{}", r.stdout);
}

/// Edits the server's copy of `path` (as alice) from `old` to `new` text.
async fn server_edit(c: &Client, path: &str, old: &str, new: &str) {
    let base = memsync_core::Sha256::of(old.as_bytes()).to_hex();
    let r = c
        .push(PROJECT, &batch(vec![put(path, new, Some(&base))]))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_killed_between_pages_resumes_and_ends_as_a_one_page_pull() {
    let (server, _db) = Server::start().await;
    let alice_token = server.token("alice", &["acme"]);
    let alice = server.client(&alice_token);
    seed(&alice, 0..6).await;
    // Bob (paged, killed) and carol (one page) start alike, with the same local edits. Bob goes
    // through a relay that can slow the server's answers down (all his commands do: the state
    // belongs to the server URL it was made with).
    let bob = User::new(&server, "bob", &["acme"], ORIGIN);
    let carol = User::new(&server, "carol", &["acme"], ORIGIN);
    let bob_token = server.token("bob", &["acme"]);
    let delay = Arc::new(AtomicU64::new(0));
    let (relay_url, _wire) = relay(&server.url, delay.clone()).await;
    let bob_run =
        |args: &[&str], env: &[(&str, &str)]| through(&bob, &bob_token, &relay_url, args, env);
    let (m0, m1) = (mem_path(0, 0), mem_path(0, 1));
    let original = |i| mem_content(0, i, &body(i));
    assert_eq!(bob_run(&["pull"], &[]).code, 0);
    assert_eq!(carol.run(&["pull"]).code, 0);
    for u in [&bob, &carol] {
        // m000: an edit the server's will merge with; m001: one that overlaps the server's.
        u.write(
            &m0,
            &original(0).replace("line one of 0", "line one of 0, edited here"),
        );
        u.write(
            &m1,
            &original(1).replace("line two of 1", "line two of 1, mine"),
        );
        u.write(
            "local-only.md",
            &memory("local", "not pushed yet", "project", "mine\n"),
        );
    }
    // Meanwhile: six more revisions, and edits of both files on the server.
    seed(&alice, 6..DIRS).await;
    let m0_server = original(0).replace("line three of 0", "line three of 0, edited there");
    server_edit(&alice, &m0, &original(0), &m0_server).await;
    let m1_server = original(1).replace("line two of 1", "line two of 1, theirs");
    server_edit(&alice, &m1, &original(1), &m1_server).await;
    let head = alice.pull(PROJECT, 0).await.body["head"].as_i64().unwrap();

    // Bob pulls one revision per page, each answer slowed down, and is killed half-way.
    delay.store(150, Ordering::Relaxed);
    let before = recorded_revision(&bob);
    let mut child = bob
        .command(&["pull"])
        .env("MEMSYNC_SERVER", &relay_url)
        .env("MEMSYNC_TOKEN", &bob_token)
        .env("MEMSYNC_PULL_PAGE", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(60);
    while recorded_revision(&bob) < before + 2 {
        assert!(Instant::now() < until, "the paged pull recorded no page");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the pull ended before it could be killed"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    child.wait().unwrap();
    let at_kill = recorded_revision(&bob);
    println!("killed at revision {at_kill} of {head} (started at {before})");
    assert!(
        at_kill > before && at_kill < head,
        "killed between pages: {at_kill}"
    );
    // Every page recorded is on disk: its files are there.
    assert!(bob.read(&mem_path(6, 0)).is_some());

    // The next pull (same tiny pages, no delay) finishes.
    delay.store(0, Ordering::Relaxed);
    let r = bob_run(&["pull", "--json"], &[("MEMSYNC_PULL_PAGE", "1")]);
    assert_eq!(
        r.code, 1,
        "a conflict is a problem: {}\n{}",
        r.stdout, r.stderr
    );
    assert_eq!(recorded_revision(&bob), head);
    // Carol's one-page pull of the same changes.
    let r = carol.run_with(&["pull", "--json"], &[("MEMSYNC_PULL_PAGE", "100000")]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert_eq!(r.json()["pull"]["pages"], 1, "{}", r.stdout);
    assert_eq!(
        tree(&bob.team_dir()),
        tree(&carol.team_dir()),
        "the killed and resumed paged pull ends as a one-page pull"
    );
    // The local edits survived: merged with the server's, kept against an overlapping one.
    let merged = bob.read(&m0).unwrap();
    assert!(
        merged.contains("line one of 0, edited here")
            && merged.contains("line three of 0, edited there"),
        "{merged}"
    );
    assert_eq!(
        bob.read(&m1).unwrap(),
        original(1).replace("line two of 1", "line two of 1, mine")
    );
    assert!(bob.read("local-only.md").is_some());
    let r = bob_run(&["status", "--json", "--offline"], &[]);
    let conflicts = r.json()["conflicts"].clone();
    assert_eq!(conflicts[0]["path"], m1.as_str(), "{conflicts}");
    // Everything else is exactly the server's: a fresh clone's pull.
    let dave = User::new(&server, "dave", &["acme"], ORIGIN);
    assert_eq!(dave.run(&["pull"]).code, 0);
    let mut mine = tree(&bob.team_dir());
    let theirs = tree(&dave.team_dir());
    mine.remove("local-only.md");
    for p in [&m0, &m1] {
        assert_ne!(mine.remove(p.as_str()), theirs.get(p.as_str()).cloned());
    }
    let theirs: std::collections::BTreeMap<_, _> = theirs
        .into_iter()
        .filter(|(p, _)| p != &m0 && p != &m1)
        .collect();
    assert_eq!(mine, theirs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_of_one_file_is_one_request() {
    let (server, _db) = Server::start().await;
    let (relay_url, wire) = relay(&server.url, Arc::default()).await;
    let bob = User::new(&server, "bob", &["acme"], ORIGIN);
    let token = server.token("bob", &["acme"]);
    bob.write(
        "first.md",
        &memory("first", "the first memory", "project", "hello\n"),
    );
    let r = through(&bob, &token, &relay_url, &["push", "--json"], &[]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let w = settled(&wire).await;
    assert_eq!(w.requests, ["POST /v1/projects/acme/api/push"]);
    // An edit of it: the same single request (no pull, no whoami, no allowlist read).
    bob.write(
        "first.md",
        &memory("first", "the first memory", "project", "hello again\n"),
    );
    let r = through(&bob, &token, &relay_url, &["push", "--json"], &[]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let w = settled(&wire).await;
    assert_eq!(w.requests, ["POST /v1/projects/acme/api/push"]);
    assert_eq!(w.opened, 1, "one connection");
}

/// A fake server for the client's side of paging alone: five revisions of three files each
/// (every file written once), answered as docs/protocol.md pages them (whole revisions, at most
/// `limit` files unless one revision is larger), or, `old`, all at once without `more`/`head`
/// (a server from before paging). Once it has answered `answers` pulls, it answers every request
/// with a 503 (it went away).
struct FakePager {
    url: String,
    /// `since=…&limit=…` of each pull answered, in order.
    seen: Arc<Mutex<Vec<Asked>>>,
    answers: Arc<AtomicUsize>,
}

/// `since` and `limit` of one pull.
type Asked = (i64, Option<usize>);

const FAKE_REVISIONS: i64 = 5;
const FAKE_FILES_PER_REVISION: usize = 3;

fn fake_file(rev: i64, i: usize) -> (String, String) {
    (
        format!("r{rev}/f{i}.md"),
        memory(
            &format!("r{rev}-f{i}"),
            "fake",
            "project",
            &format!("revision {rev}, file {i}\n"),
        ),
    )
}

fn fake_page(since: i64, limit: Option<usize>, old: bool) -> Value {
    let mut changes = Vec::new();
    let mut revision = since;
    for rev in since + 1..=FAKE_REVISIONS {
        if let Some(limit) = limit.filter(|_| !old)
            && !changes.is_empty()
            && changes.len() + FAKE_FILES_PER_REVISION > limit
        {
            break;
        }
        for i in 0..FAKE_FILES_PER_REVISION {
            let (path, content) = fake_file(rev, i);
            changes.push(serde_json::json!({
                "path": path, "revision": rev, "deleted": false,
                "sha256": memsync_core::Sha256::of(content.as_bytes()).to_hex(),
                "content": content, "author": "fake", "updated_at": "2026-12-01T00:00:00Z",
            }));
        }
        revision = rev;
    }
    if old {
        serde_json::json!({ "project": PROJECT, "revision": revision, "since": since, "changes": changes })
    } else {
        serde_json::json!({
            "project": PROJECT, "revision": revision, "since": since, "changes": changes,
            "more": revision < FAKE_REVISIONS, "head": FAKE_REVISIONS,
        })
    }
}

async fn fake_pager(old: bool) -> FakePager {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let answers = Arc::new(AtomicUsize::new(usize::MAX));
    let (s, a) = (seen.clone(), answers.clone());
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let (seen, answers) = (s.clone(), a.clone());
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let target = head.split(' ').nth(1).unwrap_or("/").to_owned();
                let gone = seen.lock().unwrap().len() >= answers.load(Ordering::SeqCst);
                let (status, body) = if gone {
                    (
                        "503 Service Unavailable",
                        serde_json::json!({"error": {"code": "unavailable", "message": "down for the test", "details": {}}}),
                    )
                } else if let Some(q) = target.strip_prefix("/v1/projects/acme/api/changes?") {
                    let param = |k: &str| {
                        q.split('&')
                            .find_map(|kv| kv.strip_prefix(&format!("{k}=")))
                            .map(str::to_owned)
                    };
                    let since = param("since").and_then(|v| v.parse().ok()).unwrap_or(0);
                    let limit = param("limit").and_then(|v| v.parse().ok());
                    seen.lock().unwrap().push((since, limit));
                    ("200 OK", fake_page(since, limit, old))
                } else {
                    (
                        "404 Not Found",
                        serde_json::json!({"error": {"code": "not_found", "message": "no such route", "details": {}}}),
                    )
                };
                let body = body.to_string();
                let resp = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
            });
        }
    });
    FakePager { url, seen, answers }
}

/// A home, a repository dir and a team dir for pulls from a fake server.
struct Scratch {
    home: tempfile::TempDir,
    repo: PathBuf,
    team: PathBuf,
}

impl Scratch {
    fn new() -> Scratch {
        let home = tempfile::tempdir().unwrap();
        let repo = home.path().join("repo");
        let team = home.path().join("team");
        std::fs::create_dir_all(&repo).unwrap();
        std::fs::create_dir_all(&team).unwrap();
        Scratch { home, repo, team }
    }

    fn pull(&self, url: &str, page: &str) -> Run {
        let team = self.team.to_string_lossy().into_owned();
        let out = std::process::Command::new(bin_path("memsync"))
            .args(["pull", "--json", "--team-dir", &team, "--timeout", "2s"])
            .current_dir(&self.repo)
            .env("HOME", self.home.path())
            .env("MEMSYNC_SERVER", url)
            .env("MEMSYNC_TOKEN", "test-token")
            .env("MEMSYNC_PROJECT", PROJECT)
            .env("MEMSYNC_PULL_PAGE", page)
            .env_remove("XDG_STATE_HOME")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("CLAUDE_CONFIG_DIR")
            .output()
            .unwrap();
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    fn revision(&self) -> i64 {
        let root = self.home.path().join(".local/state/memsync");
        // The project's state dir (beside it: `layouts/`, the registry of agent layouts).
        let dir = std::fs::read_dir(root)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.join("state.json").is_file())
            .unwrap();
        let text = std::fs::read_to_string(dir.join("state.json")).unwrap();
        serde_json::from_str::<Value>(&text).unwrap()["revision"]
            .as_i64()
            .unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_follows_pages_to_the_end_and_resumes_from_the_last_one_recorded() {
    let total = FAKE_REVISIONS as usize * FAKE_FILES_PER_REVISION;
    // Four files per page: one revision (three files) per page, five pages, each from the last.
    let server = fake_pager(false).await;
    let s = Scratch::new();
    let r = s.pull(&server.url, "4");
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.json()["pull"]["pages"], 5, "{}", r.stdout);
    assert_eq!(r.json()["pull"]["updated"].as_array().unwrap().len(), total);
    assert_eq!(r.json()["pull"]["revision"], FAKE_REVISIONS);
    assert_eq!(
        *server.seen.lock().unwrap(),
        (0..FAKE_REVISIONS)
            .map(|s| (s, Some(4)))
            .collect::<Vec<_>>()
    );
    assert_eq!(tree(&s.team).len(), total);

    // A server from before paging: no `more`, everything in one answer, one page.
    let old = fake_pager(true).await;
    let s = Scratch::new();
    let r = s.pull(&old.url, "4");
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.json()["pull"]["pages"], 1, "{}", r.stdout);
    assert_eq!(tree(&s.team).len(), total);
    assert_eq!(s.revision(), FAKE_REVISIONS);

    // The server goes away after two pages: the pull fails, the two pages stay recorded, and
    // the next pull asks from there.
    let server = fake_pager(false).await;
    let s = Scratch::new();
    server.answers.store(2, Ordering::SeqCst);
    let r = s.pull(&server.url, "4");
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("503"), "{}", r.stderr);
    let at = s.revision();
    assert_eq!(at, 2, "the two pages answered are recorded");
    assert_eq!(tree(&s.team).len(), 2 * FAKE_FILES_PER_REVISION);
    server.answers.store(usize::MAX, Ordering::SeqCst);
    let before = server.seen.lock().unwrap().len();
    let r = s.pull(&server.url, "4");
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(
        server.seen.lock().unwrap()[before].0,
        at,
        "resumed from the page recorded"
    );
    assert_eq!(tree(&s.team).len(), total);
    assert_eq!(s.revision(), FAKE_REVISIONS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_falls_back_to_long_poll_pulls_on_a_server_without_the_event_stream() {
    use std::io::BufRead;
    let server = fake_pager(false).await;
    let s = Scratch::new();
    let team = s.team.to_string_lossy().into_owned();
    let mut child = std::process::Command::new(bin_path("memsync"))
        .args(["watch", "--json", "--team-dir", &team, "--timeout", "2s"])
        .current_dir(&s.repo)
        .env("HOME", s.home.path())
        .env("MEMSYNC_SERVER", &server.url)
        .env("MEMSYNC_TOKEN", "test-token")
        .env("MEMSYNC_PROJECT", PROJECT)
        .env_remove("XDG_STATE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("CLAUDE_CONFIG_DIR")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut events = Vec::new();
    let until = Instant::now() + Duration::from_secs(20);
    // The first pull (paged), then the stream's 404 "no such route": long-poll pulls instead.
    while !events
        .iter()
        .any(|e: &Value| e["event"] == "connected" && e["mode"] == "long-poll")
    {
        let left = until.saturating_duration_since(Instant::now());
        let line = rx
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no long-poll connection: {events:#?}"));
        events.push(serde_json::from_str(&line).unwrap());
    }
    let pulled = events.iter().find(|e| e["event"] == "pulled").unwrap();
    assert_eq!(pulled["files"], 15, "{pulled}");
    assert_eq!(pulled["revision"], FAKE_REVISIONS);
    // A long-poll asks for one file from the revision the team dir has.
    let until = Instant::now() + Duration::from_secs(10);
    while !server
        .seen
        .lock()
        .unwrap()
        .contains(&(FAKE_REVISIONS, Some(1)))
    {
        assert!(Instant::now() < until, "{:?}", server.seen.lock().unwrap());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert!(child.wait().unwrap().success());
}
