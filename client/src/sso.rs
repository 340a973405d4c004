//! Single sign-on with the company's OpenID Connect provider: `memsync login --sso` and the
//! silent renewal of the token it stores.
//!
//! The token memsync sends to the server is the provider's **id_token** (the server verifies it
//! against the provider's keys). Signing in is an OAuth device authorization (RFC 8628: the user
//! approves a code in any browser) or, with `--browser`, an authorization code with PKCE (RFC
//! 7636) sent back to a loopback redirect on this machine (RFC 8252). Both end with tokens from
//! the provider's token endpoint, whose refresh token renews the id_token later
//! ([`StoredSignIn`]): under a lock on the credentials file, so that two memsync processes never
//! spend the same rotating refresh token.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use chrono::{DateTime, Utc};
use reqwest::Url;
use serde::Deserialize;
use sha2::Digest;

use crate::config::{Credentials, Env, LockError, SsoLogin, Token};

/// The grant type of RFC 8628's device access token request.
pub const DEVICE_CODE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

/// What memsync asks for when the server names no scopes: the id_token with the user's name,
/// email and groups, and a refresh token.
pub const DEFAULT_SCOPES: [&str; 5] = ["openid", "profile", "email", "groups", "offline_access"];

/// A stored token this close to its expiry is renewed before it is used.
pub const RENEW_BEFORE: Duration = Duration::from_secs(60);

/// Where the callback of the browser sign-in lands: `http://127.0.0.1:<port>/callback`.
pub const CALLBACK_PATH: &str = "/callback";

#[derive(Debug, thiserror::Error)]
pub enum SsoError {
    /// The provider answered with an OAuth error (RFC 6749 §5.2).
    #[error("the identity provider refused: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Refused {
        error: String,
        description: Option<String>,
    },
    /// No answer, or an answer that is not what OpenID Connect says it is.
    #[error("{0}")]
    Failed(String),
}

impl SsoError {
    fn failed(what: impl std::fmt::Display) -> SsoError {
        SsoError::Failed(what.to_string())
    }
}

/// One identity provider the server trusts, as `GET /v1/auth/config` names it.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct OidcProvider {
    pub issuer: String,
    pub client_id: String,
    #[serde(default)]
    pub scopes: Vec<String>,
}

/// `GET /v1/auth/config`: how to sign in to the server. Not in `memsync_core::wire` (yet): the
/// server owns that file.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct AuthConfig {
    #[serde(default)]
    pub oidc: Vec<OidcProvider>,
}

/// The parts of a provider's discovery document (`<issuer>/.well-known/openid-configuration`)
/// memsync uses.
#[derive(Debug, Clone, Deserialize)]
pub struct Discovery {
    pub issuer: String,
    pub token_endpoint: String,
    #[serde(default)]
    pub device_authorization_endpoint: Option<String>,
    #[serde(default)]
    pub authorization_endpoint: Option<String>,
    #[serde(default)]
    pub code_challenge_methods_supported: Vec<String>,
}

/// Two issuer URLs name the same issuer (a trailing `/` aside).
pub fn same_issuer(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// The HTTP client for the identity provider: the same TLS set-up as the memsync server's.
pub fn http_client(issuer: &str, timeout: Duration) -> Result<reqwest::Client, SsoError> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let url = Url::parse(issuer)
        .map_err(|e| SsoError::failed(format!("`{issuer}` is not an issuer URL: {e}")))?;
    crate::api::http_builder(&url)
        .connect_timeout(timeout.min(Duration::from_secs(5)))
        .timeout(timeout)
        .user_agent(concat!("memsync/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| SsoError::failed(format!("cannot build the HTTP client: {e}")))
}

fn unreachable(url: &str, e: &reqwest::Error) -> SsoError {
    let mut reason = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        reason = s.to_string();
        src = s.source();
    }
    if e.is_timeout() {
        reason = "no answer in time".into();
    }
    SsoError::Failed(format!(
        "cannot reach the identity provider at {url}: {reason}"
    ))
}

/// Reads the provider's discovery document and checks that it speaks for `issuer`.
pub async fn discover(http: &reqwest::Client, issuer: &str) -> Result<Discovery, SsoError> {
    let url = format!(
        "{}/.well-known/openid-configuration",
        issuer.trim_end_matches('/')
    );
    let resp = http
        .get(&url)
        .send()
        .await
        .map_err(|e| unreachable(&url, &e))?;
    if !resp.status().is_success() {
        return Err(SsoError::Failed(format!(
            "{url} answered {}: is {issuer} an OpenID Connect issuer?",
            resp.status()
        )));
    }
    let d: Discovery = resp.json().await.map_err(|e| {
        SsoError::Failed(format!(
            "{url} is not an OpenID Connect discovery document: {e}"
        ))
    })?;
    if !same_issuer(&d.issuer, issuer) {
        return Err(SsoError::Failed(format!(
            "{url} names another issuer ({}); memsync trusts only {issuer}",
            d.issuer
        )));
    }
    Ok(d)
}

/// An OAuth error body.
#[derive(Deserialize)]
struct OAuthError {
    error: String,
    #[serde(default)]
    error_description: Option<String>,
}

#[derive(Deserialize)]
struct TokenResponse {
    #[serde(default)]
    id_token: Option<String>,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
    /// Keycloak's name for the refresh token's lifetime; other providers say nothing.
    #[serde(default)]
    refresh_expires_in: Option<u64>,
}

/// What a sign-in or a renewal gives: the token for the memsync server and what renews it.
pub struct SignedIn {
    pub id_token: Token,
    pub refresh_token: Option<String>,
    pub expires_at: DateTime<Utc>,
    pub refresh_expires_at: Option<DateTime<Utc>>,
}

/// The claims of a JWT, read without verifying it (the memsync server verifies it; the client
/// only needs `exp` and `nonce`).
pub fn jwt_claims(token: &str) -> Option<serde_json::Value> {
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// A form POST to one of the provider's endpoints: the answer's body, or the provider's OAuth
/// error.
async fn post_form(
    http: &reqwest::Client,
    endpoint: &str,
    form: &[(&str, &str)],
) -> Result<Vec<u8>, SsoError> {
    let body = serde_urlencoded::to_string(form).map_err(SsoError::failed)?;
    let resp = http
        .post(endpoint)
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .header(reqwest::header::ACCEPT, "application/json")
        .body(body)
        .send()
        .await
        .map_err(|e| unreachable(endpoint, &e))?;
    let status = resp.status();
    let bytes = resp.bytes().await.map_err(|e| unreachable(endpoint, &e))?;
    if !status.is_success() {
        return Err(match serde_json::from_slice::<OAuthError>(&bytes) {
            Ok(e) => SsoError::Refused {
                error: e.error,
                description: e.error_description,
            },
            Err(_) => SsoError::Failed(format!("{endpoint} answered {status}")),
        });
    }
    Ok(bytes.to_vec())
}

/// A form POST to the token endpoint: the tokens, or the provider's OAuth error.
async fn token_request(
    http: &reqwest::Client,
    endpoint: &str,
    form: &[(&str, &str)],
    nonce: Option<&str>,
) -> Result<SignedIn, SsoError> {
    let bytes = post_form(http, endpoint, form).await?;
    let t: TokenResponse = serde_json::from_slice(&bytes).map_err(|e| {
        SsoError::Failed(format!(
            "the token endpoint's answer is not a token response: {e}"
        ))
    })?;
    let id_token = t.id_token.filter(|t| !t.is_empty()).ok_or_else(|| {
        SsoError::failed(
            "the identity provider sent no id_token (is `openid` among the client's scopes?)",
        )
    })?;
    let claims = jwt_claims(&id_token)
        .ok_or_else(|| SsoError::failed("the identity provider's id_token is not a JWT"))?;
    if let Some(want) = nonce
        && claims.get("nonce").and_then(|n| n.as_str()) != Some(want)
    {
        return Err(SsoError::failed(
            "the id_token does not carry this sign-in's nonce; it was not issued for this request",
        ));
    }
    let now = Utc::now();
    let expires_at = claims
        .get("exp")
        .and_then(serde_json::Value::as_i64)
        .and_then(|e| DateTime::from_timestamp(e, 0))
        .or_else(|| {
            t.expires_in
                .map(|s| now + chrono::Duration::seconds(s.min(i64::MAX as u64) as i64))
        })
        .ok_or_else(|| SsoError::failed("the id_token has no `exp`"))?;
    Ok(SignedIn {
        id_token: Token::new(id_token),
        refresh_token: t.refresh_token.filter(|r| !r.is_empty()),
        expires_at,
        refresh_expires_at: t
            .refresh_expires_in
            .filter(|s| *s > 0)
            .map(|s| now + chrono::Duration::seconds(s.min(i64::MAX as u64) as i64)),
    })
}

/// The refresh token grant: new tokens for an old refresh token (which a rotating provider
/// retires at once).
pub async fn refresh(
    http: &reqwest::Client,
    token_endpoint: &str,
    client_id: &str,
    refresh_token: &str,
) -> Result<SignedIn, SsoError> {
    token_request(
        http,
        token_endpoint,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
            ("client_id", client_id),
        ],
        None,
    )
    .await
}

// ---------------------------------------------------------------------------------------------
// Device authorization (RFC 8628)

/// The provider's answer to a device authorization request: what the user is shown.
#[derive(Debug, Clone, Deserialize)]
pub struct DeviceAuthorization {
    pub device_code: String,
    pub user_code: String,
    pub verification_uri: String,
    #[serde(default)]
    pub verification_uri_complete: Option<String>,
    pub expires_in: u64,
    #[serde(default)]
    pub interval: Option<u64>,
}

/// Asks the provider for a device code and the user code to approve it with.
pub async fn start_device(
    http: &reqwest::Client,
    provider: &Discovery,
    client_id: &str,
    scopes: &[String],
) -> Result<DeviceAuthorization, SsoError> {
    let endpoint = provider
        .device_authorization_endpoint
        .as_deref()
        .ok_or_else(|| {
            SsoError::failed(format!(
                "{} offers no device authorization; sign in with `memsync login --sso --browser`",
                provider.issuer
            ))
        })?;
    let scope = scopes.join(" ");
    let bytes = post_form(
        http,
        endpoint,
        &[("client_id", client_id), ("scope", &scope)],
    )
    .await?;
    serde_json::from_slice(&bytes).map_err(|e| {
        SsoError::Failed(format!(
            "{endpoint}'s answer is not a device authorization: {e}"
        ))
    })
}

/// What to do after a poll the provider answered with the OAuth error `error` (RFC 8628 §3.5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PollNext {
    /// Poll again after this interval.
    Wait(Duration),
    /// Stop: the sign-in did not happen, for this reason.
    Stop(String),
}

/// The next step after the OAuth error `error` when polling every `interval`.
pub fn after_poll(error: &str, interval: Duration) -> PollNext {
    match error {
        "authorization_pending" => PollNext::Wait(interval),
        // RFC 8628: the interval grows by 5 seconds, for this and every later poll.
        "slow_down" => PollNext::Wait(interval + Duration::from_secs(5)),
        "access_denied" => PollNext::Stop(
            "the sign-in was denied at the identity provider (the code was refused, not approved)"
                .into(),
        ),
        "expired_token" => PollNext::Stop(
            "the code expired before it was approved; run `memsync login --sso` again".into(),
        ),
        other => PollNext::Stop(format!(
            "the identity provider refused the sign-in: {other}"
        )),
    }
}

/// Polls the token endpoint until the user approved the code (or refused it, or it expired, or
/// `give_up_at`).
pub async fn poll_device(
    http: &reqwest::Client,
    provider: &Discovery,
    client_id: &str,
    auth: &DeviceAuthorization,
    give_up_at: Instant,
) -> Result<SignedIn, SsoError> {
    let started = Instant::now();
    let expires = started + Duration::from_secs(auth.expires_in);
    // RFC 8628 §3.2: 5 seconds when the provider names no interval.
    let mut interval = Duration::from_secs(auth.interval.unwrap_or(5).max(1));
    let mut transport_failures = 0;
    loop {
        let now = Instant::now();
        let end = expires.min(give_up_at);
        if now + interval > end {
            tokio::time::sleep(end.saturating_duration_since(now)).await;
            return Err(SsoError::Failed(if expires <= give_up_at {
                "the code expired before it was approved; run `memsync login --sso` again".into()
            } else {
                format!(
                    "gave up waiting for the sign-in after {}; run `memsync login --sso` again",
                    humantime::format_duration(Duration::from_secs(started.elapsed().as_secs()))
                )
            }));
        }
        tokio::time::sleep(interval).await;
        let form = [
            ("grant_type", DEVICE_CODE_GRANT),
            ("device_code", auth.device_code.as_str()),
            ("client_id", client_id),
        ];
        match token_request(http, &provider.token_endpoint, &form, None).await {
            Ok(signed) => return Ok(signed),
            Err(SsoError::Refused { error, description }) => {
                match after_poll(&error, interval) {
                    PollNext::Wait(next) => interval = next,
                    PollNext::Stop(why) => {
                        return Err(SsoError::Failed(match description {
                            Some(d) if !error.ends_with("_denied") => format!("{why} ({d})"),
                            _ => why,
                        }));
                    }
                }
                transport_failures = 0;
            }
            // A network hiccup while the user is busy in the browser: try again (RFC 8628
            // §3.5 asks for backoff), but not forever.
            Err(e) => {
                transport_failures += 1;
                if transport_failures >= 3 {
                    return Err(e);
                }
                interval = (interval * 2).min(Duration::from_secs(30));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Authorization code with PKCE and a loopback redirect

/// A PKCE pair (RFC 7636): the verifier stays here, the S256 challenge goes to the provider.
pub struct Pkce {
    pub verifier: String,
    pub challenge: String,
}

/// `n` random bytes, base64url: verifiers, `state`, `nonce`.
pub fn random_string(n: usize) -> String {
    let bytes: Vec<u8> = (0..n).map(|_| rand::random::<u8>()).collect();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The S256 challenge of a PKCE verifier: base64url(SHA-256(verifier)).
fn challenge(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(sha2::Sha256::digest(verifier.as_bytes()))
}

/// A fresh PKCE pair: 32 random bytes make a 43-character verifier.
pub fn pkce() -> Pkce {
    let verifier = random_string(32);
    let challenge = challenge(&verifier);
    Pkce {
        verifier,
        challenge,
    }
}

/// The URL the browser opens: the authorization request.
pub fn authorization_url(
    provider: &Discovery,
    client_id: &str,
    redirect_uri: &str,
    scopes: &[String],
    state: &str,
    nonce: &str,
    challenge: &str,
) -> Result<Url, SsoError> {
    let endpoint = provider.authorization_endpoint.as_deref().ok_or_else(|| {
        SsoError::failed(format!(
            "{} offers no authorization endpoint; sign in with `memsync login --sso` (the device code)",
            provider.issuer
        ))
    })?;
    if !provider.code_challenge_methods_supported.is_empty()
        && !provider
            .code_challenge_methods_supported
            .iter()
            .any(|m| m == "S256")
    {
        return Err(SsoError::failed(format!(
            "{} does not support PKCE with S256, which memsync requires for a browser sign-in",
            provider.issuer
        )));
    }
    let mut url = Url::parse(endpoint).map_err(|e| {
        SsoError::failed(format!(
            "the authorization endpoint `{endpoint}` is not a URL: {e}"
        ))
    })?;
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", client_id)
        .append_pair("redirect_uri", redirect_uri)
        .append_pair("scope", &scopes.join(" "))
        .append_pair("state", state)
        .append_pair("nonce", nonce)
        .append_pair("code_challenge", challenge)
        .append_pair("code_challenge_method", "S256");
    Ok(url)
}

/// What the browser brought to the loopback redirect.
#[derive(Debug, PartialEq, Eq)]
pub enum Callback {
    Code(String),
    /// The provider sent the user back with an error (`access_denied`, …).
    Error {
        error: String,
        description: Option<String>,
    },
    /// Not the callback, or one for another sign-in (wrong `state`): answered and ignored.
    Ignored(&'static str),
}

/// Reads the callback out of a request target like `/callback?code=…&state=…`.
pub fn parse_callback(target: &str, state: &str) -> Callback {
    let Ok(url) = Url::parse(&format!("http://127.0.0.1{target}")) else {
        return Callback::Ignored("not a request for this sign-in");
    };
    if url.path() != CALLBACK_PATH {
        return Callback::Ignored("not a request for this sign-in");
    }
    let get = |k: &str| {
        url.query_pairs()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.into_owned())
    };
    if get("state").as_deref() != Some(state) {
        return Callback::Ignored("this is not the sign-in memsync started (its state differs)");
    }
    if let Some(error) = get("error") {
        return Callback::Error {
            error,
            description: get("error_description"),
        };
    }
    match get("code") {
        Some(code) if !code.is_empty() => Callback::Code(code),
        _ => Callback::Ignored("the callback carries no code"),
    }
}

/// Answers browser requests on `listener` until one brings the code of the sign-in `state`,
/// or `deadline`.
pub async fn receive_code(
    listener: tokio::net::TcpListener,
    state: &str,
    deadline: Instant,
) -> Result<String, SsoError> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let (mut sock, _) = match tokio::time::timeout(left, listener.accept()).await {
            Err(_) => {
                return Err(SsoError::failed(
                    "no sign-in arrived from the browser in time; run `memsync login --sso --browser` again (or sign in with the device code: `memsync login --sso`)",
                ));
            }
            Ok(Err(e)) => return Err(SsoError::Failed(format!("the loopback redirect: {e}"))),
            Ok(Ok(s)) => s,
        };
        let mut head = Vec::new();
        let mut buf = [0u8; 4096];
        let read = tokio::time::timeout(Duration::from_secs(5), async {
            while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
                match sock.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
        })
        .await;
        if read.is_err() {
            continue;
        }
        let text = String::from_utf8_lossy(&head);
        let target = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("GET "))
            .and_then(|l| l.split(' ').next())
            .unwrap_or("");
        let outcome = parse_callback(target, state);
        let (status, page) = match &outcome {
            Callback::Code(_) => (
                "200 OK",
                "Signed in to memsync. You can close this tab and go back to the terminal."
                    .to_owned(),
            ),
            Callback::Error { error, .. } => (
                "200 OK",
                format!("The sign-in did not complete ({error}). Go back to the terminal."),
            ),
            Callback::Ignored(why) => ("400 Bad Request", format!("memsync: {why}.")),
        };
        let body = format!(
            "<!doctype html><meta charset=utf-8><title>memsync</title><p>{}</p>",
            page.replace('<', "&lt;").replace('&', "&amp;")
        );
        let resp = format!(
            "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\ncache-control: no-store\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = sock.write_all(resp.as_bytes()).await;
        let _ = sock.shutdown().await;
        match outcome {
            Callback::Code(code) => return Ok(code),
            Callback::Error { error, description } => {
                return Err(SsoError::Refused { error, description });
            }
            Callback::Ignored(_) => continue,
        }
    }
}

/// Trades the authorization code for tokens, proving with the PKCE verifier that this is the
/// program that asked, and checks the id_token's nonce.
pub async fn exchange_code(
    http: &reqwest::Client,
    provider: &Discovery,
    client_id: &str,
    code: &str,
    redirect_uri: &str,
    verifier: &str,
    nonce: &str,
) -> Result<SignedIn, SsoError> {
    token_request(
        http,
        &provider.token_endpoint,
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("client_id", client_id),
            ("code_verifier", verifier),
        ],
        Some(nonce),
    )
    .await
}

// ---------------------------------------------------------------------------------------------
// The stored sign-in and its renewal

/// Why a stored single sign-on token could not be used.
#[derive(Debug, thiserror::Error)]
#[error(
    "the single sign-on for {server} has expired and could not be renewed: {reason}. Run `memsync login --sso --server {server}` to sign in again"
)]
pub struct RenewError {
    pub server: String,
    pub reason: String,
}

/// A usable token, and what went wrong renewing it when it is still good for a while anyway.
pub struct Fresh {
    pub token: Token,
    pub warning: Option<String>,
}

/// The single sign-on stored in the credentials file for one server: hands out its token,
/// renewed first when it is due, or again when the server refused it as expired.
#[derive(Clone)]
pub struct StoredSignIn {
    server: String,
    timeout: Duration,
    env: Arc<dyn Env + Send + Sync>,
}

impl StoredSignIn {
    /// The sign-in stored for `server`, if its token came from `memsync login --sso`.
    pub fn for_server(
        server: &str,
        timeout: Duration,
        env: Arc<dyn Env + Send + Sync>,
    ) -> Option<StoredSignIn> {
        let creds = Credentials::load(&*env).ok()?;
        creds.sso_for(server)?;
        Some(StoredSignIn {
            server: server.to_owned(),
            timeout,
            env,
        })
    }

    pub fn server(&self) -> &str {
        &self.server
    }

    /// The stored details (issuer, expiry), as the file holds them now.
    pub fn details(&self) -> Option<SsoLogin> {
        let creds = Credentials::load(&*self.env).ok()?;
        creds.sso_for(&self.server).cloned()
    }

    /// The token to use now: the stored one, or a renewed one when it expires within
    /// [`RENEW_BEFORE`]. A renewal that fails while the stored token is still good for a few
    /// seconds gives that token and a warning. Nothing takes longer than `limit`.
    pub async fn token(&self, limit: Duration) -> Result<Fresh, RenewError> {
        self.fresh(None, false, limit).await
    }

    /// Renews the token now, whatever its expiry (what `memsync doctor` checks).
    pub async fn renew_now(&self, limit: Duration) -> Result<Fresh, RenewError> {
        self.fresh(None, true, limit).await
    }

    /// A token after the server refused `refused` (as expired): the one another memsync stored
    /// meanwhile, or a renewed one.
    pub async fn after_refusal(&self, refused: &str, limit: Duration) -> Result<Token, RenewError> {
        self.fresh(Some(refused), false, limit)
            .await
            .map(|f| f.token)
    }

    fn error(&self, reason: impl std::fmt::Display) -> RenewError {
        RenewError {
            server: self.server.clone(),
            reason: reason.to_string(),
        }
    }

    /// The stored token and its details, or why there are none.
    fn stored(&self) -> Result<(Token, SsoLogin), RenewError> {
        let creds = Credentials::load(&*self.env).map_err(|e| self.error(e))?;
        match (creds.token_for(&self.server), creds.sso_for(&self.server)) {
            (Some(token), Some(sso)) => Ok((token, sso.clone())),
            _ => Err(self.error(
                "the credentials file no longer holds a single sign-on for it (logged out?)",
            )),
        }
    }

    /// Whether the stored token can be used as it is: no renewal forced, and it is not the token
    /// the server refused (or, without a refusal, not due for renewal).
    fn usable(token: &Token, sso: &SsoLogin, refused: Option<&str>, force: bool) -> bool {
        if force {
            return false;
        }
        match refused {
            Some(r) => token.expose() != r,
            None => sso.expires_at > Utc::now() + RENEW_BEFORE,
        }
    }

    async fn fresh(
        &self,
        refused: Option<&str>,
        force: bool,
        limit: Duration,
    ) -> Result<Fresh, RenewError> {
        let started = Instant::now();
        let (token, sso) = self.stored()?;
        if Self::usable(&token, &sso, refused, force) {
            return Ok(Fresh {
                token,
                warning: None,
            });
        }
        // Read, refresh and write under the lock, reading again once it is held: another
        // memsync may have renewed the token (and spent the refresh token) meanwhile.
        let env = self.env.clone();
        let lock = tokio::task::spawn_blocking(move || Credentials::lock(&*env, limit))
            .await
            .map_err(|e| self.error(e))?
            .map_err(|e| match e {
                LockError::Busy { .. } => self.error(format!("{e}; try again")),
                LockError::Config(e) => self.error(e),
            })?;
        let (token, sso) = self.stored()?;
        if Self::usable(&token, &sso, refused, force) {
            return Ok(Fresh {
                token,
                warning: None,
            });
        }
        let left = limit.saturating_sub(started.elapsed());
        let outcome = match &sso.refresh_token {
            None => Err(SsoError::failed(
                "the identity provider gave no refresh token at sign-in",
            )),
            Some(rt) => match http_client(&sso.issuer, self.timeout.min(left)) {
                Ok(http) => {
                    match tokio::time::timeout(
                        left,
                        refresh(&http, &sso.token_endpoint, &sso.client_id, rt),
                    )
                    .await
                    {
                        Ok(r) => r,
                        Err(_) => Err(SsoError::Failed(format!(
                            "the identity provider at {} did not answer within {left:?}",
                            sso.issuer
                        ))),
                    }
                }
                Err(e) => Err(e),
            },
        };
        let signed = match outcome {
            Ok(s) => s,
            Err(e) => {
                drop(lock);
                let reason = format!("renewing it with {} failed: {e}", sso.issuer);
                // Still good for a while: use it, and say so.
                if refused.is_none() && sso.expires_at > Utc::now() + chrono::Duration::seconds(5) {
                    return Ok(Fresh {
                        token,
                        warning: Some(format!(
                            "the single sign-on for {} could not be renewed ({reason}); its token is good until {}, then run `memsync login --sso`",
                            self.server,
                            sso.expires_at.format("%Y-%m-%d %H:%M:%S UTC")
                        )),
                    });
                }
                return Err(self.error(reason));
            }
        };
        let renewed = SsoLogin {
            refresh_token: signed.refresh_token.clone().or(sso.refresh_token.clone()),
            expires_at: signed.expires_at,
            refresh_expires_at: signed.refresh_expires_at.or(sso.refresh_expires_at),
            ..sso
        };
        let mut creds = Credentials::load(&*self.env).map_err(|e| self.error(e))?;
        if !creds.renew_sso(&self.server, signed.id_token.expose(), renewed) {
            return Err(self.error(
                "the credentials file no longer holds a single sign-on for it (logged out?)",
            ));
        }
        creds.save(&*self.env).map_err(|e| {
            self.error(format!(
                "the renewed token could not be saved ({e}), and the identity provider has retired the old refresh token"
            ))
        })?;
        drop(lock);
        Ok(Fresh {
            token: signed.id_token,
            warning: None,
        })
    }
}

impl crate::api::Renew for StoredSignIn {
    fn renew<'a>(
        &'a self,
        refused: &'a str,
    ) -> Pin<Box<dyn Future<Output = Result<String, String>> + Send + 'a>> {
        Box::pin(async move {
            self.after_refusal(refused, self.timeout.max(Duration::from_secs(10)))
                .await
                .map(|t| t.expose().to_owned())
                .map_err(|e| e.to_string())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polling_follows_rfc_8628() {
        let i = Duration::from_secs(1);
        assert_eq!(after_poll("authorization_pending", i), PollNext::Wait(i));
        assert_eq!(
            after_poll("slow_down", i),
            PollNext::Wait(Duration::from_secs(6))
        );
        for stop in ["access_denied", "expired_token", "invalid_grant"] {
            assert!(matches!(after_poll(stop, i), PollNext::Stop(_)), "{stop}");
        }
        let PollNext::Stop(why) = after_poll("access_denied", i) else {
            unreachable!()
        };
        assert!(why.contains("denied"), "{why}");
    }

    #[test]
    fn pkce_challenge_is_s256_of_the_verifier() {
        let p = pkce();
        assert_eq!(p.verifier.len(), 43);
        // RFC 7636 appendix B.
        assert_eq!(
            challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        assert_eq!(p.challenge, challenge(&p.verifier));
        assert_ne!(pkce().verifier, p.verifier);
    }

    #[test]
    fn callbacks_are_checked_against_state() {
        assert_eq!(
            parse_callback("/callback?code=abc&state=s1", "s1"),
            Callback::Code("abc".into())
        );
        assert!(matches!(
            parse_callback("/callback?code=abc&state=other", "s1"),
            Callback::Ignored(_)
        ));
        assert!(matches!(
            parse_callback("/favicon.ico", "s1"),
            Callback::Ignored(_)
        ));
        assert_eq!(
            parse_callback(
                "/callback?error=access_denied&error_description=no%20way&state=s1",
                "s1"
            ),
            Callback::Error {
                error: "access_denied".into(),
                description: Some("no way".into())
            }
        );
    }

    #[test]
    fn issuers_compare_without_trailing_slash() {
        assert!(same_issuer("https://a/realms/x/", "https://a/realms/x"));
        assert!(!same_issuer("https://a/realms/x", "https://a/realms/y"));
    }
}
