//! One project, several agents, with the real agents: Codex CLI 0.171 and Claude Code 2.1.332
//! (installed by scripts/test from the npm registry) against a loopback stand-in for their model
//! APIs, the real server and the real `memsync`. Shown here: `install-hook --agent codex` keeps
//! foreign hooks and is idempotent, Codex trust is reported by `doctor` and given through Codex's
//! own app-server; the team index reaches Codex's first model request through the SessionStart
//! hook, whose output Codex accepts with the server up, down, slow and with no project; a memory
//! the Codex session writes is pushed when it ends and reaches the same user's Claude Code layout
//! and a Claude Code session, and back; `render` owns only its block of an instruction file.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use memsync_e2e::agents::{
    ModelStandIn, Reply, claude_binary, codex_binary, codex_config, team_dir_in,
};
use memsync_e2e::*;
use serde_json::{Value, json};

const ORIGIN: &str = "git@github.com:acme/api.git";
const P: &str = "acme/api";

fn mem(name: &str, body: &str) -> String {
    memory(name, &format!("about {name}"), "project", body)
}

fn ok(u: &User, args: &[&str]) -> Run {
    let r = u.run(args);
    assert_eq!(
        r.code, 0,
        "{} {args:?}:\n{}\n{}",
        u.name, r.stdout, r.stderr
    );
    r
}

/// A user's `$CODEX_HOME` (the default, `~/.codex`).
fn codex_home(u: &User) -> PathBuf {
    u.home.path().join(".codex")
}

/// Codex's config for `u`, pointed at the stand-in.
fn setup_codex(u: &User, standin: &ModelStandIn) {
    let home = codex_home(u);
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("config.toml"), codex_config(&standin.url, &home)).unwrap();
}

/// `$PATH` with the Codex binary's directory first (so `memsync doctor` and `--trust` find it).
fn path_with_codex() -> String {
    let dir = codex_binary().parent().unwrap().to_path_buf();
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// `memsync <args>` as `u` with Codex on PATH.
fn memsync_with_codex(u: &User, args: &[&str]) -> Run {
    let out = u
        .command(args)
        .env("PATH", path_with_codex())
        .stdin(Stdio::null())
        .output()
        .expect("memsync");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// One `codex exec` session of `u` in its clone, as a person starts it (no flag bypasses any
/// trust unless `extra` says so).
async fn codex_exec(u: &User, cwd: &Path, extra: &[&str]) -> Run {
    codex_exec_env(u, cwd, extra, &[]).await
}

async fn codex_exec_env(u: &User, cwd: &Path, extra: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(codex_binary());
    cmd.arg("exec")
        .args(extra)
        .arg("Note what you learn about this repository.")
        .current_dir(cwd)
        .env_clear()
        .env("HOME", u.home.path())
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("TMPDIR", u.home.path())
        .envs(env.iter().copied())
        .stdin(Stdio::null());
    run_blocking(cmd).await
}

/// One `claude -p` session of `u` in its clone against the stand-in; the Write tool is allowed
/// (Claude Code lets it write in the project's memory dir).
async fn claude_p(u: &User, standin: &ModelStandIn) -> Run {
    let mut cmd = Command::new(claude_binary());
    cmd.args([
        "-p",
        "Note what you learn about this repository.",
        "--allowedTools",
        "Write",
    ])
    .current_dir(&u.repo)
    .env_clear()
    .env("HOME", u.home.path())
    .env("PATH", std::env::var("PATH").unwrap_or_default())
    .env("TMPDIR", u.home.path())
    .env("TERM", "dumb")
    .env("ANTHROPIC_BASE_URL", &standin.url)
    .env("ANTHROPIC_API_KEY", "stand-in-key")
    // Nothing but the stand-in: no telemetry, update checks or error reports.
    .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
    .env("DISABLE_AUTOUPDATER", "1")
    .env("DISABLE_TELEMETRY", "1")
    .env("DISABLE_ERROR_REPORTING", "1")
    .env("CLAUDE_CODE_MAX_RETRIES", "0")
    .env("CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK", "1")
    .stdin(Stdio::null());
    run_blocking(cmd).await
}

async fn run_blocking(mut cmd: Command) -> Run {
    let out = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .expect("join")
        .expect("spawn agent");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The stand-in's script: write `file` with `content` into the team dir the context names, else
/// just answer.
fn write_into_team_dir(file: &'static str, content: String) -> impl Fn(&Value) -> Reply {
    move |body: &Value| match team_dir_in(body, P) {
        Some(dir) => Reply::WriteFile {
            path: format!("{dir}/{file}"),
            content: content.clone(),
        },
        None => Reply::Text("No team memory here.".to_owned()),
    }
}

/// The memsync revision a layout's state records (`status --json`).
fn layout_revision(u: &User, agent: &str) -> i64 {
    let r = ok(u, &["--agent", agent, "status", "--offline", "--json"]);
    r.json()["revision"]
        .as_i64()
        .unwrap_or_else(|| panic!("{}", r.stdout))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_and_claude_code_share_the_team_memory_both_ways() {
    let (server, _db) = Server::start().await;
    let ann = User::new(&server, "ann", &["acme:admin"], ORIGIN);
    let bob = User::new(&server, "bob", &["acme"], ORIGIN);
    ann.write(
        "deploys.md",
        &mem("deploys", "Staging deploys run from the deploy workflow.\n"),
    );
    ok(&ann, &["push"]);

    let codex_note = mem(
        "codex-note",
        "Integration tests need `make db` first (learned in a Codex session).\n",
    );
    let claude_note = mem(
        "claude-note",
        "The API's error codes are listed in errors.rs (learned in a Claude Code session).\n",
    );
    let codex_standin =
        ModelStandIn::start(write_into_team_dir("codex-note.md", codex_note.clone())).await;
    let claude_standin =
        ModelStandIn::start(write_into_team_dir("claude-note.md", claude_note.clone())).await;

    // Bob uses both agents in his clone: Claude Code's hooks in the project, Codex's for him.
    std::fs::create_dir_all(bob.repo.join(".claude")).unwrap();
    std::fs::create_dir_all(bob.repo.join(".codex")).unwrap();
    setup_codex(&bob, &codex_standin);
    ok(&bob, &["install-hook"]);
    let r = memsync_with_codex(&bob, &["install-hook", "--agent", "codex", "--user"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("trust") && r.stdout.contains("memsync doctor --agent codex"),
        "{}",
        r.stdout
    );

    // Installed, not trusted: Codex skips the hooks without a word, and doctor says so.
    let d = memsync_with_codex(&bob, &["--agent", "codex", "doctor", "--json"]);
    let checks = d.json()["checks"].clone();
    let trust = checks
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "codex trust")
        .unwrap_or_else(|| panic!("{}", d.stdout))
        .clone();
    assert_eq!(trust["status"], "fail", "{trust}");
    assert!(
        trust["message"]
            .as_str()
            .unwrap()
            .contains("installed but not trusted"),
        "{trust}"
    );
    let run = codex_exec(&bob, &bob.repo, &[]).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let first = &codex_standin.requests()[0];
    assert!(
        !first.text().contains("deploys.md"),
        "an untrusted hook ran"
    );
    codex_standin.clear();

    // Trusted through Codex's own app-server: Codex computes the hashes and records them.
    let r = memsync_with_codex(
        &bob,
        &["install-hook", "--agent", "codex", "--user", "--trust"],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("Codex trusts memsync's hooks"),
        "{}",
        r.stdout
    );
    let config = std::fs::read_to_string(codex_home(&bob).join("config.toml")).unwrap();
    assert!(config.contains("trusted_hash"), "{config}");
    let d = memsync_with_codex(&bob, &["--agent", "codex", "doctor", "--json"]);
    assert!(
        d.json()["checks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["check"] == "codex trust" && c["status"] == "ok"),
        "{}",
        d.stdout
    );

    // A Codex session: the team index reaches the first model request through the hook, and
    // the memory the session writes into the team dir the context names is pushed at its end.
    let run = codex_exec(&bob, &bob.repo, &[]).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        !run.stderr.contains("hook: SessionStart Failed"),
        "{}",
        run.stderr
    );
    let reqs = codex_standin.requests();
    assert_eq!(reqs.len(), 2, "a tool call and its result");
    let first = reqs[0].text();
    assert!(
        first.contains("[deploys]") || first.contains("deploys.md"),
        "{first}"
    );
    let codex_team = team_dir_in(&reqs[0].body, P).expect("the context names the team dir");
    assert!(
        codex_team.starts_with(
            &codex_home(&bob)
                .join("memsync/projects")
                .display()
                .to_string()
        ),
        "{codex_team}"
    );
    assert_eq!(
        std::fs::read_to_string(Path::new(&codex_team).join("codex-note.md")).unwrap(),
        codex_note
    );
    ok(&ann, &["pull"]);
    assert_eq!(
        ann.read("codex-note.md").as_deref(),
        Some(codex_note.as_str())
    );
    // Bob's Claude Code layout follows, at the same revision, with nothing to push back.
    assert_eq!(
        bob.read("codex-note.md").as_deref(),
        Some(codex_note.as_str())
    );
    assert_eq!(
        layout_revision(&bob, "claude"),
        layout_revision(&bob, "codex")
    );
    let st = ok(&bob, &["status", "--json"]).json();
    assert_eq!(st["ahead"]["added"], json!([]), "{st}");
    assert_eq!(st["ahead"]["modified"], json!([]), "{st}");

    // Claude Code's next session gets it, and writes a memory of its own.
    let run = claude_p(&bob, &claude_standin).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let reqs = claude_standin.requests();
    assert!(reqs.len() >= 2, "{reqs:?}");
    let first = reqs[0].text();
    assert!(first.contains("codex-note.md"), "{first}");
    // (Claude Code stamps a memory's frontmatter with `modified:` as it writes it.)
    let written = bob
        .read("claude-note.md")
        .expect("Claude Code wrote the memory");
    assert!(
        written.contains("learned in a Claude Code session")
            && written.contains("name: claude-note"),
        "{written}"
    );
    ok(&ann, &["pull"]);
    assert_eq!(
        ann.read("claude-note.md").as_deref(),
        Some(written.as_str())
    );
    assert_eq!(
        std::fs::read_to_string(Path::new(&codex_team).join("claude-note.md")).unwrap(),
        written
    );

    // And back: the next Codex session's first request carries the Claude Code memory.
    codex_standin.clear();
    let run = codex_exec(&bob, &bob.repo, &[]).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        codex_standin.requests()[0]
            .text()
            .contains("claude-note.md")
    );

    // Each memory was pushed once: one version each on the server.
    for f in ["codex-note.md", "claude-note.md"] {
        let h = ok(&ann, &["admin", "history", f, "--json"]).json();
        let versions = h["versions"].as_array().unwrap_or_else(|| panic!("{h}"));
        assert_eq!(versions.len(), 1, "{f}: {h}");
    }
}

/// A server that accepts connections and never answers.
async fn silent_server() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((sock, _)) = listener.accept().await {
            held.push(sock);
        }
    });
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_accepts_the_session_start_output_with_the_server_up_down_slow_and_no_project() {
    let (server, _db) = Server::start().await;
    let ann = User::new(&server, "ann", &["acme"], ORIGIN);
    ann.write("deploys.md", &mem("deploys", "Deploys run from CI.\n"));
    ok(&ann, &["push"]);
    let standin = ModelStandIn::start(|_: &Value| Reply::Text("ok".to_owned())).await;
    setup_codex(&ann, &standin);
    let r = memsync_with_codex(
        &ann,
        &["install-hook", "--agent", "codex", "--user", "--trust"],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);

    let down = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let slow = silent_server().await;
    // Ann's token goes with the session for those servers too: what fails there is the server.
    let token = server.token("ann", &["acme"]);
    let elsewhere = tempfile::tempdir().unwrap();
    for (case, server_url, cwd, expect) in [
        ("up", server.url.clone(), ann.repo.clone(), "deploys.md"),
        (
            "down",
            down,
            ann.repo.clone(),
            "could not sync this session",
        ),
        ("slow", slow, ann.repo.clone(), "did not answer within"),
        (
            "no project",
            server.url.clone(),
            elsewhere.path().to_path_buf(),
            "team memory is not available in this session",
        ),
    ] {
        let toml = format!("server = \"{server_url}\"\nproject = \"{P}\"\n");
        std::fs::write(ann.repo.join(".memsync.toml"), toml).unwrap();
        standin.clear();
        let run = codex_exec_env(
            &ann,
            &cwd,
            &["--skip-git-repo-check"],
            &[("MEMSYNC_TOKEN", &token)],
        )
        .await;
        assert_eq!(run.code, 0, "{case}: {}\n{}", run.stdout, run.stderr);
        assert!(
            !run.stderr.contains("Failed"),
            "{case}: Codex refused the hook's output:\n{}",
            run.stderr
        );
        let reqs = standin.requests();
        assert!(!reqs.is_empty(), "{case}: Codex did not start");
        let first = reqs[0].text();
        assert!(first.contains(expect), "{case}: {first}");
    }
}

#[test]
fn codex_install_hook_keeps_foreign_hooks_is_idempotent_and_comes_out_again() {
    let home = tempfile::tempdir().unwrap();
    let repo = home.path().join("repo");
    std::fs::create_dir_all(repo.join(".codex")).unwrap();
    git(Some(&repo), &["init", "-q"]);
    let foreign = json!({"hooks": {
        "SessionStart": [{"matcher": "startup|resume", "hooks": [{"type": "command", "command": "/opt/other/start.sh", "timeout": 5}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]}]
    }});
    let file = repo.join(".codex/hooks.json");
    std::fs::write(&file, serde_json::to_string_pretty(&foreign).unwrap()).unwrap();
    let run = |args: &[&str]| run_env(home.path(), &repo, "http://127.0.0.1:9", args);

    let r = run(&["install-hook", "--agent", "codex", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let out = &r.json()["agents"][0];
    assert_eq!(out["added"], json!(["SessionStart", "SessionEnd"]), "{out}");
    assert!(
        out["steps"].to_string().contains("trust this folder"),
        "{out}"
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    for event in ["Stop", "PreToolUse"] {
        assert_eq!(v["hooks"][event], foreign["hooks"][event]);
    }
    assert_eq!(
        v["hooks"]["SessionStart"][0],
        foreign["hooks"]["SessionStart"][0]
    );
    let mine = v["hooks"]["SessionStart"][1]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(
        mine.ends_with("memsync hook session-start --agent codex"),
        "{mine}"
    );
    let end = &v["hooks"]["SessionEnd"][0]["hooks"][0];
    assert!(
        end["command"]
            .as_str()
            .unwrap()
            .ends_with("hook session-end --agent codex --deadline 2s")
    );
    assert_eq!(end["timeout"], 3);

    // Again: byte for byte the same file (a changed hook would need trusting again).
    let before = std::fs::read(&file).unwrap();
    let r = run(&["install-hook", "--agent", "codex"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("already in"), "{}", r.stdout);
    assert_eq!(std::fs::read(&file).unwrap(), before);

    // --agent auto finds Codex (and nothing else) here; a bad --agent is a usage error.
    let r = run(&["install-hook", "--agent", "auto", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json()["agents"].as_array().unwrap().len(), 1);
    assert_eq!(std::fs::read(&file).unwrap(), before);
    let r = run(&["install-hook", "--agent", "cursor"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("claude, codex, gemini, copilot"),
        "{}",
        r.stderr
    );

    // Out again: the foreign hooks are what is left.
    let r = run(&["install-hook", "--agent", "codex", "--remove"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(v, foreign);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn project_hooks_need_a_trusted_project_and_doctor_says_so() {
    let (server, _db) = Server::start().await;
    let ann = User::new(&server, "ann", &["acme"], ORIGIN);
    let standin = ModelStandIn::start(|_: &Value| Reply::Text("ok".to_owned())).await;
    setup_codex(&ann, &standin);
    ok(&ann, &["install-hook", "--agent", "codex"]);
    let r = memsync_with_codex(&ann, &["install-hook", "--agent", "codex", "--trust"]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("does not trust the project")
            && r.stderr.contains("installed, not trusted"),
        "{}",
        r.stderr
    );
    let d = memsync_with_codex(&ann, &["--agent", "codex", "doctor"]);
    assert_eq!(d.code, 1, "{}", d.stdout);
    assert!(
        d.stdout
            .contains("Codex reads a repository's hooks only in a project you trust"),
        "{}",
        d.stdout
    );

    // The user trusts the project in Codex (its own flag); then memsync's hooks can be trusted.
    let run = codex_exec(&ann, &ann.repo, &["--trust"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let r = memsync_with_codex(&ann, &["install-hook", "--agent", "codex", "--trust"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    standin.clear();
    ann.write("deploys.md", &mem("deploys", "Deploys run from CI.\n"));
    ok(&ann, &["push"]);
    let run = codex_exec(&ann, &ann.repo, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(standin.requests()[0].text().contains("deploys.md"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn render_owns_only_its_block_and_pull_keeps_it_current() {
    let (server, _db) = Server::start().await;
    let ann = User::new(&server, "ann", &["acme"], ORIGIN);
    let bob = User::new(&server, "bob", &["acme"], ORIGIN);
    ann.write("deploys.md", &mem("deploys", "Deploys run from CI.\n"));
    ok(&ann, &["push"]);

    let user_text = "# Our Gemini rules\r\n\r\nUse tabs. Ünïcödé ✓\r\nno newline at the end";
    let gemini = bob.repo.join("GEMINI.md");
    std::fs::write(&gemini, user_text).unwrap();
    let r = ok(&bob, &["render", "--agent", "gemini", "--json"]);
    let out = r.json();
    assert_eq!(out["changed"], true, "{out}");
    let after = std::fs::read_to_string(&gemini).unwrap();
    assert!(after.starts_with(user_text), "{after:?}");
    let block = &after[user_text.len()..];
    assert!(
        block.contains("<!-- memsync:begin") && block.contains("deploys.md"),
        "{block}"
    );
    let gemini_team = out["team_dir"].as_str().unwrap().to_owned();
    assert!(block.contains("/.gemini/memsync/projects/"), "{block}");
    assert!(Path::new(&gemini_team).join("deploys.md").is_file());

    // The user adds text after the block; a teammate's new memory arrives with a pull of the
    // Claude Code layout, which refreshes the block and nothing else.
    let mut edited = after.clone();
    edited.push_str("\r\n## Mine, after the block\r\n");
    std::fs::write(&gemini, &edited).unwrap();
    ann.write(
        "oncall.md",
        &mem("oncall", "The on-call rota is in PagerDuty.\n"),
    );
    ok(&ann, &["push"]);
    ok(&bob, &["pull"]);
    let refreshed = std::fs::read_to_string(&gemini).unwrap();
    assert!(refreshed.contains("oncall.md"), "{refreshed}");
    let begin = edited.find("<!-- memsync:begin").unwrap();
    assert_eq!(&refreshed[..begin], &edited[..begin]);
    assert!(
        refreshed.ends_with("<!-- memsync:end -->\r\n\r\n## Mine, after the block\r\n"),
        "{refreshed:?}"
    );
    assert!(Path::new(&gemini_team).join("oncall.md").is_file());

    // Text written inside the block is not overwritten by a pull; --force does.
    let hand = refreshed.replace(
        "## Team memory (memsync)",
        "## Team memory (memsync)\r\nMY NOTE",
    );
    std::fs::write(&gemini, &hand).unwrap();
    ann.write("third.md", &mem("third", "A third memory.\n"));
    ok(&ann, &["push"]);
    let r = bob.run(&["pull"]);
    assert!(r.stderr.contains("edited by hand"), "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(&gemini).unwrap(), hand);
    ok(&bob, &["render", "--agent", "gemini", "--force"]);
    let forced = std::fs::read_to_string(&gemini).unwrap();
    assert!(!forced.contains("MY NOTE") && forced.contains("third.md"));
    assert!(forced.starts_with(user_text));

    // Broken markers: nothing is changed.
    let broken = format!("{user_text}\n<!-- memsync:begin -->\nno end\n");
    std::fs::write(&gemini, &broken).unwrap();
    let r = bob.run(&["render", "--agent", "gemini", "--force"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("no end marker"), "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(&gemini).unwrap(), broken);

    // --remove takes the block out again.
    std::fs::write(&gemini, &forced).unwrap();
    ok(&bob, &["render", "--agent", "gemini", "--remove"]);
    let removed = std::fs::read_to_string(&gemini).unwrap();
    assert!(removed.starts_with(user_text) && !removed.contains("memsync:begin"));
    let begin = forced.find("<!-- memsync:begin").unwrap();
    let end = forced.find("<!-- memsync:end -->\r\n").unwrap() + "<!-- memsync:end -->\r\n".len();
    assert_eq!(removed, format!("{}{}", &forced[..begin], &forced[end..]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_installs_for_every_agent_in_the_repository_and_a_push_sends_every_layout() {
    let (server, _db) = Server::start().await;
    let ann = User::new(&server, "ann", &["acme"], ORIGIN);
    let bob = User::new(&server, "bob", &["acme"], ORIGIN);
    ann.write("deploys.md", &mem("deploys", "Deploys run from CI.\n"));
    ok(&ann, &["push"]);
    std::fs::create_dir_all(bob.repo.join(".claude")).unwrap();
    std::fs::create_dir_all(bob.repo.join(".codex")).unwrap();
    std::fs::write(bob.repo.join("GEMINI.md"), "# Gemini rules\n").unwrap();

    let r = ok(&bob, &["install-hook", "--agent", "auto", "--json"]);
    let agents: Vec<String> = r.json()["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["agent"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(agents, ["claude", "codex", "gemini"], "{}", r.stdout);
    assert!(bob.repo.join(".claude/settings.json").is_file());
    assert!(bob.repo.join(".codex/hooks.json").is_file());
    let gemini = std::fs::read_to_string(bob.repo.join("GEMINI.md")).unwrap();
    assert!(
        gemini.starts_with("# Gemini rules\n\n<!-- memsync:begin") && gemini.contains("deploys.md")
    );

    // Every layout is at the server's revision; a memory saved in the Codex layout and one in
    // the Gemini layout both go with one `memsync push`, and every layout gets both.
    let dir = |agent: &str| -> PathBuf {
        let st = ok(&bob, &["--agent", agent, "status", "--offline", "--json"]).json();
        PathBuf::from(st["team_dir"].as_str().unwrap())
    };
    let (claude_dir, codex_dir, gemini_dir) = (dir("claude"), dir("codex"), dir("gemini"));
    ok(&bob, &["pull"]);
    for d in [&claude_dir, &codex_dir, &gemini_dir] {
        assert!(d.join("deploys.md").is_file(), "{}", d.display());
    }
    std::fs::write(
        codex_dir.join("from-codex.md"),
        mem("from-codex", "Saved in Codex.\n"),
    )
    .unwrap();
    std::fs::write(
        gemini_dir.join("from-gemini.md"),
        mem("from-gemini", "Saved in Gemini.\n"),
    )
    .unwrap();
    let r = ok(&bob, &["push", "--json"]);
    let out = r.json();
    let layouts = out["layouts"].as_array().unwrap_or_else(|| panic!("{out}"));
    assert_eq!(layouts.len(), 2, "{out}");
    for d in [&claude_dir, &codex_dir, &gemini_dir] {
        for f in ["from-codex.md", "from-gemini.md"] {
            assert!(d.join(f).is_file(), "{f} missing in {}", d.display());
        }
    }
    let revs: Vec<i64> = ["claude", "codex", "gemini"]
        .iter()
        .map(|a| layout_revision(&bob, a))
        .collect();
    assert!(revs.windows(2).all(|w| w[0] == w[1]), "{revs:?}");
    // `status` shows the other layouts, read from disk.
    let st = ok(&bob, &["status", "--offline", "--json"]).json();
    let layouts = st["layouts"].as_array().unwrap_or_else(|| panic!("{st}"));
    assert_eq!(layouts.len(), 2, "{st}");
    for l in layouts {
        assert_eq!(l["revision"], st["revision"], "{st}");
        assert_eq!(l["ahead"], 0, "{st}");
    }
    std::fs::write(
        codex_dir.join("draft.md"),
        mem("draft", "Not pushed yet.\n"),
    )
    .unwrap();
    let st = ok(&bob, &["status", "--offline"]);
    assert!(
        st.stdout.contains("codex layout (")
            && st
                .stdout
                .contains("1 local change(s) to push (`memsync --agent codex status`)"),
        "{}",
        st.stdout
    );
    std::fs::remove_file(codex_dir.join("draft.md")).unwrap();
    let gemini = std::fs::read_to_string(bob.repo.join("GEMINI.md")).unwrap();
    assert!(gemini.contains("from-codex.md"), "{gemini}");
    // Nothing left to send anywhere: each memory went once.
    let again = ok(&bob, &["push", "--json"]).json();
    assert_eq!(again["push"]["pushed"], json!([]), "{again}");
    for l in again["layouts"].as_array().unwrap() {
        assert_eq!(l["push"]["pushed"], json!([]), "{again}");
    }
    ok(&ann, &["pull"]);
    assert!(ann.read("from-codex.md").is_some() && ann.read("from-gemini.md").is_some());

    // Out again for every agent: the hooks, and the rendered block.
    let r = ok(
        &bob,
        &["install-hook", "--agent", "auto", "--remove", "--json"],
    );
    let out = r.json();
    let gemini_out = out["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent"] == "gemini")
        .unwrap_or_else(|| panic!("{out}"))
        .clone();
    assert_eq!(gemini_out["changed"], true, "{out}");
    assert_eq!(gemini_out["removed"], json!(["block"]), "{out}");
    let gemini = std::fs::read_to_string(bob.repo.join("GEMINI.md")).unwrap();
    assert!(
        gemini.starts_with("# Gemini rules\n") && !gemini.contains("memsync:begin"),
        "{gemini}"
    );
    let r = ok(&bob, &["install-hook", "--agent", "auto", "--remove"]);
    assert!(
        r.stdout.contains("GEMINI.md holds no memsync block"),
        "{}",
        r.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_the_session_end_deadline_cuts_short_is_finished_in_the_background() {
    let (server, _db) = Server::start().await;
    let ann = User::new(&server, "ann", &["acme:admin"], ORIGIN);
    let bob = User::new(&server, "bob", &["acme"], ORIGIN);
    ann.write("start.md", &mem("start", "Where the team starts.\n"));
    ok(&ann, &["push"]);
    ok(&bob, &["--agent", "codex", "pull"]);
    let dir = PathBuf::from(
        ok(&bob, &["--agent", "codex", "status", "--offline", "--json"]).json()["team_dir"]
            .as_str()
            .unwrap(),
    );
    let note = mem("late", "Written just before the session ended.\n");
    std::fs::write(dir.join("late.md"), &note).unwrap();
    // Codex gives a SessionEnd hook 3 s at most; here the deadline is far shorter than any push.
    let input = json!({"session_id": "s-late", "transcript_path": "/tmp/t.jsonl", "cwd": bob.repo,
                       "hook_event_name": "SessionEnd", "reason": "other"});
    let r = bob.run_stdin(
        &[
            "hook",
            "session-end",
            "--agent",
            "codex",
            "--deadline",
            "1ms",
            "--json",
        ],
        &input.to_string(),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let out = r.json();
    assert_eq!(out["pushed"], false, "{out}");
    assert!(out["background_push"].as_u64().is_some(), "{out}");
    assert!(
        r.stderr.contains("a background `memsync push`"),
        "{}",
        r.stderr
    );
    let mut arrived = None;
    for _ in 0..300 {
        ok(&ann, &["pull"]);
        arrived = ann.read("late.md");
        if arrived.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(arrived.as_deref(), Some(note.as_str()));
    // With the session's id in its provenance, as the hook's own push would have.
    let h = ok(&ann, &["admin", "history", "late.md", "--json"]);
    assert!(h.stdout.contains("s-late"), "{}", h.stdout);
}
