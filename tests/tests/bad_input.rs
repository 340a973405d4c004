//! Bad input: each answered with a clear 4xx, and nothing stored.

use memsync_e2e::*;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const P: &str = "acme/api";

async fn assert_refused(
    c: &Client,
    db: &TestDb,
    body: &Value,
    status: u16,
    rule_or_code: &str,
    what: &str,
) {
    let before_rev = count(db, "SELECT coalesce(max(revision), 0) FROM projects").await;
    let before_versions = count(db, "SELECT count(*) FROM memory_versions").await;
    let r = c.push(P, body).await;
    assert_eq!(r.status, status, "{what}: {}", r.text);
    let msg = r.body["error"]["message"].as_str().unwrap_or("");
    assert!(!msg.is_empty(), "{what}: empty message");
    let rules: Vec<String> = r.body["error"]["details"]["failures"]
        .as_array()
        .map(|f| {
            f.iter()
                .map(|x| x["rule"].as_str().unwrap_or("").to_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        r.code() == rule_or_code || rules.iter().any(|x| x == rule_or_code),
        "{what}: got {} {rules:?}: {}",
        r.code(),
        r.text
    );
    assert_eq!(
        count(db, "SELECT coalesce(max(revision), 0) FROM projects").await,
        before_rev,
        "{what}: revision moved"
    );
    assert_eq!(
        count(db, "SELECT count(*) FROM memory_versions").await,
        before_versions,
        "{what}: something stored"
    );
}

#[tokio::test]
async fn bad_pushes_are_refused_with_clear_errors_and_store_nothing() {
    let (server, db) = Server::start().await;
    let alice = server.client(&server.token("alice", &["acme"]));
    // A baseline so "nothing changed" is measured against a real project.
    let ok = memory("ok", "fine", "project", "Fine.\n");
    assert_eq!(
        alice
            .push(P, &batch(vec![put("ok.md", &ok, None)]))
            .await
            .status,
        200
    );

    for path in [
        "../escape.md",
        "a/../../escape.md",
        "/etc/passwd.md",
        "%2e%2e/escape.md",
        "%2E%2e/x.md",
        "\u{ff0e}\u{ff0e}/escape.md",
        "a\\..\\escape.md",
        "C:\\x.md",
        "a/\u{0}b.md",
        "a\nb.md",
        ".git/config.md",
        "a//b.md",
        "notes.txt",
        "a/b/c/d/e.md",
    ] {
        let body = batch(vec![put(path, &ok, None)]);
        assert_refused(
            &alice,
            &db,
            &body,
            422,
            "path_invalid",
            &format!("path {path:?}"),
        )
        .await;
    }
    let long = format!("{}.md", "a".repeat(260));
    assert_refused(
        &alice,
        &db,
        &batch(vec![put(&long, &ok, None)]),
        422,
        "path_invalid",
        "long path",
    )
    .await;

    let cases: Vec<(&str, String, &str)> = vec![
        (
            "no frontmatter",
            "just text\n".into(),
            "frontmatter_missing",
        ),
        (
            "invalid yaml",
            "---\nname: [unclosed\n---\nbody\n".into(),
            "frontmatter_invalid",
        ),
        (
            "unknown type",
            memory("x", "x", "diary", "b\n"),
            "type_unknown",
        ),
        (
            "type user",
            memory("me", "about me", "user", "b\n"),
            "type_user_in_team",
        ),
        (
            "missing name",
            "---\ndescription: d\ntype: project\n---\nb\n".into(),
            "name_missing",
        ),
        (
            "nul byte",
            memory("x", "x", "project", "a\u{0}b\n"),
            "nul_byte",
        ),
        (
            "oversized",
            memory("big", "big", "project", &"x".repeat(101 * 1024)),
            "too_large",
        ),
    ];
    for (what, content, rule) in cases {
        assert_refused(
            &alice,
            &db,
            &batch(vec![put("bad.md", &content, None)]),
            422,
            rule,
            what,
        )
        .await;
    }
    // One bad file refuses the whole batch, and every failure is reported at once.
    let r = alice
        .push(
            P,
            &batch(vec![
                put("good.md", &memory("g", "g", "project", "g\n"), None),
                put("../x.md", &ok, None),
                put("me.md", &memory("me", "me", "user", "m\n"), None),
            ]),
        )
        .await;
    assert_eq!(r.status, 422);
    assert_eq!(
        r.body["error"]["details"]["failures"]
            .as_array()
            .unwrap()
            .len(),
        2,
        "{}",
        r.text
    );
    assert_eq!(
        count(&db, "SELECT count(*) FROM memories WHERE path = 'good.md'").await,
        0
    );

    // An index over 200 lines is refused.
    let index_sha = sha_of(&alice.pull(P, 0).await.body, "MEMORY.md");
    let mut idx = String::from("- [ok](ok.md) — fine\n");
    for i in 0..210 {
        idx.push_str(&format!("note line {i}\n"));
    }
    assert_refused(
        &alice,
        &db,
        &batch(vec![put("MEMORY.md", &idx, index_sha.as_deref())]),
        422,
        "index_too_large",
        "long index",
    )
    .await;

    // Malformed JSON, wrong shape, non-UTF-8, wrong content type, oversized body.
    let raw = |body: Vec<u8>, ct: &'static str| {
        alice
            .http
            .post(format!("{}/v1/projects/{P}/push", server.url))
            .bearer_auth(&alice.token)
            .header("content-type", ct)
            .body(body)
    };
    let r = alice
        .send(raw(b"{\"changes\": [".to_vec(), "application/json"))
        .await;
    assert_eq!((r.status, r.code()), (400, "malformed_json"));
    let r = alice
        .send(raw(
            br#"{"changes":[{"path":"a.md","op":"rename"}]}"#.to_vec(),
            "application/json",
        ))
        .await;
    assert_eq!((r.status, r.code()), (400, "malformed_json"));
    let mut bad_utf8 = br#"{"changes":[{"path":"a.md","op":"put","content":""#.to_vec();
    bad_utf8.extend_from_slice(&[0xff, 0xfe, 0x80]);
    bad_utf8.extend_from_slice(br#""}]}"#);
    let r = alice.send(raw(bad_utf8, "application/json")).await;
    assert_eq!((r.status, r.code()), (400, "invalid_utf8"));
    let r = alice
        .send(raw(
            b"changes=1".to_vec(),
            "application/x-www-form-urlencoded",
        ))
        .await;
    assert_eq!((r.status, r.code()), (415, "unsupported_media_type"));
    // An oversized body is refused from its Content-Length, before it is read.
    let (status, text) = oversized_push(&server.url, &alice.token, 17 * 1024 * 1024).await;
    assert_eq!(status, 413, "{text}");
    assert!(text.contains("payload_too_large"), "{text}");
    // Secrets sent where a string was expected never come back in the message.
    let r = alice
        .send(raw(
            br#"{"changes":[{"path":"a.md","op":"AKIAIOSFODNN7SECRETSECRETSECRET"}]}"#.to_vec(),
            "application/json",
        ))
        .await;
    assert_eq!(r.status, 400);
    assert!(!r.text.contains("SECRETSECRET"), "{}", r.text);

    // Bad query and project ids.
    let r = alice
        .send(alice.get(&format!("/v1/projects/{P}/changes?since=abc")))
        .await;
    assert_eq!((r.status, r.code()), (400, "invalid_since"));
    let r = alice
        .send(alice.get("/v1/projects/acme/Bad%20Name/changes"))
        .await;
    assert_eq!((r.status, r.code()), (400, "invalid_project"));
    // axum's own rejections come back in the JSON error shape too, without quoting the input.
    let r = alice
        .send(alice.get(&format!("/v1/projects/{P}/changes?since=1&since=2")))
        .await;
    assert_eq!((r.status, r.code()), (400, "invalid_query"), "{}", r.text);
    let r = alice
        .send(alice.get("/v1/projects/acme/%FFsecretvalue/changes"))
        .await;
    assert_eq!((r.status, r.code()), (400, "invalid_request"), "{}", r.text);
    assert!(!r.text.contains("secretvalue"));
    let r = alice.send(alice.get("/v2/nothing")).await;
    assert_eq!((r.status, r.code()), (404, "not_found"));

    // After all that, the project holds exactly what it held before.
    assert_eq!(count(&db, "SELECT revision FROM projects").await, 1);
    let pulled = alice.pull(P, 0).await;
    assert_eq!(
        change_of(&pulled.body, "ok.md").unwrap()["content"],
        ok.as_str()
    );
}

#[tokio::test]
async fn file_count_limit_is_enforced() {
    let db = TestDb::new().await;
    let server = Server::start_with(
        Some(db.url.clone()),
        None,
        &["--max-files-per-project", "5"],
    );
    let alice = server.client(&server.token("alice", &["acme"]));
    let files: Vec<Value> = (0..3)
        .map(|i| {
            put(
                &format!("m{i}.md"),
                &memory("m", "m", "project", "m\n"),
                None,
            )
        })
        .collect();
    // 3 memories + MEMORY.md = 4 files.
    assert_eq!(alice.push(P, &batch(files)).await.status, 200);
    let more: Vec<Value> = (3..5)
        .map(|i| {
            put(
                &format!("m{i}.md"),
                &memory("m", "m", "project", "m\n"),
                None,
            )
        })
        .collect();
    let r = alice.push(P, &batch(more)).await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(
        r.body["error"]["details"]["failures"][0]["rule"],
        "too_many_files"
    );
}

/// Sends the headers of a push announcing `len` bytes and a first chunk, then reads the answer.
async fn oversized_push(base: &str, token: &str, len: usize) -> (u16, String) {
    let addr = base.trim_start_matches("http://");
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /v1/projects/{P}/push HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {token}\r\n\
         content-type: application/json\r\ncontent-length: {len}\r\nconnection: close\r\n\r\n{{\"changes\": ["
    );
    s.write_all(head.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), s.read_to_end(&mut buf)).await;
    let text = String::from_utf8_lossy(&buf).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, text)
}
