//! The server answers within its contract, `openapi.yaml`.
//!
//! The probe: schemathesis generates requests for every operation of the spec (its examples,
//! boundary values, and property-based fuzzing, valid and invalid inputs alike) and sends them to
//! the real server on a fresh database, with a seeded project so that requests get past "not
//! found". The pass condition is no server error (5xx) and no answer outside the spec: every
//! status is one the operation documents, with the documented content type, headers and JSON
//! schema; routes refuse missing credentials and undocumented methods as documented.
//!
//! Two of schemathesis's checks are off: `positive_data_acceptance` and
//! `negative_data_rejection` ask that every request the schema allows succeeds and every
//! request it forbids fails. The spec cannot say everything the server checks (a memory path's
//! rules, `since` not ahead of the project, a non-blank reason), and some inputs are taken
//! leniently on purpose (an unusable `x-request-id` is replaced, not refused); those answers are
//! documented 4xx, which the status-code check still holds to the spec.
//!
//! Strings are sometimes NUL-laden (`\0`): text the server stores or compares must be refused
//! with a 4xx, never reach PostgreSQL (which cannot store NUL in text) as a 500.
//!
//! schemathesis comes from `scripts/test`, which installs it into a virtualenv and sets
//! `MEMSYNC_SCHEMATHESIS`. The seed is fixed, so a run is repeatable; set
//! `MEMSYNC_SCHEMATHESIS_SEED` to explore with another.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use memsync_e2e::*;
use serde_json::{Value, json};

/// Test cases per operation and phase; with the coverage phase about 2,500 requests in all.
const MAX_EXAMPLES: u32 = 100;
/// A guard against a hung run, not a speed target: alone the run takes about 150 s on 2 cores, but
/// in the full suite it shares them with the README test's cold release build and the browser
/// tests (nextest stops this test at 720 s, `.config/nextest.toml`).
const RUN_LIMIT: Duration = Duration::from_secs(600);
const SEED: &str = "20261201";

fn schemathesis() -> PathBuf {
    if let Some(p) = std::env::var_os("MEMSYNC_SCHEMATHESIS") {
        return PathBuf::from(p);
    }
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/schemathesis-venv/bin/schemathesis");
    assert!(
        venv.is_file(),
        "schemathesis is not installed: run the tests with scripts/test (it installs a pinned \
         schemathesis into target/schemathesis-venv), or set MEMSYNC_SCHEMATHESIS"
    );
    venv
}

fn openapi() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../openapi.yaml")
}

fn memory_file(name: &str, kind: &str, body: &str) -> String {
    memory(name, &format!("{name}, for the contract probe"), kind, body)
}

/// A project with history (two versions of one file, a nested directory, a feedback memory),
/// an allowlist entry, and its git export: what the spec's identifiers can point at.
async fn seed(server: &Server, member: &Client, team_admin: &Client) -> String {
    let r = member
        .push(
            "acme/api",
            &batch(vec![
                put(
                    "db.md",
                    &memory_file("db", "project", "Use PostgreSQL 15.\n"),
                    None,
                ),
                put(
                    "notes/style.md",
                    &memory_file("style", "reference", "Four spaces.\n"),
                    None,
                ),
                put(
                    "testing.md",
                    &memory_file(
                        "testing",
                        "feedback",
                        "Integration tests must hit a real database, not mocks.\n",
                    ),
                    None,
                ),
            ]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let base = sha_of(&r.body, "db.md").expect("db.md sha");
    let r = member
        .push(
            "acme/api",
            &batch(vec![put(
                "db.md",
                &memory_file("db", "project", "Use PostgreSQL 15 or later.\n"),
                Some(&base),
            )]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let fingerprint = "ab".repeat(32);
    let r = team_admin
        .send(
            team_admin
                .http
                .post(format!("{}/v1/projects/acme/api/allowlist", server.url))
                .bearer_auth(&team_admin.token)
                .json(&json!({"fingerprint": fingerprint, "rule": "generic-api-key", "reason": "a documented example"})),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let r = member
            .send(member.get("/git/acme/api.git/info/refs?service=git-upload-pack"))
            .await;
        if r.status == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the git export did not appear: {} {}",
            r.status,
            r.text
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    fingerprint
}

/// The sum of `memsync_http_requests_total`: what the server counted.
async fn requests_served(c: &Client) -> f64 {
    let r = c.send(c.get("/metrics")).await;
    r.text
        .lines()
        .filter(|l| l.starts_with("memsync_http_requests_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

fn config(
    base_url: &str,
    hooks: &std::path::Path,
    tokens: [&str; 3],
    fingerprint: &str,
    seed: &str,
) -> String {
    let [member, team_admin, server_admin] = tokens;
    format!(
        r#"base-url = "{base_url}"
seed = {seed}
workers = 1
request-timeout = 30
hooks = "{hooks}"
headers = {{ Authorization = "Bearer {member}" }}

[generation]
max-examples = {MAX_EXAMPLES}
database = "none"
allow-x00 = true

[generation.dictionaries.string]
dictionary = "nul"
probability = 0.05

[checks]
positive_data_acceptance = {{ enabled = false }}
negative_data_rejection = {{ enabled = false }}

[dictionaries.nul]
values = ["\u0000", "a\u0000b", "db.md\u0000"]
[dictionaries.team]
values = ["acme"]
[dictionaries.name]
values = ["api"]
[dictionaries.repo]
values = ["api.git", "api"]
[dictionaries.memory_path]
values = ["db.md", "notes/style.md", "testing.md"]
[dictionaries.revision]
values = [1, 2]
[dictionaries.wait]
values = [0, 1]
[dictionaries.fingerprint]
values = ["{fingerprint}", "{fingerprint}", "a\u0000b"]

[parameters]
"path.team" = {{ dictionary = "team", probability = 0.8 }}
"path.name" = {{ dictionary = "name", probability = 0.8 }}
"path.repo" = {{ dictionary = "repo", probability = 0.8 }}
"path.fingerprint" = {{ dictionary = "fingerprint", probability = 0.6 }}
"query.path" = {{ dictionary = "memory_path", probability = 0.5 }}
"query.revision" = {{ dictionary = "revision", probability = 0.5 }}
"query.from" = {{ dictionary = "revision", probability = 0.5 }}
"query.to" = {{ dictionary = "revision", probability = 0.5 }}
# A long-poll may hold a request up to 60 s: the probe waits at most 1 s (tests/tests/live.rs
# covers waiting).
"query.wait" = {{ dictionary = "wait", probability = 1.0 }}
"body.path" = {{ dictionary = "memory_path", probability = 0.5 }}
"body.revision" = {{ dictionary = "revision", probability = 0.5 }}
# Text the server stores (token claims, reasons, rule ids) gets NULs more often than the rest.
"body.user" = {{ dictionary = "nul", probability = 0.2 }}
"body.email" = {{ dictionary = "nul", probability = 0.2 }}
"body.reason" = {{ dictionary = "nul", probability = 0.2 }}
"body.rule" = {{ dictionary = "nul", probability = 0.2 }}

# The event stream never ends by itself: every request would run into the request timeout.
# tests/tests/live.rs and replicas.rs cover it.
[[operations]]
include-path-regex = "/events$"
enabled = false

# Tokens are the server admin's, the rest of /v1/admin and changes to the allowlist the team
# admin's; everything else the member's. (The first matching entry wins.)
[[operations]]
include-path-regex = "^/v1/admin/tokens"
headers = {{ Authorization = "Bearer {server_admin}" }}

[[operations]]
include-tag = "admin"
headers = {{ Authorization = "Bearer {team_admin}" }}

[[operations]]
include-path-regex = "/allowlist"
include-method = ["POST", "DELETE"]
headers = {{ Authorization = "Bearer {team_admin}" }}
"#,
        hooks = hooks.display(),
    )
}

#[tokio::test]
async fn schemathesis_finds_no_server_error_and_no_answer_outside_the_spec() {
    let schemathesis = schemathesis();
    let (server, _db) = Server::start().await;
    // Forged rather than issued: they are in no token table, so the probe's own
    // `DELETE /v1/admin/tokens/{jti}` cannot revoke them mid-run.
    let member = forge_token("alice", &[("acme", "member")], false);
    let team_admin = forge_token("bob", &[("acme", "admin")], false);
    let server_admin = forge_token("root", &[], true);
    let alice = server.client(&member);
    let bob = server.client(&team_admin);
    let fingerprint = seed(&server, &alice, &bob).await;

    let dir = tempfile::Builder::new()
        .prefix("memsync-schemathesis-")
        .tempdir()
        .expect("tempdir");
    let hooks = dir.path().join("hooks.py");
    // git's pack negotiation is bytes; schemathesis sends it like application/octet-stream.
    std::fs::write(
        &hooks,
        "import schemathesis\n\
         schemathesis.serializer.alias(\"application/x-git-upload-pack-request\", \"application/octet-stream\")\n",
    )
    .expect("hooks");
    let seed_value = std::env::var("MEMSYNC_SCHEMATHESIS_SEED").unwrap_or_else(|_| SEED.into());
    let config_path = dir.path().join("schemathesis.toml");
    std::fs::write(
        &config_path,
        config(
            &server.url,
            &hooks,
            [&member, &team_admin, &server_admin],
            &fingerprint,
            &seed_value,
        ),
    )
    .expect("config");
    let report_dir = dir.path().join("report");

    let before = requests_served(&alice).await;
    let started = Instant::now();
    let mut cmd = tokio::process::Command::new(&schemathesis);
    cmd.arg("--config-file")
        .arg(&config_path)
        .arg("run")
        .arg(openapi())
        .args(["--no-color", "--report", "json", "--report-dir"])
        .arg(&report_dir)
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .env("COLUMNS", "120")
        .kill_on_drop(true);
    let out = tokio::time::timeout(RUN_LIMIT, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("schemathesis ran longer than {RUN_LIMIT:?}"))
        .expect("run schemathesis");
    let took = started.elapsed();
    let after = requests_served(&alice).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);

    let report: Value = std::fs::read_dir(&report_dir)
        .ok()
        .and_then(|mut d| d.next())
        .and_then(|e| std::fs::read(e.ok()?.path()).ok())
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_else(|| {
            panic!("schemathesis wrote no JSON report; its output:\n{stdout}\n{stderr}")
        });
    let cases = &report["test_cases"];
    // The server's own count, less the first /metrics read of this test.
    let requests = after - before - 1.0;
    println!(
        "schemathesis {}: {requests} requests counted by the server, {} test cases generated, \
         {} operations tested, in {took:.1?} (seed {seed_value}, {MAX_EXAMPLES} examples per \
         operation and phase)",
        report["schemathesis_version"].as_str().unwrap_or("?"),
        cases["generated"],
        report["operations"]["tested"],
    );
    let failures = report["failures"].as_array().map_or(0, Vec::len);
    let errors = report["errors"].as_array().map_or(0, Vec::len);
    if failures > 0 || errors > 0 || !out.status.success() {
        panic!(
            "schemathesis found {failures} kind(s) of failure and {errors} error(s) (exit {:?}):\n{stdout}\n{stderr}",
            out.status.code()
        );
    }
    // Every operation but the event stream (disabled in the config above).
    assert_eq!(
        report["operations"]["tested"].as_u64().unwrap() + 1,
        report["operations"]["total"].as_u64().unwrap()
    );
    assert!(requests > 1000.0, "too few requests reached the server");
}

/// The one answer of `git-upload-pack` the probe cannot judge alone: git's request body has its
/// own media type, and without it the answer is a documented 415 in the JSON shape (it was a 415
/// whose code the spec gave to 400).
#[tokio::test]
async fn git_upload_pack_without_its_content_type_is_a_json_415() {
    let (server, _db) = Server::start().await;
    let member = forge_token("alice", &[("acme", "member")], false);
    let alice = server.client(&member);
    let bob = server.client(&forge_token("bob", &[("acme", "admin")], false));
    seed(&server, &alice, &bob).await;
    let url = format!("{}/git/acme/api.git/git-upload-pack", server.url);
    let negotiation = "0000";
    for content_type in [None, Some("application/json"), Some("text/plain")] {
        let mut req = alice
            .http
            .post(&url)
            .basic_auth("x", Some(&member))
            .body(negotiation);
        if let Some(t) = content_type {
            req = req.header("content-type", t);
        }
        let r = alice.send(req).await;
        assert_eq!(
            (r.status, r.code()),
            (415, "unsupported_media_type"),
            "{content_type:?}: {}",
            r.text
        );
        assert!(r.body["error"]["message"].is_string());
        assert!(r.body["error"]["details"].is_object());
    }
    // With git's media type (parameters ignored) the request reaches git, which answers the
    // empty negotiation with an empty pack result.
    let r = alice
        .send(
            alice
                .http
                .post(&url)
                .basic_auth("x", Some(&member))
                .header(
                    "content-type",
                    "application/x-git-upload-pack-request; charset=binary",
                )
                .body(negotiation),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.headers.get("content-type").and_then(|v| v.to_str().ok()),
        Some("application/x-git-upload-pack-result")
    );
}
