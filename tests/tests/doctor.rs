//! `memsync doctor`: each precondition of a session it claims to check, broken alone, is caught
//! (exit 1, that check failed or warned, with a fix), and nothing else is blamed.

use std::time::{Duration, Instant};

use memsync_e2e::*;
use serde_json::Value;

const ORIGIN: &str = "git@github.com:Acme/API.git";

/// Every check doctor runs, in its order.
const CHECKS: [&str; 9] = [
    "config",
    "team dir",
    "state dir",
    "hook",
    "hook binary",
    "server",
    "clock",
    "token",
    "token expiry",
];

/// A user for whom everything works: logged in, initialised, hook installed, something synced.
fn healthy(server: &Server, name: &str) -> User {
    let u = User::new(server, name, &["acme"], ORIGIN);
    assert_eq!(u.run(&["install-hook"]).code, 0);
    u
}

fn doctor(u: &User, env: &[(&str, &str)]) -> (i32, Value) {
    let r = u.run_with(&["doctor", "--json"], env);
    let j = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", r.stdout, r.stderr));
    (r.code, j)
}

fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {report}"))
}

/// Exit 1; `broken` has `status` and a fix (each test checks its command); every other check is ok, or
/// skipped when it is one of `skipped` (it depends on the broken one).
fn assert_only(code: i32, report: &Value, broken: &str, status: &str, skipped: &[&str]) {
    assert_eq!(code, 1, "{report:#}");
    let names: Vec<&str> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["check"].as_str().unwrap())
        .collect();
    assert_eq!(names, CHECKS, "{report:#}");
    for name in CHECKS {
        let c = check(report, name);
        if name == broken {
            assert_eq!(c["status"], status, "{name}: {c:#}");
            let fix = c["fix"].as_str().unwrap_or_default();
            assert!(!fix.is_empty(), "{name} has no fix: {c:#}");
        } else if skipped.contains(&name) {
            assert_eq!(c["status"], "skip", "{name}: {c:#}");
        } else {
            assert_eq!(c["status"], "ok", "{name} is blamed too: {report:#}");
        }
    }
}

#[tokio::test]
async fn all_good_exits_0_and_the_text_says_so() {
    let (server, _db) = Server::start().await;
    let alice = healthy(&server, "alice");
    let (code, report) = doctor(&alice, &[]);
    assert_eq!(code, 0, "{report:#}");
    for name in CHECKS {
        assert_eq!(check(&report, name)["status"], "ok", "{report:#}");
    }
    assert_eq!(report["problems"], 0);
    let r = alice.run(&["doctor"]);
    assert_eq!(r.code, 0);
    assert!(r.stdout.trim_end().ends_with("all good"), "{}", r.stdout);
}

#[tokio::test]
async fn no_configuration_exits_2() {
    let (server, _db) = Server::start().await;
    let nora = healthy(&server, "nora");
    assert_eq!(nora.run(&["logout"]).code, 0);
    std::fs::remove_file(nora.repo.join(".memsync.toml")).unwrap();
    let r = nora.run(&["doctor", "--json"]);
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no server configured")
    );
}

#[tokio::test]
async fn a_missing_hook_is_caught() {
    let (server, _db) = Server::start().await;
    let bob = User::new(&server, "bob", &["acme"], ORIGIN);
    let (code, report) = doctor(&bob, &[]);
    assert_only(code, &report, "hook", "fail", &["hook binary"]);
    assert!(
        check(&report, "hook")["fix"]
            .as_str()
            .unwrap()
            .contains("memsync install-hook")
    );
}

#[tokio::test]
async fn a_hook_binary_that_is_gone_is_caught() {
    let (server, _db) = Server::start().await;
    let alice = User::new(&server, "alice", &["acme"], ORIGIN);
    // Installed by a memsync binary that was removed since (an old build, a moved install).
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("memsync");
    std::fs::copy(bin_path("memsync"), &copy).unwrap();
    let out = std::process::Command::new(&copy)
        .arg("install-hook")
        .current_dir(&alice.repo)
        .env("HOME", alice.home.path())
        .env_remove("CLAUDE_CONFIG_DIR")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_file(&copy).unwrap();
    let (code, report) = doctor(&alice, &[]);
    assert_only(code, &report, "hook binary", "fail", &[]);
    let c = check(&report, "hook binary");
    assert!(
        c["message"]
            .as_str()
            .unwrap()
            .contains(&copy.display().to_string()),
        "{c:#}"
    );
    assert!(c["fix"].as_str().unwrap().contains("memsync install-hook"));

    // Not executable is caught too.
    std::fs::copy(bin_path("memsync"), &copy).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (code, report) = doctor(&alice, &[]);
    assert_only(code, &report, "hook binary", "fail", &[]);
    assert!(
        check(&report, "hook binary")["fix"]
            .as_str()
            .unwrap()
            .contains("chmod +x")
    );
}

#[tokio::test]
async fn a_server_that_is_down_is_caught() {
    let (mut server, _db) = Server::start().await;
    let alice = healthy(&server, "alice");
    server.kill();
    let (code, report) = doctor(&alice, &[]);
    assert_only(code, &report, "server", "fail", &["clock", "token"]);
    let fix = check(&report, "server")["fix"].as_str().unwrap().to_owned();
    assert!(
        fix.contains(&format!("curl -sS {}/healthz", server.url)),
        "{fix}"
    );
}

#[tokio::test]
async fn a_revoked_token_is_caught() {
    let (server, _db) = Server::start().await;
    let token = server.token("alice", &["acme"]);
    let alice = User::with_token(&server, "alice", &token, ORIGIN);
    assert_eq!(alice.run(&["install-hook"]).code, 0);
    let out = server.cli(&["token", "revoke", &token_jti(&token)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The running server learns of the revocation by notification; wait until it refuses the
    // token (a precondition of this test, not a timing assertion).
    let client = server.client(&token);
    let until = Instant::now() + Duration::from_secs(60);
    while client.fetch("/v1/me").await.status != 401 {
        assert!(
            Instant::now() < until,
            "the server never refused the revoked token"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (code, report) = doctor(&alice, &[]);
    assert_only(code, &report, "token", "fail", &[]);
    let c = check(&report, "token");
    assert!(c["message"].as_str().unwrap().contains("refused"), "{c:#}");
    assert!(
        c["fix"].as_str().unwrap().contains("memsync login"),
        "{c:#}"
    );
}

#[tokio::test]
async fn a_token_of_another_team_is_caught() {
    let (server, _db) = Server::start().await;
    let olga = User::with_token(&server, "olga", &server.token("olga", &["other"]), ORIGIN);
    assert_eq!(olga.run(&["install-hook"]).code, 0);
    let (code, report) = doctor(&olga, &[]);
    assert_only(code, &report, "token", "fail", &[]);
    let c = check(&report, "token");
    assert!(
        c["message"].as_str().unwrap().contains("not in team acme"),
        "{c:#}"
    );
}

#[tokio::test]
async fn no_token_is_caught() {
    let (server, _db) = Server::start().await;
    let alice = healthy(&server, "alice");
    // Logged out, but the server is still known from .memsync.toml.
    assert_eq!(alice.run(&["logout"]).code, 0);
    let (code, report) = doctor(&alice, &[]);
    assert_only(code, &report, "token", "fail", &["token expiry"]);
    assert!(
        check(&report, "token")["fix"]
            .as_str()
            .unwrap()
            .contains(&format!("memsync login --server {}", server.url))
    );
}

#[tokio::test]
async fn a_token_about_to_expire_is_caught() {
    let (server, _db) = Server::start().await;
    let token = server.token_with("dee", &["--team", "acme", "--ttl", "3d"]);
    let dee = User::with_token(&server, "dee", &token, ORIGIN);
    assert_eq!(dee.run(&["install-hook"]).code, 0);
    let (code, report) = doctor(&dee, &[]);
    assert_only(code, &report, "token expiry", "warn", &[]);
    let c = check(&report, "token expiry");
    assert!(
        c["message"].as_str().unwrap().contains("expires on"),
        "{c:#}"
    );
}

#[tokio::test]
async fn a_team_dir_that_cannot_be_written_is_caught() {
    let (server, _db) = Server::start().await;
    let alice = healthy(&server, "alice");
    // A file where the team dir should be (the tests run as root, for whom permissions do not
    // stop a write).
    let team = alice.team_dir();
    std::fs::remove_dir_all(&team).ok();
    std::fs::create_dir_all(team.parent().unwrap()).unwrap();
    std::fs::write(&team, "not a directory").unwrap();
    let (code, report) = doctor(&alice, &[]);
    assert_only(code, &report, "team dir", "fail", &[]);
    let fix = check(&report, "team dir")["fix"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(fix.starts_with(&format!("mv {}", team.display())), "{fix}");
}

#[tokio::test]
async fn a_state_dir_that_cannot_be_written_is_caught() {
    let (server, _db) = Server::start().await;
    let alice = healthy(&server, "alice");
    // XDG_STATE_HOME names a file: no state dir can be made under it.
    let blocker = alice.home.path().join("state-is-a-file");
    std::fs::write(&blocker, "x").unwrap();
    let (code, report) = doctor(&alice, &[("XDG_STATE_HOME", blocker.to_str().unwrap())]);
    assert_only(code, &report, "state dir", "fail", &[]);
    assert!(
        check(&report, "state dir")["fix"]
            .as_str()
            .unwrap()
            .contains("XDG_STATE_HOME")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clock_far_from_the_servers_is_caught() {
    let (server, _db) = Server::start().await;
    let token = server.token("alice", &["acme"]);
    let alice = User::with_token(&server, "alice", &token, ORIGIN);
    assert_eq!(alice.run(&["install-hook"]).code, 0);
    // The same server, seen through a proxy whose Date is ten minutes behind.
    let proxy = date_skewing_proxy(&server.url, -600).await;
    let env = [
        ("MEMSYNC_SERVER", proxy.as_str()),
        ("MEMSYNC_TOKEN", token.as_str()),
    ];
    let (code, report) = doctor(&alice, &env);
    assert_only(code, &report, "clock", "warn", &[]);
    let c = check(&report, "clock");
    assert!(c["message"].as_str().unwrap().contains("ahead of"), "{c:#}");
    // Through a proxy that tells the truth, the same setup is all good: it is the clock.
    let honest = date_skewing_proxy(&server.url, 0).await;
    let env = [
        ("MEMSYNC_SERVER", honest.as_str()),
        ("MEMSYNC_TOKEN", token.as_str()),
    ];
    let (code, report) = doctor(&alice, &env);
    assert_eq!(code, 0, "{report:#}");
}
