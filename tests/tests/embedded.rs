//! The embedded PostgreSQL: starts from an empty data dir (as root, through the postgres OS
//! user), keeps the data across a restart, and is stopped when the server stops.

use memsync_e2e::*;

#[tokio::test]
async fn embedded_postgres_from_empty_dir_survives_restart() {
    let tmp = tempfile::Builder::new()
        .prefix("memsync-embedded-")
        .tempdir()
        .unwrap();
    open_up(tmp.path());
    let data = tmp.path().join("data");
    let mut server = Server::start_embedded(data.clone());
    assert!(data.join("postgres/PG_VERSION").is_file());
    let token = server.token("alice", &["acme"]);
    let c = server.client(&token);
    let m = memory("kept", "survives restarts", "project", "Still here.\n");
    assert_eq!(
        c.push("acme/api", &batch(vec![put("kept.md", &m, None)]))
            .await
            .status,
        200
    );
    let key = std::fs::read_to_string(data.join("jwt.key")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(data.join("jwt.key"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
    if nix::unistd::geteuid().is_root() {
        // initdb refuses root: the cluster belongs to the postgres OS user.
        use std::os::unix::fs::MetadataExt;
        let owner = std::fs::metadata(data.join("postgres")).unwrap().uid();
        let pg = nix::unistd::User::from_name("postgres").unwrap().unwrap();
        assert_eq!(owner, pg.uid.as_raw());
    }

    // A graceful stop stops the cluster it started.
    let status = server.stop();
    assert!(status.success(), "{status:?}\n{}", server.log());
    assert!(
        !data.join("postgres/postmaster.pid").exists(),
        "the embedded PostgreSQL is still running"
    );

    // Start again on the same data dir: same data, same key.
    let mut server = Server::start_embedded(data.clone());
    let c = server.client(&token);
    let r = c.pull("acme/api", 0).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        change_of(&r.body, "kept.md").unwrap()["content"],
        m.as_str()
    );
    assert_eq!(std::fs::read_to_string(data.join("jwt.key")).unwrap(), key);

    // After a SIGKILL the cluster keeps running; the next start adopts it (its owner is gone)
    // and stops it when it stops.
    server.kill();
    assert!(data.join("postgres/postmaster.pid").exists());
    let mut server = Server::start_embedded(data.clone());
    assert_eq!(server.client(&token).pull("acme/api", 0).await.status, 200);
    assert!(server.log().contains("adopting it"), "{}", server.log());
    // While it runs, a token command borrows the cluster and leaves it running.
    let out = server.cli(&["token", "list"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(server.client(&token).pull("acme/api", 0).await.status, 200);
    assert!(server.stop().success());
    assert!(
        !data.join("postgres/postmaster.pid").exists(),
        "the adopted PostgreSQL is still running"
    );
}

#[test]
fn unreachable_data_dir_is_a_clear_error() {
    if !nix::unistd::geteuid().is_root() {
        return; // Only root hands the cluster to another user.
    }
    // A 0700 dir owned by root: the postgres user cannot enter it.
    let tmp = tempfile::Builder::new()
        .prefix("memsync-closed-")
        .tempdir()
        .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let out = std::process::Command::new(bin_path("memsync-server"))
        .args(["--data-dir"])
        .arg(tmp.path().join("data"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env_remove("DATABASE_URL")
        .env_remove("MEMSYNC_DATABASE_URL")
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot enter") && err.contains("--database-url"),
        "{err}"
    );
}
