//! The README is executed: its shell blocks run top to bottom, as a new user would run them, in a
//! scratch `$HOME` and data dir, against the server its quick start starts. A README that stops
//! working fails here.
//!
//! Every ```` ```sh ```` block carries one mark after the language:
//! - `readme:server` starts the server: run in the background until the end, and waited for
//!   until it says it listens;
//! - `readme:run` runs as written, in one shell session with the blocks before it (so a variable
//!   such as `$TOKEN` carries over);
//! - `readme:skip` is not run (the test command itself, or what needs more than this machine).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use memsync_e2e::open_up;

#[derive(Debug, PartialEq, Eq)]
enum Mark {
    Server,
    Run,
    Skip,
}

#[derive(Debug)]
struct Block {
    mark: Mark,
    line: usize,
    text: String,
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_owned()
}

/// The shell blocks of a markdown text, with their marks; an unmarked shell block is an error.
fn shell_blocks(markdown: &str) -> Result<Vec<Block>, String> {
    let mut out = Vec::new();
    let mut lines = markdown.lines().enumerate();
    while let Some((i, line)) = lines.next() {
        let Some(info) = line.trim_start().strip_prefix("```") else {
            continue;
        };
        let mut words = info.split_whitespace();
        let lang = words.next().unwrap_or("");
        let mut body = Vec::new();
        for (_, l) in lines.by_ref() {
            if l.trim_start().starts_with("```") {
                break;
            }
            body.push(l);
        }
        if !matches!(lang, "sh" | "bash" | "shell" | "console") {
            continue;
        }
        let mark = match words.next() {
            Some("readme:server") => Mark::Server,
            Some("readme:run") => Mark::Run,
            Some("readme:skip") => Mark::Skip,
            other => {
                return Err(format!(
                    "README.md line {}: a shell block must be marked readme:server, readme:run or readme:skip (found {other:?})",
                    i + 1
                ));
            }
        };
        out.push(Block {
            mark,
            line: i + 1,
            text: body.join("\n"),
        });
    }
    Ok(out)
}

/// The script that runs the blocks in order.
fn script(blocks: &[Block], scratch: &Path) -> String {
    let mut s = String::from(
        r#"set -euo pipefail
wait_for_server() {
  local log=$1 pid=$2
  # The quick start builds in release mode first: minutes on a cold machine.
  for _ in $(seq 1 7200); do
    if grep -q "memsync-server listening on" "$log"; then return 0; fi
    if ! kill -0 "$pid" 2>/dev/null; then echo "the README's server exited:" >&2; tail -n 40 "$log" >&2; return 1; fi
    sleep 0.5
  done
  echo "the README's server did not start within an hour" >&2
  return 1
}
"#,
    );
    for (n, b) in blocks.iter().enumerate() {
        match b.mark {
            Mark::Skip => {}
            Mark::Server => {
                let log = scratch.join(format!("server-{n}.log"));
                s.push_str(&format!(
                    "echo '::: README.md line {line}: starting the server' >&2\n(\n{text}\n) > '{log}' 2>&1 &\nwait_for_server '{log}' $!\n",
                    line = b.line,
                    text = b.text,
                    log = log.display()
                ));
            }
            Mark::Run => {
                s.push_str(&format!(
                    "echo '::: README.md line {line}' >&2\n{text}\n",
                    line = b.line,
                    text = b.text
                ));
            }
        }
    }
    s
}

/// Stops the README's server (its pid is in the data dir) and with it the embedded PostgreSQL.
struct StopServer {
    data_dir: PathBuf,
}

impl Drop for StopServer {
    fn drop(&mut self) {
        let Some(pid) = std::fs::read_to_string(self.data_dir.join("postgres.owner"))
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok())
        else {
            return;
        };
        let _ = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status();
        let started = Instant::now();
        while Path::new(&format!("/proc/{pid}")).exists()
            && started.elapsed() < Duration::from_secs(60)
        {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

#[test]
fn every_shell_block_of_the_readme_is_marked() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let blocks = shell_blocks(&readme).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        blocks.iter().filter(|b| b.mark == Mark::Server).count(),
        1,
        "the quick start starts exactly one server"
    );
    assert!(blocks.iter().filter(|b| b.mark == Mark::Run).count() >= 2);
    // The marking is checked, not only parsed.
    assert!(shell_blocks("```sh\necho hi\n```\n").is_err());
    assert!(
        shell_blocks("```text\nnot shell\n```\n")
            .unwrap()
            .is_empty()
    );
}

#[test]
fn the_readme_runs_top_to_bottom() {
    let root = repo_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let blocks = shell_blocks(&readme).unwrap_or_else(|e| panic!("{e}"));
    if let Err(e) = std::net::TcpListener::bind("127.0.0.1:7878") {
        panic!(
            "the README's server listens on 127.0.0.1:7878, which is taken ({e}); stop what holds it"
        );
    }

    let scratch = tempfile::Builder::new()
        .prefix("memsync-readme-")
        .tempdir()
        .unwrap();
    let home = scratch.path().join("home");
    let data_dir = scratch.path().join("data");
    // The application repository the client walk-through works in.
    let app = home.join("src/api");
    std::fs::create_dir_all(&app).unwrap();
    for args in [
        vec!["init", "-q"],
        vec!["remote", "add", "origin", "git@github.com:acme/api.git"],
    ] {
        let ok = Command::new("git")
            .args(&args)
            .current_dir(&app)
            .env("HOME", &home)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }
    // The embedded PostgreSQL runs as the postgres user when the test runs as root.
    open_up(&home);
    open_up(scratch.path());

    let script_path = scratch.path().join("readme.sh");
    std::fs::File::create(&script_path)
        .unwrap()
        .write_all(script(&blocks, scratch.path()).as_bytes())
        .unwrap();
    let _stop = StopServer {
        data_dir: data_dir.clone(),
    };

    let real_home = std::env::var_os("HOME").map(PathBuf::from);
    let mut cmd = Command::new("bash");
    cmd.arg(&script_path)
        .current_dir(&root)
        .env("HOME", &home)
        .env("MEMSYNC_DATA_DIR", &data_dir)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_STATE_HOME")
        .env_remove("CLAUDE_CONFIG_DIR");
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("MEMSYNC_") && k != "MEMSYNC_DATA_DIR" {
            cmd.env_remove(k);
        }
    }
    // cargo and rustup find their homes under the real $HOME unless told.
    if let Some(h) = &real_home {
        if std::env::var_os("CARGO_HOME").is_none() {
            cmd.env("CARGO_HOME", h.join(".cargo"));
        }
        if std::env::var_os("RUSTUP_HOME").is_none() {
            cmd.env("RUSTUP_HOME", h.join(".rustup"));
        }
    }
    let started = Instant::now();
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!(
        "the README ran in {:.1} s\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        started.elapsed().as_secs_f64()
    );
    assert!(
        out.status.success(),
        "a README block failed (the last `::: README.md line N` above names it)\n{stderr}"
    );
    // The walk-through did what it says: the memory it pushed is on the server.
    assert!(stdout.contains("\"path\":\"testing.md\""), "{stdout}");
    assert!(stdout.contains("304 Not Modified"), "{stdout}");
    // And the client walk-through: its push reached the server, through the client.
    let team_dir = std::fs::read_dir(home.join(".claude/projects"))
        .unwrap()
        .next()
        .expect("a project dir")
        .unwrap()
        .path()
        .join("memory/team");
    for f in ["testing.md", "deploys.md", "MEMORY.md"] {
        assert!(
            team_dir.join(f).is_file(),
            "{f} missing from {}",
            team_dir.display()
        );
    }
    let index = std::fs::read_to_string(team_dir.join("MEMORY.md")).unwrap();
    assert!(index.contains("(deploys.md)"), "{index}");
}
