//! The auth matrix: every bad token is a 401, another team's project is a 404, never data.

use std::time::Duration;

use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use memsync_e2e::*;
use serde_json::{Value, json};

fn claims(overrides: Value) -> Value {
    let now = chrono::Utc::now().timestamp();
    let mut c = json!({
        "sub": "mallory", "name": "mallory", "teams": {"acme": "member"}, "admin": false,
        "jti": uuid::Uuid::new_v4().to_string(), "iat": now, "exp": now + 3600,
        "iss": "memsync", "aud": "memsync",
    });
    for (k, v) in overrides.as_object().unwrap() {
        c[k] = v.clone();
    }
    c
}

fn sign(c: &Value, key: &str) -> String {
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        c,
        &EncodingKey::from_secret(key.as_bytes()).unwrap(),
    )
    .unwrap()
}

fn b64(v: &Value) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
}

#[tokio::test]
async fn auth_matrix() {
    let (server, _db) = Server::start().await;
    let alice = server.client(&server.token("alice", &["acme"]));
    let r = alice
        .push(
            "acme/api",
            &batch(vec![put(
                "secret-plan.md",
                &memory("plan", "the plan", "project", "Top plan.\n"),
                None,
            )]),
        )
        .await;
    assert_eq!(r.status, 200);

    let now = chrono::Utc::now().timestamp();
    let forged_none = format!(
        "{}.{}.",
        b64(&json!({"alg": "none", "typ": "JWT"})),
        b64(&claims(json!({})))
    );
    let hs_header_other_alg = {
        // Claims alg HS512 with the right key: the algorithm is pinned, so it is refused.
        jsonwebtoken::encode(
            &Header::new(Algorithm::HS512),
            &claims(json!({})),
            &EncodingKey::from_secret(TEST_JWT_SECRET.as_bytes()).unwrap(),
        )
        .unwrap()
    };
    let cases: Vec<(&str, Option<String>)> = vec![
        ("no token", None),
        ("garbage", Some("not-a-jwt".into())),
        (
            "wrong signature",
            Some(sign(
                &claims(json!({})),
                "another-secret-another-secret-another-secret",
            )),
        ),
        ("alg none", Some(forged_none)),
        ("other algorithm", Some(hs_header_other_alg)),
        (
            "expired",
            Some(sign(
                &claims(json!({"exp": now - 3600, "iat": now - 7200})),
                TEST_JWT_SECRET,
            )),
        ),
        (
            "wrong audience",
            Some(sign(
                &claims(json!({"aud": "someone-else"})),
                TEST_JWT_SECRET,
            )),
        ),
        (
            "wrong issuer",
            Some(sign(&claims(json!({"iss": "evil"})), TEST_JWT_SECRET)),
        ),
        (
            "no jti",
            Some(sign(
                &{
                    let mut c = claims(json!({}));
                    c.as_object_mut().unwrap().remove("jti");
                    c
                },
                TEST_JWT_SECRET,
            )),
        ),
    ];
    for (what, token) in cases {
        let mut req = alice.http.get(format!(
            "{}/v1/projects/acme/api/changes?since=0",
            server.url
        ));
        if let Some(t) = &token {
            req = req.bearer_auth(t);
        }
        let r = alice.send(req).await;
        assert_eq!(r.status, 401, "{what}: {}", r.text);
        assert_eq!(r.code(), "unauthenticated", "{what}");
        assert!(!r.text.contains("Top plan"), "{what} leaked data");
        assert!(r.headers.contains_key("www-authenticate"));
        // Pushes are refused the same way and store nothing.
        let mut req = alice
            .http
            .post(format!("{}/v1/projects/acme/api/push", server.url))
            .json(&batch(vec![]));
        if let Some(t) = &token {
            req = req.bearer_auth(t);
        }
        assert_eq!(alice.send(req).await.status, 401, "{what} push");
    }

    // Another team's token: the project is "not found", exactly like a project that doesn't exist.
    let eve = server.client(&server.token("eve", &["globex"]));
    let other = eve.pull("acme/api", 0).await;
    let missing = eve.pull("acme/nope", 0).await;
    assert_eq!((other.status, other.code()), (404, "not_found"));
    assert_eq!(missing.status, 404);
    assert!(!other.text.contains("Top plan"));
    let push = eve
        .push(
            "acme/api",
            &batch(vec![put("x.md", &memory("x", "x", "project", "x\n"), None)]),
        )
        .await;
    assert_eq!(push.status, 404);
    assert_eq!(eve.send(eve.get("/v1/projects/acme/api")).await.status, 404);

    // Revocation: the token stops working (within the LISTEN/NOTIFY delay).
    let token = server.token("carol", &["acme"]);
    let carol = server.client(&token);
    assert_eq!(carol.pull("acme/api", 0).await.status, 200);
    let payload: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token.split('.').nth(1).unwrap())
            .unwrap(),
    )
    .unwrap();
    let jti = payload["jti"].as_str().unwrap();
    let out = server.cli(&["token", "revoke", jti]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut status = 0;
    for _ in 0..50 {
        status = carol.pull("acme/api", 0).await.status;
        if status == 401 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, 401, "revoked token still accepted after 5 s");
    // ... and stays revoked after a restart.
    let mut server = server;
    server.restart();
    let carol = server.client(&token);
    assert_eq!(carol.pull("acme/api", 0).await.status, 401);
    // `token list` shows it revoked, never the token itself.
    let list = server.cli(&["token", "list", "--all", "--json"]);
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(text.contains(jti) && text.contains("revoked_at"), "{text}");
    assert!(!text.contains(&token));
}

#[tokio::test]
async fn server_admin_reaches_every_team_and_whoami() {
    let (server, _db) = Server::start().await;
    let out = server.cli(&["token", "issue", "--user", "root", "--admin"]);
    assert!(out.status.success());
    let admin = server.client(String::from_utf8_lossy(&out.stdout).trim());
    let alice = server.client(&server.token("alice", &["acme:admin", "ops"]));
    alice
        .push(
            "acme/api",
            &batch(vec![put("a.md", &memory("a", "a", "project", "A\n"), None)]),
        )
        .await;
    assert_eq!(admin.pull("acme/api", 0).await.status, 200);
    let me = alice.send(alice.get("/v1/me")).await;
    assert_eq!(me.body["teams"], json!({"acme": "admin", "ops": "member"}));
    // A token needs a team or --admin.
    let none = server.cli(&["token", "issue", "--user", "nobody"]);
    assert!(!none.status.success());
    assert!(String::from_utf8_lossy(&none.stderr).contains("--team"));
}
