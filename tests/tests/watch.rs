//! `memsync watch` and the hook's `--watch`, with the real binaries: teammates' pushes reach a
//! watching team dir, local edits are pushed after the quiet period and never overwritten,
//! revocation and signals stop it, and a session's watcher lives exactly as long as the session.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use memsync_e2e::*;
use serde_json::{Value, json};

const ORIGIN: &str = "git@github.com:acme/api.git";
/// The generous bound on how long anything the watch should do may take here (measured times are
/// printed; this only catches "never").
const BOUND: Duration = Duration::from_secs(10);

fn mem(name: &str, body: &str) -> String {
    memory(name, &format!("about {name}"), "project", body)
}

/// A running `memsync watch --json`, its stdout read line by line (every line must be JSON).
struct Watch {
    child: Child,
    lines: mpsc::Receiver<Value>,
    seen: Vec<Value>,
}

impl Watch {
    fn start(u: &User, args: &[&str]) -> Watch {
        let mut all = vec!["watch", "--json"];
        all.extend_from_slice(args);
        let mut child = u
            .command(&all)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("memsync watch");
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { return };
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("a watch --json line is not JSON ({e}): {line}"));
                assert!(v["event"].is_string(), "no event: {line}");
                assert!(v["at"].is_string(), "no time: {line}");
                if tx.send(v).is_err() {
                    return;
                }
            }
        });
        Watch {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// The first event (not seen before) for which `pred` holds, within `within`.
    fn wait_for(&mut self, what: &str, within: Duration, pred: impl Fn(&Value) -> bool) -> Value {
        let until = Instant::now() + within;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(v) => {
                    self.seen.push(v.clone());
                    if pred(&v) {
                        return v;
                    }
                }
                Err(_) => panic!("no {what} within {within:?}; events: {:#?}", self.seen),
            }
        }
    }

    fn event(&mut self, name: &str, within: Duration) -> Value {
        self.wait_for(name, within, |v| v["event"] == name)
    }

    fn signal(&self, sig: nix::sys::signal::Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.child.id() as i32), sig).unwrap();
    }

    /// Waits for the process to exit; its code and stderr.
    fn exit(mut self, within: Duration) -> (i32, String, Vec<Value>) {
        let until = Instant::now() + within;
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(
                Instant::now() < until,
                "watch still running after {within:?}; events: {:#?}",
                self.seen
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut err = String::new();
        use std::io::Read;
        let _ = self.child.stderr.take().unwrap().read_to_string(&mut err);
        let mut rest = std::mem::take(&mut self.seen);
        // The reader thread may not have passed on the last lines yet: take them until it ends
        // at the end of the output (the process has exited), waiting at most 5 s.
        let until = Instant::now() + Duration::from_secs(5);
        while let Ok(v) = self
            .lines
            .recv_timeout(until.saturating_duration_since(Instant::now()))
        {
            rest.push(v);
        }
        (status.code().unwrap_or(-1), err, rest)
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until `check` holds, polling; how long it took.
fn eventually(what: &str, within: Duration, check: impl Fn() -> bool) -> Duration {
    let started = Instant::now();
    while !check() {
        assert!(started.elapsed() < within, "{what}: not within {within:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn teammates_pushes_arrive_and_local_edits_are_pushed_after_the_quiet_period() {
    let (server, _db) = Server::start().await;
    let alice = User::new(&server, "alice", &["acme"], ORIGIN);
    let bob = User::new(&server, "bob", &["acme"], ORIGIN);
    bob.write("first.md", &mem("first", "from bob\n"));
    assert_eq!(bob.run(&["push"]).code, 0);

    let mut w = Watch::start(&alice, &["--quiet-period", "1s"]);
    let started = w.event("started", BOUND);
    assert_eq!(started["project"], "acme/api");
    let pulled = w.event("pulled", BOUND);
    assert_eq!(pulled["files"], 2, "{pulled}"); // first.md and MEMORY.md
    assert!(alice.read("first.md").is_some());
    let connected = w.event("connected", BOUND);
    println!("watch connected: {connected}");

    // Bob pushes: it lands in alice's team dir without her doing anything.
    for round in 0..3 {
        let name = format!("bob-{round}.md");
        bob.write(&name, &mem(&format!("bob-{round}"), "news\n"));
        let pushed_at = Instant::now();
        assert_eq!(bob.run(&["push"]).code, 0);
        let took = eventually("bob's push in alice's team dir", BOUND, || {
            alice.read(&name).is_some()
        });
        println!(
            "round {round}: a teammate's push reached the watching team dir {:?} after the push returned ({:?} after it started)",
            took,
            pushed_at.elapsed()
        );
        let ev = w.wait_for("pulled", BOUND, |v| {
            v["event"] == "pulled"
                && v["updated"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|p| p == name.as_str())
        });
        assert!(ev["revision"].as_i64().unwrap() >= 2 + round, "{ev}");
    }

    // Alice saves a memory: pushed once the team dir has been quiet for 1 s.
    alice.write("alice.md", &mem("alice", "from alice\n"));
    let saved = Instant::now();
    let ev = w.wait_for("pushed", BOUND, |v| {
        v["event"] == "pushed"
            && v["pushed"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p == "alice.md")
    });
    let after = saved.elapsed();
    println!("a local edit was pushed {after:?} after it was saved (quiet period 1 s)");
    assert!(
        after >= Duration::from_millis(900),
        "pushed before the quiet period: {after:?}"
    );
    assert!(ev["revision"].as_i64().is_some(), "{ev}");
    assert_eq!(bob.run(&["pull"]).code, 0);
    assert_eq!(
        bob.read("alice.md").as_deref(),
        Some(mem("alice", "from alice\n").as_str())
    );
    // Her own push is not pulled back as news.
    std::thread::sleep(Duration::from_millis(1500));
    let status = alice.run(&["status", "--json"]);
    assert_eq!(status.json()["behind"], false, "{}", status.stdout);

    // SIGTERM: a clean stop, exit 0, no pidfile left.
    w.signal(nix::sys::signal::Signal::SIGTERM);
    let (code, err, events) = w.exit(BOUND);
    assert_eq!(code, 0, "{err}");
    let stopped = events
        .iter()
        .find(|v| v["event"] == "stopped")
        .expect("stopped");
    assert_eq!(stopped["reason"], "SIGTERM");
    assert_eq!(stopped["unpushed_changes"], false);
    assert!(find_pidfile(alice.home.path()).is_none());
}

/// `watch.pid` under a home's memsync state dir, if any.
fn find_pidfile(home: &Path) -> Option<PathBuf> {
    let root = home.join(".local/state/memsync");
    std::fs::read_dir(root)
        .ok()?
        .flatten()
        .map(|e| e.path().join("watch.pid"))
        .find(|p| p.is_file())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_in_progress_is_never_overwritten_by_an_incoming_change() {
    let (server, _db) = Server::start().await;
    let alice = User::new(&server, "alice", &["acme"], ORIGIN);
    let bob = User::new(&server, "bob", &["acme"], ORIGIN);
    let base = mem("notes", "First.\n\nSecond.\n\nThird.\n");
    bob.write("notes.md", &base);
    bob.write("other.md", &mem("other", "Other.\n"));
    assert_eq!(bob.run(&["push"]).code, 0);
    assert_eq!(alice.run(&["pull"]).code, 0);

    // Alice is in the middle of an edit (a long quiet period: not pushed during the test).
    let mut w = Watch::start(&alice, &["--quiet-period", "60s"]);
    w.event("connected", BOUND);
    let mine = base.replace("Second.", "Second, as alice has it.");
    alice.write("notes.md", &mine);
    // Bob changes the same line, and another file.
    bob.write(
        "notes.md",
        &base.replace("Second.", "Second, as bob has it."),
    );
    bob.write("other.md", &mem("other", "Other, edited.\n"));
    assert_eq!(bob.run(&["push"]).code, 0);

    let conflict = w.event("conflict", BOUND);
    assert_eq!(conflict["path"], "notes.md");
    assert_eq!(conflict["reason"], "overlapping_edit");
    // Her file is hers; the other file came in.
    assert_eq!(alice.read("notes.md").as_deref(), Some(mine.as_str()));
    eventually("the other file updated", BOUND, || {
        alice.read("other.md").as_deref() == Some(mem("other", "Other, edited.\n").as_str())
    });
    // As a pull reports it: `status` shows the conflict, `diff` the server's side.
    let st = alice.run(&["status", "--json"]);
    assert_eq!(
        st.json()["conflicts"][0]["path"],
        "notes.md",
        "{}",
        st.stdout
    );
    let d = alice.run(&["diff", "notes.md"]);
    assert!(d.stdout.contains("as bob has it"), "{}", d.stdout);

    w.signal(nix::sys::signal::Signal::SIGINT);
    let (code, err, events) = w.exit(BOUND);
    assert_eq!(code, 0, "{err}");
    let stopped = events.iter().find(|v| v["event"] == "stopped").unwrap();
    assert_eq!(stopped["reason"], "SIGINT");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_token_ends_the_watch_with_a_clear_error() {
    let (server, _db) = Server::start().await;
    let token = server.token("alice", &["acme"]);
    let alice = User::with_token(&server, "alice", &token, ORIGIN);
    alice.write("a.md", &mem("a", "a\n"));
    assert_eq!(alice.run(&["push"]).code, 0);
    let mut w = Watch::start(&alice, &[]);
    w.event("connected", BOUND);
    let out = server.cli(&["token", "revoke", &token_jti(&token)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let revoked = Instant::now();
    let (code, err, events) = w.exit(Duration::from_secs(30));
    println!(
        "the watch ended {:?} after the revocation",
        revoked.elapsed()
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("memsync: watch stopped:") && err.contains("memsync login"),
        "{err}"
    );
    let stopped = events.iter().find(|v| v["event"] == "stopped").unwrap();
    assert!(
        ["revoked", "unauthenticated"].contains(&stopped["reason"].as_str().unwrap()),
        "{stopped}"
    );
    assert!(!err.contains(&token), "the token is never printed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn until_pid_ends_the_watch_and_a_second_watch_is_refused() {
    let (server, _db) = Server::start().await;
    let alice = User::new(&server, "alice", &["acme"], ORIGIN);
    alice.write("a.md", &mem("a", "a\n"));
    assert_eq!(alice.run(&["push"]).code, 0);
    let mut agent = std::process::Command::new("sleep")
        .arg("600")
        .spawn()
        .unwrap();
    let pid = agent.id().to_string();
    let mut w = Watch::start(&alice, &["--until-pid", &pid]);
    w.event("connected", BOUND);
    // One watcher per team dir.
    let second = alice.run(&["watch", "--json"]);
    assert_eq!(second.code, 2, "{}", second.stdout);
    assert!(
        second.stderr.contains("another memsync watch") && second.stderr.contains("already keeps"),
        "{}",
        second.stderr
    );
    // The pidfile names it.
    let info: Value = serde_json::from_str(
        &std::fs::read_to_string(find_pidfile(alice.home.path()).unwrap()).unwrap(),
    )
    .unwrap();
    assert_eq!(info["pid"], w.child.id());
    assert_eq!(info["until_pid"], agent.id());

    agent.kill().unwrap();
    agent.wait().unwrap();
    let gone = Instant::now();
    let (code, err, events) = w.exit(BOUND);
    println!(
        "the watch stopped {:?} after its process exited",
        gone.elapsed()
    );
    assert_eq!(code, 0, "{err}");
    let stopped = events.iter().find(|v| v["event"] == "stopped").unwrap();
    assert_eq!(stopped["reason"], "until-pid");
    assert!(find_pidfile(alice.home.path()).is_none());
    // A process that is already gone is refused up front.
    let r = alice.run(&["watch", "--until-pid", &pid]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("no such process"), "{}", r.stderr);
}

fn pid_alive(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // A zombie has exited.
    let state = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .next();
    state != Some("Z")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hook_starts_a_watcher_for_the_session_and_session_end_stops_it() {
    let (server, _db) = Server::start().await;
    let alice = User::new(&server, "alice", &["acme"], ORIGIN);
    let bob = User::new(&server, "bob", &["acme"], ORIGIN);
    bob.write("first.md", &mem("first", "from bob\n"));
    assert_eq!(bob.run(&["push"]).code, 0);

    let r = alice.run(&["install-hook", "--watch", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json()["watch"], true);
    let settings: Value = serde_json::from_str(
        &std::fs::read_to_string(alice.repo.join(".claude/settings.json")).unwrap(),
    )
    .unwrap();
    let command = settings["hooks"]["SessionStart"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(command.ends_with("hook session-start --watch"), "{command}");

    // The agent runs the hook: JSON on stdin, the repository as cwd.
    let input = |event: &str, session: &str| {
        json!({ "session_id": session, "cwd": alice.repo, "hook_event_name": event, "source": "startup" })
            .to_string()
    };
    let started = Instant::now();
    let r = alice.run_stdin(
        &["hook", "session-start", "--watch"],
        &input("SessionStart", "s-1"),
    );
    println!(
        "session-start hook with --watch took {:?}",
        started.elapsed()
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let context = r.json()["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(context.contains("memsync watch (pid"), "{context}");
    assert!(alice.read("first.md").is_some());
    let pidfile = {
        let home = alice.home.path().to_owned();
        eventually("the watcher's pidfile", BOUND, || {
            find_pidfile(&home).is_some()
        });
        find_pidfile(&home).unwrap()
    };
    let info: Value = serde_json::from_str(&std::fs::read_to_string(&pidfile).unwrap()).unwrap();
    let pid = info["pid"].as_i64().unwrap() as i32;
    assert!(pid_alive(pid));
    assert_eq!(info["session_id"], "s-1");
    // Bound to the agent: the hook's parent, this test process.
    assert_eq!(info["until_pid"], std::process::id());

    // A second session on the same repository does not start a second watcher.
    let r = alice.run_stdin(
        &["hook", "session-start", "--watch"],
        &input("SessionStart", "s-2"),
    );
    let context = r.json()["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        context.contains(&format!("memsync watch (pid {pid}, started earlier)")),
        "{context}"
    );

    // A teammate's push lands during the session.
    bob.write("news.md", &mem("news", "fresh\n"));
    assert_eq!(bob.run(&["push"]).code, 0);
    let took = eventually("bob's push in the session's team dir", BOUND, || {
        alice.read("news.md").is_some()
    });
    println!("a teammate's push reached the session's team dir {took:?} after it returned");

    // Another session's end leaves it alone; this session's end stops it.
    let r = alice.run_stdin(
        &["hook", "session-end", "--json"],
        &input("SessionEnd", "s-2"),
    );
    assert_eq!(r.code, 0);
    assert_eq!(r.json()["watch_stopped"], Value::Null, "{}", r.stdout);
    assert!(pid_alive(pid));
    let r = alice.run_stdin(
        &["hook", "session-end", "--json"],
        &input("SessionEnd", "s-1"),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json()["watch_stopped"], pid, "{}", r.stdout);
    eventually("the watcher gone", Duration::from_secs(2), || {
        !pid_alive(pid)
    });
    assert!(!pidfile.exists());
    // Its log says what it did.
    let log = std::fs::read_to_string(pidfile.with_file_name("watch.log")).unwrap();
    assert!(
        log.contains("news.md") && log.contains("stopped: SIGTERM"),
        "{log}"
    );
}
