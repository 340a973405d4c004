//! A server's identity is hard to split by accident: commands that only talk to an existing
//! installation never create a data dir, a signing key or a database cluster, and token commands
//! can go through a running server's admin API instead of its disk.

use std::path::Path;
use std::process::{Command, Output};

use memsync_e2e::*;

/// `memsync-server <args>` run from `cwd` with nothing pointing at any installation.
fn bare_cli(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(bin_path("memsync-server"));
    cmd.args(args).current_dir(cwd);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("MEMSYNC_") || k == "DATABASE_URL" {
            cmd.env_remove(k);
        }
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run memsync-server")
}

/// Names and sizes of a directory's top-level entries, and the signing key.
fn top_level(dir: &Path) -> (Vec<String>, Vec<u8>) {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    (names, std::fs::read(dir.join("jwt.key")).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_run_from_another_directory_refuse_to_create_an_installation() {
    let tmp = tempfile::Builder::new()
        .prefix("memsync-install-")
        .tempdir()
        .unwrap();
    open_up(tmp.path());
    let data = tmp.path().join("data");
    let server = Server::start_embedded(data.clone());
    // The server names its port before its exporter has made `<data-dir>/git`: wait for it, so
    // the snapshot below is of the finished installation.
    for _ in 0..200 {
        if data.join("git").is_dir() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let before = top_level(&data);
    let elsewhere = tmp.path().join("app-repo");
    std::fs::create_dir_all(&elsewhere).unwrap();

    for args in [
        vec!["token", "issue", "--user", "alice", "--team", "acme"],
        vec!["token", "list"],
        vec!["token", "revoke", "6f1c0000-0000-4000-8000-000000000000"],
        vec!["export", "rebuild"],
        vec!["migrate"],
    ] {
        let out = bare_cli(&elsewhere, &args, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?} printed a token or a list");
        let looked = elsewhere.join("memsync-data");
        assert!(
            stderr.contains(&looked.display().to_string()),
            "{args:?}: names where it looked: {stderr}"
        );
        assert!(
            stderr.contains("--data-dir") && !stderr.contains("  "),
            "{args:?}: says how to fix it, in one sentence: {stderr}"
        );
        assert!(!looked.exists(), "{args:?} created {}", looked.display());
    }
    // A data dir with a cluster but no key (the key is separate): no key is made up either.
    let keyless = tmp.path().join("keyless");
    std::fs::create_dir_all(keyless.join("postgres")).unwrap();
    std::fs::write(keyless.join("postgres/PG_VERSION"), "15\n").unwrap();
    let out = bare_cli(
        &elsewhere,
        &[
            "--data-dir",
            &keyless.to_string_lossy(),
            "token",
            "issue",
            "--user",
            "a",
            "--team",
            "acme",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no signing key") && !stderr.contains("  "),
        "{stderr}"
    );
    assert!(!keyless.join("jwt.key").exists());

    // The server's own data dir is untouched, and pointing at it works from anywhere.
    assert_eq!(top_level(&data), before);
    let out = bare_cli(
        &elsewhere,
        &[
            "--data-dir",
            &data.to_string_lossy(),
            "token",
            "issue",
            "--user",
            "alice",
            "--team",
            "acme",
        ],
        &[],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let me = server.client(&token).fetch("/v1/me").await;
    assert_eq!(me.status, 200, "{}", me.text);
    assert_eq!(top_level(&data), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_commands_work_through_the_admin_api() {
    let (server, _db) = Server::start().await;
    let out = server.cli(&["token", "issue", "--user", "root", "--admin"]);
    assert!(out.status.success());
    let root = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let member = server.token("mia", &["acme"]);
    let elsewhere = tempfile::tempdir().unwrap();
    let remote = |args: &[&str], admin: Option<&str>| {
        let mut all = vec!["token", "--server", server.url.as_str()];
        all.extend_from_slice(args);
        let env: Vec<(&str, &str)> = admin
            .map(|t| vec![("MEMSYNC_ADMIN_TOKEN", t)])
            .unwrap_or_default();
        bare_cli(elsewhere.path(), &all, &env)
    };

    let out = remote(
        &["issue", "--user", "bob", "--team", "acme", "--ttl", "7d"],
        Some(&root),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bob = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let bob_c = server.client(&bob);
    assert_eq!(bob_c.fetch("/v1/me").await.status, 200);

    let out = remote(&["list", "--json"], Some(&root));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rec = list["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["sub"] == "bob")
        .expect("bob is listed")
        .clone();
    let jti = rec["jti"].as_str().unwrap().to_owned();

    let out = remote(&["revoke", &jti], Some(&root));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(bob_c.fetch("/v1/me").await.status, 401);

    // Without an admin token, or with a member's, the refusal says what is needed.
    let out = remote(&["list"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("MEMSYNC_ADMIN_TOKEN"));
    let out = remote(&["list"], Some(&member));
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("server-admin"), "{stderr}");
    // Over the API the lifetime is whole days.
    let out = remote(
        &["issue", "--user", "x", "--team", "acme", "--ttl", "12h"],
        Some(&root),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("whole number of days"));
}
