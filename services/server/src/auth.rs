//! Bearer-token authentication and authorization.
//!
//! Tokens are JWTs signed with HS256 by a server key. The algorithm is pinned (a token that says
//! `alg: none` or any other algorithm is refused), and `exp`, `iss` and `aud` are checked.
//! Revoked `jti`s are held in memory and kept current across replicas with LISTEN/NOTIFY, so
//! checking a token costs no database round trip.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use anyhow::Context;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, header};
use base64::Engine;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use memsync_core::ProjectId;
use memsync_core::wire::TeamRole;
pub use memsync_core::wire::{Scope, TokenRate};
use serde::{Deserialize, Serialize};
use sqlx::PgPool;
use uuid::Uuid;

use crate::error::ApiError;
use crate::state::AppState;

/// The Postgres channel a revocation is announced on.
pub const REVOCATION_CHANNEL: &str = "memsync_token_revoked";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Claims {
    pub sub: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    #[serde(default)]
    pub teams: BTreeMap<String, TeamRole>,
    #[serde(default)]
    pub admin: bool,
    pub jti: Uuid,
    pub iat: i64,
    pub exp: i64,
    pub iss: String,
    pub aud: String,
    /// What the token may do, space-separated (`pull`, `push`, `admin`, as OAuth writes scopes).
    /// Absent: everything its teams allow. See [`Scope`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The projects (`team/name`) the token is limited to; empty: every project of its teams.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub projects: Vec<String>,
    /// This token's own request rate, instead of the server's default for tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<TokenRate>,
}

/// Seconds of clock skew allowed on a token's expiry.
const LEEWAY_SECS: i64 = 30;

/// A secret that never shows in `Debug` output or logs.
#[derive(Clone)]
pub struct Secret(Vec<u8>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

/// Signing and verification keys plus the pinned validation rules.
pub struct Keys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
    pub issuer: String,
    pub audience: String,
    /// Tokens already verified; revocation is checked on every request, after this.
    verified: VerifiedCache,
}

/// Verified tokens kept at most; the cache is emptied when it is full (a few MB at most).
const VERIFIED_CACHE: usize = 4096;

/// Tokens already verified, with their claims: a client presents the same token on every
/// request, and checking its signature and decoding its claims again is most of what a request
/// that is answered from memory costs. An entry is used only until the token's expiry plus the
/// verifier's leeway.
pub struct VerifiedCache {
    tokens: Mutex<HashMap<Box<str>, Claims>>,
    leeway_secs: i64,
}

impl VerifiedCache {
    pub fn new(leeway_secs: i64) -> VerifiedCache {
        VerifiedCache {
            tokens: Mutex::new(HashMap::new()),
            leeway_secs,
        }
    }

    /// The claims of `token` if it was verified and has not expired since.
    pub fn get(&self, token: &str) -> Option<Claims> {
        let now = chrono::Utc::now().timestamp();
        let cache = self.tokens.lock().ok()?;
        cache
            .get(token)
            .filter(|c| now <= c.exp.saturating_add(self.leeway_secs))
            .cloned()
    }

    /// Whether `token` was verified (expired or not: a cheap test of whose it is).
    pub fn contains(&self, token: &str) -> bool {
        self.tokens
            .lock()
            .is_ok_and(|cache| cache.contains_key(token))
    }

    pub fn put(&self, token: &str, claims: &Claims) {
        if let Ok(mut cache) = self.tokens.lock() {
            if cache.len() >= VERIFIED_CACHE {
                cache.clear();
            }
            cache.insert(token.into(), claims.clone());
        }
    }
}

impl Keys {
    pub fn hs256(secret: &Secret, issuer: &str, audience: &str) -> anyhow::Result<Self> {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_issuer(&[issuer]);
        validation.set_audience(&[audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = LEEWAY_SECS.unsigned_abs();
        Ok(Keys {
            encoding: EncodingKey::from_secret(&secret.0).context("loading the signing key")?,
            decoding: DecodingKey::from_secret(&secret.0)
                .context("loading the verification key")?,
            validation,
            issuer: issuer.to_owned(),
            audience: audience.to_owned(),
            verified: VerifiedCache::new(LEEWAY_SECS),
        })
    }

    pub fn sign(&self, claims: &Claims) -> anyhow::Result<String> {
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), claims, &self.encoding)
            .context("signing the token")
    }

    pub fn verify(&self, token: &str) -> Result<Claims, ApiError> {
        if let Some(claims) = self.verified.get(token) {
            return Ok(claims);
        }
        let claims = self.verify_uncached(token)?;
        self.verified.put(token, &claims);
        Ok(claims)
    }

    fn verify_uncached(&self, token: &str) -> Result<Claims, ApiError> {
        let claims = jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation)
            .map(|data| data.claims)
            .map_err(|e| {
                use jsonwebtoken::errors::ErrorKind as K;
                let why = match e.kind() {
                    K::ExpiredSignature => "the token has expired; ask an admin for a new one",
                    K::InvalidAudience => "the token was issued for another audience",
                    K::InvalidIssuer => "the token was issued by another issuer",
                    K::InvalidSignature => "the token's signature does not verify",
                    K::InvalidAlgorithm => {
                        "the token uses an algorithm this server does not accept"
                    }
                    K::MissingRequiredClaim(_) => "the token lacks a required claim",
                    _ => "the token is malformed",
                };
                ApiError::Unauthenticated(why.into())
            })?;
        plain_text_claims(&claims)?;
        Ok(claims)
    }
}

/// Claims end up in the audit log and in stored rows: they are text like any other.
pub fn plain_text_claims(claims: &Claims) -> Result<(), ApiError> {
    let texts = [Some(&claims.sub), Some(&claims.name), claims.email.as_ref()];
    if texts
        .into_iter()
        .flatten()
        .any(|t| memsync_core::text::Text::new(t.as_str()).is_err())
    {
        return Err(ApiError::Unauthenticated(
            "the token's user name or email contains control characters".into(),
        ));
    }
    Ok(())
}

/// Loads the HS256 key: `MEMSYNC_JWT_SECRET` (given to `from_env`) wins, else `<data-dir>/jwt.key`,
/// generated with mode 0600 on first start.
pub fn load_or_create_secret(from_env: Option<&str>, data_dir: &Path) -> anyhow::Result<Secret> {
    if let Some(s) = from_env {
        anyhow::ensure!(
            s.len() >= 32,
            "MEMSYNC_JWT_SECRET must be at least 32 characters (e.g. `openssl rand -base64 48`)"
        );
        return Ok(Secret(s.as_bytes().to_vec()));
    }
    let path = data_dir.join("jwt.key");
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let key = base64::engine::general_purpose::STANDARD
                .decode(text.trim())
                .with_context(|| format!("{} is not base64", path.display()))?;
            anyhow::ensure!(
                key.len() >= 32,
                "{} holds a key shorter than 32 bytes",
                path.display()
            );
            Ok(Secret(key))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            use std::io::Write;
            use std::os::unix::fs::OpenOptionsExt;
            let key: [u8; 48] = rand::random();
            std::fs::create_dir_all(data_dir)
                .with_context(|| format!("creating {}", data_dir.display()))?;
            let tmp = data_dir.join(format!("jwt.key.tmp{}", std::process::id()));
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)
                .with_context(|| format!("creating {}", tmp.display()))?;
            writeln!(
                f,
                "{}",
                base64::engine::general_purpose::STANDARD.encode(key)
            )?;
            f.sync_all()?;
            // hard_link fails if another process created the key meanwhile: then use theirs.
            match std::fs::hard_link(&tmp, &path) {
                Ok(()) => {
                    let _ = std::fs::remove_file(&tmp);
                    tracing::info!(path = %path.display(), "generated a new token signing key");
                    Ok(Secret(key.to_vec()))
                }
                Err(_) => {
                    let _ = std::fs::remove_file(&tmp);
                    load_or_create_secret(None, data_dir)
                }
            }
        }
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// The set of revoked, not yet expired token ids.
#[derive(Default, Clone)]
pub struct Revocations(Arc<RwLock<HashSet<Uuid>>>);

impl Revocations {
    pub fn is_revoked(&self, jti: &Uuid) -> bool {
        self.0.read().map(|s| s.contains(jti)).unwrap_or(true)
    }

    pub fn insert(&self, jti: Uuid) {
        if let Ok(mut s) = self.0.write() {
            s.insert(jti);
        }
    }

    pub async fn reload(&self, pool: &PgPool) -> anyhow::Result<()> {
        let rows = crate::store::tokens::revoked_unexpired(pool).await?;
        if let Ok(mut s) = self.0.write() {
            *s = rows.into_iter().collect();
        }
        Ok(())
    }

    /// Keeps the set current: a LISTEN for revocations (reconnecting on failure, reloading the
    /// whole set each time it reconnects) plus a full reload every 30 s as a safety net.
    pub fn spawn_watcher(&self, pool: PgPool) {
        let me = self.clone();
        tokio::spawn(async move {
            loop {
                match sqlx::postgres::PgListener::connect_with(&pool).await {
                    Ok(mut listener) => {
                        if let Err(e) = listener.listen(REVOCATION_CHANNEL).await {
                            tracing::warn!(error = %e, "LISTEN for revocations failed");
                        } else {
                            if let Err(e) = me.reload(&pool).await {
                                tracing::warn!(error = %e, "reloading revocations failed");
                            }
                            loop {
                                match tokio::time::timeout(Duration::from_secs(30), listener.recv())
                                    .await
                                {
                                    Ok(Ok(n)) => match n.payload().parse::<Uuid>() {
                                        Ok(jti) => me.insert(jti),
                                        Err(_) => {
                                            let _ = me.reload(&pool).await;
                                        }
                                    },
                                    Ok(Err(e)) => {
                                        if pool.is_closed() {
                                            return; // shutting down
                                        }
                                        tracing::warn!(error = %e, "revocation listener lost its connection");
                                        break;
                                    }
                                    Err(_) => {
                                        if let Err(e) = me.reload(&pool).await {
                                            tracing::warn!(error = %e, "reloading revocations failed");
                                        }
                                    }
                                }
                            }
                        }
                    }
                    Err(_) if pool.is_closed() => return,
                    Err(e) => tracing::warn!(error = %e, "revocation listener cannot connect"),
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
    }
}

/// An authenticated caller.
#[derive(Debug, Clone)]
pub struct Principal {
    pub claims: Claims,
}

impl Principal {
    /// The token's scopes: what its `scope` claim names, or all of them when it names none.
    pub fn scopes(&self) -> std::collections::BTreeSet<Scope> {
        self.claims
            .scope
            .as_deref()
            .and_then(Scope::parse_list)
            .unwrap_or_else(|| Scope::ALL.into_iter().collect())
    }

    /// Whether the token has `scope` (or one that includes it).
    pub fn has_scope(&self, scope: Scope) -> bool {
        self.scopes().iter().any(|s| *s >= scope)
    }

    /// 403 `insufficient_scope`, naming the missing scope, unless the token has it.
    pub fn require(&self, scope: Scope) -> Result<(), ApiError> {
        if self.has_scope(scope) {
            Ok(())
        } else {
            Err(ApiError::MissingScope {
                needed: scope,
                has: self
                    .scopes()
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(" "),
            })
        }
    }

    /// Whether the token is limited to projects that do not include this one.
    fn outside_projects(&self, project: &ProjectId) -> bool {
        !self.claims.projects.is_empty()
            && !self.claims.projects.iter().any(|p| p == project.as_str())
    }

    /// Members and admins of the project's team, and server admins, unless the token is limited
    /// to other projects.
    pub fn can_access(&self, project: &ProjectId) -> bool {
        !self.outside_projects(project)
            && (self.claims.admin || self.claims.teams.contains_key(project.team()))
    }

    /// Team admins of the project's team, and server admins, with a token of `admin` scope that
    /// reaches the project.
    pub fn is_team_admin(&self, project: &ProjectId) -> bool {
        self.has_scope(Scope::Admin)
            && !self.outside_projects(project)
            && (self.claims.admin
                || self.claims.teams.get(project.team()) == Some(&TeamRole::Admin))
    }

    /// Whether the caller administers the whole server: a server admin's token of `admin` scope,
    /// not limited to some projects.
    pub fn is_server_admin(&self) -> bool {
        self.claims.admin && self.claims.projects.is_empty() && self.has_scope(Scope::Admin)
    }

    /// Whether the caller is an admin of `team` (or a server admin) with `admin` scope, not
    /// limited to some projects.
    pub fn administers_team(&self, team: &str) -> bool {
        self.has_scope(Scope::Admin)
            && self.claims.projects.is_empty()
            && (self.claims.admin || self.claims.teams.get(team) == Some(&TeamRole::Admin))
    }
}

/// Where a route takes its token from. The API takes `Authorization: Bearer <token>`; the git
/// endpoint also takes the token as a basic-auth password, since that is what git's credential
/// helpers send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Bearer,
    BearerOrBasic,
}

impl Scheme {
    fn missing(self) -> &'static str {
        match self {
            Scheme::Bearer => {
                "missing `Authorization: Bearer <token>`; get a token with `memsync login`"
            }
            Scheme::BearerOrBasic => {
                "a memsync token is needed: use it as the HTTP password, e.g. git clone http://x:$TOKEN@host/git/team/name.git"
            }
        }
    }
}

/// The token an `Authorization` header presents, or why there is none.
fn presented_token(headers: &HeaderMap, scheme: Scheme) -> Result<String, &'static str> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Err(scheme.missing());
    };
    let value = value
        .to_str()
        .map_err(|_| "the Authorization header is not ASCII")?;
    let (kind, rest) = value.split_once(' ').unwrap_or((value, ""));
    let rest = rest.trim();
    let token = if kind.eq_ignore_ascii_case("bearer") {
        rest.to_owned()
    } else if kind.eq_ignore_ascii_case("basic") && scheme == Scheme::BearerOrBasic {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(rest)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or("malformed basic credentials")?;
        // The token is the password; a user name alone is taken too (`http://$TOKEN@host`).
        let (user, password) = decoded.split_once(':').unwrap_or((&decoded, ""));
        if password.is_empty() { user } else { password }
            .trim()
            .to_owned()
    } else {
        return Err(match scheme {
            Scheme::Bearer => "the Authorization header must be `Bearer <token>`",
            Scheme::BearerOrBasic => {
                "use the token as the HTTP password (basic) or as `Bearer <token>`"
            }
        });
    };
    if token.is_empty() {
        return Err(scheme.missing());
    }
    Ok(token)
}

/// The one check every route makes, API and git alike: a token presented the way the route
/// takes it, signed by this server's key, unexpired, and not revoked.
pub async fn authenticate(
    state: &AppState,
    headers: &HeaderMap,
    scheme: Scheme,
) -> Result<Principal, ApiError> {
    let token =
        presented_token(headers, scheme).map_err(|m| ApiError::Unauthenticated(m.into()))?;
    verify_token(state, &token).await
}

/// A token's claims: this server's own tokens (HS256, `iss` = its issuer, not revoked), or a
/// trusted identity provider's ([`crate::oidc`]).
pub async fn verify_token(state: &AppState, token: &str) -> Result<Principal, ApiError> {
    // A self-issued token seen before is this server's: no need to read its issuer again.
    if let Some(oidc) = &state.oidc
        && !state.keys.verified.contains(token)
        && let Some(iss) = crate::oidc::unverified_issuer(token)
        && iss != state.keys.issuer
    {
        if !oidc.trusts(&iss) {
            return Err(ApiError::Unauthenticated(
                "the token was issued by an issuer this server does not trust".into(),
            ));
        }
        let claims = oidc.verify(token, &iss).await?;
        return Ok(Principal { claims });
    }
    let claims = state.keys.verify(token)?;
    if state.revocations.is_revoked(&claims.jti) {
        return Err(ApiError::Unauthenticated(
            "the token has been revoked; ask an admin for a new one".into(),
        ));
    }
    Ok(Principal { claims })
}

/// What a route needs of its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Nothing: no token (health, readiness, metrics, sign-in settings).
    Open,
    /// A valid token, of any scope.
    Token,
    /// A token with this scope (or one including it).
    Scope(Scope),
}

impl FromRequestParts<AppState> for Principal {
    type Rejection = ApiError;

    /// Authenticates, then checks the scope the matched route needs (the route table in
    /// `crate::http` says it for every route), so no handler can forget to.
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let principal = authenticate(state, &parts.headers, Scheme::Bearer).await?;
        // The token's and its team's rate limits (`crate::limits`).
        state
            .limiter
            .admit(&principal.claims, &parts.method, parts.uri.path())?;
        let route = parts
            .extensions
            .get::<axum::extract::MatchedPath>()
            .map(|m| m.as_str());
        match route.and_then(|r| crate::http::route_need(parts.method.as_str(), r)) {
            Some(Need::Scope(scope)) => principal.require(scope)?,
            Some(Need::Token | Need::Open) => {}
            // Routes outside the API's table (the console) check scopes themselves.
            None => {}
        }
        Ok(principal)
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn h(v: &str) -> HeaderMap {
        let mut m = HeaderMap::new();
        m.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(v).expect("ascii"),
        );
        m
    }

    fn claims(exp_in: i64) -> Claims {
        let now = chrono::Utc::now().timestamp();
        Claims {
            sub: "ann".into(),
            name: "ann".into(),
            email: None,
            teams: BTreeMap::new(),
            admin: false,
            jti: Uuid::new_v4(),
            iat: now,
            exp: now + exp_in,
            iss: "memsync".into(),
            aud: "memsync".into(),
            scope: None,
            projects: Vec::new(),
            rate: None,
        }
    }

    #[test]
    fn a_verified_token_is_served_from_the_cache_only_until_it_expires() {
        let keys = Keys::hs256(&Secret(vec![7; 48]), "memsync", "memsync").expect("keys");
        let live = keys.sign(&claims(3600)).expect("sign");
        assert_eq!(keys.verify(&live).expect("valid").sub, "ann");
        assert!(
            keys.verified
                .tokens
                .lock()
                .expect("lock")
                .contains_key(live.as_str())
        );
        assert_eq!(keys.verify(&live).expect("cached").sub, "ann");
        // Another token is not its cache entry: a bad signature is still refused.
        assert!(keys.verify(&format!("{live}x")).is_err());

        // An entry past its expiry (and the leeway) is not served: the token is verified again,
        // and refused.
        let expired = claims(-LEEWAY_SECS - 60);
        let token = keys.sign(&expired).expect("sign");
        keys.verified
            .tokens
            .lock()
            .expect("lock")
            .insert(token.as_str().into(), expired);
        assert!(matches!(
            keys.verify(&token),
            Err(ApiError::Unauthenticated(m)) if m.contains("expired")
        ));
    }

    #[test]
    fn the_api_takes_bearer_tokens_and_git_also_basic_passwords() {
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let git = Scheme::BearerOrBasic;
        let api = Scheme::Bearer;
        for scheme in [api, git] {
            assert_eq!(
                presented_token(&HeaderMap::new(), scheme),
                Err(scheme.missing())
            );
            assert_eq!(presented_token(&h("Bearer tok"), scheme), Ok("tok".into()));
            assert_eq!(
                presented_token(&h("bearer  tok "), scheme),
                Ok("tok".into())
            );
            assert_eq!(
                presented_token(&h("Bearer "), scheme),
                Err(scheme.missing())
            );
            assert!(presented_token(&h("Digest x"), scheme).is_err());
        }
        let basic = format!("Basic {}", b64("x:tok"));
        assert_eq!(presented_token(&h(&basic), git), Ok("tok".into()));
        assert_eq!(
            presented_token(&h(&basic), api),
            Err("the Authorization header must be `Bearer <token>`")
        );
        let user_only = format!("basic {}", b64("tok:"));
        assert_eq!(presented_token(&h(&user_only), git), Ok("tok".into()));
        let empty = format!("Basic {}", b64(":"));
        assert_eq!(presented_token(&h(&empty), git), Err(git.missing()));
        assert_eq!(
            presented_token(&h("Basic !!!"), git),
            Err("malformed basic credentials")
        );
    }
}
