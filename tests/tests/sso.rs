//! `memsync login --sso` end to end: the real `memsync` binary in a temporary `$HOME`, the real
//! server trusting the stand-in identity provider (`memsync_e2e::idp`), device authorization
//! and browser (PKCE, loopback redirect) sign-ins, silent renewal of the stored token, and the
//! failures a user must understand (a denied code, a revoked refresh token).

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use memsync_e2e::idp::{Idp, IdpUser};
use memsync_e2e::*;

const ORIGIN: &str = "git@github.com:acme/api.git";

/// A server that trusts `idp` for single sign-on, its audience the IdP's client.
async fn server_trusting(idp: &Idp) -> (Server, TestDb) {
    let db = TestDb::new().await;
    let issuer = idp.issuer();
    let client = idp.client_id();
    let server = Server::start_with_env(
        &db.url,
        &[],
        &[
            ("MEMSYNC_OIDC_ISSUERS", issuer.as_str()),
            ("MEMSYNC_OIDC_AUDIENCE", client.as_str()),
        ],
    );
    (server, db)
}

/// Someone with a clone of acme/api and a fresh `$HOME`, not logged in.
fn newcomer(server: &Server, name: &str) -> User {
    let home = tempfile::Builder::new()
        .prefix(&format!("memsync-home-{name}-"))
        .tempdir()
        .expect("home");
    let repo = home.path().join("src").join("api");
    std::fs::create_dir_all(&repo).expect("repo dir");
    for args in [&["init", "-q"][..], &["remote", "add", "origin", ORIGIN]] {
        let out = Command::new("git")
            .args(args)
            .current_dir(&repo)
            .env("HOME", home.path())
            .output()
            .expect("git");
        assert!(out.status.success(), "git {args:?}");
    }
    User {
        name: name.to_owned(),
        home,
        repo,
        server_url: server.url.clone(),
    }
}

fn credentials_path(u: &User) -> PathBuf {
    u.home.path().join(".config/memsync/credentials.toml")
}

fn credentials(u: &User) -> toml::Table {
    let text = std::fs::read_to_string(credentials_path(u)).expect("credentials file");
    toml::from_str(&text).expect("credentials TOML")
}

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777
}

/// `memsync login --sso --server URL` with the device code: reads the user code from its
/// stderr, lets `decide` approve or deny it at the IdP, and returns the run.
fn device_login(u: &User, idp: &Idp, extra: &[&str], decide: impl FnOnce(&Idp, &str)) -> Run {
    let mut args = vec!["login", "--sso", "--server", u.server_url.as_str()];
    args.extend_from_slice(extra);
    let mut child = u
        .command(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn memsync login --sso");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut seen = String::new();
    let code = loop {
        let mut line = String::new();
        let n = stderr.read_line(&mut line).expect("read stderr");
        assert!(n > 0, "memsync ended without showing a user code:\n{seen}");
        seen.push_str(&line);
        if let Some(rest) = line.split("enter the code ").nth(1) {
            break rest.split_whitespace().next().expect("a code").to_owned();
        }
    };
    decide(idp, &code);
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut stderr, &mut rest);
    let out = child.wait_with_output().expect("memsync login");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: seen + &rest,
    }
}

fn memory(name: &str) -> String {
    memsync_e2e::memory(name, &format!("about {name}"), "project", "Some text.\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn device_login_then_pull_push_and_silent_renewal() {
    let idp = Idp::start();
    idp.set_user(IdpUser::new("dana", &["memsync:acme"]));
    let (server, _db) = server_trusting(&idp).await;
    let u = newcomer(&server, "dana");

    let r = device_login(&u, &idp, &["--json"], |idp, code| idp.approve(code));
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let j = r.json();
    assert_eq!(j["user"], "dana", "{j}");
    assert_eq!(j["sso"]["issuer"], idp.issuer().as_str());
    assert!(
        r.stderr.contains("/device?user_code="),
        "the complete URL: {}",
        r.stderr
    );
    // No token in any output.
    let creds = credentials(&u);
    let entry = &creds["servers"][server.url.as_str()];
    let token = entry["token"].as_str().expect("token").to_owned();
    let refresh = entry["sso"]["refresh_token"]
        .as_str()
        .expect("refresh token")
        .to_owned();
    for secret in [&token, &refresh] {
        assert!(!r.stdout.contains(secret.as_str()) && !r.stderr.contains(secret.as_str()));
    }
    assert_eq!(
        entry["sso"]["client_id"].as_str(),
        Some(idp.client_id().as_str())
    );
    assert_eq!(mode(&credentials_path(&u)), 0o600);

    assert_eq!(u.run(&["init"]).code, 0);
    u.write("deploys.md", &memory("deploys"));
    let r = u.run(&["push"]);
    assert_eq!(r.code, 0, "push: {}", r.stderr);
    let r = u.run(&["pull"]);
    assert_eq!(r.code, 0, "pull: {}", r.stderr);
    let refreshes = |idp: &Idp| {
        idp.requests()
            .iter()
            .filter(|l| l.as_str() == "POST /token grant_type=refresh_token")
            .count()
    };
    assert_eq!(refreshes(&idp), 0, "a fresh token is not renewed");

    // Tokens that live a few seconds: within a minute of its expiry, a command renews the token
    // before it uses it.
    idp.set_token_lifetime(Duration::from_secs(3));
    let r = device_login(&u, &idp, &[], |idp, code| idp.approve(code));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let before = std::fs::read_to_string(credentials_path(&u)).unwrap();
    let r = u.run(&["pull"]);
    assert_eq!(r.code, 0, "pull near expiry: {}", r.stderr);
    assert_eq!(refreshes(&idp), 1, "{:?}", idp.requests());
    let after = std::fs::read_to_string(credentials_path(&u)).unwrap();
    assert_ne!(before, after, "the renewed tokens are stored");
    assert_eq!(mode(&credentials_path(&u)), 0o600);
    // Past the renewed token's expiry, the session-start hook renews too, without a prompt.
    std::thread::sleep(Duration::from_secs(4));
    let r = u.run_stdin(&["hook", "session-start"], "{}");
    assert_eq!(r.code, 0);
    assert!(
        !r.stdout.contains("not available"),
        "the hook pulled: {}",
        r.stdout
    );
    assert_eq!(refreshes(&idp), 2, "{:?}", idp.requests());
    // A push with the renewed token lands on the server, attributed to the provider's user.
    u.write("renewed.md", &memory("renewed"));
    let r = u.run(&["push"]);
    assert_eq!(r.code, 0, "push: {}", r.stderr);
    let reader = server.client(&server.token("reader", &["acme"]));
    let pulled = reader.pull("acme/api", 0).await;
    assert!(pulled.text.contains("renewed.md"), "{}", pulled.text);

    // Two memsyncs renewing at once: the second waits for the first and takes the token it
    // stored, so the rotating refresh token is spent once (the IdP revokes the whole sign-in
    // when one is presented twice).
    idp.set_token_lifetime(Duration::from_secs(120));
    std::thread::sleep(Duration::from_secs(4));
    let n = refreshes(&idp);
    let (one, two) = std::thread::scope(|s| {
        let one = s.spawn(|| u.run(&["pull"]));
        let two = s.spawn(|| u.run(&["status"]));
        (one.join().unwrap(), two.join().unwrap())
    });
    assert_eq!(
        (one.code, two.code),
        (0, 0),
        "{}\n{}",
        one.stderr,
        two.stderr
    );
    assert_eq!(refreshes(&idp), n + 1, "{:?}", idp.requests());
    let r = u.run(&["pull"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(mode(&credentials_path(&u)), 0o600);

    // doctor reports the sign-in and renews it.
    let r = u.run(&["doctor", "--json"]);
    let j = r.json();
    let expiry = j["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "token expiry")
        .unwrap();
    assert_eq!(expiry["status"], "ok", "{j:#}");
    let msg = expiry["message"].as_str().unwrap();
    assert!(
        msg.contains(&idp.issuer()) && msg.contains("renewed"),
        "{msg}"
    );

    // logout forgets it.
    assert_eq!(u.run(&["logout"]).code, 0);
    assert!(
        credentials(&u)
            .get("servers")
            .and_then(|s| s.get(server.url.as_str()))
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_login_with_pkce_and_a_loopback_redirect() {
    let idp = Idp::start();
    idp.set_signing_alg(jsonwebtoken::Algorithm::ES256);
    idp.set_user(IdpUser::new("erin", &["memsync:acme:admin"]));
    let (server, _db) = server_trusting(&idp).await;
    let u = newcomer(&server, "erin");
    // A "browser" that follows the sign-in page's redirect back to memsync's loopback port.
    let browser = u.home.path().join("browser.sh");
    std::fs::write(
        &browser,
        "#!/bin/sh\nexec curl -sSL --max-time 20 \"$1\" >/dev/null\n",
    )
    .unwrap();
    std::fs::set_permissions(&browser, std::fs::Permissions::from_mode(0o755)).unwrap();
    let r = u.run_with(
        &[
            "login",
            "--sso",
            "--browser",
            "--wait",
            "60s",
            "--server",
            &server.url,
        ],
        &[("BROWSER", browser.to_str().unwrap())],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("/authorize?"),
        "the URL is printed: {}",
        r.stderr
    );
    assert!(r.stdout.contains("erin"), "{}", r.stdout);
    assert!(
        idp.requests()
            .contains(&"POST /token grant_type=authorization_code".to_owned()),
        "{:?}",
        idp.requests()
    );
    assert_eq!(u.run(&["init"]).code, 0);
    u.write("runbook.md", &memory("runbook"));
    let r = u.run(&["push"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = u.run(&["pull"]);
    assert_eq!(r.code, 0, "{}", r.stderr);

    // A browser that never comes back: a clean time-out, nothing stored over the sign-in.
    let r = u.run_with(
        &[
            "login",
            "--sso",
            "--browser",
            "--wait",
            "2s",
            "--server",
            &server.url,
        ],
        &[("BROWSER", "true")],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("no sign-in arrived"), "{}", r.stderr);
    assert_eq!(u.run(&["pull"]).code, 0, "the earlier sign-in still works");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_code_fails_clearly() {
    let idp = Idp::start();
    let (server, _db) = server_trusting(&idp).await;
    let u = newcomer(&server, "alice");
    let r = device_login(&u, &idp, &[], |idp, code| idp.deny(code));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("denied"), "{}", r.stderr);
    assert!(!credentials_path(&u).exists(), "nothing stored");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_the_idp_refuses_says_to_sign_in_again() {
    let idp = Idp::start();
    let (server, _db) = server_trusting(&idp).await;
    let u = newcomer(&server, "alice");
    idp.set_token_lifetime(Duration::from_secs(2));
    let r = device_login(&u, &idp, &[], |idp, code| idp.approve(code));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(u.run(&["init"]).code, 0);
    idp.revoke_refresh_tokens();
    std::thread::sleep(Duration::from_secs(3));
    let r = u.run(&["pull"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("memsync login --sso") && r.stderr.contains("could not be renewed"),
        "{}",
        r.stderr
    );
    // The session-start hook neither hangs nor prompts: exit 0, and the context says why.
    let started = std::time::Instant::now();
    let r = u.run_stdin(&["hook", "session-start"], "{}");
    assert_eq!(r.code, 0);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(r.stdout.contains("memsync login --sso"), "{}", r.stdout);
    // doctor names the failing renewal.
    let r = u.run(&["doctor", "--json"]);
    assert_eq!(r.code, 1);
    let j = r.json();
    let expiry = j["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "token expiry")
        .unwrap()
        .clone();
    assert_eq!(expiry["status"], "fail", "{j:#}");
    assert!(
        expiry["fix"]
            .as_str()
            .unwrap()
            .contains("memsync login --sso"),
        "{expiry}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn self_issued_tokens_work_as_before_beside_sso() {
    let idp = Idp::start();
    let (server, _db) = server_trusting(&idp).await;
    let u = User::new(&server, "bob", &["acme"], ORIGIN);
    u.write("a.md", &memory("a"));
    assert_eq!(u.run(&["push"]).code, 0);
    let creds = credentials(&u);
    assert!(creds["servers"][server.url.as_str()].get("sso").is_none());
    assert!(idp.requests().iter().all(|l| !l.starts_with("POST /token")));
}
