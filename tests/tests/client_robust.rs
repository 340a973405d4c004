//! The client under hostile or broken conditions: a malicious server, symlinks, being killed
//! mid-way, a server that is down or slow during the session-start hook, and privacy.

use std::path::Path;
use std::time::{Duration, Instant};

use memsync_e2e::*;
use serde_json::{Value, json};

const ORIGIN: &str = "https://github.com/acme/api.git";

fn mem(name: &str, body: &str) -> String {
    memory(name, &format!("about {name}"), "project", body)
}

fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() && !e.file_type().unwrap().is_symlink() {
                out.extend(files_under(&p));
            } else {
                out.push(p.to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malicious_server_writes_nothing_outside_the_team_dir() {
    let home = tempfile::tempdir().unwrap();
    let repo = home.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let team = home.path().join("team");
    let outside = home.path().join("outside");
    std::fs::create_dir_all(team.join("notes")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, team.join("evil")).unwrap();
    let ok = mem("fine", "ok\n");
    let url = hostile_server(json!([
        file_state("../escape.md", "x"),
        file_state("notes/../../escape2.md", "x"),
        file_state("/etc/evil.md", "x"),
        file_state(&format!("{}/abs.md", outside.display()), "x"),
        file_state("..%2fescape3.md", "x"),
        file_state("evil/planted.md", "x"),
        file_state("notes\\..\\..\\escape4.md", "x"),
        file_state("fine.md", &ok),
        json!({ "path": "lying.md", "revision": 9, "deleted": false, "sha256": "0".repeat(64), "content": "x",
                "author": "m", "updated_at": "2026-11-30T00:00:00Z" }),
    ]))
    .await;
    let team_s = team.to_string_lossy().into_owned();
    let r = run_env(
        home.path(),
        &repo,
        &url,
        &["pull", "--json", "--team-dir", &team_s],
    );
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let skipped = r.json()["pull"]["skipped"].as_array().unwrap().len();
    assert_eq!(skipped, 8, "{}", r.stdout);
    // Only the valid file landed, inside the team dir; nothing anywhere else.
    assert_eq!(std::fs::read_to_string(team.join("fine.md")).unwrap(), ok);
    assert!(
        files_under(&outside).is_empty(),
        "{:?}",
        files_under(&outside)
    );
    for p in ["escape.md", "escape2.md", "escape3.md", "escape4.md"] {
        assert!(
            !home.path().join(p).exists() && !team.join(p).exists(),
            "{p}"
        );
    }
    assert!(!team.join("lying.md").exists());
    let everything: Vec<String> = files_under(home.path())
        .into_iter()
        .filter(|p| !p.contains("/.local/state/"))
        .collect();
    let expected = vec![
        team.join("fine.md").to_string_lossy().into_owned(),
        team.join("evil").to_string_lossy().into_owned(),
    ];
    let mut expected = expected;
    expected.sort();
    assert_eq!(everything, expected);

    // A team dir that is itself a symlink is refused outright.
    let link = home.path().join("team-link");
    std::os::unix::fs::symlink(&outside, &link).unwrap();
    let r = run_env(
        home.path(),
        &repo,
        &url,
        &["pull", "--team-dir", &link.to_string_lossy()],
    );
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("symlink"), "{}", r.stderr);
    assert!(files_under(&outside).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_pull_and_push_finish_on_the_next_run() {
    let (server, _db) = Server::start().await;
    let alice = User::new(&server, "alice", &["acme"], ORIGIN);
    let bob = User::new(&server, "bob", &["acme"], ORIGIN);
    for d in 0..10 {
        for i in 0..100 {
            alice.write(
                &format!("d{d}/m{i}.md"),
                &mem(&format!("m{d}-{i}"), &format!("body {d} {i}\n").repeat(20)),
            );
        }
    }
    let r = alice.run(&["push"]);
    assert_eq!(r.code, 0, "{}", r.stderr);

    for delay_ms in [15u64, 40, 90, 200] {
        let mut child = bob.command(&["pull", "--quiet"]).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        let _ = child.kill();
        let _ = child.wait();
    }
    let r = bob.run(&["pull"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    for d in 0..10 {
        for i in [0, 37, 99] {
            let p = format!("d{d}/m{i}.md");
            assert_eq!(bob.read(&p), alice.read(&p), "{p}");
        }
    }
    assert_eq!(
        files_under(&bob.team_dir()).len(),
        files_under(&alice.team_dir()).len()
    );
    assert!(
        files_under(&bob.team_dir())
            .iter()
            .all(|p| !p.contains(".memsync-tmp"))
    );

    // Bob edits 300 files; his push is killed mid-way, then run again.
    for d in 0..3 {
        for i in 0..100 {
            let p = format!("d{d}/m{i}.md");
            bob.write(&p, &format!("{}edited by bob\n", bob.read(&p).unwrap()));
        }
    }
    for delay_ms in [20u64, 60] {
        let mut child = bob.command(&["push", "--quiet"]).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        let _ = child.kill();
        let _ = child.wait();
    }
    let r = bob.run(&["sync"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(alice.run(&["pull"]).code, 0);
    for d in 0..3 {
        for i in [0, 50, 99] {
            let p = format!("d{d}/m{i}.md");
            assert!(alice.read(&p).unwrap().ends_with("edited by bob\n"), "{p}");
        }
    }
    let st = bob.run(&["status", "--json"]).json();
    assert_eq!(st["ahead"]["modified"], json!([]), "{st}");
}

fn hook(user: &User, extra_env: &[(&str, &str)], args: &[&str]) -> (Run, Duration) {
    let input = json!({
        "session_id": "s-1", "transcript_path": "/tmp/t.jsonl", "cwd": user.repo,
        "hook_event_name": "SessionStart", "source": "startup",
    })
    .to_string();
    let mut cmd = user.command(&[&["hook", "session-start"], args].concat());
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    // Run from elsewhere: the hook must find the project from `cwd` in its input.
    cmd.current_dir(user.home.path());
    let started = Instant::now();
    let mut child = cmd
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        },
        started.elapsed(),
    )
}

fn context_of(r: &Run) -> String {
    let j = r.json();
    assert_eq!(
        j["hookSpecificOutput"]["hookEventName"], "SessionStart",
        "{}",
        r.stdout
    );
    j["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_start_hook_up_down_and_slow() {
    let (mut server, _db) = Server::start().await;
    let alice = User::new(&server, "alice", &["acme"], ORIGIN);
    let bob = User::new(&server, "bob", &["acme"], ORIGIN);
    alice.write("testing.md", &mem("testing", "Real databases.\n"));
    alice.write(
        "MEMORY.md",
        "- [Testing](testing.md) — tests hit a real database\n",
    );
    assert_eq!(alice.run(&["push"]).code, 0);

    // Up: the hook pulls and hands the team index to the agent.
    let (r, _) = hook(&bob, &[], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let c = context_of(&r);
    assert!(
        c.contains(&bob.team_dir().to_string_lossy().into_owned()),
        "{c}"
    );
    assert!(c.contains("tests hit a real database"), "{c}");
    assert_eq!(
        bob.read("testing.md").as_deref(),
        Some(mem("testing", "Real databases.\n").as_str())
    );

    // Slow: a server that accepts and never answers. The hook answers by its deadline.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let slow = format!("http://{}", listener.local_addr().unwrap());
    let hold = std::thread::spawn(move || {
        let mut conns = Vec::new();
        listener.set_nonblocking(true).unwrap();
        let end = Instant::now() + Duration::from_secs(20);
        while Instant::now() < end {
            if let Ok((s, _)) = listener.accept() {
                conns.push(s);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    let (r, took) = hook(
        &bob,
        &[("MEMSYNC_SERVER", &slow), ("MEMSYNC_TOKEN", "any")],
        &["--deadline", "1s"],
    );
    assert_eq!(r.code, 0);
    let c = context_of(&r);
    assert!(c.contains("could not sync"), "{c}");
    assert!(
        c.contains("tests hit a real database"),
        "the last synced copy is used: {c}"
    );
    assert!(took < Duration::from_secs(8), "took {took:?}");
    drop(hold);

    // Down: the server is gone.
    server.kill();
    let (r, took) = hook(&bob, &[], &[]);
    assert_eq!(r.code, 0);
    let c = context_of(&r);
    assert!(
        c.contains("could not sync") && c.contains("tests hit a real database"),
        "{c}"
    );
    assert!(took < Duration::from_secs(8), "took {took:?}");

    // Not configured at all, or garbage on stdin: still valid hook JSON, exit 0.
    let stray = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(bin_path("memsync"))
        .args(["hook", "session-start"])
        .current_dir(stray.path())
        .env("HOME", stray.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["hookSpecificOutput"]["hookEventName"], "SessionStart");
}

#[test]
fn install_hook_is_idempotent_and_keeps_other_settings() {
    let home = tempfile::tempdir().unwrap();
    let repo = home.path().join("repo");
    std::fs::create_dir_all(repo.join(".claude")).unwrap();
    std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&repo)
        .status()
        .unwrap();
    let existing = json!({
        "model": "opus",
        "permissions": { "allow": ["Bash(cargo test:*)"] },
        "hooks": {
            "SessionStart": [ { "matcher": "startup", "hooks": [ { "type": "command", "command": "echo hello" } ] } ],
            "PreToolUse": [ { "matcher": "Bash", "hooks": [ { "type": "command", "command": "lint.sh" } ] } ]
        }
    });
    let settings = repo.join(".claude/settings.json");
    std::fs::write(&settings, serde_json::to_string_pretty(&existing).unwrap()).unwrap();
    let run = || {
        std::process::Command::new(bin_path("memsync"))
            .args(["install-hook", "--json"])
            .current_dir(&repo)
            .env("HOME", home.path())
            .output()
            .unwrap()
    };
    let first = run();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let second = run();
    assert!(second.status.success());
    let second: Value = serde_json::from_slice(&second.stdout).unwrap();
    assert_eq!(second["changed"], false);
    let now: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(now["model"], "opus");
    assert_eq!(now["permissions"], existing["permissions"]);
    assert_eq!(now["hooks"]["PreToolUse"], existing["hooks"]["PreToolUse"]);
    let starts = now["hooks"]["SessionStart"].to_string();
    assert!(starts.contains("echo hello"));
    assert_eq!(
        starts.matches("memsync hook session-start").count(),
        1,
        "{starts}"
    );
    assert_eq!(
        now["hooks"]["SessionEnd"]
            .to_string()
            .matches("memsync hook session-end")
            .count(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_memories_never_reach_the_server() {
    let (server, db) = Server::start().await;
    let alice = User::new(&server, "alice", &["acme"], ORIGIN);
    let bob = User::new(&server, "bob", &["acme"], ORIGIN);
    let canary = format!("CANARY-{}", uuid::Uuid::new_v4().simple());
    let private = alice.private_dir();
    std::fs::create_dir_all(&private).unwrap();
    std::fs::write(
        private.join("MEMORY.md"),
        format!("- [Me](me.md) — {canary}\n"),
    )
    .unwrap();
    std::fs::write(
        private.join("me.md"),
        memory("me", &canary, "user", &format!("{canary}\n")),
    )
    .unwrap();
    std::fs::write(
        private.join("feedback.md"),
        memory(
            "fb",
            "private feedback",
            "feedback",
            &format!("{canary} tabs\n"),
        ),
    )
    .unwrap();
    alice.write("team-note.md", &mem("team-note", "shared\n"));

    // Every command, including the ones that fail.
    for args in [
        vec!["pull"],
        vec!["push"],
        vec!["sync"],
        vec!["status"],
        vec!["diff"],
        vec!["resolve", "team-note.md", "--take", "local"],
        vec!["install-hook"],
        vec!["pull", "--json"],
    ] {
        let _ = alice.run(&args);
    }
    let _ = hook(&alice, &[], &[]);
    assert_eq!(bob.run(&["pull"]).code, 0);
    assert!(bob.read("team-note.md").is_some());
    let _ = alice.run(&["logout"]);

    // No table holds the canary, and neither does the server's log.
    let tables = assert_no_row_contains(&db, &canary).await;
    assert!(tables >= 8, "only {tables} tables searched");
    assert!(
        !server.log().contains(&canary),
        "the canary reached the server log"
    );
    assert!(
        server.log().len() > 100,
        "the server logged nothing at all?"
    );
}
