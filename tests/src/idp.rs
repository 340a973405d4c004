//! A stand-in OpenID Connect identity provider for tests.
//!
//! [`Idp::start`] serves, on its own thread with its own tokio runtime (so blocking tests that
//! spawn the `memsync` binary can use it) on `127.0.0.1:<ephemeral>`:
//!
//! - `GET /.well-known/openid-configuration`: discovery (issuer, `jwks_uri`, `token_endpoint`,
//!   `device_authorization_endpoint`, `authorization_endpoint`, grants, PKCE `S256`, signing
//!   algorithms `RS256`, `ES256`, `EdDSA`);
//! - `GET /jwks`: the current public keys, one per algorithm (RS256, ES256, EdDSA over Ed25519),
//!   each with `kid`, `kty`, `alg` and `use: sig`; every fetch is counted ([`Idp::jwks_fetches`]);
//! - `POST /device/code`: RFC 8628 device authorization (form `client_id`, `scope`);
//! - `POST /token`: grants `urn:ietf:params:oauth:grant-type:device_code` (answering
//!   `authorization_pending`, `slow_down`, `access_denied`, `expired_token` per RFC 8628),
//!   `refresh_token` (rotating, with reuse detection) and `authorization_code` (PKCE S256 checked);
//! - `GET /authorize`: authorization code + PKCE; the configured user approves at once and the
//!   browser is redirected to the loopback `redirect_uri` (`http://127.0.0.1:PORT/...` only) with
//!   `code` and `state`;
//! - `GET /device?user_code=…`: the page `verification_uri_complete` names; opening it approves
//!   that code as the configured user (what a person does in the browser).
//!
//! The issuer is `http://127.0.0.1:PORT` followed by [`IdpOptions::issuer_path`] (empty by
//! default); every route above lives under the issuer, so discovery is always at
//! `<issuer>/.well-known/openid-configuration`.
//!
//! Token responses carry `access_token` (opaque), `id_token`, `refresh_token`,
//! `token_type: Bearer`, `expires_in`, `refresh_expires_in` and `scope`. The `id_token` is a JWT
//! signed with the current key of the configured algorithm (RS256 unless set otherwise), with
//! `kid` in its header and the claims of [`Idp::id_token_claims`]: `iss`, `aud` (the client id),
//! `sub`, `preferred_username`, `email`, `groups`, `iat`, `nbf`, `exp` (and `nonce` when the
//! authorization request had one).
//!
//! Keys are made with the `openssl` command line at start and on [`Idp::rotate`] (DER, so
//! jsonwebtoken needs no PEM parser).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::extract::{Form, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine;
use jsonwebtoken::jwk::{Jwk, JwkSet, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use sha2::Digest;

/// The grant type of RFC 8628's device access token request.
pub const DEVICE_CODE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

/// Who signs in at the IdP: what ends up in the id_token's claims.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdpUser {
    pub sub: String,
    pub preferred_username: String,
    pub email: String,
    /// The `groups` claim, e.g. `["memsync:acme", "memsync:ops:admin"]`.
    pub groups: Vec<String>,
}

impl IdpUser {
    /// A user named `name` (`sub` = `sub-<name>`, email `<name>@example.com`) in `groups`.
    pub fn new(name: &str, groups: &[&str]) -> IdpUser {
        IdpUser {
            sub: format!("sub-{name}"),
            preferred_username: name.to_owned(),
            email: format!("{name}@example.com"),
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
        }
    }
}

/// How an [`Idp`] starts; everything but `issuer_path` can be changed later through the `set_*`
/// methods.
#[derive(Clone, Debug)]
pub struct IdpOptions {
    /// The one registered (public) client. Requests naming another client id are answered
    /// `invalid_client`. Default `memsync-cli`.
    pub client_id: String,
    /// Path of the issuer after `http://127.0.0.1:PORT`, e.g. `/realms/acme` (default: none).
    pub issuer_path: String,
    /// Who signs in. Default: `alice`, groups `memsync:acme`.
    pub user: IdpUser,
    /// The id_token's (and access token's) lifetime. Default 1 h.
    pub token_lifetime: Duration,
    /// How long a refresh token is good for (`refresh_expires_in`). Default 30 days.
    pub refresh_token_lifetime: Duration,
    /// The polling `interval` a device authorization asks for. Default 1 s.
    pub device_interval: Duration,
    /// How long a device code stays valid (`expires_in`). Default 10 min.
    pub device_code_lifetime: Duration,
    /// The algorithm of the key that signs id_tokens. Default RS256.
    pub signing_alg: Algorithm,
    /// Approve device codes on their first poll, without [`Idp::approve`]. Default off.
    pub auto_approve: bool,
}

impl Default for IdpOptions {
    fn default() -> Self {
        IdpOptions {
            client_id: "memsync-cli".to_owned(),
            issuer_path: String::new(),
            user: IdpUser::new("alice", &["memsync:acme"]),
            token_lifetime: Duration::from_secs(3600),
            refresh_token_lifetime: Duration::from_secs(30 * 86400),
            device_interval: Duration::from_secs(1),
            device_code_lifetime: Duration::from_secs(600),
            signing_alg: Algorithm::RS256,
            auto_approve: false,
        }
    }
}

/// One signing key and its public half.
struct KeyPair {
    kid: String,
    encoding: EncodingKey,
    jwk: Jwk,
    /// SubjectPublicKeyInfo PEM of the public key (what a confused verifier might use as an HMAC
    /// secret).
    public_pem: String,
}

#[derive(Clone, Debug)]
enum DeviceStatus {
    Pending,
    Approved(IdpUser),
    Denied,
    /// Tokens were issued; the device code is used up.
    Redeemed,
}

struct DeviceGrant {
    user_code: String,
    scope: String,
    status: DeviceStatus,
    expires_at: Instant,
    interval: Duration,
    last_poll: Option<Instant>,
}

struct AuthCode {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    scope: String,
    nonce: Option<String>,
    user: IdpUser,
    expires_at: Instant,
}

struct RefreshGrant {
    user: IdpUser,
    scope: String,
    family: u64,
    expires_at: Instant,
}

struct IdpState {
    opts: IdpOptions,
    keys: Vec<(Algorithm, KeyPair)>,
    devices: HashMap<String, DeviceGrant>,
    codes: HashMap<String, AuthCode>,
    refresh: HashMap<String, RefreshGrant>,
    /// Refresh tokens already exchanged, with their family: presenting one again revokes the
    /// family (what IdPs with refresh token rotation do on reuse).
    used_refresh: HashMap<String, u64>,
    next_family: u64,
    slow_down_next: usize,
    jwks_fetches: usize,
    requests: Vec<String>,
}

struct Shared {
    issuer: String,
    state: Mutex<IdpState>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, IdpState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The running stand-in identity provider; stops when dropped. See the module docs for what it
/// serves.
pub struct Idp {
    shared: Arc<Shared>,
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Idp {
    /// Starts an IdP with the default [`IdpOptions`].
    pub fn start() -> Idp {
        Idp::start_with(IdpOptions::default())
    }

    /// Starts an IdP with `opts`.
    pub fn start_with(opts: IdpOptions) -> Idp {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the IdP");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("IdP address");
        let path = opts.issuer_path.trim_end_matches('/').to_owned();
        assert!(
            path.is_empty() || path.starts_with('/'),
            "issuer_path starts with /"
        );
        let issuer = format!("http://{addr}{path}");
        let keys = new_key_set();
        let shared = Arc::new(Shared {
            issuer,
            state: Mutex::new(IdpState {
                opts,
                keys,
                devices: HashMap::new(),
                codes: HashMap::new(),
                refresh: HashMap::new(),
                used_refresh: HashMap::new(),
                next_family: 0,
                slow_down_next: 0,
                jwks_fetches: 0,
                requests: Vec::new(),
            }),
        });
        let routes = Router::new()
            .route("/.well-known/openid-configuration", get(discovery))
            .route("/jwks", get(jwks))
            .route("/device/code", post(device_authorization))
            .route("/device", get(device_page))
            .route("/token", post(token))
            .route("/authorize", get(authorize));
        let app = if path.is_empty() {
            routes
        } else {
            Router::new().nest(&path, routes)
        }
        .with_state(shared.clone());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("stand-in-idp".to_owned())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("IdP runtime");
                rt.block_on(async move {
                    let listener =
                        tokio::net::TcpListener::from_std(listener).expect("IdP listener");
                    let _ = axum::serve(listener, app)
                        .with_graceful_shutdown(async {
                            let _ = stopped.await;
                        })
                        .await;
                });
            })
            .expect("IdP thread");
        Idp {
            shared,
            addr,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// The issuer URL: `http://127.0.0.1:PORT` plus the issuer path, no trailing slash.
    pub fn issuer(&self) -> String {
        self.shared.issuer.clone()
    }

    /// The address the IdP listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The registered client id (the `aud` of its id_tokens).
    pub fn client_id(&self) -> String {
        self.shared.lock().opts.client_id.clone()
    }

    /// Who signs in from now on (device codes approved later, authorization codes, and the user of
    /// [`Idp::id_token_claims`]; refresh tokens keep the user they were issued to).
    pub fn set_user(&self, user: IdpUser) {
        self.shared.lock().opts.user = user;
    }

    /// The user approves the pending device code `user_code` (as the current [`IdpUser`]).
    /// Panics when no device authorization has that user code.
    pub fn approve(&self, user_code: &str) {
        let mut st = self.shared.lock();
        let user = st.opts.user.clone();
        let grant = st
            .devices
            .values_mut()
            .find(|g| g.user_code == user_code)
            .unwrap_or_else(|| panic!("no device authorization with user code {user_code}"));
        grant.status = DeviceStatus::Approved(user);
    }

    /// The user refuses the device code `user_code`: its next poll is answered `access_denied`.
    pub fn deny(&self, user_code: &str) {
        let mut st = self.shared.lock();
        let grant = st
            .devices
            .values_mut()
            .find(|g| g.user_code == user_code)
            .unwrap_or_else(|| panic!("no device authorization with user code {user_code}"));
        grant.status = DeviceStatus::Denied;
    }

    /// Approve every device code on its first poll (as the current user).
    pub fn set_auto_approve(&self, on: bool) {
        self.shared.lock().opts.auto_approve = on;
    }

    /// Lifetime of the tokens issued from now on (`exp` - `iat` of the id_token, `expires_in`).
    pub fn set_token_lifetime(&self, d: Duration) {
        self.shared.lock().opts.token_lifetime = d;
    }

    /// Lifetime of the refresh tokens issued from now on (`refresh_expires_in`).
    pub fn set_refresh_token_lifetime(&self, d: Duration) {
        self.shared.lock().opts.refresh_token_lifetime = d;
    }

    /// The polling interval of device authorizations made from now on.
    pub fn set_device_interval(&self, d: Duration) {
        self.shared.lock().opts.device_interval = d;
    }

    /// How long device codes made from now on stay valid.
    pub fn set_device_code_lifetime(&self, d: Duration) {
        self.shared.lock().opts.device_code_lifetime = d;
    }

    /// The algorithm whose key signs the id_tokens issued from now on (RS256, ES256 or EdDSA).
    pub fn set_signing_alg(&self, alg: Algorithm) {
        assert!(
            matches!(alg, Algorithm::RS256 | Algorithm::ES256 | Algorithm::EdDSA),
            "the IdP has RS256, ES256 and EdDSA keys"
        );
        self.shared.lock().opts.signing_alg = alg;
    }

    /// The next `n` device-code polls are answered `slow_down` whatever their timing (and, as
    /// RFC 8628 says, the interval that code requires grows by 5 s each time).
    pub fn slow_down_next_polls(&self, n: usize) {
        self.shared.lock().slow_down_next = n;
    }

    /// Revokes every outstanding refresh token: the next refresh is answered `invalid_grant`.
    pub fn revoke_refresh_tokens(&self) {
        let mut st = self.shared.lock();
        let revoked: Vec<(String, u64)> = st.refresh.drain().map(|(t, g)| (t, g.family)).collect();
        st.used_refresh.extend(revoked);
    }

    /// How many refresh tokens are currently valid.
    pub fn live_refresh_tokens(&self) -> usize {
        self.shared.lock().refresh.len()
    }

    /// The claims an id_token issued now for the current user would carry (`aud` the client id,
    /// `iat`/`nbf` now, `exp` after the token lifetime). Handy for [`Idp::mint`] variations.
    pub fn id_token_claims(&self) -> Value {
        let st = self.shared.lock();
        claims_for(
            &self.shared.issuer,
            &st.opts.client_id,
            &st.opts.user,
            st.opts.token_lifetime,
            None,
        )
    }

    /// A JWT with `claims` exactly as given, signed by the current key of `alg` (RS256, ES256 or
    /// EdDSA), header `alg`, `typ: JWT` and that key's `kid`.
    pub fn mint(&self, alg: Algorithm, claims: &Value) -> String {
        let st = self.shared.lock();
        let key = key_of(&st, alg);
        let mut header = Header::new(alg);
        header.kid = Some(key.kid.clone());
        jsonwebtoken::encode(&header, claims, &key.encoding).expect("sign")
    }

    /// A JWT with any `header`, signed with the current key of `key_alg`, whatever the header
    /// says (for algorithm-confusion tests: e.g. header `ES256` over an RS256 signature).
    /// `key_alg` HS256 signs with HMAC-SHA256 whose secret is the current RS256 public key's PEM
    /// text ([`Idp::rsa_public_key_pem`]): the classic RS256/HS256 confusion. The signature is
    /// made with `key_alg`'s algorithm; the header is serialised as given.
    pub fn mint_with_header(&self, header: Header, key_alg: Algorithm, claims: &Value) -> String {
        let st = self.shared.lock();
        let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        let signing_input = format!(
            "{}.{}",
            b64(&serde_json::to_vec(&header).expect("header JSON")),
            b64(&serde_json::to_vec(claims).expect("claims JSON"))
        );
        let signature = if key_alg == Algorithm::HS256 {
            let secret = key_of(&st, Algorithm::RS256).public_pem.clone();
            jsonwebtoken::crypto::sign(
                signing_input.as_bytes(),
                &EncodingKey::from_secret(secret.as_bytes()).expect("HMAC key"),
                Algorithm::HS256,
            )
        } else {
            jsonwebtoken::crypto::sign(
                signing_input.as_bytes(),
                &key_of(&st, key_alg).encoding,
                key_alg,
            )
        }
        .expect("sign");
        format!("{signing_input}.{signature}")
    }

    /// The current RS256 public key as SubjectPublicKeyInfo PEM.
    pub fn rsa_public_key_pem(&self) -> String {
        key_of(&self.shared.lock(), Algorithm::RS256)
            .public_pem
            .clone()
    }

    /// The `kid` of the current key of `alg`.
    pub fn kid(&self, alg: Algorithm) -> String {
        key_of(&self.shared.lock(), alg).kid.clone()
    }

    /// The JWK set `/jwks` serves now.
    pub fn jwks(&self) -> JwkSet {
        jwk_set(&self.shared.lock())
    }

    /// Replaces every key by a new one with a new `kid`: `/jwks` lists only the new keys, so
    /// tokens signed with the old ones no longer verify.
    pub fn rotate(&self) {
        let keys = new_key_set();
        self.shared.lock().keys = keys;
    }

    /// How many times `/jwks` was fetched.
    pub fn jwks_fetches(&self) -> usize {
        self.shared.lock().jwks_fetches
    }

    /// Every request so far, one line each: `METHOD /path` (without the issuer path), and for
    /// `POST /token` the grant: `POST /token grant_type=refresh_token`.
    pub fn requests(&self) -> Vec<String> {
        self.shared.lock().requests.clone()
    }
}

impl Drop for Idp {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn key_of(st: &IdpState, alg: Algorithm) -> &KeyPair {
    st.keys
        .iter()
        .find(|(a, _)| *a == alg)
        .map(|(_, k)| k)
        .unwrap_or_else(|| panic!("the IdP has no {alg:?} key"))
}

fn jwk_set(st: &IdpState) -> JwkSet {
    JwkSet {
        keys: st.keys.iter().map(|(_, k)| k.jwk.clone()).collect(),
    }
}

/// One key per algorithm the IdP signs with, each with a fresh `kid`.
fn new_key_set() -> Vec<(Algorithm, KeyPair)> {
    [Algorithm::RS256, Algorithm::ES256, Algorithm::EdDSA]
        .into_iter()
        .map(|alg| (alg, new_key(alg)))
        .collect()
}

fn openssl(args: &[&str], stdin: Option<&[u8]>) -> Vec<u8> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new("openssl")
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run openssl (the stand-in IdP makes its keys with it)");
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(input).expect("openssl stdin");
    }
    let out = child.wait_with_output().expect("openssl");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn new_key(alg: Algorithm) -> KeyPair {
    let (private_pem, encoding) = match alg {
        Algorithm::RS256 => {
            let pem = openssl(
                &[
                    "genpkey",
                    "-algorithm",
                    "RSA",
                    "-pkeyopt",
                    "rsa_keygen_bits:2048",
                ],
                None,
            );
            // jsonwebtoken's RSA keys are PKCS#1 DER.
            let der = openssl(&["rsa", "-outform", "DER", "-traditional"], Some(&pem));
            (pem, EncodingKey::from_rsa_der(&der))
        }
        Algorithm::ES256 => {
            let pem = openssl(
                &[
                    "genpkey",
                    "-algorithm",
                    "EC",
                    "-pkeyopt",
                    "ec_paramgen_curve:P-256",
                ],
                None,
            );
            // PKCS#8 (`openssl pkey` would write SEC1 for EC keys).
            let der = openssl(
                &["pkcs8", "-topk8", "-nocrypt", "-outform", "DER"],
                Some(&pem),
            );
            (pem, EncodingKey::from_ec_der(&der))
        }
        Algorithm::EdDSA => {
            let pem = openssl(&["genpkey", "-algorithm", "ed25519"], None);
            let der = openssl(&["pkey", "-outform", "DER"], Some(&pem));
            (pem, EncodingKey::from_ed_der(&der))
        }
        other => panic!("the IdP has no {other:?} keys"),
    };
    let public_pem =
        String::from_utf8(openssl(&["pkey", "-pubout"], Some(&private_pem))).expect("PEM is ASCII");
    let kid = format!("{}-{}", alg_name(alg), random_token(8));
    let mut jwk = Jwk::from_encoding_key(&encoding, alg).expect("public JWK");
    jwk.common.key_id = Some(kid.clone());
    jwk.common.public_key_use = Some(PublicKeyUse::Signature);
    jwk.common.key_algorithm = Some(match alg {
        Algorithm::RS256 => KeyAlgorithm::RS256,
        Algorithm::ES256 => KeyAlgorithm::ES256,
        _ => KeyAlgorithm::EdDSA,
    });
    KeyPair {
        kid,
        encoding,
        jwk,
        public_pem,
    }
}

fn alg_name(alg: Algorithm) -> &'static str {
    match alg {
        Algorithm::RS256 => "rs256",
        Algorithm::ES256 => "es256",
        Algorithm::EdDSA => "eddsa",
        _ => "other",
    }
}

/// `n` random bytes as base64url: codes, tokens, key ids.
fn random_token(n: usize) -> String {
    let bytes: Vec<u8> = (0..n).map(|_| rand::random::<u8>()).collect();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A user code as people type them: `BCDF-GHJK` (no vowels, no look-alikes).
fn user_code() -> String {
    const ALPHABET: &[u8] = b"BCDFGHJKLMNPQRSTVWXZ";
    let mut s = String::new();
    for i in 0..8 {
        if i == 4 {
            s.push('-');
        }
        s.push(ALPHABET[rand::random::<u32>() as usize % ALPHABET.len()] as char);
    }
    s
}

fn claims_for(
    issuer: &str,
    client_id: &str,
    user: &IdpUser,
    lifetime: Duration,
    nonce: Option<&str>,
) -> Value {
    let now = chrono::Utc::now().timestamp();
    let mut claims = json!({
        "iss": issuer,
        "aud": client_id,
        "sub": user.sub,
        "preferred_username": user.preferred_username,
        "email": user.email,
        "groups": user.groups,
        "iat": now,
        "nbf": now,
        "exp": now + lifetime.as_secs() as i64,
    });
    if let Some(n) = nonce {
        claims["nonce"] = Value::from(n);
    }
    claims
}

/// An OAuth error answer (RFC 6749 §5.2).
fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    (
        status,
        [(header::CACHE_CONTROL, "no-store")],
        Json(json!({ "error": error, "error_description": description })),
    )
        .into_response()
}

fn log(shared: &Shared, line: String) -> MutexGuard<'_, IdpState> {
    let mut st = shared.lock();
    st.requests.push(line);
    st
}

async fn discovery(State(shared): State<Arc<Shared>>) -> Json<Value> {
    drop(log(
        &shared,
        "GET /.well-known/openid-configuration".to_owned(),
    ));
    let iss = &shared.issuer;
    Json(json!({
        "issuer": iss,
        "jwks_uri": format!("{iss}/jwks"),
        "token_endpoint": format!("{iss}/token"),
        "device_authorization_endpoint": format!("{iss}/device/code"),
        "authorization_endpoint": format!("{iss}/authorize"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "grant_types_supported": ["authorization_code", "refresh_token", DEVICE_CODE_GRANT],
        "code_challenge_methods_supported": ["S256"],
        "id_token_signing_alg_values_supported": ["RS256", "ES256", "EdDSA"],
        "token_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": ["openid", "profile", "email", "groups", "offline_access"],
        "claims_supported": ["iss", "aud", "sub", "preferred_username", "email", "groups", "iat", "nbf", "exp"],
    }))
}

async fn jwks(State(shared): State<Arc<Shared>>) -> Json<JwkSet> {
    let mut st = log(&shared, "GET /jwks".to_owned());
    st.jwks_fetches += 1;
    Json(jwk_set(&st))
}

type Params = HashMap<String, String>;

async fn device_authorization(
    State(shared): State<Arc<Shared>>,
    Form(form): Form<Params>,
) -> Response {
    let mut st = log(&shared, "POST /device/code".to_owned());
    if form.get("client_id") != Some(&st.opts.client_id) {
        return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client", "unknown client");
    }
    let device_code = random_token(32);
    let code = user_code();
    let interval = st.opts.device_interval;
    let lifetime = st.opts.device_code_lifetime;
    let scope = form.get("scope").cloned().unwrap_or_default();
    st.devices.insert(
        device_code.clone(),
        DeviceGrant {
            user_code: code.clone(),
            scope,
            status: DeviceStatus::Pending,
            expires_at: Instant::now() + lifetime,
            interval,
            last_poll: None,
        },
    );
    let iss = &shared.issuer;
    Json(json!({
        "device_code": device_code,
        "user_code": code,
        "verification_uri": format!("{iss}/device"),
        "verification_uri_complete": format!("{iss}/device?user_code={code}"),
        "expires_in": lifetime.as_secs(),
        "interval": interval.as_secs().max(1),
    }))
    .into_response()
}

async fn device_page(State(shared): State<Arc<Shared>>, Query(q): Query<Params>) -> Response {
    let mut st = log(&shared, "GET /device".to_owned());
    let user = st.opts.user.clone();
    let Some(code) = q.get("user_code") else {
        return Html("<p>Enter the code your device shows.</p>").into_response();
    };
    match st
        .devices
        .values_mut()
        .find(|g| &g.user_code == code && matches!(g.status, DeviceStatus::Pending))
    {
        Some(grant) => {
            grant.status = DeviceStatus::Approved(user);
            Html("<p>Approved. You can go back to your terminal.</p>").into_response()
        }
        None => (StatusCode::NOT_FOUND, Html("<p>No such code.</p>")).into_response(),
    }
}

async fn token(State(shared): State<Arc<Shared>>, Form(form): Form<Params>) -> Response {
    let grant_type = form.get("grant_type").cloned().unwrap_or_default();
    let mut st = log(&shared, format!("POST /token grant_type={grant_type}"));
    if form.get("client_id") != Some(&st.opts.client_id) {
        return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client", "unknown client");
    }
    let issuer = shared.issuer.as_str();
    match grant_type.as_str() {
        DEVICE_CODE_GRANT => device_token(&mut st, issuer, &form),
        "refresh_token" => refresh_token(&mut st, issuer, &form),
        "authorization_code" => code_token(&mut st, issuer, &form),
        _ => oauth_error(
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
            "unsupported grant type",
        ),
    }
}

fn device_token(st: &mut IdpState, issuer: &str, form: &Params) -> Response {
    let Some(device_code) = form.get("device_code") else {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", "no device_code");
    };
    let auto = st.opts.auto_approve;
    let default_user = st.opts.user.clone();
    let force_slow_down = if st.slow_down_next > 0 {
        st.slow_down_next -= 1;
        true
    } else {
        false
    };
    let Some(grant) = st.devices.get_mut(device_code) else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_grant",
            "unknown device code",
        );
    };
    let now = Instant::now();
    if now >= grant.expires_at {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "expired_token",
            "the device code expired",
        );
    }
    // Polling faster than the interval (with a little slack for timers) is answered slow_down,
    // and the interval grows by 5 s (RFC 8628 §3.5).
    let too_fast = grant
        .last_poll
        .is_some_and(|last| now.duration_since(last) + Duration::from_millis(250) < grant.interval);
    grant.last_poll = Some(now);
    if force_slow_down || too_fast {
        grant.interval += Duration::from_secs(5);
        return oauth_error(StatusCode::BAD_REQUEST, "slow_down", "polling too fast");
    }
    if auto && matches!(grant.status, DeviceStatus::Pending) {
        grant.status = DeviceStatus::Approved(default_user);
    }
    match grant.status.clone() {
        DeviceStatus::Pending => oauth_error(
            StatusCode::BAD_REQUEST,
            "authorization_pending",
            "the user has not approved yet",
        ),
        DeviceStatus::Denied => oauth_error(
            StatusCode::BAD_REQUEST,
            "access_denied",
            "the user denied the request",
        ),
        DeviceStatus::Redeemed => oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_grant",
            "the device code was used already",
        ),
        DeviceStatus::Approved(user) => {
            grant.status = DeviceStatus::Redeemed;
            let scope = grant.scope.clone();
            issue_tokens(st, issuer, &user, &scope, None, None)
        }
    }
}

fn refresh_token(st: &mut IdpState, issuer: &str, form: &Params) -> Response {
    let Some(presented) = form.get("refresh_token") else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "no refresh_token",
        );
    };
    if let Some(family) = st.used_refresh.get(presented).copied() {
        // Reuse of a rotated (or revoked) token: revoke everything descended from it.
        let dead: Vec<String> = st
            .refresh
            .iter()
            .filter(|(_, g)| g.family == family)
            .map(|(t, _)| t.clone())
            .collect();
        for t in dead {
            st.refresh.remove(&t);
            st.used_refresh.insert(t, family);
        }
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_grant",
            "refresh token already used or revoked",
        );
    }
    let Some(grant) = st.refresh.remove(presented) else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_grant",
            "unknown refresh token",
        );
    };
    st.used_refresh.insert(presented.clone(), grant.family);
    if Instant::now() >= grant.expires_at {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_grant",
            "refresh token expired",
        );
    }
    issue_tokens(
        st,
        issuer,
        &grant.user,
        &grant.scope,
        None,
        Some(grant.family),
    )
}

fn code_token(st: &mut IdpState, issuer: &str, form: &Params) -> Response {
    let Some(code) = form.get("code").and_then(|c| st.codes.remove(c)) else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_grant",
            "unknown or used code",
        );
    };
    if Instant::now() >= code.expires_at {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", "code expired");
    }
    if form.get("client_id") != Some(&code.client_id)
        || form.get("redirect_uri") != Some(&code.redirect_uri)
    {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_grant",
            "client_id or redirect_uri differ from the authorization request",
        );
    }
    let Some(verifier) = form.get("code_verifier") else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "no code_verifier",
        );
    };
    let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(sha2::Sha256::digest(verifier.as_bytes()));
    if computed != code.challenge {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_grant",
            "PKCE verification failed",
        );
    }
    issue_tokens(
        st,
        issuer,
        &code.user,
        &code.scope,
        code.nonce.as_deref(),
        None,
    )
}

/// The token response: a signed id_token, an opaque access token and a new refresh token (in
/// `family`, or a new family).
fn issue_tokens(
    st: &mut IdpState,
    issuer: &str,
    user: &IdpUser,
    scope: &str,
    nonce: Option<&str>,
    family: Option<u64>,
) -> Response {
    let lifetime = st.opts.token_lifetime;
    let claims = claims_for(issuer, &st.opts.client_id, user, lifetime, nonce);
    let alg = st.opts.signing_alg;
    let key = key_of(st, alg);
    let mut header = Header::new(alg);
    header.kid = Some(key.kid.clone());
    let id_token = jsonwebtoken::encode(&header, &claims, &key.encoding).expect("sign id_token");
    let family = family.unwrap_or_else(|| {
        st.next_family += 1;
        st.next_family
    });
    let refresh = format!("rt-{}", random_token(32));
    let refresh_lifetime = st.opts.refresh_token_lifetime;
    st.refresh.insert(
        refresh.clone(),
        RefreshGrant {
            user: user.clone(),
            scope: scope.to_owned(),
            family,
            expires_at: Instant::now() + refresh_lifetime,
        },
    );
    (
        [(header::CACHE_CONTROL, "no-store")],
        Json(json!({
            "access_token": format!("at-{}", random_token(32)),
            "id_token": id_token,
            "refresh_token": refresh,
            "token_type": "Bearer",
            "expires_in": lifetime.as_secs(),
            "refresh_expires_in": refresh_lifetime.as_secs(),
            "scope": scope,
        })),
    )
        .into_response()
}

/// True for `http://127.0.0.1:PORT/...` (a loopback redirect of a native app, RFC 8252 §7.3).
fn loopback_redirect(uri: &str) -> bool {
    let Some(rest) = uri.strip_prefix("http://127.0.0.1:") else {
        return false;
    };
    let port: String = rest.chars().take_while(char::is_ascii_digit).collect();
    !port.is_empty() && port.parse::<u16>().is_ok() && rest[port.len()..].starts_with('/')
}

async fn authorize(State(shared): State<Arc<Shared>>, Query(q): Query<Params>) -> Response {
    let mut st = log(&shared, "GET /authorize".to_owned());
    let redirect_uri = q.get("redirect_uri").cloned().unwrap_or_default();
    if q.get("client_id") != Some(&st.opts.client_id) || !loopback_redirect(&redirect_uri) {
        // Never redirect to an unregistered place: an error page.
        return (
            StatusCode::BAD_REQUEST,
            Html("<p>Unknown client or a redirect_uri that is not http://127.0.0.1:PORT/…</p>"),
        )
            .into_response();
    }
    let state = q.get("state").cloned().unwrap_or_default();
    let back = |params: &[(&str, &str)]| -> Response {
        Redirect::to(&url_with_query(&redirect_uri, params)).into_response()
    };
    if q.get("response_type").map(String::as_str) != Some("code") {
        return back(&[("error", "unsupported_response_type"), ("state", &state)]);
    }
    let challenge = match (
        q.get("code_challenge"),
        q.get("code_challenge_method").map(String::as_str),
    ) {
        (Some(c), Some("S256")) if !c.is_empty() => c.clone(),
        _ => {
            return back(&[
                ("error", "invalid_request"),
                ("error_description", "PKCE S256 is required"),
                ("state", &state),
            ]);
        }
    };
    let code = random_token(24);
    let user = st.opts.user.clone();
    let client_id = st.opts.client_id.clone();
    st.codes.insert(
        code.clone(),
        AuthCode {
            client_id,
            redirect_uri: redirect_uri.clone(),
            challenge,
            scope: q.get("scope").cloned().unwrap_or_default(),
            nonce: q.get("nonce").cloned(),
            user,
            expires_at: Instant::now() + Duration::from_secs(60),
        },
    );
    drop(st);
    back(&[("code", &code), ("state", &state)])
}

fn url_with_query(base: &str, params: &[(&str, &str)]) -> String {
    let query = serde_urlencoded::to_string(params).unwrap_or_default();
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}{query}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http() -> reqwest::Client {
        let _ = rustls::crypto::ring::default_provider().install_default();
        reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap()
    }

    async fn post_form(url: &str, form: &[(&str, &str)]) -> (u16, Value) {
        let r = http()
            .post(url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(serde_urlencoded::to_string(form).unwrap())
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        (status, r.json().await.unwrap())
    }

    fn decode(token: &str, idp: &Idp, alg: Algorithm) -> Value {
        let header = jsonwebtoken::decode_header(token).unwrap();
        let set = idp.jwks();
        let jwk = set
            .find(header.kid.as_deref().unwrap())
            .expect("kid in jwks");
        let key = jsonwebtoken::DecodingKey::from_jwk(jwk).unwrap();
        let mut v = jsonwebtoken::Validation::new(alg);
        v.set_audience(&[idp.client_id()]);
        v.set_issuer(&[idp.issuer()]);
        jsonwebtoken::decode::<Value>(token, &key, &v)
            .unwrap()
            .claims
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn discovery_and_jwks() {
        let idp = Idp::start_with(IdpOptions {
            issuer_path: "/realms/acme".to_owned(),
            ..IdpOptions::default()
        });
        let iss = idp.issuer();
        assert!(iss.ends_with("/realms/acme"), "{iss}");
        let d: Value = http()
            .get(format!("{iss}/.well-known/openid-configuration"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(d["issuer"], iss);
        assert_eq!(d["code_challenge_methods_supported"], json!(["S256"]));
        let set: Value = http()
            .get(d["jwks_uri"].as_str().unwrap())
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let keys = set["keys"].as_array().unwrap();
        let algs: Vec<&str> = keys.iter().map(|k| k["alg"].as_str().unwrap()).collect();
        assert_eq!(algs, ["RS256", "ES256", "EdDSA"]);
        assert!(
            keys.iter()
                .all(|k| k["use"] == "sig" && k["kid"].is_string())
        );
        assert_eq!(idp.jwks_fetches(), 1);
        for alg in [Algorithm::RS256, Algorithm::ES256, Algorithm::EdDSA] {
            let token = idp.mint(alg, &idp.id_token_claims());
            assert_eq!(decode(&token, &idp, alg)["preferred_username"], "alice");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn device_flow_refresh_and_rotation() {
        let idp = Idp::start();
        let iss = idp.issuer();
        let client = idp.client_id();
        let (status, dev) = post_form(
            &format!("{iss}/device/code"),
            &[("client_id", &client), ("scope", "openid offline_access")],
        )
        .await;
        assert_eq!(status, 200, "{dev}");
        let device_code = dev["device_code"].as_str().unwrap().to_owned();
        let poll = [
            ("grant_type", DEVICE_CODE_GRANT),
            ("device_code", &device_code),
            ("client_id", &client),
        ];
        let (status, r) = post_form(&format!("{iss}/token"), &poll).await;
        assert_eq!(
            (status, r["error"].as_str()),
            (400, Some("authorization_pending"))
        );
        // Polling again at once is too fast.
        let (_, r) = post_form(&format!("{iss}/token"), &poll).await;
        assert_eq!(r["error"], "slow_down");
        idp.approve(dev["user_code"].as_str().unwrap());
        tokio::time::sleep(Duration::from_secs(6)).await;
        let (status, tokens) = post_form(&format!("{iss}/token"), &poll).await;
        assert_eq!(status, 200, "{tokens}");
        assert_eq!(tokens["token_type"], "Bearer");
        let claims = decode(tokens["id_token"].as_str().unwrap(), &idp, Algorithm::RS256);
        assert_eq!(claims["groups"], json!(["memsync:acme"]));

        // Refresh rotates: the old refresh token is dead afterwards.
        let rt1 = tokens["refresh_token"].as_str().unwrap().to_owned();
        let refresh = |rt: String| {
            let (iss, client) = (iss.clone(), client.clone());
            async move {
                post_form(
                    &format!("{iss}/token"),
                    &[
                        ("grant_type", "refresh_token"),
                        ("refresh_token", &rt),
                        ("client_id", &client),
                    ],
                )
                .await
            }
        };
        let (status, t2) = refresh(rt1.clone()).await;
        assert_eq!(status, 200, "{t2}");
        let rt2 = t2["refresh_token"].as_str().unwrap().to_owned();
        assert_ne!(rt1, rt2);
        let (status, again) = refresh(rt1).await;
        assert_eq!(
            (status, again["error"].as_str()),
            (400, Some("invalid_grant"))
        );
        // ... and its reuse revoked the whole family.
        let (_, r) = refresh(rt2).await;
        assert_eq!(r["error"], "invalid_grant");
        assert!(
            idp.requests()
                .contains(&"POST /token grant_type=refresh_token".to_owned())
        );

        // Rotation: new kids; tokens of the old keys no longer find a key.
        let before = idp.kid(Algorithm::RS256);
        let old = idp.mint(Algorithm::RS256, &idp.id_token_claims());
        idp.rotate();
        assert_ne!(idp.kid(Algorithm::RS256), before);
        let header = jsonwebtoken::decode_header(&old).unwrap();
        assert!(idp.jwks().find(header.kid.as_deref().unwrap()).is_none());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn authorization_code_with_pkce() {
        let idp = Idp::start();
        idp.set_signing_alg(Algorithm::EdDSA);
        let iss = idp.issuer();
        let client = idp.client_id();
        let verifier = "a-verifier-of-at-least-43-characters-0123456789";
        let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(sha2::Sha256::digest(verifier.as_bytes()));
        let redirect = "http://127.0.0.1:9/callback";
        let url = url_with_query(
            &format!("{iss}/authorize"),
            &[
                ("response_type", "code"),
                ("client_id", &client),
                ("redirect_uri", redirect),
                ("state", "s1"),
                ("code_challenge", &challenge),
                ("code_challenge_method", "S256"),
            ],
        );
        let r = http().get(&url).send().await.unwrap();
        assert_eq!(r.status(), 303);
        let location = r.headers()["location"].to_str().unwrap().to_owned();
        let query: Params =
            serde_urlencoded::from_str(location.split_once('?').unwrap().1).unwrap();
        assert_eq!(query["state"], "s1");
        let exchange = |verifier: &'static str, code: String| {
            let (iss, client) = (iss.clone(), client.clone());
            async move {
                post_form(
                    &format!("{iss}/token"),
                    &[
                        ("grant_type", "authorization_code"),
                        ("code", &code),
                        ("code_verifier", verifier),
                        ("redirect_uri", redirect),
                        ("client_id", &client),
                    ],
                )
                .await
            }
        };
        let (status, tokens) = exchange(verifier, query["code"].clone()).await;
        assert_eq!(status, 200, "{tokens}");
        decode(tokens["id_token"].as_str().unwrap(), &idp, Algorithm::EdDSA);
        // A code is good once.
        let (status, _) = exchange(verifier, query["code"].clone()).await;
        assert_eq!(status, 400);
        // A non-loopback redirect is refused outright.
        let bad = url.replace("127.0.0.1%3A9", "evil.example");
        assert_eq!(http().get(&bad).send().await.unwrap().status(), 400);
    }
}
