//! Sign-in with the company's identity provider: tokens from trusted OpenID Connect issuers.
//!
//! Each configured issuer is discovered at `<issuer>/.well-known/openid-configuration`; its keys
//! come from the `jwks_uri` there and are cached. A token whose `kid` is not in the cache makes
//! the cache refresh (fetches are at least [`MIN_REFETCH`] apart per issuer), so keys rotated at the
//! provider are picked up without a restart; the cache is also refreshed every
//! [`MAX_KEY_AGE`]. Only RS256, ES256 and EdDSA keys are used, and each key's algorithm is
//! pinned: the `alg` the key publishes, else the one its type implies. A token whose header
//! names another algorithm than its key's is refused, whatever its signature. `iss`, `aud`,
//! `exp` and `nbf` are checked with [`LEEWAY_SECS`] of clock skew.
//!
//! Claims map to a memsync user (the first of the configured user claims that is set:
//! `preferred_username`, else `email`, else `sub`) and to teams (groups matching the member and
//! admin patterns, `memsync:{team}` and `memsync:{team}:admin` by default). The token's `scope`
//! (or `scp`) claim narrows it like a self-issued token's `--scope` when it names memsync scopes.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, JwkSet, KeyAlgorithm};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use memsync_core::wire::TeamRole;
use serde::Serialize;
use serde_json::Value;

use crate::auth::Claims;
use crate::error::ApiError;

/// Seconds of clock skew allowed on `exp`, `nbf` and `iat`.
pub const LEEWAY_SECS: u64 = 60;
/// The shortest time between two fetches of an issuer's keys (a token with an unknown `kid`
/// waits for the next one).
const MIN_REFETCH: Duration = Duration::from_secs(5);
/// The longest an issuer's keys are used without fetching them again.
const MAX_KEY_AGE: Duration = Duration::from_secs(15 * 60);
/// Time limit of one discovery or key fetch.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest discovery document or key set read.
const MAX_DOC_BYTES: usize = 256 * 1024;

/// The identity settings as given (flags, environment, file); checked by [`OidcArgs::build`].
#[derive(Debug, Clone, Default)]
pub struct OidcArgs {
    /// Comma-separated issuer URLs.
    pub issuers: Option<String>,
    pub audience: Option<String>,
    pub client_id: Option<String>,
    /// Comma-separated claim names, the first one set naming the user.
    pub user_claims: String,
    pub groups_claim: String,
    pub member_group: String,
    pub admin_group: String,
    /// A group whose members are server admins (none by default).
    pub server_admin_group: Option<String>,
}

fn set(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

/// A group pattern: the text before and after `{team}`.
#[derive(Debug, Clone)]
struct GroupPattern {
    prefix: String,
    suffix: String,
}

impl GroupPattern {
    fn parse(setting: &str, pattern: &str) -> Result<GroupPattern, String> {
        let Some((prefix, suffix)) = pattern.split_once("{team}") else {
            return Err(format!(
                "{setting} `{pattern}` must contain `{{team}}` where the team's name goes, e.g. `memsync:{{team}}`"
            ));
        };
        if suffix.contains("{team}") {
            return Err(format!("{setting} `{pattern}` names `{{team}}` twice"));
        }
        Ok(GroupPattern {
            prefix: prefix.to_owned(),
            suffix: suffix.to_owned(),
        })
    }

    /// The team a group names, when it matches and the team is a valid team name.
    fn team<'g>(&self, group: &'g str) -> Option<&'g str> {
        let team = group
            .strip_prefix(&self.prefix)?
            .strip_suffix(&self.suffix)?;
        memsync_core::project::valid_segment(team).then_some(team)
    }
}

impl OidcArgs {
    /// The trusted issuers these settings describe (`None`: no issuers, no SSO), or what is
    /// wrong, naming the setting.
    pub fn build(&self) -> Result<Option<Oidc>, String> {
        let Some(list) = set(&self.issuers) else {
            if set(&self.audience).is_some() || set(&self.client_id).is_some() {
                return Err("--oidc-audience or --oidc-client-id is set but --oidc-issuers (MEMSYNC_OIDC_ISSUERS) is not; name the identity provider's issuer URL, or unset them".into());
            }
            return Ok(None);
        };
        let mut issuers = Vec::new();
        for raw in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let issuer = parse_issuer(raw)
                .map_err(|why| format!("--oidc-issuers (MEMSYNC_OIDC_ISSUERS): `{raw}` {why}"))?;
            if !issuers.contains(&issuer) {
                issuers.push(issuer);
            }
        }
        let audience = set(&self.audience).ok_or(
            "--oidc-audience (MEMSYNC_OIDC_AUDIENCE) is needed with --oidc-issuers: the `aud` the identity provider puts in memsync's tokens (usually the client ID registered for memsync)",
        )?;
        let client_id = set(&self.client_id).unwrap_or(audience);
        let user_claims: Vec<String> = self
            .user_claims
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        if user_claims.is_empty() {
            return Err("--oidc-user-claims (MEMSYNC_OIDC_USER_CLAIMS) names no claim; the default is `preferred_username,email,sub`".into());
        }
        let groups_claim = self.groups_claim.trim();
        if groups_claim.is_empty() {
            return Err(
                "--oidc-groups-claim (MEMSYNC_OIDC_GROUPS_CLAIM) is empty; the default is `groups`"
                    .into(),
            );
        }
        let member = GroupPattern::parse(
            "--oidc-member-group (MEMSYNC_OIDC_MEMBER_GROUP)",
            self.member_group.trim(),
        )?;
        let admin = GroupPattern::parse(
            "--oidc-admin-group (MEMSYNC_OIDC_ADMIN_GROUP)",
            self.admin_group.trim(),
        )?;
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("building the identity providers' HTTP client: {e}"))?;
        Ok(Some(Oidc {
            issuers: issuers
                .into_iter()
                .map(|url| (url.clone(), Arc::new(Issuer::new(url))))
                .collect(),
            audience: audience.to_owned(),
            client_id: client_id.to_owned(),
            mapping: Mapping {
                user_claims,
                groups_claim: groups_claim.to_owned(),
                member,
                admin,
                server_admin_group: set(&self.server_admin_group).map(str::to_owned),
            },
            http,
            verified: crate::auth::VerifiedCache::new(LEEWAY_SECS as i64),
        }))
    }
}

/// An issuer URL: https, or http on a loopback address (a provider on the same host, or tests).
/// Keys fetched over plain http from elsewhere could be anyone's.
fn parse_issuer(raw: &str) -> Result<String, String> {
    let url = reqwest::Url::parse(raw).map_err(|e| format!("is not a URL ({e})"))?;
    let host = url.host_str().unwrap_or_default();
    let loopback = host == "localhost"
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    match url.scheme() {
        "https" => {}
        "http" if loopback => {}
        "http" => {
            return Err(
                "must be https (plain http is accepted only on a loopback address): its keys decide who may sign in".into(),
            );
        }
        other => return Err(format!("has scheme `{other}`; an issuer is an https URL")),
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err("must not have a query or fragment".into());
    }
    // The issuer is compared exactly with tokens' `iss`: keep it as written, minus a trailing `/`
    // only when the provider's own discovery document says so (checked at discovery).
    Ok(raw.to_owned())
}

#[derive(Debug)]
struct Mapping {
    user_claims: Vec<String>,
    groups_claim: String,
    member: GroupPattern,
    admin: GroupPattern,
    server_admin_group: Option<String>,
}

/// A usable key: its decoding key and its pinned algorithm.
struct Key {
    decoding: DecodingKey,
    alg: Algorithm,
}

#[derive(Default)]
struct KeySet {
    by_kid: HashMap<String, Arc<Key>>,
    /// Keys published without a `kid` (usable only when a token has none and one fits).
    unnamed: Vec<Arc<Key>>,
    fetched: Option<Instant>,
}

/// Where an issuer signs people in (from its discovery document), for the console's sign-in.
#[derive(Debug, Clone)]
pub struct Endpoints {
    pub authorization: String,
    pub token: String,
}

struct Issuer {
    url: String,
    keys: RwLock<KeySet>,
    endpoints: RwLock<Option<Endpoints>>,
    /// Fetches made so far: a request that waited for the lock while another fetched does not
    /// fetch again.
    fetches: std::sync::atomic::AtomicU64,
    /// Held while fetching, so concurrent misses make one fetch.
    fetching: tokio::sync::Mutex<Option<Instant>>,
}

impl Issuer {
    fn new(url: String) -> Issuer {
        Issuer {
            url,
            keys: RwLock::new(KeySet::default()),
            endpoints: RwLock::new(None),
            fetches: std::sync::atomic::AtomicU64::new(0),
            fetching: tokio::sync::Mutex::new(None),
        }
    }

    fn lookup(&self, kid: Option<&str>, alg: Algorithm) -> Option<Arc<Key>> {
        let keys = self.keys.read().ok()?;
        match kid {
            Some(kid) => keys.by_kid.get(kid).cloned(),
            None => {
                let mut fitting = keys.unnamed.iter().chain(keys.by_kid.values());
                let first = fitting.find(|k| k.alg == alg)?.clone();
                // Without a kid, a key is chosen only when it is the only one of its algorithm.
                (!fitting.any(|k| k.alg == alg)).then_some(first)
            }
        }
    }

    fn stale(&self) -> bool {
        self.keys
            .read()
            .map(|k| k.fetched.is_none_or(|t| t.elapsed() > MAX_KEY_AGE))
            .unwrap_or(true)
    }
}

/// A published key's pinned algorithm: the `alg` it names, else the one its type implies; `None`
/// for keys of other types or algorithms (HMAC secrets are never taken from a key set).
fn pinned_alg(jwk: &Jwk) -> Option<Algorithm> {
    let implied = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => Algorithm::RS256,
        AlgorithmParameters::EllipticCurve(p) if p.curve == EllipticCurve::P256 => Algorithm::ES256,
        AlgorithmParameters::OctetKeyPair(p) if p.curve == EllipticCurve::Ed25519 => {
            Algorithm::EdDSA
        }
        _ => return None,
    };
    match jwk.common.key_algorithm {
        None => Some(implied),
        Some(KeyAlgorithm::RS256) if implied == Algorithm::RS256 => Some(Algorithm::RS256),
        Some(KeyAlgorithm::ES256) if implied == Algorithm::ES256 => Some(Algorithm::ES256),
        Some(KeyAlgorithm::EdDSA) if implied == Algorithm::EdDSA => Some(Algorithm::EdDSA),
        Some(_) => None,
    }
}

/// What a trusted issuer's sign-in needs, for `GET /v1/auth/config` (the CLI's `login --sso`).
#[derive(Debug, Clone, Serialize)]
pub struct PublicIssuer {
    pub issuer: String,
    pub client_id: String,
    pub scopes: Vec<&'static str>,
}

/// The scopes the CLI asks for: identity, groups, and a refresh token.
pub const LOGIN_SCOPES: [&str; 5] = ["openid", "profile", "email", "groups", "offline_access"];

pub struct Oidc {
    issuers: BTreeMap<String, Arc<Issuer>>,
    audience: String,
    client_id: String,
    mapping: Mapping,
    http: reqwest::Client,
    verified: crate::auth::VerifiedCache,
}

impl std::fmt::Debug for Oidc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Oidc")
            .field("issuers", &self.issuers.keys().collect::<Vec<_>>())
            .field("audience", &self.audience)
            .finish_non_exhaustive()
    }
}

fn unauthenticated(why: impl Into<String>) -> ApiError {
    ApiError::Unauthenticated(why.into())
}

impl Oidc {
    pub fn trusts(&self, issuer: &str) -> bool {
        self.issuers.contains_key(issuer)
    }

    pub fn issuer_urls(&self) -> impl Iterator<Item = &str> {
        self.issuers.keys().map(String::as_str)
    }

    pub fn public_issuers(&self) -> Vec<PublicIssuer> {
        self.issuers
            .keys()
            .map(|issuer| PublicIssuer {
                issuer: issuer.clone(),
                client_id: self.client_id.clone(),
                scopes: LOGIN_SCOPES.to_vec(),
            })
            .collect()
    }

    /// Fetches every issuer's keys once at start, so the first sign-in doesn't wait for it; a
    /// provider that is down is logged and tried again on the first token it signed.
    pub fn spawn_warmup(self: &Arc<Self>) {
        for issuer in self.issuers.values() {
            let me = self.clone();
            let issuer = issuer.clone();
            tokio::spawn(async move {
                if let Err(why) = me.refresh(&issuer, None).await {
                    tracing::warn!(issuer = %issuer.url, %why, "identity provider: cannot load its keys yet");
                }
            });
        }
    }

    /// Fetches the issuer's discovery document and keys, unless another request fetched them
    /// while this one waited for its turn. For a token whose key is unknown (`wanted`), unless
    /// the key is known by then; fetches are at least [`MIN_REFETCH`] apart, so such a token
    /// waits for the next one, and every token waiting meanwhile is answered by that one fetch (a
    /// flood of made-up `kid`s makes one fetch per interval, never more). For a periodic refresh
    /// (`wanted` None), unless one was just made.
    async fn refresh(
        &self,
        issuer: &Issuer,
        wanted: Option<(Option<&str>, Algorithm)>,
    ) -> Result<(), String> {
        use std::sync::atomic::Ordering;
        let before = issuer.fetches.load(Ordering::Acquire);
        let mut last = issuer.fetching.lock().await;
        // Another request fetched while this one waited: what it brought is what there is.
        if issuer.fetches.load(Ordering::Acquire) != before {
            return Ok(());
        }
        if let Some((kid, alg)) = wanted
            && issuer.lookup(kid, alg).is_some()
        {
            return Ok(());
        }
        if let Some(at) = *last
            && at.elapsed() < MIN_REFETCH
        {
            if wanted.is_none() {
                return Ok(());
            }
            tokio::time::sleep(MIN_REFETCH.saturating_sub(at.elapsed())).await;
        }
        *last = Some(Instant::now());
        let keys = self.fetch_keys(issuer).await?;
        let n = keys.by_kid.len() + keys.unnamed.len();
        if let Ok(mut k) = issuer.keys.write() {
            *k = keys;
        }
        issuer.fetches.fetch_add(1, Ordering::AcqRel);
        tracing::info!(issuer = %issuer.url, keys = n, "identity provider: keys loaded");
        Ok(())
    }

    async fn get_json(&self, url: &str) -> Result<Value, String> {
        let resp = self
            .http
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| format!("GET {url}: {}", chain(&e)))?;
        if !resp.status().is_success() {
            return Err(format!("GET {url} answered {}", resp.status()));
        }
        if resp.content_length().unwrap_or(0) > MAX_DOC_BYTES as u64 {
            return Err(format!(
                "GET {url}: the answer is larger than {MAX_DOC_BYTES} bytes"
            ));
        }
        let body = resp
            .bytes()
            .await
            .map_err(|e| format!("GET {url}: {}", chain(&e)))?;
        if body.len() > MAX_DOC_BYTES {
            return Err(format!(
                "GET {url}: the answer is larger than {MAX_DOC_BYTES} bytes"
            ));
        }
        serde_json::from_slice(&body).map_err(|e| format!("GET {url}: not JSON ({e})"))
    }

    async fn fetch_keys(&self, issuer: &Issuer) -> Result<KeySet, String> {
        let discovery_url = format!(
            "{}/.well-known/openid-configuration",
            issuer.url.trim_end_matches('/')
        );
        let doc = self.get_json(&discovery_url).await?;
        // OpenID Connect Discovery §4.3: the document's issuer is exactly the one configured.
        let said = doc["issuer"].as_str().unwrap_or_default();
        if said != issuer.url {
            return Err(format!(
                "{discovery_url} says its issuer is `{said}`, not `{}`; configure the issuer exactly as the provider writes it",
                issuer.url
            ));
        }
        if let (Some(authorization), Some(token)) = (
            doc["authorization_endpoint"].as_str(),
            doc["token_endpoint"].as_str(),
        ) && parse_issuer(authorization).is_ok()
            && parse_issuer(token).is_ok()
            && let Ok(mut e) = issuer.endpoints.write()
        {
            *e = Some(Endpoints {
                authorization: authorization.to_owned(),
                token: token.to_owned(),
            });
        }
        let jwks_uri = doc["jwks_uri"]
            .as_str()
            .ok_or_else(|| format!("{discovery_url} has no `jwks_uri`"))?;
        parse_issuer(jwks_uri).map_err(|why| format!("its jwks_uri `{jwks_uri}` {why}"))?;
        let set: JwkSet = serde_json::from_value(self.get_json(jwks_uri).await?)
            .map_err(|e| format!("{jwks_uri} is not a JWK set: {e}"))?;
        let mut keys = KeySet {
            fetched: Some(Instant::now()),
            ..KeySet::default()
        };
        for jwk in &set.keys {
            if jwk
                .common
                .public_key_use
                .as_ref()
                .is_some_and(|u| *u != jsonwebtoken::jwk::PublicKeyUse::Signature)
            {
                continue;
            }
            let Some(alg) = pinned_alg(jwk) else { continue };
            let Ok(decoding) = DecodingKey::from_jwk(jwk) else {
                continue;
            };
            let key = Arc::new(Key { decoding, alg });
            match &jwk.common.key_id {
                Some(kid) => {
                    keys.by_kid.insert(kid.clone(), key);
                }
                None => keys.unnamed.push(key),
            }
        }
        if keys.by_kid.is_empty() && keys.unnamed.is_empty() {
            return Err(format!(
                "{jwks_uri} publishes no RS256, ES256 or EdDSA signing key"
            ));
        }
        Ok(keys)
    }

    /// The client ID people sign in with.
    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    /// The issuer's sign-in endpoints, discovering it if that has not happened yet.
    pub async fn endpoints(&self, issuer: &str) -> Result<Endpoints, String> {
        let state = self
            .issuers
            .get(issuer)
            .ok_or_else(|| format!("`{issuer}` is not a trusted issuer"))?;
        let known = || state.endpoints.read().ok().and_then(|e| e.clone());
        if let Some(e) = known() {
            return Ok(e);
        }
        self.refresh(state, None).await?;
        known().ok_or_else(|| {
            format!(
                "{issuer}'s discovery document names no https authorization and token endpoints"
            )
        })
    }

    /// Exchanges an authorization code (with its PKCE verifier) for the ID token, at the
    /// issuer's token endpoint.
    pub async fn exchange_code(
        &self,
        issuer: &str,
        code: &str,
        verifier: &str,
        redirect_uri: &str,
    ) -> Result<String, String> {
        let endpoints = self.endpoints(issuer).await?;
        let resp = self
            .http
            .post(&endpoints.token)
            .header(reqwest::header::ACCEPT, "application/json")
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(
                serde_urlencoded::to_string([
                    ("grant_type", "authorization_code"),
                    ("code", code),
                    ("redirect_uri", redirect_uri),
                    ("client_id", self.client_id.as_str()),
                    ("code_verifier", verifier),
                ])
                .map_err(|e| e.to_string())?,
            )
            .send()
            .await
            .map_err(|e| format!("the identity provider's token endpoint: {}", chain(&e)))?;
        let status = resp.status();
        let body = resp.bytes().await.map_err(|e| chain(&e))?;
        if body.len() > MAX_DOC_BYTES {
            return Err("the identity provider's answer is too large".into());
        }
        let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if !status.is_success() {
            let what = v["error"].as_str().unwrap_or("no error code");
            return Err(format!(
                "the identity provider refused the sign-in ({status}, {})",
                what.chars().take(80).collect::<String>()
            ));
        }
        v["id_token"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| "the identity provider's answer has no id_token (is `openid` among the client's scopes?)".into())
    }

    /// Verifies a token `iss` says this issuer signed, and maps it to memsync claims.
    pub async fn verify(&self, token: &str, iss: &str) -> Result<Claims, ApiError> {
        if let Some(claims) = self.verified.get(token) {
            return Ok(claims);
        }
        let issuer = self.issuers.get(iss).ok_or_else(|| {
            unauthenticated("the token was issued by an issuer this server does not trust")
        })?;
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| unauthenticated("the token is malformed"))?;
        if !matches!(
            header.alg,
            Algorithm::RS256 | Algorithm::ES256 | Algorithm::EdDSA
        ) {
            return Err(unauthenticated(format!(
                "the token is signed with {:?}; tokens from an identity provider must use RS256, ES256 or EdDSA",
                header.alg
            )));
        }
        let kid = header.kid.as_deref();
        let mut key = issuer.lookup(kid, header.alg);
        if key.is_none() || issuer.stale() {
            let wanted = key.is_none().then_some((kid, header.alg));
            if let Err(why) = self.refresh(issuer, wanted).await {
                tracing::warn!(issuer = %issuer.url, %why, "identity provider: cannot load its keys");
                if key.is_none() {
                    return Err(ApiError::Unavailable {
                        message: "the identity provider's keys cannot be loaded right now; try again shortly".into(),
                    });
                }
            }
            key = issuer.lookup(kid, header.alg);
        }
        let key = key.ok_or_else(|| {
            unauthenticated(match kid {
                Some(_) => "the token's signing key is not among its issuer's published keys",
                None => "the token names no key (`kid`) and its issuer publishes several",
            })
        })?;
        if key.alg != header.alg {
            return Err(unauthenticated(format!(
                "the token says it is signed with {:?} but its key is for {:?}",
                header.alg, key.alg
            )));
        }
        let mut validation = Validation::new(key.alg);
        validation.set_issuer(&[&issuer.url]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.validate_nbf = true;
        validation.leeway = LEEWAY_SECS;
        let data = jsonwebtoken::decode::<serde_json::Map<String, Value>>(
            token,
            &key.decoding,
            &validation,
        )
        .map_err(|e| {
            use jsonwebtoken::errors::ErrorKind as K;
            unauthenticated(match e.kind() {
                K::ExpiredSignature => {
                    "the token has expired; sign in again (`memsync login --sso`)"
                }
                K::ImmatureSignature => "the token is not valid yet (`nbf`); check the clocks",
                K::InvalidAudience => "the token was issued for another audience",
                K::InvalidIssuer => "the token was issued by another issuer",
                K::InvalidSignature => "the token's signature does not verify",
                K::InvalidAlgorithm => "the token's algorithm does not match its key",
                K::MissingRequiredClaim(_) => "the token lacks a required claim",
                _ => "the token is malformed",
            })
        })?;
        let claims = self.map_claims(&issuer.url, &data.claims)?;
        self.verified.put(token, &claims);
        Ok(claims)
    }

    fn map_claims(
        &self,
        issuer: &str,
        raw: &serde_json::Map<String, Value>,
    ) -> Result<Claims, ApiError> {
        let m = &self.mapping;
        let text = |name: &str| {
            raw.get(name)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
        };
        let sub = text("sub").ok_or_else(|| unauthenticated("the token lacks a `sub`"))?;
        let user = m.user_claims.iter().find_map(|c| text(c)).ok_or_else(|| {
            unauthenticated(format!(
                "the token has none of the claims that name a user ({})",
                m.user_claims.join(", ")
            ))
        })?;
        if user.len() > 200 {
            return Err(unauthenticated(
                "the token's user name is longer than 200 bytes",
            ));
        }
        let groups: Vec<&str> = match raw.get(&m.groups_claim) {
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
            Some(Value::String(s)) => s.split([',', ' ']).filter(|g| !g.is_empty()).collect(),
            _ => Vec::new(),
        };
        let mut teams = BTreeMap::new();
        let mut admin = false;
        for g in &groups {
            if let Some(team) = m.admin.team(g) {
                teams.insert(team.to_owned(), TeamRole::Admin);
            } else if let Some(team) = m.member.team(g) {
                teams.entry(team.to_owned()).or_insert(TeamRole::Member);
            }
            if m.server_admin_group.as_deref() == Some(g) {
                admin = true;
            }
        }
        if teams.is_empty() && !admin {
            return Err(ApiError::Forbidden(format!(
                "you signed in as `{user}`, but your identity provider puts you in no memsync team: ask for a group like `{}team{}`",
                m.member.prefix, m.member.suffix
            )));
        }
        let scope = match raw.get("scope").or_else(|| raw.get("scp")) {
            Some(Value::String(s)) => memsync_core::wire::Scope::parse_list(s),
            Some(Value::Array(a)) => memsync_core::wire::Scope::parse_list(
                &a.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            _ => None,
        }
        .map(|set| crate::admin::tokens::scope_claim(&set.into_iter().collect::<Vec<_>>()))
        .unwrap_or_default();
        let num = |name: &str| raw.get(name).and_then(Value::as_i64);
        let exp = num("exp").ok_or_else(|| unauthenticated("the token lacks an `exp`"))?;
        let email = text("email").map(str::to_owned);
        let claims = Claims {
            sub: user.to_owned(),
            name: user.to_owned(),
            email,
            teams,
            admin,
            jti: identity_id(issuer, sub),
            iat: num("iat").unwrap_or(0),
            exp,
            iss: issuer.to_owned(),
            aud: self.audience.clone(),
            scope,
            projects: Vec::new(),
            rate: None,
        };
        crate::auth::plain_text_claims(&claims)?;
        Ok(claims)
    }
}

/// One stable id per person of an issuer (what rate limits count by: a provider's tokens are
/// short-lived and refreshed, the person behind them is the same).
fn identity_id(issuer: &str, sub: &str) -> uuid::Uuid {
    let digest = memsync_core::Sha256::of(format!("{issuer}\n{sub}").as_bytes());
    let mut id = [0u8; 16];
    id.copy_from_slice(&digest.as_bytes()[..16]);
    uuid::Uuid::from_bytes(id)
}

/// An error and its causes, on one line (reqwest's own message omits why a connection failed).
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cause = c.source();
    }
    out
}

/// A text claim of a JWT, read without verifying anything: the `iss`, to pick who verifies it;
/// the `nonce` of a token already verified.
pub fn unverified_claim(token: &str, name: &str) -> Option<String> {
    use base64::Engine;
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    v.get(name)?.as_str().map(str::to_owned)
}

/// The `iss` a JWT says it has, read without verifying anything (to pick who verifies it).
pub fn unverified_issuer(token: &str) -> Option<String> {
    unverified_claim(token, "iss")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(issuers: &str) -> OidcArgs {
        OidcArgs {
            issuers: Some(issuers.into()),
            audience: Some("memsync-cli".into()),
            client_id: None,
            user_claims: "preferred_username,email,sub".into(),
            groups_claim: "groups".into(),
            member_group: "memsync:{team}".into(),
            admin_group: "memsync:{team}:admin".into(),
            server_admin_group: None,
        }
    }

    #[test]
    fn issuers_are_https_or_loopback_and_settings_are_checked() {
        assert!(args("https://idp.example.com/realms/acme").build().is_ok());
        assert!(args("http://127.0.0.1:8080").build().is_ok());
        assert!(args("http://localhost:8080/x").build().is_ok());
        let err = args("http://idp.example.com").build().unwrap_err();
        assert!(err.contains("must be https"), "{err}");
        let err = args("not a url").build().unwrap_err();
        assert!(err.contains("MEMSYNC_OIDC_ISSUERS"), "{err}");
        let mut a = args("https://idp.example.com");
        a.audience = None;
        let err = a.build().unwrap_err();
        assert!(err.contains("MEMSYNC_OIDC_AUDIENCE"), "{err}");
        let mut a = args("https://idp.example.com");
        a.member_group = "memsync".into();
        let err = a.build().unwrap_err();
        assert!(err.contains("{team}"), "{err}");
        let mut a = args("");
        a.audience = None;
        assert!(a.build().expect("no sso").is_none());
        let oidc = args("https://a.example.com, https://b.example.com")
            .build()
            .unwrap()
            .unwrap();
        assert!(oidc.trusts("https://a.example.com") && oidc.trusts("https://b.example.com"));
        assert_eq!(oidc.public_issuers()[0].client_id, "memsync-cli");
    }

    #[test]
    fn groups_map_to_teams_and_roles_and_scopes_narrow() {
        let oidc = args("https://idp.example.com").build().unwrap().unwrap();
        let raw = serde_json::json!({
            "sub": "00u1", "preferred_username": "ann", "email": "ann@example.com",
            "groups": ["memsync:acme", "memsync:web:admin", "memsync:web", "other", "memsync:Bad Team"],
            "exp": 4_000_000_000i64, "iat": 1, "scope": "openid memsync:pull",
        });
        let c = oidc
            .map_claims("https://idp.example.com", raw.as_object().unwrap())
            .unwrap();
        assert_eq!(c.name, "ann");
        assert_eq!(c.teams.get("acme"), Some(&TeamRole::Member));
        assert_eq!(c.teams.get("web"), Some(&TeamRole::Admin));
        assert_eq!(c.teams.len(), 2);
        assert_eq!(c.scope.as_deref(), Some("pull"));
        assert!(!c.admin);
        // The same person always gets the same id; another issuer's `sub` another.
        let again = oidc
            .map_claims("https://idp.example.com", raw.as_object().unwrap())
            .unwrap();
        assert_eq!(c.jti, again.jti);
        assert_ne!(c.jti, identity_id("https://other.example.com", "00u1"));

        let none = serde_json::json!({"sub": "x", "groups": ["devs"], "exp": 4_000_000_000i64});
        let err = oidc
            .map_claims("https://idp.example.com", none.as_object().unwrap())
            .unwrap_err();
        assert!(matches!(err, ApiError::Forbidden(m) if m.contains("memsync:team")));
    }

    #[test]
    fn keys_are_pinned_to_their_algorithm() {
        let rsa: Jwk = serde_json::from_value(serde_json::json!({
            "kty": "RSA", "n": "sXch", "e": "AQAB", "kid": "r"
        }))
        .unwrap();
        assert_eq!(pinned_alg(&rsa), Some(Algorithm::RS256));
        let rsa384: Jwk = serde_json::from_value(serde_json::json!({
            "kty": "RSA", "n": "sXch", "e": "AQAB", "alg": "RS384"
        }))
        .unwrap();
        assert_eq!(pinned_alg(&rsa384), None, "only RS256 for RSA keys");
        let ec: Jwk = serde_json::from_value(serde_json::json!({
            "kty": "EC", "crv": "P-256", "x": "AA", "y": "AA", "alg": "ES256"
        }))
        .unwrap();
        assert_eq!(pinned_alg(&ec), Some(Algorithm::ES256));
        let hmac: Jwk = serde_json::from_value(serde_json::json!({
            "kty": "oct", "k": "c2VjcmV0", "alg": "HS256"
        }))
        .unwrap();
        assert_eq!(
            pinned_alg(&hmac),
            None,
            "never a shared secret from a key set"
        );
    }

    #[test]
    fn the_issuer_is_read_from_an_unverified_token() {
        use base64::Engine;
        let b = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        let t = format!(
            "{}.{}.sig",
            b(r#"{"alg":"RS256"}"#),
            b(r#"{"iss":"https://i"}"#)
        );
        assert_eq!(unverified_issuer(&t).as_deref(), Some("https://i"));
        assert_eq!(unverified_issuer("garbage"), None);
    }
}
