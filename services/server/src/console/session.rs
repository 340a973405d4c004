//! Signing in and out of the console, and the two extractors every page uses.
//!
//! A token pasted once on the sign-in page is verified like any API token and exchanged for a
//! server-side session (`store::sessions`): the browser holds only a random secret in an
//! `HttpOnly`, `SameSite=Strict` cookie (`Secure` behind TLS), the database only its SHA-256 and
//! the token's claims, never the token. A session ends when it has been idle for
//! `--console-idle-timeout`, after `--console-max-session` in any case (never later than the
//! token's expiry), on sign-out, or when its token is revoked.
//!
//! Every form post (`Posted`) must come from the console's own origin (`Origin` and
//! `Sec-Fetch-Site` when the browser sends them) and carry the session's CSRF token.

use std::sync::Arc;

use axum::extract::{FromRequest, FromRequestParts, Query, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::IntoResponse;
use base64::Engine;
use memsync_core::Sha256;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::{Flash, Nav, PageError, PageResult};
use crate::auth::{Claims, Principal};
use crate::state::AppState;
use crate::store::{self, sessions};

const COOKIE: &str = "memsync_console";
const LOGIN_COOKIE: &str = "memsync_console_login";
/// Largest form body the console takes.
const MAX_FORM_BYTES: usize = 64 * 1024;

/// How sessions are kept, and which origin forms must come from.
#[derive(Debug, Clone)]
pub struct Settings {
    pub idle: chrono::Duration,
    pub max_session: chrono::Duration,
    /// `scheme://host[:port]` of `--public-url`, as browsers send it in `Origin`.
    pub origin: Option<String>,
    /// Cookies are `Secure` (the public URL is https).
    pub secure: bool,
}

impl Settings {
    pub fn new(
        public_url: Option<&str>,
        idle: std::time::Duration,
        max_session: std::time::Duration,
    ) -> anyhow::Result<Arc<Settings>> {
        let dur = |d: std::time::Duration, what: &str| {
            anyhow::ensure!(
                d >= std::time::Duration::from_secs(60),
                "{what} must be at least a minute, e.g. 30m"
            );
            chrono::Duration::from_std(d).map_err(|_| anyhow::anyhow!("{what} is too long"))
        };
        let idle = dur(idle, "--console-idle-timeout")?;
        let max_session = dur(max_session, "--console-max-session")?;
        let origin = public_url.map(origin_of).transpose()?;
        let secure = origin.as_deref().is_some_and(|o| o.starts_with("https://"));
        Ok(Arc::new(Settings {
            idle: idle.min(max_session),
            max_session,
            origin,
            secure,
        }))
    }
}

/// The origin (`scheme://host[:port]`, default port dropped) of a public URL.
fn origin_of(url: &str) -> anyhow::Result<String> {
    let bad = || {
        anyhow::anyhow!(
            "--public-url `{url}` is not an http(s) URL; give the URL people reach the server at, e.g. https://memsync.example.com"
        )
    };
    let (scheme, rest) = url.split_once("://").ok_or_else(bad)?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return Err(bad());
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.is_empty()
        || authority.contains('@')
        || !authority
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'))
    {
        return Err(bad());
    }
    let authority = authority.to_ascii_lowercase();
    let default_port = if scheme == "https" { ":443" } else { ":80" };
    let authority = authority.strip_suffix(default_port).unwrap_or(&authority);
    Ok(format!("{scheme}://{authority}"))
}

pub(super) fn random_token() -> String {
    let bytes: [u8; 32] = rand::random();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

pub(super) fn cookie_value<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

pub(super) fn forwarded_https(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(',').next())
        .is_some_and(|p| p.trim().eq_ignore_ascii_case("https"))
}

fn set_cookie(name: &str, value: &str, path: &str, max_age: i64, secure: bool) -> HeaderValue {
    let secure = if secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{name}={value}; Path={path}; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}"
    ))
    .unwrap_or(HeaderValue::from_static(""))
}

/// The `Set-Cookie` that removes the session cookie.
pub(super) fn clear_cookie() -> HeaderValue {
    set_cookie(COOKIE, "", "/admin", 0, false)
}

/// Refuses a form posted from another origin. Browsers say where a request comes from in
/// `Origin` (and `Sec-Fetch-Site`); a client that sends neither still needs the CSRF token.
fn check_origin(headers: &HeaderMap, settings: &Settings) -> PageResult<()> {
    let refuse = |what: &str| {
        Err(PageError::forbidden(format!(
            "This form was posted from {what}; the console only takes forms from its own pages. Open the page in the console and submit it there."
        )))
    };
    if let Some(site) = headers.get("sec-fetch-site")
        && site.as_bytes() != b"same-origin"
    {
        return refuse("another site");
    }
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let origin = origin.to_str().unwrap_or("").to_ascii_lowercase();
    if origin != console_origin(headers, settings) {
        return refuse("another origin");
    }
    Ok(())
}

/// The console's origin: `--public-url`'s, else the request's `Host` (and `X-Forwarded-Proto`).
pub(super) fn console_origin(headers: &HeaderMap, settings: &Settings) -> String {
    match &settings.origin {
        Some(o) => o.clone(),
        None => {
            let host = headers
                .get(header::HOST)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_ascii_lowercase();
            let scheme = if forwarded_https(headers) {
                "https"
            } else {
                "http"
            };
            format!("{scheme}://{host}")
        }
    }
}

/// Equal strings, compared in time that does not depend on where they differ.
pub(super) fn same_secret(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A signed-in console user: the session's principal, CSRF token and pending message.
pub struct Console {
    pub principal: Principal,
    pub session: String,
    pub csrf: String,
    pub flash: Option<Flash>,
}

impl Console {
    /// A team admin (of any team) or a server admin: the project, audit and memory pages.
    pub fn administers(&self) -> bool {
        let p = &self.principal;
        p.is_server_admin() || p.claims.teams.keys().any(|t| p.administers_team(t))
    }

    pub fn server_admin(&self) -> bool {
        self.principal.is_server_admin()
    }

    pub fn nav(&self, section: &'static str) -> Option<Nav> {
        Some(Nav {
            user: self.principal.claims.name.clone(),
            server_admin: self.server_admin(),
            administers: self.administers(),
            csrf: self.csrf.clone(),
            flash: self.flash.clone(),
            section,
        })
    }

    /// Leaves `flash` for the next page this session shows.
    pub async fn tell(&self, state: &AppState, flash: Flash) -> PageResult<()> {
        let v = serde_json::to_value(&flash).unwrap_or_default();
        sessions::set_flash(&state.pool, &self.session, &v).await?;
        Ok(())
    }

    /// Refuses, unless the user administers some team (or the server).
    pub fn require_admin(&self) -> PageResult<()> {
        if self.administers() {
            Ok(())
        } else {
            Err(PageError::forbidden(
                "This page is for team admins and server admins; as a reviewer you have the review queue.",
            ))
        }
    }
}

impl FromRequestParts<AppState> for Console {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, PageError> {
        Console::of(state, &parts.headers).await
    }
}

impl Console {
    /// The signed-in user of a request's session cookie, or why there is none.
    pub async fn of(state: &AppState, headers: &HeaderMap) -> Result<Console, PageError> {
        let Some(secret) = cookie_value(headers, COOKIE).filter(|v| !v.is_empty()) else {
            return Err(PageError::SignIn { why: "required" });
        };
        let id_hash = Sha256::of(secret.as_bytes()).to_hex();
        let Some(s) = sessions::touch(&state.pool, &id_hash, state.console.idle).await? else {
            return Err(PageError::SignIn { why: "ended" });
        };
        if state.revocations.is_revoked(&s.claims.jti) {
            sessions::close(&state.pool, &id_hash).await?;
            return Err(PageError::SignIn { why: "revoked" });
        }
        if s.claims.exp <= chrono::Utc::now().timestamp() {
            sessions::close(&state.pool, &id_hash).await?;
            return Err(PageError::SignIn { why: "expired" });
        }
        let flash = s.flash.and_then(|v| serde_json::from_value(v).ok());
        Ok(Console {
            principal: Principal { claims: s.claims },
            session: id_hash,
            csrf: s.csrf,
            flash,
        })
    }
}

/// A form posted by a signed-in user from the console's own pages, with the session's CSRF token
/// (the form's `csrf` field), parsed as `T`.
pub struct Posted<T> {
    pub console: Console,
    pub form: T,
}

#[derive(Deserialize)]
struct CsrfField {
    #[serde(default)]
    csrf: String,
}

async fn form_bytes(headers: &HeaderMap, body: axum::body::Body) -> PageResult<axum::body::Bytes> {
    let form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    if !form {
        return Err(PageError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "The console takes forms (application/x-www-form-urlencoded) only.",
        ));
    }
    axum::body::to_bytes(body, MAX_FORM_BYTES)
        .await
        .map_err(|_| {
            PageError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "The form is larger than the console takes (64 KiB).",
            )
        })
}

fn parse_form<T: DeserializeOwned>(bytes: &[u8]) -> PageResult<T> {
    serde_urlencoded::from_bytes(bytes).map_err(|e| {
        PageError::bad_request(format!(
            "The form is malformed: {e}. Reload the page and submit it again."
        ))
    })
}

impl<T: DeserializeOwned + Send> FromRequest<AppState> for Posted<T> {
    type Rejection = PageError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, PageError> {
        let (mut parts, body) = req.into_parts();
        check_origin(&parts.headers, &state.console)?;
        let console = Console::from_request_parts(&mut parts, state).await?;
        let bytes = form_bytes(&parts.headers, body).await?;
        let csrf: CsrfField = parse_form(&bytes)?;
        if !same_secret(&csrf.csrf, &console.csrf) {
            return Err(PageError::forbidden(
                "This form's CSRF token is missing or out of date (was it opened in an earlier session?). Reload the page and submit it again.",
            ));
        }
        let form = parse_form(&bytes)?;
        Ok(Posted { console, form })
    }
}

#[derive(askama::Template)]
#[template(path = "console/login.html")]
struct LoginPage {
    nav: Option<Nav>,
    login_csrf: String,
    notice: Option<&'static str>,
    error: Option<String>,
    /// The identity providers to sign in with: (link, host).
    providers: Vec<(String, String)>,
}

#[derive(Deserialize)]
pub struct LoginQuery {
    why: Option<String>,
}

pub(super) fn login_page_response(
    state: &AppState,
    status: StatusCode,
    error: Option<String>,
    why: Option<&str>,
    secure: bool,
) -> PageResult {
    let notice = match why {
        Some("required") => Some("Sign in to continue."),
        Some("ended") => Some(
            "Your session has ended: it expired, was signed out, or the token it was opened with was revoked. Sign in again.",
        ),
        Some("revoked") => {
            Some("Your session has ended: the token it was opened with has been revoked.")
        }
        Some("expired") => Some("Your session has ended: its token has expired."),
        Some("signed_out") => Some("You have signed out."),
        _ => None,
    };
    let login_csrf = random_token();
    let providers = state
        .oidc
        .as_ref()
        .map(|o| {
            o.issuer_urls()
                .enumerate()
                .map(|(i, url)| {
                    let host = reqwest::Url::parse(url)
                        .ok()
                        .and_then(|u| u.host_str().map(str::to_owned))
                        .unwrap_or_else(|| url.to_owned());
                    (format!("/admin/sso?provider={i}"), host)
                })
                .collect()
        })
        .unwrap_or_default();
    let page = LoginPage {
        nav: None,
        login_csrf: login_csrf.clone(),
        notice,
        error,
        providers,
    };
    let mut resp = (status, super::html(&page)?).into_response();
    resp.headers_mut().insert(
        header::SET_COOKIE,
        set_cookie(LOGIN_COOKIE, &login_csrf, "/admin/login", 3600, secure),
    );
    Ok(resp)
}

pub async fn login_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<LoginQuery>,
) -> PageResult {
    let secure = state.console.secure || forwarded_https(&headers);
    login_page_response(&state, StatusCode::OK, None, q.why.as_deref(), secure)
}

#[derive(Deserialize)]
pub struct LoginForm {
    #[serde(default)]
    token: String,
    #[serde(default)]
    login_csrf: String,
}

/// Exchanges a pasted token for a session. Only tokens of team admins, reviewers and server
/// admins open one; a member's token is refused with the reason.
pub async fn login(State(state): State<AppState>, req: Request) -> PageResult {
    let (parts, body) = req.into_parts();
    let headers = parts.headers;
    let secure = state.console.secure || forwarded_https(&headers);
    check_origin(&headers, &state.console)?;
    let bytes = form_bytes(&headers, body).await?;
    let form: LoginForm = parse_form(&bytes)?;
    let again =
        |status, msg: &str| login_page_response(&state, status, Some(msg.to_owned()), None, secure);
    let expected = cookie_value(&headers, LOGIN_COOKIE).unwrap_or("");
    if expected.is_empty() || !same_secret(expected, &form.login_csrf) {
        return again(
            StatusCode::FORBIDDEN,
            "The sign-in form was stale or posted from elsewhere; sign in from this page.",
        );
    }
    let token = form.token.trim();
    if token.is_empty() {
        return again(StatusCode::BAD_REQUEST, "Paste a memsync token to sign in.");
    }
    let principal = match crate::auth::verify_token(&state, token).await {
        Ok(p) => p,
        Err(e) => {
            return again(
                StatusCode::UNAUTHORIZED,
                &format!("That token was not accepted: {e}."),
            );
        }
    };
    if let Some(why) = not_for_console(&state, &principal).await? {
        return again(StatusCode::FORBIDDEN, why);
    }
    open_session(&state, &principal.claims, &headers, secure).await
}

/// Why a verified caller may not open a console session, if they may not: the console reviews
/// and administers, so a read-only token, or a member's, has nothing to do there.
pub(super) async fn not_for_console(
    state: &AppState,
    principal: &Principal,
) -> PageResult<Option<&'static str>> {
    if !principal.has_scope(crate::auth::Scope::Push) {
        return Ok(Some(
            "That token may only pull (its scope is `pull`): the console needs a token of `push` or `admin` scope.",
        ));
    }
    let reviews = crate::review::reviewed_teams(&state.pool, principal)
        .await
        .map_err(crate::error::ApiError::from)?
        .is_none_or(|t| !t.is_empty());
    if !reviews {
        return Ok(Some(
            "That token belongs to a team member: the console is for team admins, reviewers and server admins. Members use the memsync client.",
        ));
    }
    Ok(None)
}

pub(super) async fn open_session(
    state: &AppState,
    claims: &Claims,
    headers: &HeaderMap,
    secure: bool,
) -> PageResult {
    let secret = random_token();
    let id_hash = Sha256::of(secret.as_bytes()).to_hex();
    let token_expiry = chrono::DateTime::from_timestamp(claims.exp, 0).unwrap_or_default();
    let hard = (chrono::Utc::now() + state.console.max_session).min(token_expiry);
    sessions::open(
        &state.pool,
        &sessions::NewSession {
            id_hash: &id_hash,
            claims,
            csrf: &random_token(),
            idle: state.console.idle,
            hard_expires_at: hard,
        },
    )
    .await?;
    audit(state, claims, "console_sign_in", headers).await?;
    let max_age = (hard - chrono::Utc::now()).num_seconds().max(0);
    let mut resp = super::see_other("/admin/");
    let h = resp.headers_mut();
    h.append(
        header::SET_COOKIE,
        set_cookie(COOKIE, &secret, "/admin", max_age, secure),
    );
    h.append(
        header::SET_COOKIE,
        set_cookie(LOGIN_COOKIE, "", "/admin/login", 0, secure),
    );
    Ok(resp)
}

async fn audit(
    state: &AppState,
    claims: &Claims,
    action: &str,
    headers: &HeaderMap,
) -> PageResult<()> {
    store::audit::record(
        &state.pool,
        &store::audit::AuditEvent {
            team: None,
            project: None,
            actor_sub: &claims.sub,
            actor_name: Some(&claims.name),
            action,
            path: None,
            revision: None,
            request_id: crate::http::request_id(headers),
            details: serde_json::json!({ "jti": claims.jti }),
        },
    )
    .await?;
    Ok(())
}

#[derive(Deserialize)]
pub struct Empty {}

pub async fn logout(
    State(state): State<AppState>,
    headers: HeaderMap,
    posted: Posted<Empty>,
) -> PageResult {
    let c = &posted.console;
    sessions::close(&state.pool, &c.session).await?;
    audit(&state, &c.principal.claims, "console_sign_out", &headers).await?;
    let mut resp = super::see_other("/admin/login?why=signed_out");
    resp.headers_mut()
        .insert(header::SET_COOKIE, clear_cookie());
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                axum::http::HeaderName::from_bytes(k.as_bytes()).expect("name"),
                HeaderValue::from_str(v).expect("value"),
            );
        }
        h
    }

    fn settings(url: Option<&str>) -> Arc<Settings> {
        let m = std::time::Duration::from_secs(1800);
        Settings::new(url, m, m * 16).expect("settings")
    }

    #[test]
    fn public_urls_give_browser_origins() {
        assert_eq!(
            origin_of("https://Memsync.Example.com/").unwrap(),
            "https://memsync.example.com"
        );
        assert_eq!(
            origin_of("https://m.example.com:443/x").unwrap(),
            "https://m.example.com"
        );
        assert_eq!(
            origin_of("http://10.0.0.1:8080").unwrap(),
            "http://10.0.0.1:8080"
        );
        for bad in [
            "memsync.example.com",
            "ftp://x",
            "https://",
            "https://u:p@x",
        ] {
            assert!(origin_of(bad).is_err(), "{bad}");
        }
        assert!(settings(Some("https://m.example.com")).secure);
        assert!(!settings(Some("http://m.example.com")).secure);
    }

    #[test]
    fn forms_from_other_origins_are_refused() {
        let s = settings(None);
        let ok = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://127.0.0.1:8080"),
        ]);
        assert!(check_origin(&ok, &s).is_ok());
        let none = headers(&[("host", "127.0.0.1:8080")]);
        assert!(check_origin(&none, &s).is_ok());
        for bad in [
            headers(&[("host", "127.0.0.1:8080"), ("origin", "http://127.0.0.1:9")]),
            headers(&[("host", "127.0.0.1:8080"), ("origin", "null")]),
            headers(&[("host", "127.0.0.1:8080"), ("sec-fetch-site", "cross-site")]),
            headers(&[("host", "127.0.0.1:8080"), ("sec-fetch-site", "same-site")]),
            headers(&[
                ("host", "127.0.0.1:8080"),
                ("origin", "https://127.0.0.1:8080"),
            ]),
        ] {
            assert!(check_origin(&bad, &s).is_err(), "{bad:?}");
        }
        let behind_tls = headers(&[
            ("host", "m.example.com"),
            ("x-forwarded-proto", "https"),
            ("origin", "https://m.example.com"),
        ]);
        assert!(check_origin(&behind_tls, &s).is_ok());
        let public = settings(Some("https://m.example.com"));
        let spoofed_host = headers(&[("host", "evil.example"), ("origin", "https://evil.example")]);
        assert!(check_origin(&spoofed_host, &public).is_err());
        let right = headers(&[
            ("host", "internal:8080"),
            ("origin", "https://m.example.com"),
        ]);
        assert!(check_origin(&right, &public).is_ok());
    }

    #[test]
    fn cookies_are_found_by_name() {
        let h = headers(&[("cookie", "a=1; memsync_console=xyz; b=2")]);
        assert_eq!(cookie_value(&h, COOKIE), Some("xyz"));
        assert_eq!(cookie_value(&h, LOGIN_COOKIE), None);
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd"));
        assert!(!same_secret("abc", "ab"));
    }
}
