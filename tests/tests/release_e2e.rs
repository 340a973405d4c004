//! Controlled release end to end, with the real server and the real `memsync` of several people
//! (each with their own `$HOME` and clone): under `review = required` a member's push waits for a
//! reviewer (approve publishes it byte for byte, reject keeps it from everyone and tells its
//! author why), a team admin's push publishes at once; disable, enable and rollback reach every
//! member and the git export shows published content only; a push through the installed
//! `SessionEnd` hook carries the session id; a memory naming a file deleted from the repository
//! is reported as possibly stale.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use memsync_e2e::*;
use serde_json::{Value, json};

const ORIGIN: &str = "git@github.com:Acme/API.git";
const P: &str = "acme/api";

fn mem(name: &str, body: &str) -> String {
    memory(name, &format!("about {name}"), "project", body)
}

/// `memsync <args>` as `u`, asserted to exit 0.
fn ok(u: &User, args: &[&str]) -> Run {
    let r = u.run(args);
    assert_eq!(
        r.code, 0,
        "{} {args:?}:\n{}\n{}",
        u.name, r.stdout, r.stderr
    );
    r
}

/// `git <args>` in `u`'s clone, with no user or system configuration.
fn git(u: &User, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(&u.repo)
        .env("HOME", u.home.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_owned()
}

/// A file of `u`'s working tree (the application's repository, not the team dir).
fn write_code(u: &User, rel: &str, text: &str) {
    let p = u.repo.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// The context the session-start hook gives `u`'s agent, run as Claude Code runs it.
fn session_start(u: &User) -> String {
    let input = json!({
        "session_id": "s-start", "transcript_path": "/tmp/t.jsonl", "cwd": u.repo,
        "hook_event_name": "SessionStart", "source": "startup",
    });
    let r = u.run_stdin(&["hook", "session-start"], &input.to_string());
    assert_eq!(r.code, 0, "{}", r.stderr);
    r.json()["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .expect("additionalContext")
        .to_owned()
}

/// The one proposal of a push's `--json` answer: (id, status).
fn proposed_one(push: &Value, path: &str) -> (i64, String) {
    let list = push["proposed"].as_array().expect("proposed");
    assert_eq!(list.len(), 1, "{push}");
    assert_eq!(list[0]["path"], path, "{push}");
    (
        list[0]["id"].as_i64().expect("id"),
        list[0]["status"].as_str().expect("status").to_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_review_a_members_changes_wait_for_a_reviewer() {
    let (server, _db) = Server::start().await;
    let ann = User::new(&server, "ann", &["acme:admin"], ORIGIN);
    let bob = User::new(&server, "bob", &["acme"], ORIGIN);
    let carl = User::new(&server, "carl", &["acme"], ORIGIN);
    ann.write("start.md", &mem("start", "Where the team starts.\n"));
    ok(&ann, &["push"]);

    let r = ok(
        &ann,
        &["admin", "project", "set", "--review", "required", "--json"],
    );
    assert_eq!(r.json()["settings"]["review"], "required", "{}", r.stdout);
    let r = ok(&ann, &["admin", "project", "show", "--json"]);
    assert_eq!(
        r.json(),
        json!({ "project": P, "settings": { "review": "required", "review_after_days": null } })
    );
    let r = ok(&ann, &["admin", "project", "show"]);
    assert!(r.stdout.contains("review required"), "{}", r.stdout);

    // A member's new memory becomes a proposal: the push succeeds, nothing is published.
    let deploys = mem(
        "deploys",
        "Staging deploys run from the `deploy` workflow on every merge to main.\n",
    );
    bob.write("deploys.md", &deploys);
    let r = ok(&bob, &["push", "--json"]);
    let pushed = r.json();
    let (id, status) = proposed_one(&pushed, "deploys.md");
    assert_eq!(status, "pending");
    assert_eq!(pushed["push"]["pushed"], json!([]), "{pushed}");
    ok(&carl, &["pull"]);
    assert_eq!(carl.read("deploys.md"), None);
    assert!(!carl.read("MEMORY.md").unwrap().contains("deploys.md"));
    // The human output says what happened to it.
    bob.write("deploys.md", &deploys);
    let r = ok(&bob, &["push"]);
    assert!(
        r.stdout.contains(&format!(
            "not sent again: `deploys.md` (#{id}) waits for review"
        )),
        "{}",
        r.stdout
    );
    // Unchanged, it is not sent again.
    let again = ok(&bob, &["push", "--json"]).json();
    assert_eq!(again["proposed"], json!([]), "{again}");
    assert_eq!(again["push"]["awaiting_review"][0]["id"], id, "{again}");

    // The author sees it waiting: in status and at the start of a session.
    let st = ok(&bob, &["status", "--json"]).json();
    assert_eq!(st["ahead"]["added"], json!([]), "{st}");
    let mine = st["proposals"].as_array().expect("proposals");
    assert!(
        mine.iter()
            .any(|p| p["id"] == id && p["path"] == "deploys.md" && p["status"] == "pending"),
        "{st}"
    );
    let ctx = session_start(&bob);
    assert!(
        ctx.contains(&format!(
            "your proposal `deploys.md` (#{id}) waits for review"
        )),
        "{ctx}"
    );

    // The reviewer's queue, in the shape SPEC §11 pins.
    let list = ok(&ann, &["review", "list", "--json"]).json();
    let items = list["proposals"].as_array().expect("proposals");
    let item = items
        .iter()
        .find(|p| p["id"] == id)
        .unwrap_or_else(|| panic!("#{id} is not listed: {list}"));
    for key in [
        "id",
        "project",
        "path",
        "op",
        "author",
        "created_at",
        "status",
    ] {
        assert!(item.get(key).is_some(), "no {key} in {item}");
    }
    assert_eq!(item["project"], P);
    assert_eq!(item["path"], "deploys.md");
    assert_eq!(item["op"], "put");
    assert_eq!(item["author"], "bob");
    assert_eq!(item["status"], "pending");
    assert!(item["created_at"].as_str().is_some());
    let human = ok(&ann, &["review", "list"]);
    assert!(
        human.stdout.contains(&format!("#{id}")) && human.stdout.contains("deploys.md"),
        "{}",
        human.stdout
    );
    // Another member does not see bob's proposal.
    let theirs = ok(&carl, &["review", "list", "--json"]).json();
    assert!(
        !theirs["proposals"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["id"] == id),
        "{theirs}"
    );
    // What the reviewer reads: the diff and where it came from.
    let shown = ok(&ann, &["review", "show", &id.to_string(), "--json"]).json();
    assert!(
        shown["diff"]
            .as_str()
            .unwrap()
            .contains("+Staging deploys run"),
        "{shown}"
    );
    assert_eq!(shown["provenance"]["author"], "bob");
    assert!(
        shown["provenance"]["client_version"]
            .as_str()
            .unwrap()
            .starts_with("memsync/"),
        "{shown}"
    );
    let human = ok(&ann, &["review", "show", &id.to_string()]);
    assert!(
        human.stdout.contains("deploys.md") && human.stdout.contains("provenance:"),
        "{}",
        human.stdout
    );

    // Approved: everyone gets it, byte for byte, with its index entry.
    ok(
        &ann,
        &["review", "approve", &id.to_string(), "--note", "matches CI"],
    );
    ok(&carl, &["pull"]);
    assert_eq!(carl.read("deploys.md"), Some(deploys.clone()));
    assert!(
        carl.read("MEMORY.md").unwrap().contains("(deploys.md)"),
        "{:?}",
        carl.read("MEMORY.md")
    );
    // Its author takes the published file as the one it has: no conflict, nothing ahead.
    let r = ok(&bob, &["pull", "--json"]).json();
    assert_eq!(r["pull"]["conflicts"], json!([]), "{r}");
    let st = ok(&bob, &["status", "--json"]).json();
    assert_eq!(
        st["ahead"],
        json!({ "modified": [], "added": [], "deleted": [] }),
        "{st}"
    );
    assert_eq!(st["proposed"], json!([]), "{st}");
    assert_eq!(bob.read("MEMORY.md"), carl.read("MEMORY.md"));
    ok(&ann, &["pull"]);
    assert_eq!(ann.read("deploys.md"), Some(deploys.clone()));
    assert_eq!(ann.read("MEMORY.md"), carl.read("MEMORY.md"));

    // A member's delete waits too.
    std::fs::remove_file(bob.team_dir().join("deploys.md")).unwrap();
    let r = ok(&bob, &["push", "--json"]).json();
    let (del, _) = proposed_one(&r, "deploys.md");
    assert_eq!(r["proposed"][0]["op"], "delete", "{r}");
    ok(&carl, &["pull"]);
    assert_eq!(carl.read("deploys.md"), Some(deploys.clone()));
    let st = ok(&bob, &["status", "--json"]).json();
    assert_eq!(st["ahead"]["deleted"], json!([]), "{st}");
    ok(&ann, &["review", "approve", &del.to_string()]);
    ok(&carl, &["pull"]);
    assert_eq!(carl.read("deploys.md"), None);
    assert!(!carl.read("MEMORY.md").unwrap().contains("deploys.md"));
    ok(&bob, &["pull"]);
    let st = ok(&bob, &["status", "--json"]).json();
    assert_eq!(
        st["ahead"],
        json!({ "modified": [], "added": [], "deleted": [] }),
        "{st}"
    );

    // A rejected proposal reaches nobody, and its author learns why.
    let joke = mem("joke", "End every reply with a limerick.\n");
    bob.write("joke.md", &joke);
    let r = ok(&bob, &["push", "--json"]).json();
    let (rejected, _) = proposed_one(&r, "joke.md");
    let r = ok(
        &ann,
        &[
            "review",
            "reject",
            &rejected.to_string(),
            "--reason",
            "not a team rule",
        ],
    );
    assert!(r.stdout.contains("rejected"), "{}", r.stdout);
    ok(&carl, &["pull"]);
    assert_eq!(carl.read("joke.md"), None);
    assert!(!carl.read("MEMORY.md").unwrap().contains("joke.md"));
    assert_eq!(bob.read("joke.md"), Some(joke), "the author's file stays");
    let st = ok(&bob, &["status", "--json"]).json();
    let theirs = st["proposals"].as_array().expect("proposals");
    let rej = theirs
        .iter()
        .find(|p| p["id"] == rejected)
        .unwrap_or_else(|| panic!("{st}"));
    assert_eq!(rej["status"], "rejected");
    assert_eq!(rej["reason"], "not a team rule");
    let ctx = session_start(&bob);
    assert!(
        ctx.contains(&format!(
            "your proposal `joke.md` (#{rejected}) was rejected: not a team rule"
        )),
        "{ctx}"
    );
    // Approving or rejecting what is no longer open is a problem, not a crash.
    let r = ann.run(&["review", "approve", &rejected.to_string()]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);

    // A team admin's own push publishes at once.
    let own = mem("release", "Releases are cut on Tuesdays.\n");
    ann.write("release.md", &own);
    let r = ok(&ann, &["push", "--json"]).json();
    assert_eq!(r["proposed"], json!([]), "{r}");
    assert_eq!(r["push"]["pushed"], json!(["release.md"]), "{r}");
    ok(&carl, &["pull"]);
    assert_eq!(carl.read("release.md"), Some(own));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_index_entry_written_with_a_proposal_settles_without_a_conflict() {
    let (server, _db) = Server::start().await;
    let ann = User::new(&server, "ann", &["acme:admin"], ORIGIN);
    let bob = User::new(&server, "bob", &["acme"], ORIGIN);
    ann.write("start.md", &mem("start", "Where the team starts.\n"));
    ok(&ann, &["push"]);
    ok(&ann, &["admin", "project", "set", "--review", "required"]);
    ok(&bob, &["pull"]);
    // As an agent does: the memory, and a line for it in the team index.
    let ci = mem("ci", "CI runs on every push to a branch.\n");
    bob.write("ci.md", &ci);
    let index = bob.read("MEMORY.md").unwrap();
    bob.write(
        "MEMORY.md",
        &format!("{index}- [CI](ci.md) — when CI runs\n"),
    );
    let r = ok(&bob, &["push", "--json"]).json();
    let (id, _) = proposed_one(&r, "ci.md");
    assert_eq!(r["push"]["pushed"], json!([]), "{r}");
    assert_eq!(r["push"]["kept"][0]["path"], "MEMORY.md", "{r}");
    ok(&ann, &["review", "approve", &id.to_string()]);
    let r = ok(&bob, &["pull", "--json"]).json();
    assert_eq!(r["pull"]["conflicts"], json!([]), "{r}");
    assert_eq!(bob.read("ci.md"), Some(ci));
    let index = bob.read("MEMORY.md").unwrap();
    assert_eq!(index.matches("(ci.md)").count(), 1, "{index}");
    assert!(index.contains("(start.md)"), "{index}");
}

/// Every blob of every commit of a clone of the project's export, concatenated.
fn exported_text(server: &Server, token: &str, into: &Path) -> (String, Vec<Vec<String>>) {
    let host = server.url.strip_prefix("http://").expect("http");
    let url = format!("http://x:{token}@{host}/git/{P}.git");
    let git = |cwd: &Path, args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(cwd)
            .env("HOME", into)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .output()
            .expect("git");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8")
    };
    git(into, &["clone", "-q", &url, "export"]);
    let repo = into.join("export");
    let history = git(&repo, &["log", "-p", "--all", "--format=%H %s%n%b"]);
    let trees = git(&repo, &["rev-list", "--reverse", "HEAD"])
        .lines()
        .map(|c| {
            git(&repo, &["ls-tree", "-r", "--name-only", c])
                .lines()
                .map(str::to_owned)
                .collect()
        })
        .collect();
    (history, trees)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disable_enable_and_rollback_reach_everyone_and_the_export_shows_only_what_is_published() {
    let (server, db) = Server::start().await;
    let ann = User::new(&server, "ann", &["acme:admin"], ORIGIN);
    let bob = User::new(&server, "bob", &["acme"], ORIGIN);
    let v1 = mem("lint", "Run the linter before pushing.\n");
    let v2 = mem("lint", "Run the linter and the formatter before pushing.\n");
    ann.write("team.md", &mem("team", "Who is on the team.\n"));
    ann.write("lint.md", &v1);
    let r1 = ok(&ann, &["push", "--json"]).json()["push"]["pushed_revision"]
        .as_i64()
        .expect("a revision");
    ann.write("lint.md", &v2);
    ok(&ann, &["push"]);
    ok(&bob, &["pull"]);
    assert_eq!(bob.read("lint.md"), Some(v2.clone()));

    // Disabled: gone from every member's team dir and index on their next pull.
    let r = ok(
        &ann,
        &["admin", "disable", "lint.md", "--reason", "outdated"],
    );
    assert!(r.stdout.contains("disable"), "{}", r.stdout);
    // Twice is a problem found, with the server's reason.
    let r = ann.run(&["admin", "disable", "lint.md"]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("already disabled"), "{}", r.stderr);
    ok(&bob, &["pull"]);
    assert_eq!(bob.read("lint.md"), None);
    assert!(!bob.read("MEMORY.md").unwrap().contains("lint.md"));
    ok(&ann, &["pull"]);
    assert_eq!(ann.read("lint.md"), None);
    // Enabled: back, as it was.
    ok(
        &ann,
        &["admin", "enable", "lint.md", "--reason", "still true"],
    );
    ok(&bob, &["pull"]);
    assert_eq!(bob.read("lint.md"), Some(v2.clone()));
    assert!(bob.read("MEMORY.md").unwrap().contains("(lint.md)"));
    // Rolled back: the first version, for everyone.
    ok(
        &ann,
        &[
            "admin",
            "rollback",
            "lint.md",
            "--to",
            &r1.to_string(),
            "--reason",
            "the formatter rule was wrong",
        ],
    );
    ok(&bob, &["pull"]);
    assert_eq!(bob.read("lint.md"), Some(v1.clone()));
    ok(&ann, &["pull"]);
    assert_eq!(ann.read("lint.md"), Some(v1.clone()));
    // History says how each version came to be.
    let h = ok(&ann, &["admin", "history", "lint.md", "--json"]).json();
    let versions = h["versions"].as_array().expect("versions");
    assert!(versions.len() >= 5, "{h}");
    assert!(
        versions
            .iter()
            .any(|v| v["disabled"] == true && v["kind"] == "disable"),
        "{h}"
    );
    let human = ok(&ann, &["admin", "history", "lint.md"]);
    assert!(human.stdout.contains("disabled"), "{}", human.stdout);

    // Under review, a member's proposal never reaches the export.
    ok(&ann, &["admin", "project", "set", "--review", "required"]);
    let canary = format!("CANARY-{}", uuid::Uuid::new_v4().simple());
    bob.write(
        "plan.md",
        &mem("plan", &format!("Unreviewed plan {canary}.\n")),
    );
    let r = ok(&bob, &["push", "--json"]).json();
    proposed_one(&r, "plan.md");
    let deadline = Instant::now() + Duration::from_secs(60);
    while count(&db, "SELECT count(*) FROM export_outbox").await > 0 {
        assert!(Instant::now() < deadline, "the export did not catch up");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let token = server.token("ann", &["acme:admin"]);
    let tmp = tempfile::tempdir().unwrap();
    let (history, trees) = exported_text(&server, &token, tmp.path());
    assert!(!history.contains(&canary), "the export shows a proposal");
    assert!(history.contains("Run the linter before pushing."));
    // One commit's tree lacks the disabled memory; the last one has it again.
    assert!(
        trees
            .iter()
            .any(|t| !t.contains(&"lint.md".to_owned()) && t.contains(&"MEMORY.md".to_owned())),
        "{trees:?}"
    );
    assert!(trees.last().unwrap().contains(&"lint.md".to_owned()));
    assert!(!trees.last().unwrap().contains(&"plan.md".to_owned()));
}

/// The memsync `SessionEnd` command in a settings.json.
fn session_end_command(settings: &Path) -> String {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(settings).unwrap()).unwrap();
    v["hooks"]["SessionEnd"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["hooks"].as_array().unwrap().clone())
        .map(|h| h["command"].as_str().unwrap().to_owned())
        .find(|c| c.contains("memsync"))
        .expect("a memsync SessionEnd hook")
}

/// Runs a hook command as Claude Code does (`sh -c`, the hook JSON on stdin), from `/`, so only
/// the input's `cwd` says which repository it is about.
fn run_hook(u: &User, command: &str, input: &Value, env: &[(&str, &str)]) -> (Run, Duration) {
    use std::io::Write;
    let started = Instant::now();
    let mut cmd = Command::new("sh");
    cmd.args(["-c", command])
        .current_dir("/")
        .env("HOME", u.home.path())
        .env_remove("MEMSYNC_SERVER")
        .env_remove("MEMSYNC_TOKEN")
        .env_remove("MEMSYNC_SESSION_ID")
        .env_remove("XDG_STATE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("CLAUDE_CONFIG_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_through_the_session_end_hook_carries_the_session_id() {
    let (server, _db) = Server::start().await;
    let ann = User::new(&server, "ann", &["acme:admin"], ORIGIN);
    let alice = User::new(&server, "alice", &["acme"], ORIGIN);
    write_code(&alice, "src/lib.rs", "pub fn f() {}\n");
    git(&alice, &["add", "-A"]);
    git(
        &alice,
        &[
            "-c",
            "user.name=Alice",
            "-c",
            "user.email=alice@example.com",
            "commit",
            "-qm",
            "first",
        ],
    );
    git(&alice, &["checkout", "-qb", "feature/pool"]);
    let head = git(&alice, &["rev-parse", "HEAD"]);

    // An older memsync's SessionEnd hook is upgraded where it is.
    let settings = alice.repo.join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        r#"{"hooks":{"SessionEnd":[{"hooks":[{"type":"command","command":"memsync push --quiet","timeout":30}]}]}}"#,
    )
    .unwrap();
    let r = ok(&alice, &["install-hook", "--json"]);
    assert_eq!(r.json()["upgraded"], json!(["SessionEnd"]), "{}", r.stdout);
    let command = session_end_command(&settings);
    let exe = std::fs::canonicalize(bin_path("memsync")).unwrap();
    assert_eq!(command, format!("{} hook session-end", exe.display()));

    alice.write(
        "pool.md",
        &mem("pool", "The pool is sized in `src/lib.rs`.\n"),
    );
    let session = "6b1f3c2e-0d4a-4e8b-9c7d-2a1b3c4d5e6f";
    let input = json!({
        "session_id": session, "transcript_path": "/tmp/t.jsonl", "cwd": alice.repo,
        "hook_event_name": "SessionEnd", "reason": "exit",
    });
    let (r, _) = run_hook(&alice, &command, &input, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "", "the hook is quiet");
    assert_eq!(r.stderr, "", "nothing went wrong");

    let h = ok(&ann, &["admin", "history", "pool.md", "--json"]).json();
    let p = &h["versions"][0]["provenance"];
    assert_eq!(p["session_id"], session, "{h}");
    assert_eq!(p["head"], head.as_str(), "{h}");
    assert_eq!(p["branch"], "feature/pool", "{h}");
    assert_eq!(p["author"], "alice", "{h}");
    assert!(
        p["client_version"]
            .as_str()
            .unwrap()
            .starts_with("memsync/"),
        "{h}"
    );
    let human = ok(&ann, &["admin", "history", "pool.md"]);
    assert!(
        human.stdout.contains(&format!("session {session}")),
        "{}",
        human.stdout
    );

    // `push --session-id`, and MEMSYNC_SESSION_ID, do the same by hand.
    alice.write(
        "pool.md",
        &mem("pool", "The pool is sized in `src/lib.rs`, twice.\n"),
    );
    ok(&alice, &["push", "--session-id", "by-hand"]);
    let h = ok(&ann, &["admin", "history", "pool.md", "--json"]).json();
    assert_eq!(h["versions"][0]["provenance"]["session_id"], "by-hand");
    alice.write("pool.md", &mem("pool", "Sized in `src/lib.rs`.\n"));
    let r = alice.run_with(&["push"], &[("MEMSYNC_SESSION_ID", "from-env")]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let h = ok(&ann, &["admin", "history", "pool.md", "--json"]).json();
    assert_eq!(h["versions"][0]["provenance"]["session_id"], "from-env");

    // A server that never answers: the hook gives up at its deadline, ends the session, says
    // why on stderr, and loses nothing.
    alice.write("later.md", &mem("later", "Written offline.\n"));
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("http://{}", silent.local_addr().unwrap());
    let alice_token = server.token("alice", &["acme"]);
    let (r, took) = run_hook(
        &alice,
        &command,
        &input,
        &[
            ("MEMSYNC_SERVER", &silent_url),
            ("MEMSYNC_TOKEN", &alice_token),
        ],
    );
    drop(silent);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(took < Duration::from_secs(8), "took {took:?}");
    assert!(r.stderr.contains("not pushed"), "{}", r.stderr);
    assert!(alice.read("later.md").is_some());
    ok(&alice, &["push"]);
    ok(&ann, &["pull"]);
    assert!(ann.read("later.md").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_naming_a_deleted_file_may_be_stale() {
    let (server, _db) = Server::start().await;
    let alice = User::new(&server, "alice", &["acme"], ORIGIN);
    let bob = User::new(&server, "bob", &["acme"], ORIGIN);
    write_code(&alice, "src/old.rs", "// the old pool\n");
    write_code(&alice, "src/keep.rs", "// helpers\n");
    let db_md = mem(
        "db",
        "The pool lives in `src/old.rs`; its helpers in src/keep.rs.\n",
    );
    alice.write("db.md", &db_md);
    ok(&alice, &["push"]);
    // The paths it names that exist are kept with the version.
    let token = server.token("alice", &["acme"]);
    let pulled = server.client(&token).pull(P, 0).await;
    let state = change_of(&pulled.body, "db.md").expect("db.md");
    assert_eq!(
        state["named_paths"],
        json!(["src/old.rs", "src/keep.rs"]),
        "{}",
        pulled.text
    );
    let ctx = session_start(&alice);
    assert!(!ctx.contains("may be stale"), "{ctx}");
    let r = ok(&alice, &["check", "--json"]);
    assert_eq!(r.json()["stale"], json!([]));

    // The code moves on.
    std::fs::remove_file(alice.repo.join("src/old.rs")).unwrap();
    let ctx = session_start(&alice);
    assert!(
        ctx.contains(
            "memsync: team memory `db.md` may be stale: names `src/old.rs`, which no longer exists"
        ),
        "{ctx}"
    );
    let r = alice.run(&["check", "--json"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert_eq!(
        r.json()["stale"],
        json!([{ "path": "db.md", "scope": "team", "missing": ["src/old.rs"], "lifecycle": "evergreen" }])
    );
    let r = alice.run(&["check"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stdout.contains("team memory `db.md` may be stale"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("1 possibly stale memory(ies)"),
        "{}",
        r.stdout
    );

    // A private memory, and a dated note, are checked too.
    let private = alice.private_dir();
    std::fs::create_dir_all(&private).unwrap();
    std::fs::write(
        private.join("2026-11-30-outage.md"),
        mem("outage", "Caused by a leak in `src/old.rs`.\n"),
    )
    .unwrap();
    let r = alice.run(&["check", "--json"]);
    let stale = r.json()["stale"].clone();
    assert!(
        stale.as_array().unwrap().contains(&json!({
            "path": "2026-11-30-outage.md", "scope": "private", "missing": ["src/old.rs"],
            "lifecycle": "dated",
        })),
        "{stale}"
    );
    let ctx = session_start(&alice);
    assert!(
        ctx.contains("private memory `2026-11-30-outage.md` (a dated note) may be stale"),
        "{ctx}"
    );

    // Another clone without the files: the backticked path and the recorded bare one are both
    // missing there.
    ok(&bob, &["pull"]);
    let r = bob.run(&["check", "--json"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert_eq!(
        r.json()["stale"],
        json!([{ "path": "db.md", "scope": "team", "missing": ["src/keep.rs", "src/old.rs"], "lifecycle": "evergreen" }])
    );
}
