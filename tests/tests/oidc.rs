//! Tokens from the company's identity provider, checked by the real server against a stand-in
//! provider (`tests/src/idp.rs`): discovery, keys of three algorithms, rotation picked up without
//! a restart, and the refusals: another issuer, expired, not yet valid, another audience, an
//! algorithm other than the key's, HMAC with the public key, and a user in no memsync team.

use jsonwebtoken::{Algorithm, Header};
use memsync_e2e::idp::{Idp, IdpUser};
use memsync_e2e::*;
use serde_json::{Value, json};

fn sso_server(db: &TestDb, idp: &Idp) -> Server {
    Server::start_with_env(
        &db.url,
        &[],
        &[
            ("MEMSYNC_OIDC_ISSUERS", &idp.issuer()),
            ("MEMSYNC_OIDC_AUDIENCE", &idp.client_id()),
            ("MEMSYNC_OIDC_SERVER_ADMIN_GROUP", "memsync-operators"),
        ],
    )
}

fn with(mut claims: Value, patch: Value) -> Value {
    for (k, v) in patch.as_object().expect("object") {
        claims[k] = v.clone();
    }
    claims
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

async fn me(server: &Server, token: &str) -> Resp {
    server.client(token).fetch("/v1/me").await
}

#[tokio::test]
async fn tokens_from_the_trusted_provider_sign_in_with_each_algorithm_and_map_groups_to_teams() {
    let idp = Idp::start();
    idp.set_user(IdpUser::new(
        "alice",
        &["memsync:acme", "memsync:ops:admin", "staff"],
    ));
    let db = TestDb::new().await;
    let server = sso_server(&db, &idp);

    // How to sign in, without a token.
    let cfg = server.client("").fetch("/v1/auth/config").await.body;
    assert_eq!(cfg["oidc"][0]["issuer"], idp.issuer());
    assert_eq!(cfg["oidc"][0]["client_id"], idp.client_id());
    assert!(
        cfg["oidc"][0]["scopes"]
            .as_array()
            .unwrap()
            .contains(&json!("offline_access"))
    );

    for alg in [Algorithm::RS256, Algorithm::ES256, Algorithm::EdDSA] {
        let token = idp.mint(alg, &idp.id_token_claims());
        let r = me(&server, &token).await;
        assert_eq!(r.status, 200, "{alg:?}: {}", r.text);
        assert_eq!(r.body["name"], "alice");
        assert_eq!(r.body["issuer"], idp.issuer());
        assert_eq!(r.body["teams"], json!({"acme": "member", "ops": "admin"}));
        assert_eq!(r.body["admin"], false);
    }

    // Pull and push with it; the push is attributed to the provider's user name.
    let token = idp.mint(Algorithm::RS256, &idp.id_token_claims());
    let c = server.client(&token);
    let body = memory("sso", "signed in", "project", "Signed in with SSO.\n");
    let r = c
        .push("acme/api", &batch(vec![put("sso.md", &body, None)]))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = c.pull("acme/api", 0).await;
    assert_eq!(r.status, 200);
    assert!(r.text.contains("sso.md"));
    let author = count(
        &db,
        "SELECT count(*) FROM revisions WHERE author_name = 'alice'",
    )
    .await;
    assert_eq!(author, 1);
    // Another team's project is out of reach, as for any token.
    assert_eq!(c.pull("web/site", 0).await.status, 404);

    // Team admin of ops through the admin group; server admin through the configured group.
    let r = c.fetch("/v1/admin/audit").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let op = idp.mint(
        Algorithm::ES256,
        &with(
            idp.id_token_claims(),
            json!({"groups": ["memsync-operators"], "preferred_username": "olga", "sub": "o1"}),
        ),
    );
    let r = me(&server, &op).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["admin"], true);

    // The provider's scope narrows the token like --scope.
    let ro = idp.mint(
        Algorithm::EdDSA,
        &with(
            idp.id_token_claims(),
            json!({"scope": "openid email memsync:pull"}),
        ),
    );
    let rc = server.client(&ro);
    assert_eq!(rc.pull("acme/api", 0).await.status, 200);
    let r = rc
        .push("acme/api", &batch(vec![put("ro.md", &body, None)]))
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert_eq!(r.code(), "insufficient_scope");
}

#[tokio::test]
async fn keys_rotated_at_the_provider_are_picked_up_without_a_restart() {
    let idp = Idp::start();
    let db = TestDb::new().await;
    let server = sso_server(&db, &idp);
    let first = idp.mint(Algorithm::RS256, &idp.id_token_claims());
    assert_eq!(me(&server, &first).await.status, 200);
    // Signed with the old key but never shown to the server before the rotation.
    let unseen_old = idp.mint(
        Algorithm::ES256,
        &with(idp.id_token_claims(), json!({"sub": "sub-other"})),
    );
    let fetches = idp.jwks_fetches();

    idp.rotate();
    let fresh = idp.mint(Algorithm::RS256, &idp.id_token_claims());
    let r = me(&server, &fresh).await;
    assert_eq!(
        r.status, 200,
        "a new key is fetched on its first token: {}",
        r.text
    );
    assert!(
        idp.jwks_fetches() > fetches,
        "the key set was fetched again"
    );
    // The old key is gone from the provider's set: a token it signed no longer verifies (after
    // one more fetch, at least 5 s after the last, which does not bring it back).
    let r = me(&server, &unseen_old).await;
    assert_eq!(r.status, 401, "{}", r.text);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not among its issuer's published keys"),
        "{}",
        r.text
    );
}

#[tokio::test]
async fn tokens_that_must_not_sign_in_are_refused_with_the_reason() {
    let idp = Idp::start();
    let stranger = Idp::start(); // an issuer the server does not trust
    let db = TestDb::new().await;
    let server = sso_server(&db, &idp);
    let claims = idp.id_token_claims();
    let rs_kid = idp.kid(Algorithm::RS256);

    let cases: Vec<(&str, String, u16, &str)> = vec![
        (
            "another issuer",
            stranger.mint(Algorithm::RS256, &stranger.id_token_claims()),
            401,
            "does not trust",
        ),
        (
            "another issuer's token claiming ours",
            stranger.mint(Algorithm::RS256, &claims),
            401,
            "not among its issuer's published keys",
        ),
        (
            "expired",
            idp.mint(
                Algorithm::RS256,
                &with(
                    claims.clone(),
                    json!({"exp": now() - 600, "nbf": now() - 4000, "iat": now() - 4000}),
                ),
            ),
            401,
            "expired",
        ),
        (
            "not yet valid",
            idp.mint(
                Algorithm::RS256,
                &with(claims.clone(), json!({"nbf": now() + 3600})),
            ),
            401,
            "not valid yet",
        ),
        (
            "another audience",
            idp.mint(
                Algorithm::RS256,
                &with(claims.clone(), json!({"aud": "some-other-app"})),
            ),
            401,
            "another audience",
        ),
        (
            "header alg differs from the key's",
            {
                let mut h = Header::new(Algorithm::ES256);
                h.kid = Some(rs_kid.clone());
                idp.mint_with_header(h, Algorithm::RS256, &claims)
            },
            401,
            "but its key is for RS256",
        ),
        (
            "HMAC over the public key",
            {
                let mut h = Header::new(Algorithm::HS256);
                h.kid = Some(rs_kid.clone());
                idp.mint_with_header(h, Algorithm::HS256, &claims)
            },
            401,
            "must use RS256, ES256 or EdDSA",
        ),
        (
            "alg none",
            {
                let b64 = |v: &Value| {
                    use base64::Engine;
                    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
                };
                format!(
                    "{}.{}.",
                    b64(&json!({"alg": "none", "kid": rs_kid})),
                    b64(&claims)
                )
            },
            401,
            "",
        ),
        (
            "in no memsync team",
            idp.mint(
                Algorithm::RS256,
                &with(claims.clone(), json!({"groups": ["staff", "memsync"]})),
            ),
            403,
            "no memsync team",
        ),
    ];
    for (what, token, status, says) in cases {
        let r = me(&server, &token).await;
        assert_eq!(r.status, status, "{what}: {}", r.text);
        let msg = r.body["error"]["message"].as_str().unwrap_or_default();
        assert!(msg.contains(says), "{what}: {msg}");
        assert!(
            !server.log().contains(&token),
            "{what}: the token is never logged"
        );
    }
    // The good one still works after all that.
    let ok = idp.mint(Algorithm::RS256, &claims);
    assert_eq!(me(&server, &ok).await.status, 200);
    // Self-issued tokens are unaffected by single sign-on.
    let own = server.token("bob", &["acme"]);
    assert_eq!(me(&server, &own).await.status, 200);
}

#[test]
fn a_misconfigured_provider_stops_the_server_with_the_setting_named() {
    let dir = tempfile::tempdir().unwrap();
    for (issuers, audience, says) in [
        ("http://idp.example.com", "memsync-cli", "must be https"),
        ("https://idp.example.com", "", "MEMSYNC_OIDC_AUDIENCE"),
    ] {
        let out = std::process::Command::new(bin_path("memsync-server"))
            .args(["--data-dir"])
            .arg(dir.path())
            .args(["serve", "--listen", "127.0.0.1:0"])
            .env("MEMSYNC_JWT_SECRET", TEST_JWT_SECRET)
            .env("MEMSYNC_OIDC_ISSUERS", issuers)
            .env("MEMSYNC_OIDC_AUDIENCE", audience)
            .env_remove("MEMSYNC_DATABASE_URL")
            .env_remove("DATABASE_URL")
            .output()
            .expect("run memsync-server");
        assert!(!out.status.success(), "{issuers}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{issuers}: {err}");
    }
}

/// The console's "Sign in with …": authorization code with PKCE, state and nonce, against the
/// stand-in provider, as a browser follows it (cookies carried by hand).
#[tokio::test]
async fn the_console_signs_in_with_the_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let idp = Idp::start();
    idp.set_user(IdpUser::new("carol", &["memsync:acme:admin"]));
    let db = TestDb::new().await;
    let server = sso_server(&db, &idp);
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
        .unwrap();
    let get = |url: String, cookie: Option<String>| {
        let mut req = http.get(url);
        if let Some(c) = cookie {
            req = req.header("cookie", c);
        }
        req.send()
    };
    let location = |r: &reqwest::Response| r.headers()["location"].to_str().unwrap().to_owned();
    let cookie = |r: &reqwest::Response, name: &str| {
        r.headers()
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find(|v| v.starts_with(&format!("{name}=")) && !v.starts_with(&format!("{name}=;")))
            .map(|v| v.split(';').next().unwrap().to_owned())
    };

    let page = get(format!("{}/admin/login", server.url), None)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("/admin/sso?provider=0") && page.contains("Sign in with 127.0.0.1"),
        "{page}"
    );

    // One sign-in, as the browser goes: console → provider → console.
    let sign_in = async |cookie_override: Option<&str>| {
        let start = get(format!("{}/admin/sso?provider=0", server.url), None)
            .await
            .unwrap();
        assert_eq!(start.status(), 303);
        let to_idp = location(&start);
        assert!(
            to_idp.starts_with(&format!("{}/authorize?", idp.issuer())),
            "{to_idp}"
        );
        assert!(to_idp.contains("code_challenge_method=S256") && to_idp.contains("nonce="));
        let flow = cookie(&start, "memsync_console_sso").expect("the flow's cookie");
        let back = get(to_idp, None).await.unwrap();
        let to_console = location(&back);
        assert!(
            to_console.starts_with(&format!("{}/admin/sso/callback?", server.url)),
            "{to_console}"
        );
        get(
            to_console,
            Some(cookie_override.map_or(flow, str::to_owned)),
        )
        .await
        .unwrap()
    };

    let done = sign_in(None).await;
    assert_eq!(done.status(), 200);
    let session = cookie(&done, "memsync_console").expect("a session cookie");
    let projects = get(format!("{}/admin/projects", server.url), Some(session))
        .await
        .unwrap();
    assert_eq!(projects.status(), 200);
    let text = projects.text().await.unwrap();
    assert!(
        text.contains("carol"),
        "signed in as the provider's user: {text}"
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM audit_log WHERE action = 'console_sign_in' AND actor_name = 'carol'"
        )
        .await,
        1
    );

    // A callback whose state is not the one this browser started is refused.
    let forged = sign_in(Some("memsync_console_sso=0.forged.verifier.nonce")).await;
    assert_eq!(forged.status(), 403);
    assert!(cookie(&forged, "memsync_console").is_none());
    assert!(
        forged
            .text()
            .await
            .unwrap()
            .contains("state does not match")
    );

    // A team member is refused by the console's own rule, with the reason.
    idp.set_user(IdpUser::new("dave", &["memsync:acme"]));
    let member = sign_in(None).await;
    assert_eq!(member.status(), 403);
    assert!(cookie(&member, "memsync_console").is_none());
    assert!(
        member
            .text()
            .await
            .unwrap()
            .contains("Members use the memsync client")
    );
}

/// Made-up key ids cannot make the server hammer the provider: many at once share one fetch.
#[tokio::test]
async fn a_flood_of_unknown_key_ids_makes_one_key_fetch() {
    let idp = Idp::start();
    let db = TestDb::new().await;
    let server = sso_server(&db, &idp);
    let good = idp.mint(Algorithm::RS256, &idp.id_token_claims());
    assert_eq!(me(&server, &good).await.status, 200);
    let before = idp.jwks_fetches();
    let flood: Vec<_> = (0..20)
        .map(|i| {
            let mut h = Header::new(Algorithm::RS256);
            h.kid = Some(format!("made-up-{i}"));
            let token = idp.mint_with_header(h, Algorithm::RS256, &idp.id_token_claims());
            let client = server.client(&token);
            tokio::spawn(async move { client.fetch("/v1/me").await.status })
        })
        .collect();
    for f in flood {
        assert_eq!(f.await.unwrap(), 401);
    }
    let fetched = idp.jwks_fetches() - before;
    assert!(
        (1..=2).contains(&fetched),
        "20 unknown kids made {fetched} fetches of the provider's keys"
    );
    // The real key still signs in.
    assert_eq!(me(&server, &good).await.status, 200);
}
