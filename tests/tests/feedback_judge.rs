//! The model judge end to end, against a stand-in endpoint started here (plain HTTP/1.1 on
//! 127.0.0.1, speaking both the OpenAI `POST /v1/chat/completions` and the Anthropic
//! `POST /v1/messages` shapes, recording every request): the server's team-vs-team check follows
//! the judge both ways, falls back to the detector when the judge is slow, failing or talking
//! nonsense (within its deadline), and `memsync check` sends private memories to the user's judge
//! and to nowhere else. The API key reaches the stand-in as a header and no output or log.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use memsync_core::feedback::{self, Kind, Note};
use memsync_e2e::feedback_fixtures::*;
use memsync_e2e::*;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

const KEY: &str = "sk-judge-test-5f1c9e27b3";

/// What the stand-in answers.
#[derive(Clone, Debug)]
enum Mode {
    /// A well-formed answer with this verdict (wrapped in a ```json fence, with prose around it).
    Verdict(&'static str),
    /// Sleeps this long, then answers `compatible`.
    Sleep(Duration),
    /// `500 Internal Server Error`.
    Status500,
    /// 200 with a body that is no answer.
    Garbage,
    /// A redirect to a stand-in that would say `compatible` (never followed).
    Redirect,
}

/// One request the stand-in received.
#[derive(Clone, Debug)]
struct Seen {
    path: String,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The question's text (the user message), whichever API.
    fn question(&self) -> String {
        let msgs = self.body["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        msgs.iter()
            .filter(|m| m["role"] == "user")
            .filter_map(|m| m["content"].as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

struct StandIn {
    url: String,
    mode: Arc<Mutex<Mode>>,
    seen: Arc<Mutex<Vec<Seen>>>,
    /// Requests being answered now, and the most there ever were at once.
    busy: Arc<Mutex<(usize, usize)>>,
}

impl StandIn {
    async fn start(mode: Mode) -> StandIn {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let mode = Arc::new(Mutex::new(mode));
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let busy: Arc<Mutex<(usize, usize)>> = Arc::default();
        let (m, s, b) = (mode.clone(), seen.clone(), busy.clone());
        tokio::spawn(async move {
            loop {
                let Ok((conn, _)) = listener.accept().await else {
                    return;
                };
                let (m, s, b) = (m.clone(), s.clone(), b.clone());
                tokio::spawn(async move {
                    let _ = serve(conn, m, s, b).await;
                });
            }
        });
        StandIn {
            url,
            mode,
            seen,
            busy,
        }
    }

    fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn clear(&self) {
        self.seen.lock().unwrap().clear();
    }
}

/// Counts a request as being answered while it lives.
struct Busy(Arc<Mutex<(usize, usize)>>);

impl Busy {
    fn new(b: &Arc<Mutex<(usize, usize)>>) -> Busy {
        let mut g = b.lock().unwrap();
        g.0 += 1;
        g.1 = g.1.max(g.0);
        Busy(b.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.lock().unwrap().0 -= 1;
    }
}

async fn serve(
    conn: tokio::net::TcpStream,
    mode: Arc<Mutex<Mode>>,
    seen: Arc<Mutex<Vec<Seen>>>,
    busy: Arc<Mutex<(usize, usize)>>,
) -> std::io::Result<()> {
    let mut conn = BufReader::new(conn);
    loop {
        let mut head = Vec::new();
        loop {
            let mut line = String::new();
            if conn.read_line(&mut line).await? == 0 {
                return Ok(());
            }
            if line == "\r\n" {
                break;
            }
            head.push(line.trim_end().to_owned());
        }
        let path = head[0].split(' ').nth(1).unwrap_or_default().to_owned();
        let headers: Vec<(String, String)> = head[1..]
            .iter()
            .filter_map(|h| {
                let (k, v) = h.split_once(':')?;
                Some((k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            })
            .collect();
        let len: usize = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; len];
        conn.read_exact(&mut body).await?;
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        seen.lock().unwrap().push(Seen {
            path: path.clone(),
            headers,
            body,
        });
        let _busy = Busy::new(&busy);
        let m = mode.lock().unwrap().clone();
        let verdict = match m {
            Mode::Verdict(v) => v,
            Mode::Sleep(d) => {
                tokio::time::sleep(d).await;
                "compatible"
            }
            Mode::Status500 => {
                let msg = "oops";
                let resp = format!(
                    "HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\r\n{msg}",
                    msg.len()
                );
                conn.get_mut().write_all(resp.as_bytes()).await?;
                continue;
            }
            Mode::Garbage => "",
            Mode::Redirect => {
                let resp = "HTTP/1.1 307 Temporary Redirect\r\nlocation: http://127.0.0.1:9/v1/chat/completions\r\ncontent-length: 0\r\n\r\n";
                conn.get_mut().write_all(resp.as_bytes()).await?;
                continue;
            }
        };
        let text = if verdict.is_empty() {
            "I am not sure what you mean. Could you rephrase?".to_owned()
        } else {
            format!(
                "Here is my judgement.\n```json\n{}\n```",
                json!({ "verdict": verdict, "reason": format!("stand-in says {verdict}") })
            )
        };
        let answer = if path.ends_with("/messages") {
            json!({ "id": "msg_1", "type": "message", "role": "assistant", "model": "stand-in",
                    "content": [{ "type": "text", "text": text }], "stop_reason": "end_turn" })
        } else {
            json!({ "id": "c1", "object": "chat.completion", "model": "stand-in",
                    "choices": [{ "index": 0, "message": { "role": "assistant", "content": text }, "finish_reason": "stop" }] })
        };
        let answer = answer.to_string();
        let resp = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{answer}",
            answer.len()
        );
        conn.get_mut().write_all(resp.as_bytes()).await?;
    }
}

/// The detector's own verdict on a pair, so that each test starts from what it claims.
fn detector(a: &str, b: &str) -> Option<Kind> {
    feedback::compare(
        &[Note {
            path: "a.md",
            text: a,
        }],
        &[Note {
            path: "b.md",
            text: b,
        }],
    )
    .first()
    .map(|f| f.kind)
}

fn judge_env<'a>(
    stand_in: &'a StandIn,
    api: &'a str,
    timeout_ms: &'a str,
) -> Vec<(&'a str, &'a str)> {
    vec![
        ("MEMSYNC_FEEDBACK_JUDGE_URL", stand_in.url.as_str()),
        ("MEMSYNC_FEEDBACK_JUDGE_API", api),
        ("MEMSYNC_FEEDBACK_JUDGE_MODEL", "stand-in-1"),
        ("MEMSYNC_FEEDBACK_JUDGE_KEY_ENV", "JUDGE_TEST_KEY"),
        ("JUDGE_TEST_KEY", KEY),
        ("MEMSYNC_FEEDBACK_JUDGE_TIMEOUT_MS", timeout_ms),
    ]
}

/// A server with the judge at `stand_in`, and `testing.md` (real database) published.
async fn judged_server(
    stand_in: &StandIn,
    api: &str,
    timeout_ms: &str,
) -> (Server, TestDb, Client) {
    let db = TestDb::new().await;
    let server = Server::start_with_env(&db.url, &[], &judge_env(stand_in, api, timeout_ms));
    let alice = server.client(&server.token("alice", &["acme"]));
    let r = alice
        .push(
            "acme/api",
            &batch(vec![put("testing.md", &real_db(), None)]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    // One feedback memory alone is no pair: the judge was not asked.
    assert!(stand_in.seen().is_empty());
    (server, db, alice)
}

fn reason(r: &Resp) -> String {
    r.body["error"]["details"]["conflicts"][0]["reason"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_team_check_follows_the_judge_both_ways() {
    assert_eq!(detector(&reset_db(), &real_db()), Some(Kind::Related));
    assert_eq!(
        detector(&mock_db(""), &real_db()),
        Some(Kind::Contradiction)
    );
    let stand_in = StandIn::start(Mode::Verdict("contradiction")).await;
    let (server, db, alice) = judged_server(&stand_in, "openai", "5000").await;

    // The detector lets this one through; the judge calls it a contradiction: refused.
    let r = alice
        .push("acme/api", &batch(vec![put("reset.md", &reset_db(), None)]))
        .await;
    assert_eq!(
        (r.status, r.code()),
        (409, "feedback_conflict"),
        "{}",
        r.text
    );
    let why = reason(&r);
    assert!(
        why.starts_with(
            "model judge (stand-in-1): stand-in says contradiction; detector said related: "
        ),
        "{why}"
    );
    let seen = stand_in.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let s = &seen[0];
    assert_eq!(s.path, "/v1/chat/completions");
    assert_eq!(
        s.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(s.body["model"], "stand-in-1");
    assert_eq!(s.body["temperature"], 0);
    let q = s.question();
    assert!(
        q.contains("must reset the real database") && q.contains("must hit a real database"),
        "{q}"
    );
    assert!(q.contains("\"verdict\": \"related\""), "{q}");

    // The detector refuses this one; the judge calls it compatible: published.
    stand_in.set(Mode::Verdict("compatible"));
    let r = alice
        .push("acme/api", &batch(vec![put("fast.md", &mock_db(""), None)]))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM memories WHERE path = 'fast.md' AND NOT deleted"
        )
        .await,
        1
    );

    // The stateless check and a proposal's findings carry the judge's verdict too.
    stand_in.set(Mode::Verdict("different_scope"));
    let r = alice
        .post(
            "/v1/projects/acme/api/feedback/check",
            &json!({ "path": "candidate.md", "content": reset_db() }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let findings = r.body["findings"].as_array().unwrap();
    assert!(!findings.is_empty(), "{}", r.text);
    for f in findings {
        assert_eq!(f["kind"], "related", "{f}");
        assert!(
            f["reason"]
                .as_str()
                .unwrap()
                .starts_with("model judge (stand-in-1): different scopes: "),
            "{f}"
        );
    }
    // The same question again gets the kept answer, without a request; another one is asked.
    stand_in.set(Mode::Verdict("unrelated"));
    let asked = stand_in.seen().len();
    let r = alice
        .post(
            "/v1/projects/acme/api/feedback/check",
            &json!({ "path": "candidate.md", "content": reset_db() }),
        )
        .await;
    assert_eq!(r.body["findings"][0]["kind"], "related", "{}", r.text);
    assert_eq!(stand_in.seen().len(), asked);
    let edited = reset_db().replace("before each test.", "before each test run.");
    assert_eq!(detector(&edited, &real_db()), Some(Kind::Related));
    let r = alice
        .post(
            "/v1/projects/acme/api/feedback/check",
            &json!({ "path": "candidate.md", "content": edited }),
        )
        .await;
    assert_eq!(r.body["findings"], json!([]), "{}", r.text);
    assert!(stand_in.seen().len() > asked);

    // The key is in no log line.
    assert!(!server.log().contains(KEY));
    let out = server.cli(&["config", "show"]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains(KEY));
    assert!(!String::from_utf8_lossy(&out.stderr).contains(KEY));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memsync_push_defers_to_the_servers_judge() {
    let stand_in = StandIn::start(Mode::Verdict("compatible")).await;
    let db = TestDb::new().await;
    let server = Server::start_with_env(&db.url, &[], &judge_env(&stand_in, "openai", "5000"));
    let alice = User::new(&server, "alice", &["acme"], ORIGIN);
    alice.write("testing.md", &real_db());
    assert_eq!(alice.run(&["push"]).code, 0);
    // The client's detector predicts a refusal; the server's judge says compatible: it lands.
    alice.write("fast.md", &mock_db(""));
    let r = alice.run(&["push", "--json"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM memories WHERE path = 'fast.md' AND NOT deleted"
        )
        .await,
        1
    );
    // Asked once: by the client's check of its prediction; the push reuses that answer.
    assert_eq!(stand_in.seen().len(), 1, "{:?}", stand_in.seen());
    // When the judge agrees with the detector, the prediction stands and nothing is sent.
    stand_in.set(Mode::Verdict("contradiction"));
    let other = mock_db("").replace("fast-tests", "quick-tests");
    alice.write("quick.md", &other);
    let r = alice.run(&["push", "--json"]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("feedback_conflict"), "{}", r.stdout);
    assert_eq!(
        count(&db, "SELECT count(*) FROM memories WHERE path = 'quick.md'").await,
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_anthropic_shape_works_too() {
    let stand_in = StandIn::start(Mode::Verdict("compatible")).await;
    let (_server, _db, alice) = judged_server(&stand_in, "anthropic", "5000").await;
    let r = alice
        .push("acme/api", &batch(vec![put("fast.md", &mock_db(""), None)]))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let seen = stand_in.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let s = &seen[0];
    assert_eq!(s.path, "/v1/messages");
    assert_eq!(s.header("x-api-key"), Some(KEY));
    assert_eq!(s.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(s.header("authorization"), None);
    assert!(
        s.body["system"]
            .as_str()
            .unwrap()
            .contains("different_scope")
    );
    assert!(s.question().contains("Mock the database"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_judge_costs_a_push_its_deadline_and_no_more() {
    let stand_in = StandIn::start(Mode::Sleep(Duration::from_secs(20))).await;
    let (server, _db, alice) = judged_server(&stand_in, "openai", "1000").await;
    let started = Instant::now();
    let r = alice
        .push("acme/api", &batch(vec![put("fast.md", &mock_db(""), None)]))
        .await;
    let took = started.elapsed();
    eprintln!("push with a judge sleeping past its 1000 ms deadline took {took:?}");
    // The detector's verdict: refused, with the detector's reason.
    assert_eq!(
        (r.status, r.code()),
        (409, "feedback_conflict"),
        "{}",
        r.text
    );
    assert!(!reason(&r).starts_with("model judge"), "{}", reason(&r));
    assert!(took >= Duration::from_millis(1000), "{took:?}");
    assert!(took < Duration::from_millis(6000), "{took:?}");
    assert_eq!(stand_in.seen().len(), 1);
    // A related pair still passes, in about the same time.
    let started = Instant::now();
    let r = alice
        .push("acme/api", &batch(vec![put("reset.md", &reset_db(), None)]))
        .await;
    let took = started.elapsed();
    eprintln!("a second push with a sleeping judge took {took:?}");
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(took < Duration::from_millis(6000), "{took:?}");
    let log = server.log();
    assert!(log.contains("feedback judge unavailable"), "{log}");
    assert!(log.contains("no answer before the deadline"), "{log}");
    assert!(
        !log.contains(KEY) && !log.contains("Mock the database"),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_or_garbled_judge_leaves_the_detectors_verdict() {
    let stand_in = StandIn::start(Mode::Status500).await;
    let (server, _db, alice) = judged_server(&stand_in, "openai", "5000").await;
    for mode in [Mode::Status500, Mode::Garbage, Mode::Redirect] {
        stand_in.set(mode.clone());
        stand_in.clear();
        let r = alice
            .push("acme/api", &batch(vec![put("fast.md", &mock_db(""), None)]))
            .await;
        assert_eq!(
            (r.status, r.code()),
            (409, "feedback_conflict"),
            "{mode:?}: {}",
            r.text
        );
        assert!(
            !reason(&r).starts_with("model judge"),
            "{mode:?}: {}",
            reason(&r)
        );
        assert_eq!(stand_in.seen().len(), 1, "{mode:?}");
        let r = alice
            .post(
                "/v1/projects/acme/api/feedback/check",
                &json!({ "path": "candidate.md", "content": reset_db() }),
            )
            .await;
        assert_eq!(
            r.body["findings"][0]["kind"], "related",
            "{mode:?}: {}",
            r.text
        );
    }
    let log = server.log();
    assert!(log.contains("HTTP status 500"), "{log}");
    assert!(log.contains("unusable answer"), "{log}");
    assert!(log.contains("HTTP status 307"), "{log}");
    assert!(
        !log.contains(KEY) && !log.contains("Mock the database"),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memsync_check_asks_the_users_judge_and_private_text_goes_nowhere_else() {
    let (server, db, _alice, bob) = bob_pulled_the_testing_rule().await;
    // Bob's private rule, with a marker found nowhere else.
    let marker = "PRIVATE-MARKER-7c41d0";
    let private = feedback_memory(
        "db-reset",
        "integration tests reset the real database",
        &format!("Integration tests must reset the real database before each test ({marker})."),
        "",
    );
    assert_eq!(detector(&private, &real_db()), Some(Kind::Related));
    std::fs::write(bob.private_dir().join("reset.md"), &private).unwrap();

    for api in ["openai", "anthropic"] {
        let stand_in = StandIn::start(Mode::Verdict("contradiction")).await;
        let env = judge_env(&stand_in, api, "5000");
        let r = bob.run_with(&["check", "--json"], &env);
        assert_eq!(r.code, 1, "{api}: {}\n{}", r.stdout, r.stderr);
        let conflicts = r.json()["conflicts"].as_array().unwrap().clone();
        let c = conflicts
            .iter()
            .find(|c| c["private"] == "reset.md")
            .unwrap_or_else(|| panic!("{}", r.stdout));
        assert_eq!(c["team"], "testing.md");
        assert_eq!(c["kind"], "contradiction");
        assert!(
            c["reason"]
                .as_str()
                .unwrap()
                .starts_with("model judge (stand-in-1): "),
            "{c}"
        );
        let seen = stand_in.seen();
        assert_eq!(seen.len(), 1, "{api}: {seen:?}");
        assert!(
            seen[0].question().contains(marker),
            "the judge gets the private text"
        );
        match api {
            "openai" => assert_eq!(
                seen[0].header("authorization"),
                Some(format!("Bearer {KEY}").as_str())
            ),
            _ => assert_eq!(seen[0].header("x-api-key"), Some(KEY)),
        }
        for out in [&r.stdout, &r.stderr] {
            assert!(!out.contains(KEY), "{out}");
        }
        // The plain output says where the verdict came from.
        let r = bob.run_with(&["check"], &env);
        assert!(
            r.stdout
                .contains("private reset.md contradicts team testing.md: model judge (stand-in-1)"),
            "{}",
            r.stdout
        );
    }

    // Unavailable: one line on stderr, the detector's verdict.
    let stand_in = StandIn::start(Mode::Status500).await;
    let r = bob.run_with(
        &["check", "--json"],
        &judge_env(&stand_in, "openai", "5000"),
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.json()["conflicts"][0]["kind"], "related");
    let lines: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.contains("feedback judge"))
        .collect();
    assert_eq!(lines.len(), 1, "{}", r.stderr);
    assert!(
        lines[0].contains("unavailable") && lines[0].contains("HTTP status 500"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains(KEY));

    // A bad setting is a usage error naming it.
    let r = bob.run_with(
        &["check"],
        &[
            ("MEMSYNC_FEEDBACK_JUDGE_URL", "ftp://x"),
            ("MEMSYNC_FEEDBACK_JUDGE_MODEL", "m"),
        ],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("MEMSYNC_FEEDBACK_JUDGE_URL"),
        "{}",
        r.stderr
    );

    // The hook asks the judge too; a push and a pull never send private text to the server.
    let stand_in = StandIn::start(Mode::Verdict("contradiction")).await;
    let out = bob.session_start(&judge_env(&stand_in, "openai", "2000"));
    assert_eq!(out.code, 0);
    let ctx = out.json()["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        ctx.contains("testing.md") && ctx.contains("reset.md"),
        "{ctx}"
    );
    assert_eq!(stand_in.seen().len(), 1);
    assert!(!out.stdout.contains(KEY));
    assert_eq!(
        bob.run_with(&["push"], &judge_env(&stand_in, "openai", "2000"))
            .code,
        0
    );
    assert!(
        !server.log().contains(marker),
        "the server's log holds private text"
    );
    assert!(assert_no_row_contains(&db, marker).await > 0);
    let _ = db;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_users_judge_is_asked_about_a_pair_once() {
    let (_server, _db, _alice, bob) = bob_pulled_the_testing_rule().await;
    assert_eq!(detector(&reset_db(), &real_db()), Some(Kind::Related));
    std::fs::write(bob.private_dir().join("reset.md"), reset_db()).unwrap();
    let stand_in = StandIn::start(Mode::Verdict("contradiction")).await;
    let env = judge_env(&stand_in, "openai", "5000");
    let verdict = |r: &Run| -> (String, String) {
        let c = &r.json()["conflicts"][0];
        (
            c["kind"].as_str().unwrap_or_default().to_owned(),
            c["reason"].as_str().unwrap_or_default().to_owned(),
        )
    };

    let first = bob.run_with(&["check", "--json"], &env);
    assert_eq!(stand_in.seen().len(), 1);
    assert_eq!(verdict(&first).0, "contradiction", "{}", first.stdout);
    // Asked again about the same two texts: the kept answer, and no request.
    let again = bob.run_with(&["check", "--json"], &env);
    assert_eq!(stand_in.seen().len(), 1, "the judge was asked twice");
    assert_eq!(verdict(&again), verdict(&first));
    // Kept in the user's cache, owner-only, without the key or the memories' text.
    let kept = bob.home.path().join(".cache/memsync/feedback-judge.json");
    let text = std::fs::read_to_string(&kept).unwrap();
    assert!(text.contains("stand-in says contradiction"), "{text}");
    assert!(
        !text.contains(KEY) && !text.contains("reset the real database"),
        "{text}"
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // The hook uses it too: nothing asked, the same verdict in the notice.
    stand_in.set(Mode::Status500);
    let out = bob.session_start(&env);
    let ctx = out.json()["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(ctx.contains("stand-in says contradiction"), "{ctx}");
    assert_eq!(stand_in.seen().len(), 1);

    // A changed memory is a new question: asked, and while the judge fails, the detector decides.
    let edited = reset_db().replace("before each test", "before each test file");
    std::fs::write(bob.private_dir().join("reset.md"), &edited).unwrap();
    let r = bob.run_with(&["check", "--json"], &env);
    assert_eq!(stand_in.seen().len(), 2);
    assert_eq!(verdict(&r).0, "related", "{}", r.stdout);
    assert!(
        r.stderr.contains("unavailable for 1 of 1 pair(s)"),
        "{}",
        r.stderr
    );
    // `memsync check` with `env`: the judge has been asked `asked` times in all, and its answer
    // (kept or new) is compatible.
    let compatible_after = |env: &[(&str, &str)], asked: usize| {
        let r = bob.run_with(&["check", "--json"], env);
        assert_eq!(stand_in.seen().len(), asked, "{}", r.stderr);
        let reason = verdict(&r).1;
        assert!(reason.contains("stand-in says compatible"), "{reason}");
    };
    // A failure is not kept: the next check asks again and keeps the answer.
    stand_in.set(Mode::Verdict("compatible"));
    compatible_after(&env, 3);
    compatible_after(&env, 3);
    // Another model is another judge: asked afresh.
    let mut other = env.clone();
    other.retain(|(k, _)| *k != "MEMSYNC_FEEDBACK_JUDGE_MODEL");
    other.push(("MEMSYNC_FEEDBACK_JUDGE_MODEL", "stand-in-2"));
    compatible_after(&other, 4);
    // A damaged file is only a lost cache.
    std::fs::write(&kept, "{not json").unwrap();
    compatible_after(&env, 5);
}

#[tokio::test]
async fn bad_judge_settings_stop_the_server_naming_the_setting() {
    let db = TestDb::new().await;
    let cases: [(&[(&str, &str)], &str); 4] = [
        (
            &[("MEMSYNC_FEEDBACK_JUDGE_URL", "ftp://llm")],
            "--feedback-judge-url",
        ),
        (
            &[("MEMSYNC_FEEDBACK_JUDGE_URL", "http://127.0.0.1:9/v1")],
            "--feedback-judge-model",
        ),
        (
            &[
                ("MEMSYNC_FEEDBACK_JUDGE_URL", "http://127.0.0.1:9/v1"),
                ("MEMSYNC_FEEDBACK_JUDGE_MODEL", "m"),
                ("MEMSYNC_FEEDBACK_JUDGE_API", "gemini"),
            ],
            "--feedback-judge-api",
        ),
        (
            &[
                ("MEMSYNC_FEEDBACK_JUDGE_URL", "http://127.0.0.1:9/v1"),
                ("MEMSYNC_FEEDBACK_JUDGE_MODEL", "m"),
                (
                    "MEMSYNC_FEEDBACK_JUDGE_KEY_ENV",
                    "JUDGE_KEY_NOT_SET_ANYWHERE",
                ),
            ],
            "JUDGE_KEY_NOT_SET_ANYWHERE",
        ),
    ];
    for (env, named) in cases {
        let out = std::process::Command::new(bin_path("memsync-server"))
            .args(["--database-url", &db.url, "config", "show"])
            .envs(env.iter().copied())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{named}: {err}");
        assert!(err.contains(named), "{named}: {err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proposals_carry_the_judges_verdict() {
    let stand_in = StandIn::start(Mode::Verdict("compatible")).await;
    let (server, db, _alice) = judged_server(&stand_in, "openai", "5000").await;
    let ann = server.client(&forge_token("ann", &[("acme", "admin")], false));
    let bob = server.client(&forge_token("bob", &[("acme", "member")], false));
    let r = ann
        .send(
            ann.http
                .put(format!("{}/v1/admin/projects/acme/api/settings", ann.base))
                .bearer_auth(&ann.token)
                .json(&json!({ "review": "required", "review_after_days": null })),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    // A member's contradicting rule becomes a proposal; the judge was asked before the lock and
    // its verdict is what the proposal stores.
    let r = bob
        .push("acme/api", &batch(vec![put("fast.md", &mock_db(""), None)]))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let id = r.body["proposed"][0]["id"].as_i64().unwrap();
    assert_eq!(stand_in.seen().len(), 1);
    let mut conn = db.connect().await;
    let stored: String = sqlx::query_scalar("SELECT findings::text FROM proposals WHERE id = $1")
        .bind(id)
        .fetch_one(&mut conn)
        .await
        .unwrap();
    let stored: Value = serde_json::from_str(&stored).unwrap();
    assert_eq!(stored[0]["team"], "testing.md", "{stored}");
    assert_eq!(stored[0]["kind"], "related", "{stored}");
    assert!(
        stored[0]["reason"]
            .as_str()
            .unwrap()
            .starts_with("model judge (stand-in-1): stand-in says compatible"),
        "{stored}"
    );
    // The reviewer's view compares with the team's rules as they are now. The same question
    // (the same texts, model and verdict) is not asked again: the answer the push got stands.
    stand_in.set(Mode::Verdict("contradiction"));
    let d = ann.fetch(&format!("/v1/proposals/{id}")).await;
    assert_eq!(d.status, 200, "{}", d.text);
    assert_eq!(d.body["feedback"][0]["kind"], "related", "{}", d.text);
    assert_eq!(stand_in.seen().len(), 1);
    // Once the team's rule changes, the view asks about the new pair.
    let r = ann
        .push(
            "acme/api",
            &batch(vec![put(
                "testing.md",
                &real_db().replace("not mocks.", "never mocks."),
                Some(&memsync_core::Sha256::of(real_db().as_bytes()).to_hex()),
            )]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let d = ann.fetch(&format!("/v1/proposals/{id}")).await;
    assert_eq!(d.status, 200, "{}", d.text);
    let f = &d.body["feedback"][0];
    assert_eq!(f["kind"], "contradiction", "{}", d.text);
    assert!(
        f["reason"]
            .as_str()
            .unwrap()
            .starts_with("model judge (stand-in-1): stand-in says contradiction"),
        "{}",
        d.text
    );
    assert_eq!(stand_in.seen().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pairs_of_one_check_are_judged_eight_at_a_time() {
    let stand_in = StandIn::start(Mode::Verdict("compatible")).await;
    let (_server, _db, alice) = judged_server(&stand_in, "openai", "5000").await;
    // Twelve more rules the candidate is related to.
    let copies: Vec<Value> = (0..12)
        .map(|i| {
            put(
                &format!("copy-{i}.md"),
                &real_db().replace("testing-policy", &format!("testing-policy-{i}")),
                None,
            )
        })
        .collect();
    let r = alice.push("acme/api", &batch(copies)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    stand_in.set(Mode::Sleep(Duration::from_millis(1000)));
    stand_in.clear();
    *stand_in.busy.lock().unwrap() = (0, 0);
    let started = Instant::now();
    let r = alice
        .post(
            "/v1/projects/acme/api/feedback/check",
            &json!({ "path": "candidate.md", "content": reset_db() }),
        )
        .await;
    let took = started.elapsed();
    eprintln!("13 pairs, a judge answering each in 1000 ms, at most 8 at a time: {took:?}");
    assert_eq!(r.status, 200, "{}", r.text);
    let findings = r.body["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 13, "{}", r.text);
    assert!(
        findings
            .iter()
            .all(|f| f["reason"].as_str().unwrap().starts_with("model judge")),
        "{}",
        r.text
    );
    assert_eq!(stand_in.seen().len(), 13);
    assert_eq!(
        stand_in.busy.lock().unwrap().1,
        8,
        "at most 8 at once, and 8 when there are more"
    );
    // Two rounds, within the 5 s deadline.
    assert!(took >= Duration::from_millis(2000), "{took:?}");
}
