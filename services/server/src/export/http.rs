//! Read-only clones over HTTP. Git's smart protocol is answered by `git http-backend`, run as a
//! CGI program per request with a clean environment; only `info/refs?service=git-upload-pack`
//! and `git-upload-pack` are routed to it, and `http.receivepack` and `http.getanyfile` are off,
//! so pushes and the dumb protocol are refused even if a request got past the router.
//!
//! Only a copy known to be current and free of purged content is served (see
//! [`super::current`]); otherwise the answer is 503 `unavailable` with `Retry-After`, whose message
//! says to clone from the mirror or retry (plain text for git, which prints it; JSON otherwise).
//!
//! Git sends the token as the HTTP basic password (any user name; a token given as the user
//! name alone works too), or as `Authorization: Bearer`. Without credentials the answer is 401
//! with a `Basic` challenge, so git asks for them; another team's project is 404, like
//! everywhere else.

use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use axum::body::{Body, Bytes};
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use memsync_core::ProjectId;
use serde::Deserialize;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use sqlx::PgPool;

use crate::auth::{Principal, Scheme, authenticate};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// How long one `git http-backend` may run (a clone streams its pack within it).
const BACKEND_LIMIT: Duration = Duration::from_secs(600);
const SERVICE: &str = "git-upload-pack";

/// A caller authenticated the way git can: basic or bearer.
pub struct GitPrincipal(pub Principal);

fn unauthorized(message: &str) -> Response {
    let mut resp = ApiError::Unauthenticated(message.to_owned()).into_response();
    resp.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Basic realm=\"memsync\", charset=\"UTF-8\""),
    );
    resp
}

impl FromRequestParts<AppState> for GitPrincipal {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        match authenticate(state, &parts.headers, Scheme::BearerOrBasic).await {
            Ok(p) => match state
                .limiter
                .admit(&p.claims, &parts.method, parts.uri.path())
            {
                Ok(()) => Ok(GitPrincipal(p)),
                Err(e) => Err(e.into_response()),
            },
            Err(ApiError::Unauthenticated(why)) => Err(unauthorized(&why)),
            Err(e) => Err(e.into_response()),
        }
    }
}

/// `api.git` (or `api`) → `api`.
pub fn project_name(repo: &str) -> &str {
    repo.strip_suffix(".git").unwrap_or(repo)
}

#[derive(Debug, Deserialize)]
pub struct InfoRefsQuery {
    #[serde(default)]
    pub service: Option<String>,
}

/// `GET …/info/refs?service=git-upload-pack`: the refs advertisement.
pub async fn info_refs(
    pool: &PgPool,
    project: &ProjectId,
    service: Option<&str>,
    headers: &HeaderMap,
) -> ApiResult<Response> {
    match service {
        Some(SERVICE) => {}
        Some("git-receive-pack") => {
            return Err(ApiError::Forbidden(
                "the git export is read-only; memories are written with memsync".into(),
            ));
        }
        _ => {
            return Err(ApiError::Forbidden(
                "only git's smart HTTP protocol is served (`git clone` does that)".into(),
            ));
        }
    }
    backend(pool, project, "GET", "info/refs", headers, None).await
}

/// The media type git sends its pack negotiation as.
const UPLOAD_PACK_REQUEST: &str = "application/x-git-upload-pack-request";

/// `POST …/git-upload-pack`: the pack negotiation and the pack.
pub async fn upload_pack(
    pool: &PgPool,
    project: &ProjectId,
    headers: &HeaderMap,
    body: Body,
    max_body_bytes: usize,
) -> ApiResult<Response> {
    // Checked here rather than by `git http-backend`, whose refusal is a plain-text 415.
    let media_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|ct| ct.split(';').next().unwrap_or("").trim());
    if !media_type.is_some_and(|m| m.eq_ignore_ascii_case(UPLOAD_PACK_REQUEST)) {
        return Err(ApiError::UnsupportedMediaType(format!(
            "send the body with `Content-Type: {UPLOAD_PACK_REQUEST}`, as git does"
        )));
    }
    let body = axum::body::to_bytes(body, max_body_bytes)
        .await
        .map_err(|_| ApiError::PayloadTooLarge("the request body is too large".into()))?;
    backend(pool, project, "POST", SERVICE, headers, Some(body)).await
}

/// Seconds a refused clone is told to wait.
const RETRY_AFTER_SECS: &str = "2";

/// Whether the request comes from git (or a git library), which shows an error's body to its
/// user only when it is `text/plain` (each line after `remote: `).
fn from_git(headers: &HeaderMap) -> bool {
    headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ua| {
            let ua = ua.trim_start().to_ascii_lowercase();
            ua.starts_with("git/") || ua.starts_with("jgit/")
        })
}

/// Marks an error answer whose plain-text body is meant for git (which shows nothing else): the
/// router's JSON error shaping leaves it as it is.
#[derive(Debug, Clone, Copy)]
pub struct PlainTextForGit;

/// 503 `unavailable` with `Retry-After`: this process's copy is not served. git gets the message
/// as plain text, which it prints; everyone else the usual JSON error.
fn refuse(headers: &HeaderMap, message: String) -> Response {
    tracing::info!(reason = %message, "refused a clone of a git export that is not known to be current");
    if !from_git(headers) {
        return ApiError::Unavailable { message }.into_response();
    }
    let mut resp = (StatusCode::SERVICE_UNAVAILABLE, format!("{message}\n")).into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    h.insert(
        header::RETRY_AFTER,
        HeaderValue::from_static(RETRY_AFTER_SECS),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp.extensions_mut().insert(PlainTextForGit);
    resp
}

fn header_str<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .filter(|v| v.len() <= 200)
}

/// Runs `git http-backend` for one request and streams its answer back.
async fn backend(
    pool: &PgPool,
    project: &ProjectId,
    method: &str,
    rest: &str,
    headers: &HeaderMap,
    body: Option<Bytes>,
) -> ApiResult<Response> {
    // This process's copy when it is known current (it runs the export, or shares the
    // exporter's directory); else the exporter's, through it.
    let Some(ex) = super::installed() else {
        return forward(pool, project, method, rest, headers, body).await;
    };
    if let Err(stale) = super::current::check(ex, project).await? {
        if ex.is_leader() {
            return Ok(refuse(headers, stale.message(project)));
        }
        return forward(pool, project, method, rest, headers, body).await;
    }
    let mut cmd = tokio::process::Command::new("git");
    cmd.arg("http-backend")
        .env_clear()
        .env(
            "PATH",
            std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
        )
        .env("GIT_PROJECT_ROOT", ex.dir())
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env(
            "PATH_INFO",
            format!("/{}/{}.git/{rest}", project.team(), project.name()),
        )
        .env(
            "QUERY_STRING",
            if method == "GET" {
                "service=git-upload-pack"
            } else {
                ""
            },
        )
        .env("REQUEST_METHOD", method)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_COUNT", "2")
        .env("GIT_CONFIG_KEY_0", "http.receivepack")
        .env("GIT_CONFIG_VALUE_0", "false")
        .env("GIT_CONFIG_KEY_1", "http.getanyfile")
        .env("GIT_CONFIG_VALUE_1", "false")
        .stdin(if body.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if body.is_some() {
        // The one type upload_pack let through, spelled the way git http-backend compares it.
        cmd.env("CONTENT_TYPE", UPLOAD_PACK_REQUEST);
    }
    if let Some(enc) = header_str(headers, "content-encoding") {
        cmd.env("HTTP_CONTENT_ENCODING", enc);
    }
    // Protocol v2 is asked for with this header.
    if let Some(proto) = header_str(headers, "git-protocol").filter(|p| {
        p.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"=:._-".contains(&b))
    }) {
        cmd.env("GIT_PROTOCOL", proto);
    }
    if let Some(b) = &body {
        cmd.env("CONTENT_LENGTH", b.len().to_string());
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| ApiError::Internal(anyhow!(e).context("running git http-backend")))?;
    if let (Some(b), Some(mut stdin)) = (body, child.stdin.take()) {
        // Written while the answer is read, so neither side waits on a full pipe.
        tokio::spawn(async move {
            let _ = stdin.write_all(&b).await;
        });
    }
    if let Some(stderr) = child.stderr.take() {
        let project = project.clone();
        tokio::spawn(async move {
            let mut text = String::new();
            let _ = stderr.take(8192).read_to_string(&mut text).await;
            if !text.trim().is_empty() {
                tracing::warn!(%project, stderr = %text.trim(), "git http-backend complained");
            }
        });
    }
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| ApiError::Internal(anyhow!("git http-backend has no stdout")))?;
    let mut reader = BufReader::new(stdout);
    let (status, cgi_headers) = read_cgi_headers(&mut reader)
        .await
        .map_err(ApiError::Internal)?;
    // The child outlives this function while its output streams; reap it, or stop a stuck one.
    tokio::spawn(async move {
        if tokio::time::timeout(BACKEND_LIMIT, child.wait())
            .await
            .is_err()
        {
            let _ = child.kill().await;
        }
    });
    let mut resp = Response::new(Body::from_stream(tokio_util::io::ReaderStream::new(reader)));
    *resp.status_mut() = status;
    for (k, v) in cgi_headers {
        resp.headers_mut().append(k, v);
    }
    Ok(resp)
}

/// Marks a clone request one replica forwarded to the exporter, which serves it or refuses it
/// (never forwards it again).
const FORWARDED: &str = "x-memsync-forwarded";

/// The client clone requests are forwarded with: no redirects, bodies passed through as they
/// are (no decompression), loopback or cluster-internal plain HTTP.
fn forward_client() -> &'static reqwest::Client {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    CLIENT.get_or_init(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_gzip()
            .no_zstd()
            .connect_timeout(Duration::from_secs(5))
            .timeout(BACKEND_LIMIT)
            .build()
            .unwrap_or_default()
    })
}

/// Forwards a clone request to the process that runs the export (found by the URL it advertised
/// when it took the export lock) and streams its answer back. The caller was authenticated
/// here; the exporter authenticates the same credentials again.
async fn forward(
    pool: &PgPool,
    project: &ProjectId,
    method: &str,
    rest: &str,
    headers: &HeaderMap,
    body: Option<Bytes>,
) -> ApiResult<Response> {
    if headers.contains_key(FORWARDED) {
        return Ok(refuse(
            headers,
            "the replica this clone was forwarded to no longer runs the git export (it is moving to another replica); retry in a few seconds".into(),
        ));
    }
    let Some(url) = crate::store::outbox::exporter_url(pool).await? else {
        return Ok(refuse(
            headers,
            "no replica runs the git export now: it runs on a replica given an export directory (--export-dir), one at a time, and one may be taking over; retry in a few seconds, or clone from the mirror".into(),
        ));
    };
    let target = format!(
        "{}/git/{}/{}.git/{rest}{}",
        url.trim_end_matches('/'),
        project.team(),
        project.name(),
        if method == "GET" {
            "?service=git-upload-pack"
        } else {
            ""
        }
    );
    let method = if method == "GET" {
        reqwest::Method::GET
    } else {
        reqwest::Method::POST
    };
    let mut req = forward_client()
        .request(method, &target)
        .header(FORWARDED, "1");
    for name in [
        header::AUTHORIZATION,
        header::CONTENT_TYPE,
        header::CONTENT_ENCODING,
        header::USER_AGENT,
        header::ACCEPT,
        HeaderName::from_static("git-protocol"),
        HeaderName::from_static("x-request-id"),
    ] {
        if let Some(v) = headers.get(&name) {
            req = req.header(name, v);
        }
    }
    let mut trace = HeaderMap::new();
    crate::telemetry::inject_current(&mut trace);
    req = req.headers(trace);
    if let Some(b) = body {
        req = req.body(b);
    }
    let answer = match req.send().await {
        Ok(a) => a,
        Err(e) => {
            tracing::warn!(%project, exporter = %url, error = %e, "forwarding a clone to the git exporter failed");
            return Ok(refuse(
                headers,
                format!(
                    "the replica that runs the git export ({url}) cannot be reached from this one; retry in a few seconds"
                ),
            ));
        }
    };
    let status = answer.status();
    let their = answer.headers().clone();
    let mut resp = Response::new(Body::from_stream(answer.bytes_stream()));
    *resp.status_mut() = status;
    for name in [
        header::CONTENT_TYPE,
        header::CONTENT_ENCODING,
        header::CONTENT_LENGTH,
        header::CACHE_CONTROL,
        header::EXPIRES,
        header::PRAGMA,
        header::WWW_AUTHENTICATE,
        header::RETRY_AFTER,
    ] {
        for v in their.get_all(&name) {
            resp.headers_mut().append(name.clone(), v.clone());
        }
    }
    // The exporter's own plain-text refusals reach git as they are.
    let plain = their
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/plain"));
    if plain && !status.is_success() {
        resp.extensions_mut().insert(PlainTextForGit);
    }
    Ok(resp)
}

/// The CGI response header block: `Status:` becomes the status, a few others are passed on.
async fn read_cgi_headers<R: AsyncBufRead + Unpin>(
    r: &mut R,
) -> anyhow::Result<(StatusCode, Vec<(HeaderName, HeaderValue)>)> {
    const PASSED: [&str; 5] = [
        "content-type",
        "content-length",
        "cache-control",
        "expires",
        "pragma",
    ];
    let mut status = StatusCode::OK;
    let mut out = Vec::new();
    let mut total = 0;
    loop {
        let mut line = String::new();
        let n = r
            .read_line(&mut line)
            .await
            .context("reading git http-backend's headers")?;
        if n == 0 {
            bail!("git http-backend ended before its headers");
        }
        total += n;
        if total > 64 * 1024 {
            bail!("git http-backend's headers are too long");
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            return Ok((status, out));
        }
        let (name, value) = line
            .split_once(':')
            .context("a malformed header from git http-backend")?;
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
        if name == "status" {
            status = value
                .split_whitespace()
                .next()
                .and_then(|c| c.parse::<u16>().ok())
                .and_then(|c| StatusCode::from_u16(c).ok())
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        } else if PASSED.contains(&name.as_str()) {
            out.push((
                HeaderName::from_bytes(name.as_bytes())?,
                HeaderValue::from_str(value)?,
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn cgi_headers_are_parsed() {
        let raw = b"Status: 403 Forbidden\r\nContent-Type: text/plain\r\nX-Other: y\r\n\r\nbody";
        let mut r = BufReader::new(&raw[..]);
        let (status, headers) = read_cgi_headers(&mut r).await.expect("parse");
        assert_eq!(status, StatusCode::FORBIDDEN);
        assert_eq!(headers.len(), 1);
        let mut rest = String::new();
        r.read_to_string(&mut rest).await.expect("rest");
        assert_eq!(rest, "body");
        let mut r = BufReader::new(&b"Content-Type: x\r\n"[..]);
        assert!(read_cgi_headers(&mut r).await.is_err());
    }
}
