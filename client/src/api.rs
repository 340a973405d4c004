//! The HTTP client for the memsync API: timeouts, retries of what is safe to repeat, and one
//! error type whose messages say what went wrong and what to do.
//!
//! What is retried is decided in one place, [`Request::may_repeat`]: GET and HEAD, and a POST,
//! PUT or DELETE that carries an `Idempotency-Key` (the server applies such a request once and
//! answers its retries with the stored answer). Nothing else is ever sent twice. How it is
//! retried is [`RetryPolicy`]: a few attempts, after a lost connection, a timeout or a 502, 503
//! or 504, with backoff and jitter, honouring `Retry-After`, and after a 429 (a rate limit) whose
//! `Retry-After` is within the policy's longest wait; never after another status.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use memsync_core::wire::{
    AdminPathAction, AdminRelease, AdminRestore, AdminRollback, Allowlist, AllowlistAdd,
    ConflictDetails, ErrorBody, ProjectInfo, ProjectSettings, ProposalApprove, ProposalDecision,
    ProposalDetail, ProposalList, ProposalReject, PullResponse, PushRequest, PushResponse,
    Reviewers, TokenIssue, TokenIssued, ValidationDetails, WhoAmI,
};
use memsync_core::{MemoryPath, ProjectId};
use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode, Url};
use serde::Serialize;
use serde::de::DeserializeOwned;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("cannot reach the memsync server at {server}: {reason}")]
    Unreachable { server: String, reason: String },
    #[error("the server refused the token: {0} (run `memsync login` with a new token)")]
    Unauthenticated(String),
    /// The server refused a single sign-on token as expired and it could not be renewed; the
    /// message says to sign in again.
    #[error("{0}")]
    SignInExpired(String),
    #[error("{0}")]
    NotFound(String),
    /// 403: the token is valid but may not do this.
    #[error("the server refused: {0}")]
    Forbidden(String),
    #[error("{message}")]
    Conflict {
        message: String,
        details: ConflictDetails,
    },
    #[error("{message}")]
    Refused {
        message: String,
        details: ValidationDetails,
    },
    #[error("the server answered {status}: {message}")]
    Server {
        status: u16,
        code: String,
        message: String,
    },
    #[error("the server did not answer within {0:?}")]
    Timeout(Duration),
    /// A write whose request may have reached the server, with no answer that says what
    /// became of it: a timeout, a lost connection, or a 502/503/504.
    #[error("{what}: {reason}. {advice}")]
    Uncertain {
        what: String,
        reason: String,
        advice: String,
    },
    #[error("unexpected answer from the server: {0}")]
    Protocol(String),
}

impl ApiError {
    /// The server has no such route: it is older than this client.
    pub fn is_unknown_route(&self) -> bool {
        matches!(self, ApiError::Server { status: 404, code, .. } if code == "not_found")
    }

    /// True when the failure says nothing about the data: offline, timeouts, 5xx.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            ApiError::Unreachable { .. } | ApiError::Timeout(_) | ApiError::Uncertain { .. }
        ) || matches!(self, ApiError::Server { status, .. } if *status >= 500 || *status == 429)
    }
}

/// How one pull request asks: a page size and a long-poll wait, both optional (a server from
/// before paging ignores them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Page {
    /// At most this many files (`limit=`).
    pub limit: Option<u32>,
    /// Seconds to wait for a revision past `since` (`wait=`, 0–60).
    pub wait: Option<u32>,
}

/// Why the event stream could not be opened, and when the server said to come back (`Retry-After`
/// of a 429 `too_many_streams` or a 503).
#[derive(Debug)]
pub struct StreamError {
    pub error: ApiError,
    pub retry_after: Option<Duration>,
}

/// An open event stream (`GET …/events`).
pub struct EventStream {
    resp: reqwest::Response,
    parser: crate::sse::Parser,
    queue: std::collections::VecDeque<crate::sse::Item>,
}

impl EventStream {
    /// The next item of the stream; None when the server closed it. An error when the
    /// connection broke or went silent for longer than the stream's idle limit.
    pub async fn next(&mut self) -> Result<Option<crate::sse::Item>, String> {
        loop {
            if let Some(item) = self.queue.pop_front() {
                return Ok(Some(item));
            }
            match self.resp.chunk().await {
                Ok(Some(bytes)) => self.queue.extend(self.parser.feed(&bytes)),
                Ok(None) => return Ok(None),
                Err(e) => {
                    let mut reason = e.to_string();
                    let mut src = std::error::Error::source(&e);
                    while let Some(s) = src {
                        reason = s.to_string();
                        src = s.source();
                    }
                    return Err(if e.is_timeout() {
                        "no data (not even a heartbeat) for too long".into()
                    } else {
                        reason
                    });
                }
            }
        }
    }

    /// The last event id the stream gave.
    pub fn last_id(&self) -> Option<&str> {
        self.parser.last_id()
    }
}

pub enum Pulled {
    NotModified,
    Changes {
        body: PullResponse,
        etag: Option<String>,
    },
}

/// An `Idempotency-Key`: a fresh random one per user action (one push, one purge, one token
/// issue), sent again, unchanged, with each retry of that action's request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    #[allow(clippy::new_without_default)]
    pub fn new() -> IdempotencyKey {
        IdempotencyKey(uuid::Uuid::new_v4().to_string())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The answer of an admin write that carries an `Idempotency-Key`.
#[derive(Debug)]
pub struct Applied<T> {
    pub answer: T,
    /// The server had applied this request already (an earlier attempt whose answer was lost)
    /// and sent its stored answer again (`idempotent-replayed: true`); nothing was applied twice.
    pub replayed: bool,
}

/// One request as `send` takes it: everything needed to send it again, and whether that is
/// allowed.
#[derive(Debug, Clone)]
pub struct Request {
    method: Method,
    url: Url,
    /// A JSON body, sent byte-identical on every attempt (the server compares retries by the
    /// body's hash).
    body: Option<Vec<u8>>,
    if_none_match: Option<String>,
    key: Option<IdempotencyKey>,
    /// For a write: what it does and how to see whether it was applied, for when that is
    /// unknown.
    what: String,
    check: String,
    /// Time the server may take on purpose before it answers (a long-poll's `wait`), added to
    /// the time limit of each attempt.
    patience: Duration,
}

impl Request {
    fn new(method: Method, url: Url) -> Request {
        Request {
            method,
            url,
            body: None,
            if_none_match: None,
            key: None,
            what: String::new(),
            check: String::new(),
            patience: Duration::ZERO,
        }
    }

    fn get(url: Url) -> Request {
        Request::new(Method::GET, url)
    }

    fn post(url: Url, body: &impl Serialize) -> Result<Request, ApiError> {
        Request::new(Method::POST, url).json(body)
    }

    fn put(url: Url) -> Request {
        Request::new(Method::PUT, url)
    }

    /// The request with `body` as its JSON body.
    fn json(mut self, body: &impl Serialize) -> Result<Request, ApiError> {
        self.body = Some(serde_json::to_vec(body).map_err(|e| ApiError::Protocol(e.to_string()))?);
        Ok(self)
    }

    fn delete(url: Url) -> Request {
        Request::new(Method::DELETE, url)
    }

    /// Sends `key` as `Idempotency-Key`: the server applies the request once, so it may be
    /// retried.
    fn idempotent(mut self, key: &IdempotencyKey) -> Request {
        self.key = Some(key.clone());
        self
    }

    /// What a write does ("the purge of x.md") and where to see whether it was applied
    /// ("`memsync admin history x.md`"), for the message when that is unknown.
    fn write(mut self, what: impl Into<String>, check: impl Into<String>) -> Request {
        self.what = what.into();
        self.check = check.into();
        self
    }

    fn if_none_match(mut self, etag: Option<&str>) -> Request {
        self.if_none_match = etag.map(str::to_owned);
        self
    }

    /// Whether this request may be sent more than once: see [`may_repeat`].
    pub fn may_repeat(&self) -> bool {
        may_repeat(&self.method, self.key.is_some())
    }

    fn is_write(&self) -> bool {
        !matches!(self.method, Method::GET | Method::HEAD)
    }
}

/// The one rule of what the client retries. GET and HEAD change nothing. A POST, PUT or DELETE
/// is repeated only when it carries an `Idempotency-Key`, which the server uses to apply it once
/// and answer every retry with the first answer. Any other write is sent once: after a timeout
/// or a lost connection nobody knows whether it was applied, and a second copy could apply it
/// twice.
pub fn may_repeat(method: &Method, has_idempotency_key: bool) -> bool {
    match *method {
        Method::GET | Method::HEAD => true,
        Method::POST | Method::PUT | Method::DELETE => has_idempotency_key,
        _ => false,
    }
}

/// How one attempt failed, as far as retrying goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// No connection was made: nothing was sent.
    Connect,
    /// No answer in time: the request may have reached the server.
    Timeout,
    /// The connection broke after it was made: the request may have reached the server.
    Lost,
    /// An answer with this status, and its `Retry-After` if any.
    Status(u16, Option<Duration>),
}

/// When and how often a repeatable request is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub attempts: u32,
    /// The backoff before the first retry; it doubles for each next one.
    pub base: Duration,
    /// The longest backoff.
    pub max_backoff: Duration,
    /// The longest wait a `Retry-After` can ask for.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            attempts: 3,
            base: Duration::from_millis(300),
            max_backoff: Duration::from_secs(5),
            max_retry_after: Duration::from_secs(10),
        }
    }
}

impl RetryPolicy {
    /// The wait before the next attempt after attempt number `attempt` (from 1) failed with
    /// `failure`, or None to stop there. `jitter` (in [0, 1)) spreads the backoff over its upper
    /// half, so clients that failed together do not come back together.
    pub fn next(
        &self,
        may_repeat: bool,
        attempt: u32,
        failure: Failure,
        jitter: f64,
    ) -> Option<Duration> {
        if !may_repeat || attempt >= self.attempts {
            return None;
        }
        let retry_after = match failure {
            Failure::Connect | Failure::Timeout | Failure::Lost => None,
            Failure::Status(502..=504, retry_after) => retry_after,
            // Over a rate limit: nothing was applied, and the server says when there is room.
            // A longer wait than the policy allows is left to the caller (the 429 says how long).
            Failure::Status(429, Some(wait)) if wait <= self.max_retry_after => Some(wait),
            // Every other answer is the server's word: a 4xx will not change by asking again,
            // and a 500 is a bug, not a hiccup.
            Failure::Status(..) => return None,
        };
        if let Some(wait) = retry_after {
            return Some(wait.min(self.max_retry_after));
        }
        let backoff = self
            .base
            .saturating_mul(1 << (attempt - 1).min(16))
            .min(self.max_backoff);
        Some(backoff.mul_f64(0.5 + jitter.clamp(0.0, 1.0) / 2.0))
    }
}

/// A whole answer: the body is read inside the attempt, so a connection lost while it arrives
/// is a failed attempt like any other.
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Answer {
    /// `idempotent-replayed: true`: the stored answer of an earlier attempt.
    fn replayed(&self) -> bool {
        self.headers
            .get("idempotent-replayed")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    }
}

/// Gives a new token when the server refused the current one as expired (a single sign-on
/// token, renewed with its refresh token): the new token, or why there is none.
pub trait Renew: Send + Sync {
    fn renew<'a>(
        &'a self,
        refused: &'a str,
    ) -> Pin<Box<dyn Future<Output = Result<String, String>> + Send + 'a>>;
}

#[derive(Clone)]
pub struct ApiClient {
    http: reqwest::Client,
    /// The server as configured (normalised, no trailing `/`): the key of the sync state.
    base: String,
    /// The same, parsed: every request URL is built from it.
    base_url: Url,
    /// Shared by the clones, so a renewed token serves them all. Empty: no `Authorization`.
    token: Arc<Mutex<String>>,
    renew: Option<Arc<dyn Renew>>,
    /// The time limit of one attempt.
    timeout: Duration,
    /// No request (retries included) goes past this instant.
    deadline: Option<Instant>,
    retry: RetryPolicy,
}

/// The filters of `memsync admin audit` (`GET /v1/admin/audit`).
#[derive(Debug, Default, Clone)]
pub struct AuditQuery {
    pub team: Option<String>,
    pub project: Option<String>,
    pub actor: Option<String>,
    pub action: Option<String>,
    pub path: Option<String>,
    pub since: Option<String>,
    pub until: Option<String>,
    pub limit: u32,
    pub cursor: Option<i64>,
}

impl AuditQuery {
    fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut q = vec![("limit", self.limit.to_string())];
        for (k, v) in [
            ("team", &self.team),
            ("project", &self.project),
            ("actor", &self.actor),
            ("action", &self.action),
            ("path", &self.path),
            ("since", &self.since),
            ("until", &self.until),
        ] {
            if let Some(v) = v {
                q.push((k, v.clone()));
            }
        }
        if let Some(c) = self.cursor {
            q.push(("cursor", c.to_string()));
        }
        q
    }
}

/// The filters of `GET /v1/proposals` (`memsync review list`, `status`, the session-start hook).
#[derive(Debug, Default, Clone)]
pub struct ProposalQuery {
    /// `team/name`; None: every project the token reviews (or has proposed to).
    pub project: Option<String>,
    /// `open`, `all`, `pending`, `rejected`; None: the server's default.
    pub status: Option<String>,
    /// Only the caller's own proposals.
    pub mine: bool,
    pub limit: Option<u32>,
}

impl ProposalQuery {
    fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut q = Vec::new();
        if let Some(p) = &self.project {
            q.push(("project", p.clone()));
        }
        if let Some(s) = &self.status {
            q.push(("status", s.clone()));
        }
        if self.mine {
            q.push(("mine", "true".into()));
        }
        if let Some(l) = self.limit {
            q.push(("limit", l.to_string()));
        }
        q
    }
}

/// `POST /v1/admin/projects/{team}/{name}/archive`. Not in `memsync_core::wire` (yet): the
/// server reads it as a private struct.
#[derive(Debug, Serialize)]
struct ArchiveRequest {
    archived: bool,
}

/// The HTTP client's builder for a server at `base`. For an `https://` server, certificates are
/// checked against the system's roots (loaded when the client is built). For a plain `http://`
/// one (a server on this machine or inside a trusted network) there is nothing to verify, so
/// no roots are loaded: reading the system's certificate directory is about a third of a
/// no-op `memsync push`. Such a client still refuses to follow a redirect to `https://` with a
/// message naming the address to log in with, rather than failing on an empty root store.
pub(crate) fn http_builder(base: &Url) -> reqwest::ClientBuilder {
    let builder = reqwest::Client::builder();
    if base.scheme() != "http" {
        return builder;
    }
    builder
        .tls_certs_only([])
        .redirect(reqwest::redirect::Policy::custom(|attempt| {
            if attempt.url().scheme() != "http" {
                let to = attempt.url().clone();
                attempt.error(format!(
                    "the server redirects to {to}; log in with that address: memsync login --server {}",
                    to.origin().ascii_serialization()
                ))
            } else if attempt.previous().len() >= 10 {
                attempt.error("more than 10 redirects")
            } else {
                attempt.follow()
            }
        }))
}

impl ApiClient {
    pub fn new(server: &str, token: &str, timeout: Duration) -> Result<ApiClient, ApiError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let base = server.trim_end_matches('/').to_owned();
        let base_url = Url::parse(&base)
            .ok()
            .filter(|u| !u.cannot_be_a_base())
            .ok_or_else(|| ApiError::Protocol(format!("`{base}` is not a server URL")))?;
        let http = http_builder(&base_url)
            .connect_timeout(timeout.min(Duration::from_secs(5)))
            .timeout(timeout)
            .user_agent(concat!("memsync/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ApiError::Protocol(format!("cannot build the HTTP client: {e}")))?;
        Ok(ApiClient {
            http,
            base,
            base_url,
            token: Arc::new(Mutex::new(token.to_owned())),
            renew: None,
            timeout,
            deadline: None,
            retry: RetryPolicy::default(),
        })
    }

    /// Bounds every later call, retries included, by `deadline`.
    pub fn with_deadline(mut self, deadline: Instant) -> ApiClient {
        self.deadline = Some(deadline);
        self
    }

    /// Renews the token with `renew` when the server refuses it as expired, and sends the
    /// request again with the new one (once per request).
    pub fn with_renew(mut self, renew: Arc<dyn Renew>) -> ApiClient {
        self.renew = Some(renew);
        self
    }

    /// The token sent now.
    fn bearer(&self) -> String {
        self.token
            .lock()
            .map(|t| t.clone())
            .unwrap_or_else(|e| e.into_inner().clone())
    }

    /// Retries with `policy` instead of the default one.
    pub fn with_retry_policy(mut self, policy: RetryPolicy) -> ApiClient {
        self.retry = policy;
        self
    }

    pub fn server(&self) -> &str {
        &self.base
    }

    /// `<server>/<segments…>?<query>`, each segment and query value percent-encoded by `url`.
    fn url(&self, segments: &[&str], query: &[(&str, String)]) -> Url {
        let mut url = self.base_url.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(segments);
        }
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        url
    }

    /// `/v1/projects/{team}/{name}/<rest…>`.
    fn project_url(&self, project: &ProjectId, rest: &[&str], query: &[(&str, String)]) -> Url {
        let mut segs = vec!["v1", "projects", project.team(), project.name()];
        segs.extend_from_slice(rest);
        self.url(&segs, query)
    }

    /// `/v1/admin/projects/{team}/{name}/<action>`.
    fn admin_project_url(
        &self,
        project: &ProjectId,
        action: &str,
        query: &[(&str, String)],
    ) -> Url {
        self.url(
            &[
                "v1",
                "admin",
                "projects",
                project.team(),
                project.name(),
                action,
            ],
            query,
        )
    }

    /// Sends `req`, and again after a failure that [`RetryPolicy::next`] allows for it (only
    /// when [`Request::may_repeat`]); the answer of the last attempt, whatever its status, or
    /// the error that says what is known of the request's fate.
    async fn send(&self, req: &Request) -> Result<Answer, ApiError> {
        let may_repeat = req.may_repeat();
        // Whether an attempt of this write may have reached the server without an answer that
        // says what became of it.
        let mut maybe_applied = false;
        let per_attempt = self.timeout.saturating_add(req.patience);
        let mut limit = per_attempt;
        let mut attempt = 0;
        let mut renewed = false;
        loop {
            if let Some(d) = self.deadline {
                let left = d.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(self.gave_up(req, attempt, maybe_applied, Reason::Timeout(limit)));
                }
                limit = left.min(per_attempt);
            }
            attempt += 1;
            let sent = self.bearer();
            let result = self.attempt(req, &sent, limit).await;
            if let (Ok(a), Some(renew)) = (&result, &self.renew)
                && !renewed
                && refused_as_expired(a)
            {
                // A 401 applied nothing: the request goes again, whatever it is, with the new
                // token.
                renewed = true;
                match renew.renew(&sent).await {
                    Ok(token) => {
                        if let Ok(mut t) = self.token.lock() {
                            *t = token;
                        }
                        attempt -= 1;
                        continue;
                    }
                    Err(message) => return Err(ApiError::SignInExpired(message)),
                }
            }
            let failure = match &result {
                Ok(a) => Failure::Status(a.status.as_u16(), retry_after(&a.headers)),
                Err(e) if e.is_builder() => {
                    return Err(ApiError::Protocol(format!("cannot build the request: {e}")));
                }
                Err(e) => classify(e),
            };
            let unsettled = matches!(
                failure,
                Failure::Timeout | Failure::Lost | Failure::Status(502..=504, _)
            );
            maybe_applied |= unsettled && req.is_write();
            let wait = self
                .retry
                .next(may_repeat, attempt, failure, rand::random::<f64>())
                .filter(|w| self.deadline.is_none_or(|d| Instant::now() + *w < d));
            if let Some(wait) = wait {
                tokio::time::sleep(wait).await;
                continue;
            }
            return match result {
                Ok(a) if unsettled && maybe_applied => {
                    let why = format!("the server answered {}", status_line(&a));
                    Err(self.uncertain(req, attempt, why))
                }
                Ok(a) => Ok(a),
                Err(e) => {
                    let why = self.reason(&e, limit);
                    Err(self.gave_up(req, attempt, maybe_applied, why))
                }
            };
        }
    }

    /// One attempt with `token`, the answer read whole within `limit`.
    async fn attempt(
        &self,
        req: &Request,
        token: &str,
        limit: Duration,
    ) -> Result<Answer, reqwest::Error> {
        let mut b = self
            .http
            .request(req.method.clone(), req.url.clone())
            .header("traceparent", crate::tracecontext::traceparent())
            .timeout(limit);
        if !token.is_empty() {
            b = b.bearer_auth(token);
        }
        if let Some(body) = &req.body {
            b = b
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.clone());
        }
        if let Some(etag) = &req.if_none_match {
            b = b.header(reqwest::header::IF_NONE_MATCH, etag);
        }
        if let Some(key) = &req.key {
            b = b.header("idempotency-key", key.as_str());
        }
        let resp = b.send().await?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let body = resp.bytes().await?.to_vec();
        Ok(Answer {
            status,
            headers,
            body,
        })
    }

    fn reason(&self, e: &reqwest::Error, limit: Duration) -> Reason {
        if e.is_timeout() && !e.is_connect() {
            return Reason::Timeout(limit);
        }
        // The innermost cause says it best ("Connection refused", "connection closed before
        // message completed").
        let mut reason = e.to_string();
        let mut src = std::error::Error::source(e);
        while let Some(s) = src {
            reason = s.to_string();
            src = s.source();
        }
        Reason::Transport(reason)
    }

    /// The error after `attempts` attempts, the last one failing for `why`: for a write that may
    /// have been applied, one that says so and how to find out.
    fn gave_up(&self, req: &Request, attempts: u32, maybe_applied: bool, why: Reason) -> ApiError {
        match (maybe_applied, why) {
            (false, Reason::Timeout(d)) => ApiError::Timeout(d),
            (false, Reason::Transport(reason)) => ApiError::Unreachable {
                server: self.base.clone(),
                reason,
            },
            (true, Reason::Timeout(d)) => self.uncertain(
                req,
                attempts,
                format!("the server did not answer within {d:?}"),
            ),
            (true, Reason::Transport(r)) => self.uncertain(
                req,
                attempts,
                format!("the connection to {} failed ({r})", self.base),
            ),
        }
    }

    /// A write that may or may not have been applied: what is known, and how to find out.
    fn uncertain(&self, req: &Request, attempts: u32, reason: String) -> ApiError {
        let tries = if attempts > 1 {
            format!(
                " (tried {attempts} times, always with the same Idempotency-Key, so it was applied at most once)"
            )
        } else if req.may_repeat() {
            String::new()
        } else {
            " (memsync sends a write without an Idempotency-Key only once: a second copy could apply it twice)".into()
        };
        ApiError::Uncertain {
            what: if req.what.is_empty() {
                format!("{} {}", req.method, req.url.path())
            } else {
                req.what.clone()
            },
            reason,
            advice: format!("It may or may not have been applied{tries}. {}.", req.check),
        }
    }

    async fn get<T: DeserializeOwned>(
        &self,
        url: Url,
        project: Option<&ProjectId>,
    ) -> Result<T, ApiError> {
        let answer = self.send(&Request::get(url)).await?;
        json_or_error(answer, project)
    }

    async fn call<T: DeserializeOwned>(
        &self,
        req: Request,
        project: Option<&ProjectId>,
    ) -> Result<T, ApiError> {
        let answer = self.send(&req).await?;
        json_or_error(answer, project)
    }

    /// An idempotent admin write, and whether its answer is the stored one of an earlier
    /// attempt.
    async fn applied<T: DeserializeOwned>(
        &self,
        req: Request,
        project: Option<&ProjectId>,
    ) -> Result<Applied<T>, ApiError> {
        let answer = self.send(&req).await?;
        let replayed = answer.replayed();
        Ok(Applied {
            answer: json_or_error(answer, project)?,
            replayed,
        })
    }

    /// A write whose success may come with a JSON body or none (204, or an empty 200).
    async fn maybe_json(
        &self,
        req: Request,
        project: Option<&ProjectId>,
    ) -> Result<Option<serde_json::Value>, ApiError> {
        let answer = self.send(&req).await?;
        if answer.status.is_success() && answer.body.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        json_or_error(answer, project).map(Some)
    }

    /// A write answered 204 on success.
    async fn no_content(&self, req: Request, project: Option<&ProjectId>) -> Result<(), ApiError> {
        let answer = self.send(&req).await?;
        if answer.status == StatusCode::NO_CONTENT {
            return Ok(());
        }
        json_or_error::<serde_json::Value>(answer, project).map(|_| ())
    }

    /// `GET …/changes?since=N`: one page of at most `page.limit` files (the server caps it),
    /// waiting up to `page.wait` seconds for a revision past `since` when there is none yet.
    pub async fn pull(
        &self,
        project: &ProjectId,
        since: i64,
        etag: Option<&str>,
        page: Page,
    ) -> Result<Pulled, ApiError> {
        let mut query = vec![("since", since.to_string())];
        if let Some(limit) = page.limit {
            query.push(("limit", limit.to_string()));
        }
        if let Some(wait) = page.wait {
            query.push(("wait", wait.to_string()));
        }
        let url = self.project_url(project, &["changes"], &query);
        let mut req = Request::get(url).if_none_match(etag);
        req.patience = Duration::from_secs(page.wait.unwrap_or(0).into());
        let answer = self.send(&req).await?;
        if answer.status == StatusCode::NOT_MODIFIED {
            return Ok(Pulled::NotModified);
        }
        let etag = answer
            .headers
            .get(reqwest::header::ETAG)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body: PullResponse = json_or_error(answer, Some(project))?;
        Ok(Pulled::Changes { body, etag })
    }

    /// Opens `GET …/events` (Server-Sent Events), after revision `last_event_id` when given. The
    /// stream has no overall time limit; a read that waits longer than `idle` (no byte, not even a
    /// heartbeat) fails, so a connection that died silently is noticed.
    pub async fn events(
        &self,
        project: &ProjectId,
        last_event_id: Option<&str>,
        idle: Duration,
    ) -> Result<EventStream, StreamError> {
        let http = http_builder(&self.base_url)
            .connect_timeout(self.timeout.min(Duration::from_secs(5)))
            .read_timeout(idle)
            .user_agent(concat!("memsync/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| StreamError {
                error: ApiError::Protocol(format!("cannot build the HTTP client: {e}")),
                retry_after: None,
            })?;
        let url = self.project_url(project, &["events"], &[]);
        let req = Request::get(url.clone());
        let failed = |error| StreamError {
            error,
            retry_after: None,
        };
        let mut renewed = false;
        let resp = loop {
            let sent = self.bearer();
            let mut b = http
                .get(url.clone())
                .bearer_auth(&sent)
                .header("traceparent", crate::tracecontext::traceparent())
                .header(reqwest::header::ACCEPT, "text/event-stream");
            if let Some(id) = last_event_id {
                b = b.header("last-event-id", id);
            }
            let resp = match tokio::time::timeout(self.timeout, b.send()).await {
                Ok(Ok(r)) => r,
                Ok(Err(e)) => {
                    let why = self.reason(&e, self.timeout);
                    return Err(failed(self.gave_up(&req, 1, false, why)));
                }
                Err(_) => return Err(failed(ApiError::Timeout(self.timeout))),
            };
            let status = resp.status();
            if status == StatusCode::OK {
                break resp;
            }
            let headers = resp.headers().clone();
            let retry_after = retry_after(&headers);
            let body = resp.bytes().await.map(|b| b.to_vec()).unwrap_or_default();
            let answer = Answer {
                status,
                headers,
                body,
            };
            if let Some(renew) = &self.renew
                && !renewed
                && refused_as_expired(&answer)
            {
                renewed = true;
                match renew.renew(&sent).await {
                    Ok(token) => {
                        if let Ok(mut t) = self.token.lock() {
                            *t = token;
                        }
                        continue;
                    }
                    Err(message) => return Err(failed(ApiError::SignInExpired(message))),
                }
            }
            let error = match json_or_error::<serde_json::Value>(answer, Some(project)) {
                Err(e) => e,
                Ok(_) => ApiError::Protocol(format!("the event stream answered {status}")),
            };
            return Err(StreamError { error, retry_after });
        };
        let is_stream = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_stream {
            return Err(failed(ApiError::Protocol(
                "the event stream's answer is not text/event-stream".into(),
            )));
        }
        Ok(EventStream {
            resp,
            parser: crate::sse::Parser::new(),
            queue: std::collections::VecDeque::new(),
        })
    }

    /// One push; `key` is the push's own, the same for each of its retries.
    pub async fn push(
        &self,
        project: &ProjectId,
        req: &PushRequest,
        key: &IdempotencyKey,
    ) -> Result<PushResponse, ApiError> {
        let req = Request::post(self.project_url(project, &["push"], &[]), req)?
            .idempotent(key)
            .write(
                format!("the push to {project}"),
                "Run `memsync sync`: its pull recognises what the server already has, and its push sends the rest",
            );
        self.call(req, Some(project)).await
    }

    pub async fn whoami(&self) -> Result<WhoAmI, ApiError> {
        self.get(self.url(&["v1", "me"], &[]), None).await
    }

    /// `GET /v1/auth/config` (no token needed): the identity providers the server trusts for
    /// single sign-on.
    pub async fn auth_config(&self) -> Result<crate::sso::AuthConfig, ApiError> {
        self.get(self.url(&["v1", "auth", "config"], &[]), None)
            .await
    }

    /// `GET /healthz` (no token needed): whether the server answers, and the time it says it is
    /// (its `Date` header), for a clock check.
    pub async fn health(&self) -> Result<Option<chrono::DateTime<chrono::Utc>>, ApiError> {
        let answer = self
            .send(&Request::get(self.url(&["healthz"], &[])))
            .await?;
        let date = answer
            .headers
            .get(reqwest::header::DATE)
            .and_then(|v| v.to_str().ok())
            .and_then(|s| chrono::DateTime::parse_from_rfc2822(s).ok())
            .map(|t| t.with_timezone(&chrono::Utc));
        json_or_error::<serde_json::Value>(answer, None)?;
        Ok(date)
    }

    pub async fn project_info(&self, project: &ProjectId) -> Result<ProjectInfo, ApiError> {
        self.get(self.project_url(project, &[], &[]), Some(project))
            .await
    }

    pub async fn allowlist(&self, project: &ProjectId) -> Result<Allowlist, ApiError> {
        self.get(
            self.project_url(project, &["allowlist"], &[]),
            Some(project),
        )
        .await
    }

    /// The server's feedback check of one candidate against the project's team feedback
    /// (stateless; sent once).
    pub async fn feedback_check(
        &self,
        project: &ProjectId,
        req: &memsync_core::wire::FeedbackCheckRequest,
    ) -> Result<memsync_core::wire::FeedbackCheckResponse, ApiError> {
        let req = Request::post(self.project_url(project, &["feedback", "check"], &[]), req)?;
        self.call(req, Some(project)).await
    }

    /// Not retried: the server takes no `Idempotency-Key` here.
    pub async fn allowlist_add(
        &self,
        project: &ProjectId,
        add: &AllowlistAdd,
    ) -> Result<Allowlist, ApiError> {
        let req = Request::post(self.project_url(project, &["allowlist"], &[]), add)?.write(
            format!("adding {} to the allowlist of {project}", add.fingerprint),
            "Check with `memsync allowlist list` before adding it again",
        );
        self.call(req, Some(project)).await
    }

    /// Not retried: the server takes no `Idempotency-Key` here.
    pub async fn allowlist_remove(
        &self,
        project: &ProjectId,
        fingerprint: &str,
    ) -> Result<(), ApiError> {
        let req = Request::delete(self.project_url(project, &["allowlist", fingerprint], &[]))
            .write(
                format!("removing {fingerprint} from the allowlist of {project}"),
                "Check with `memsync allowlist list` before removing it again",
            );
        self.no_content(req, Some(project)).await
    }

    /// The audit log as JSON (`{"events","next_cursor"}`).
    pub async fn audit(&self, q: &AuditQuery) -> Result<serde_json::Value, ApiError> {
        self.get(self.url(&["v1", "admin", "audit"], &q.pairs()), None)
            .await
    }

    /// The audit log as CSV.
    pub async fn audit_csv(&self, q: &AuditQuery) -> Result<String, ApiError> {
        let mut pairs = q.pairs();
        pairs.push(("format", "csv".into()));
        let answer = self
            .send(&Request::get(self.url(&["v1", "admin", "audit"], &pairs)))
            .await?;
        if answer.status.is_success() {
            return String::from_utf8(answer.body)
                .map_err(|e| ApiError::Protocol(format!("the CSV is not UTF-8: {e}")));
        }
        json_or_error::<serde_json::Value>(answer, None).map(|_| String::new())
    }

    pub async fn history(
        &self,
        project: &ProjectId,
        path: &MemoryPath,
    ) -> Result<serde_json::Value, ApiError> {
        let q = [("path", path.to_string())];
        self.get(
            self.admin_project_url(project, "history", &q),
            Some(project),
        )
        .await
    }

    pub async fn version(
        &self,
        project: &ProjectId,
        path: &MemoryPath,
        revision: i64,
    ) -> Result<serde_json::Value, ApiError> {
        let q = [
            ("path", path.to_string()),
            ("revision", revision.to_string()),
        ];
        self.get(
            self.admin_project_url(project, "version", &q),
            Some(project),
        )
        .await
    }

    pub async fn version_diff(
        &self,
        project: &ProjectId,
        path: &MemoryPath,
        from: i64,
        to: i64,
    ) -> Result<serde_json::Value, ApiError> {
        let q = [
            ("path", path.to_string()),
            ("from", from.to_string()),
            ("to", to.to_string()),
        ];
        self.get(self.admin_project_url(project, "diff", &q), Some(project))
            .await
    }

    pub async fn admin_delete(
        &self,
        project: &ProjectId,
        req: &AdminPathAction,
        key: &IdempotencyKey,
    ) -> Result<Applied<serde_json::Value>, ApiError> {
        let path = req.path.as_str();
        let req = Request::post(self.admin_project_url(project, "delete", &[]), req)?
            .idempotent(key)
            .write(
                format!("deleting {path} in {project}"),
                format!("Check with `memsync admin history {path}` before deleting it again"),
            );
        self.applied(req, Some(project)).await
    }

    pub async fn admin_restore(
        &self,
        project: &ProjectId,
        req: &AdminRestore,
        key: &IdempotencyKey,
    ) -> Result<Applied<serde_json::Value>, ApiError> {
        let path = req.path.as_str();
        let req = Request::post(self.admin_project_url(project, "restore", &[]), req)?
            .idempotent(key)
            .write(
                format!("restoring {path} in {project}"),
                format!("Check with `memsync admin history {path}` before restoring it again"),
            );
        self.applied(req, Some(project)).await
    }

    pub async fn admin_purge(
        &self,
        project: &ProjectId,
        req: &AdminPathAction,
        key: &IdempotencyKey,
    ) -> Result<Applied<serde_json::Value>, ApiError> {
        let path = req.path.as_str();
        let req = Request::post(self.admin_project_url(project, "purge", &[]), req)?
            .idempotent(key)
            .write(
                format!("the purge of {path} in {project}"),
                format!("Check with `memsync admin audit --action purge --path {path}` before purging it again"),
            );
        self.applied(req, Some(project)).await
    }

    pub async fn projects(&self) -> Result<serde_json::Value, ApiError> {
        self.get(self.url(&["v1", "admin", "projects"], &[]), None)
            .await
    }

    /// Not retried: the server takes no `Idempotency-Key` here.
    pub async fn archive(
        &self,
        project: &ProjectId,
        archived: bool,
    ) -> Result<serde_json::Value, ApiError> {
        let what = if archived { "archiving" } else { "unarchiving" };
        let req = Request::post(
            self.admin_project_url(project, "archive", &[]),
            &ArchiveRequest { archived },
        )?
        .write(
            format!("{what} {project}"),
            "Check with `memsync admin projects` before running the command again",
        );
        self.call(req, Some(project)).await
    }

    pub async fn tokens(&self) -> Result<serde_json::Value, ApiError> {
        self.get(self.url(&["v1", "admin", "tokens"], &[]), None)
            .await
    }

    pub async fn token_issue(
        &self,
        req: &TokenIssue,
        key: &IdempotencyKey,
    ) -> Result<Applied<TokenIssued>, ApiError> {
        let user = req.user.as_str();
        let req = Request::post(self.url(&["v1", "admin", "tokens"], &[]), req)?
            .idempotent(key)
            .write(
                format!("issuing a token for {user}"),
                format!("Check with `memsync admin tokens list` before issuing another: a new run is a new request, and would issue a second token for {user} (revoke one you will not use with `memsync admin tokens revoke JTI`)"),
            );
        self.applied(req, None).await
    }

    /// `GET /v1/proposals`: the review queue, or the caller's own proposals.
    pub async fn proposals(&self, q: &ProposalQuery) -> Result<ProposalList, ApiError> {
        self.get(self.url(&["v1", "proposals"], &q.pairs()), None)
            .await
    }

    pub async fn proposal(&self, id: i64) -> Result<ProposalDetail, ApiError> {
        self.get(self.url(&["v1", "proposals", &id.to_string()], &[]), None)
            .await
    }

    pub async fn approve(
        &self,
        id: i64,
        req: &ProposalApprove,
        key: &IdempotencyKey,
    ) -> Result<Applied<ProposalDecision>, ApiError> {
        let req = Request::post(
            self.url(&["v1", "proposals", &id.to_string(), "approve"], &[]),
            req,
        )?
        .idempotent(key)
        .write(
            format!("approving proposal #{id}"),
            format!("Check with `memsync review show {id}` before approving it again"),
        );
        self.applied(req, None).await
    }

    pub async fn reject(
        &self,
        id: i64,
        req: &ProposalReject,
        key: &IdempotencyKey,
    ) -> Result<Applied<ProposalDecision>, ApiError> {
        let req = Request::post(
            self.url(&["v1", "proposals", &id.to_string(), "reject"], &[]),
            req,
        )?
        .idempotent(key)
        .write(
            format!("rejecting proposal #{id}"),
            format!("Check with `memsync review show {id}` before rejecting it again"),
        );
        self.applied(req, None).await
    }

    pub async fn project_settings(&self, project: &ProjectId) -> Result<ProjectSettings, ApiError> {
        self.get(
            self.admin_project_url(project, "settings", &[]),
            Some(project),
        )
        .await
    }

    /// Not retried: the server takes no `Idempotency-Key` here.
    pub async fn set_project_settings(
        &self,
        project: &ProjectId,
        settings: &ProjectSettings,
    ) -> Result<ProjectSettings, ApiError> {
        let req = Request::put(self.admin_project_url(project, "settings", &[]))
            .json(settings)?
            .write(
                format!("changing the settings of {project}"),
                "Check with `memsync admin project show` before running the command again",
            );
        self.call(req, Some(project)).await
    }

    pub async fn reviewers(&self, team: &str) -> Result<Reviewers, ApiError> {
        self.get(
            self.url(&["v1", "admin", "teams", team, "reviewers"], &[]),
            None,
        )
        .await
    }

    /// Grants (`add`) or withdraws the reviewer role. Not retried: the server takes no
    /// `Idempotency-Key` here.
    pub async fn set_reviewer(
        &self,
        team: &str,
        user: &str,
        add: bool,
    ) -> Result<Option<serde_json::Value>, ApiError> {
        let url = self.url(&["v1", "admin", "teams", team, "reviewers", user], &[]);
        let (req, what) = if add {
            (
                Request::put(url),
                format!("making {user} a reviewer of team {team}"),
            )
        } else {
            (
                Request::delete(url),
                format!("removing {user} from the reviewers of team {team}"),
            )
        };
        let req = req.write(
            what,
            format!("Check with `memsync admin reviewer list --team {team}` before running the command again"),
        );
        self.maybe_json(req, None).await
    }

    /// `disable` or `enable` of a memory, for everyone.
    pub async fn admin_release(
        &self,
        project: &ProjectId,
        action: &str,
        req: &AdminRelease,
        key: &IdempotencyKey,
    ) -> Result<Applied<PushResponse>, ApiError> {
        let path = req.path.as_str();
        let req = Request::post(self.admin_project_url(project, action, &[]), req)?
            .idempotent(key)
            .write(
                format!("the {action} of {path} in {project}"),
                format!("Check with `memsync admin history {path}` before running it again"),
            );
        self.applied(req, Some(project)).await
    }

    pub async fn admin_rollback(
        &self,
        project: &ProjectId,
        req: &AdminRollback,
        key: &IdempotencyKey,
    ) -> Result<Applied<PushResponse>, ApiError> {
        let path = req.path.as_str();
        let req = Request::post(self.admin_project_url(project, "rollback", &[]), req)?
            .idempotent(key)
            .write(
                format!("the rollback of {path} in {project}"),
                format!("Check with `memsync admin history {path}` before rolling it back again"),
            );
        self.applied(req, Some(project)).await
    }

    /// Not retried: the server takes no `Idempotency-Key` here.
    pub async fn token_revoke(&self, jti: &str) -> Result<(), ApiError> {
        let req = Request::delete(self.url(&["v1", "admin", "tokens", jti], &[])).write(
            format!("revoking token {jti}"),
            "Check with `memsync admin tokens list` before running the command again",
        );
        self.no_content(req, None).await
    }
}

/// How a transport error bears on retrying.
fn classify(e: &reqwest::Error) -> Failure {
    if e.is_connect() {
        Failure::Connect
    } else if e.is_timeout() {
        Failure::Timeout
    } else {
        Failure::Lost
    }
}

/// Why the last attempt got no answer.
enum Reason {
    Timeout(Duration),
    Transport(String),
}

/// `Retry-After` in seconds or as an HTTP date.
fn retry_after(h: &HeaderMap) -> Option<Duration> {
    let v = h.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = chrono::DateTime::parse_from_rfc2822(v).ok()?;
    Some(
        (at.with_timezone(&chrono::Utc) - chrono::Utc::now())
            .to_std()
            .unwrap_or(Duration::ZERO),
    )
}

/// A 401 whose error says the token expired (code `expired`, or a message saying so).
fn refused_as_expired(a: &Answer) -> bool {
    a.status == StatusCode::UNAUTHORIZED
        && serde_json::from_slice::<ErrorBody>(&a.body).is_ok_and(|b| {
            b.error.code == "expired" || b.error.message.to_lowercase().contains("expired")
        })
}

/// "503 (the database is unavailable)": the status and the server's message, if it sent one.
fn status_line(a: &Answer) -> String {
    match serde_json::from_slice::<ErrorBody>(&a.body) {
        Ok(b) => format!("{} ({})", a.status.as_u16(), b.error.message),
        Err(_) => a.status.to_string(),
    }
}

fn json_or_error<T: serde::de::DeserializeOwned>(
    answer: Answer,
    project: Option<&ProjectId>,
) -> Result<T, ApiError> {
    let Answer { status, body, .. } = answer;
    if status.is_success() {
        return serde_json::from_slice(&body)
            .map_err(|e| ApiError::Protocol(format!("the answer is not what this client expects ({e}); is the server a different version?")));
    }
    let err: Option<ErrorBody> = serde_json::from_slice(&body).ok();
    let (code, message, details) = match err {
        Some(b) => (b.error.code, b.error.message, b.error.details),
        None => (
            String::new(),
            format!("HTTP {status} without a memsync error body (is this URL a memsync server?)"),
            serde_json::Value::Null,
        ),
    };
    Err(match status {
        StatusCode::UNAUTHORIZED => ApiError::Unauthenticated(message),
        StatusCode::FORBIDDEN => ApiError::Forbidden(message),
        StatusCode::NOT_FOUND if code == "not_found" && message.contains("no such route") => ApiError::Server {
            status: 404,
            code,
            message: "the server does not know this API; it may be older than this client (upgrade it)".into(),
        },
        // The server's own message says what is missing (a project, a path, a version); a
        // body that is not memsync's gets one that names the project.
        StatusCode::NOT_FOUND => ApiError::NotFound(match project {
            Some(project) if code.is_empty() => format!(
                "project {project} not found on the server, or your token cannot reach it (a member's first push creates it)"
            ),
            _ => message,
        }),
        StatusCode::CONFLICT => match serde_json::from_value(details) {
            Ok(details) => ApiError::Conflict { message, details },
            Err(_) => ApiError::Server { status: 409, code, message },
        },
        StatusCode::UNPROCESSABLE_ENTITY if code == "validation_failed" => match serde_json::from_value(details) {
            Ok(details) => ApiError::Refused { message, details },
            Err(_) => ApiError::Server { status: 422, code, message },
        },
        s => ApiError::Server {
            status: s.as_u16(),
            code,
            message,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_built_by_url_not_by_hand() {
        let api = ApiClient::new("https://m.example/base", "t", Duration::from_secs(1)).unwrap();
        let p: ProjectId = "acme/api".parse().unwrap();
        assert_eq!(
            api.project_url(&p, &["changes"], &[("since", "4".into())])
                .as_str(),
            "https://m.example/base/v1/projects/acme/api/changes?since=4"
        );
        let path = MemoryPath::parse("dir/notes.md").unwrap();
        assert_eq!(
            api.admin_project_url(&p, "history", &[("path", path.to_string())])
                .as_str(),
            "https://m.example/base/v1/admin/projects/acme/api/history?path=dir%2Fnotes.md"
        );
        let q = AuditQuery {
            actor: Some("bob & eve=1#x".into()),
            limit: 5,
            ..AuditQuery::default()
        };
        let url = api.url(&["v1", "admin", "audit"], &q.pairs());
        assert_eq!(
            url.as_str(),
            "https://m.example/base/v1/admin/audit?limit=5&actor=bob+%26+eve%3D1%23x"
        );
        let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
        assert_eq!(pairs[1], ("actor".into(), "bob & eve=1#x".into()));
        // A path segment never becomes two.
        assert_eq!(
            api.url(&["v1", "admin", "tokens", "a/../b?c"], &[])
                .as_str(),
            "https://m.example/base/v1/admin/tokens/a%2F..%2Fb%3Fc"
        );
    }

    #[test]
    fn only_reads_and_keyed_writes_may_repeat() {
        for m in [Method::GET, Method::HEAD] {
            assert!(may_repeat(&m, false), "{m}");
            assert!(may_repeat(&m, true), "{m}");
        }
        for m in [Method::POST, Method::PUT, Method::DELETE] {
            assert!(!may_repeat(&m, false), "{m} without a key");
            assert!(may_repeat(&m, true), "{m} with a key");
        }
        assert!(!may_repeat(&Method::PATCH, true));
        // Every request the client makes goes through a `Request`, which applies the rule.
        let api = ApiClient::new("http://127.0.0.1:1", "t", Duration::from_secs(1)).unwrap();
        let url = api.url(&["v1", "x"], &[]);
        assert!(Request::get(url.clone()).may_repeat());
        let post = Request::post(url.clone(), &serde_json::json!({})).unwrap();
        assert!(!post.may_repeat());
        assert!(post.idempotent(&IdempotencyKey::new()).may_repeat());
        assert!(!Request::delete(url.clone()).may_repeat());
        assert!(
            Request::delete(url)
                .idempotent(&IdempotencyKey::new())
                .may_repeat()
        );
    }

    #[test]
    fn keys_are_fresh_and_valid_header_values() {
        let (a, b) = (IdempotencyKey::new(), IdempotencyKey::new());
        assert_ne!(a, b);
        for k in [&a, &b] {
            let s = k.as_str();
            assert!((1..=200).contains(&s.len()) && s.bytes().all(|c| c.is_ascii_graphic()));
        }
    }

    #[test]
    fn the_policy_retries_lost_requests_and_gateway_errors_a_bounded_number_of_times() {
        let p = RetryPolicy::default();
        assert_eq!(p.attempts, 3);
        let transient = [
            Failure::Connect,
            Failure::Timeout,
            Failure::Lost,
            Failure::Status(502, None),
            Failure::Status(503, None),
            Failure::Status(504, None),
        ];
        for f in transient {
            assert!(p.next(true, 1, f, 0.5).is_some(), "{f:?}");
            assert!(p.next(true, 2, f, 0.5).is_some(), "{f:?}");
            assert_eq!(
                p.next(true, 3, f, 0.5),
                None,
                "{f:?}: the third attempt is the last"
            );
            // A request that may not be repeated is never retried, whatever happened.
            assert_eq!(p.next(false, 1, f, 0.5), None, "{f:?}");
        }
        for status in [
            200, 201, 204, 304, 400, 401, 403, 404, 409, 410, 413, 422, 500,
        ] {
            assert_eq!(
                p.next(true, 1, Failure::Status(status, Some(Duration::ZERO)), 0.5),
                None,
                "{status} is the server's word"
            );
        }
        // A rate limit is retried after its Retry-After, when that is within the policy's
        // bounds; never without one, never past the last attempt, never a one-shot write.
        let limited = |secs| Failure::Status(429, Some(Duration::from_secs(secs)));
        assert_eq!(
            p.next(true, 1, limited(2), 0.5),
            Some(Duration::from_secs(2))
        );
        assert_eq!(p.next(true, 1, limited(11), 0.5), None);
        assert_eq!(p.next(true, 1, Failure::Status(429, None), 0.5), None);
        assert_eq!(p.next(true, 3, limited(1), 0.5), None);
        assert_eq!(p.next(false, 1, limited(1), 0.5), None);
    }

    #[test]
    fn backoff_doubles_with_jitter_and_retry_after_is_honoured_up_to_a_cap() {
        let p = RetryPolicy {
            attempts: 10,
            base: Duration::from_millis(100),
            max_backoff: Duration::from_millis(350),
            max_retry_after: Duration::from_secs(10),
        };
        // Jitter spreads each backoff over its upper half.
        assert_eq!(
            p.next(true, 1, Failure::Lost, 0.0),
            Some(Duration::from_millis(50))
        );
        assert_eq!(
            p.next(true, 1, Failure::Lost, 0.5),
            Some(Duration::from_millis(75))
        );
        let top = p.next(true, 1, Failure::Lost, 0.999).unwrap();
        assert!(top < Duration::from_millis(100) && top > Duration::from_millis(99));
        assert_eq!(
            p.next(true, 2, Failure::Timeout, 0.0),
            Some(Duration::from_millis(100))
        );
        // Capped: 400ms would be the fourth backoff.
        assert_eq!(
            p.next(true, 3, Failure::Timeout, 1.0),
            Some(Duration::from_millis(350))
        );
        assert_eq!(
            p.next(true, 9, Failure::Connect, 1.0),
            Some(Duration::from_millis(350))
        );
        // Retry-After replaces the backoff, jitter or not, up to the cap.
        let ra = |s| Failure::Status(503, Some(Duration::from_secs(s)));
        assert_eq!(p.next(true, 1, ra(3), 0.9), Some(Duration::from_secs(3)));
        assert_eq!(
            p.next(true, 1, ra(3600), 0.1),
            Some(Duration::from_secs(10))
        );
        assert_eq!(p.next(true, 1, ra(0), 0.1), Some(Duration::ZERO));
        assert_eq!(p.next(false, 1, ra(1), 0.1), None);
    }

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        let h = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(reqwest::header::RETRY_AFTER, v.parse().unwrap());
            retry_after(&h)
        };
        assert_eq!(h("7"), Some(Duration::from_secs(7)));
        assert_eq!(h(" 2 "), Some(Duration::from_secs(2)));
        assert_eq!(h("soon"), None);
        assert_eq!(h("Wed, 21 Oct 2015 07:28:00 GMT"), Some(Duration::ZERO));
        let later = (chrono::Utc::now() + chrono::Duration::seconds(90))
            .format("%a, %d %b %Y %H:%M:%S GMT")
            .to_string();
        let d = h(&later).unwrap();
        assert!(
            d > Duration::from_secs(80) && d <= Duration::from_secs(90),
            "{d:?}"
        );
        assert_eq!(retry_after(&HeaderMap::new()), None);
    }

    /// What the fake server does with one request.
    #[derive(Debug, Clone, Copy)]
    enum Act {
        /// Answers with this status (and `Retry-After: 0` for a 5xx), a JSON body.
        Answer(u16),
        /// Answers 200 with `idempotent-replayed: true`.
        Replay,
        /// Reads the request, then keeps the connection open without a word until the client
        /// hangs up (it times out).
        Hang,
        /// Reads the request and closes the connection without an answer.
        Drop,
    }

    #[derive(Debug, Clone)]
    struct Seen {
        method: String,
        key: Option<String>,
        body: Vec<u8>,
    }

    type Log = std::sync::Arc<std::sync::Mutex<Vec<Seen>>>;

    /// A server on loopback that does `script[n]` with the n-th request (the last entry again
    /// once the script runs out), one request per connection, and logs what it got.
    async fn fake(script: Vec<Act>) -> (String, Log) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let log: Log = Default::default();
        let seen = log.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut sock, _)) = listener.accept().await else {
                    return;
                };
                let mut buf = Vec::new();
                let head_end = loop {
                    let mut chunk = [0u8; 4096];
                    match sock.read(&mut chunk).await {
                        Ok(0) | Err(_) => break None,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break Some(i + 4);
                    }
                };
                let Some(head_end) = head_end else { continue };
                let head = String::from_utf8_lossy(&buf[..head_end]).to_lowercase();
                let header = |name: &str| {
                    head.lines()
                        .find_map(|l| l.strip_prefix(&format!("{name}:")))
                        .map(|v| v.trim().to_owned())
                };
                let length: usize = header("content-length").map_or(0, |v| v.parse().unwrap());
                while buf.len() < head_end + length {
                    let mut chunk = [0u8; 4096];
                    match sock.read(&mut chunk).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let act = {
                    let mut seen = seen.lock().unwrap();
                    seen.push(Seen {
                        method: head.split(' ').next().unwrap_or_default().to_uppercase(),
                        key: header("idempotency-key"),
                        body: buf[head_end..].to_vec(),
                    });
                    script[(seen.len() - 1).min(script.len() - 1)]
                };
                let (status, extra) = match act {
                    Act::Answer(s) if s >= 500 => (s, "retry-after: 0\r\n"),
                    Act::Answer(s) => (s, ""),
                    Act::Replay => (200, "idempotent-replayed: true\r\n"),
                    Act::Hang => {
                        // Until the client gives up and closes its end.
                        let mut rest = [0u8; 64];
                        while matches!(sock.read(&mut rest).await, Ok(n) if n > 0) {}
                        continue;
                    }
                    Act::Drop => continue,
                };
                let body = if status < 400 {
                    r#"{"entries":[],"done":true}"#.to_owned()
                } else {
                    format!(
                        r#"{{"error":{{"code":"c{status}","message":"m{status}","details":{{}}}}}}"#
                    )
                };
                let resp = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
            }
        });
        (url, log)
    }

    fn client(url: &str) -> ApiClient {
        ApiClient::new(url, "t", Duration::from_millis(300))
            .unwrap()
            .with_retry_policy(RetryPolicy {
                attempts: 3,
                base: Duration::from_millis(1),
                max_backoff: Duration::from_millis(5),
                max_retry_after: Duration::from_millis(5),
            })
    }

    fn project() -> ProjectId {
        "acme/api".parse().unwrap()
    }

    fn purge_of(path: &str) -> AdminPathAction {
        AdminPathAction {
            path: memsync_core::text::Text::new(path).unwrap(),
            reason: memsync_core::text::Text::new("leak").unwrap(),
        }
    }

    fn allowlist_entry() -> AllowlistAdd {
        let t = |s: &str| memsync_core::text::Text::new(s).unwrap();
        AllowlistAdd {
            fingerprint: t("f00d"),
            rule: t("generic_secret"),
            reason: t("a test value"),
        }
    }

    /// A plain-http client loads no certificates; a redirect to https is refused with the
    /// address to log in with, not followed into a certificate error.
    #[tokio::test]
    async fn an_http_server_redirecting_to_https_is_named_not_followed() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                let mut buf = [0u8; 4096];
                let _ = sock.read(&mut buf).await;
                let _ = sock
                    .write_all(b"HTTP/1.1 301 Moved Permanently\r\nlocation: https://memsync.example:8443/v1/me\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                    .await;
            }
        });
        let err = client(&url).whoami().await.unwrap_err();
        let text = format!("{err:#}");
        assert!(
            text.contains("memsync login --server https://memsync.example:8443"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn a_keyed_write_is_retried_with_its_one_key_and_the_same_bytes() {
        let (url, log) = fake(vec![
            Act::Answer(503),
            Act::Drop,
            Act::Hang,
            Act::Answer(200),
        ])
        .await;
        let api = client(&url).with_retry_policy(RetryPolicy {
            attempts: 4,
            ..client(&url).retry
        });
        let key = IdempotencyKey::new();
        let done = api
            .admin_purge(&project(), &purge_of("x.md"), &key)
            .await
            .unwrap();
        assert_eq!(done.answer["done"], true);
        assert!(!done.replayed);
        let seen = log.lock().unwrap().clone();
        assert_eq!(seen.len(), 4, "{seen:?}");
        for s in &seen {
            assert_eq!(s.method, "POST");
            assert_eq!(s.key.as_deref(), Some(key.as_str()));
            assert_eq!(s.body, seen[0].body, "a retry sends the same bytes");
        }
    }

    #[tokio::test]
    async fn a_replayed_answer_is_reported_as_one() {
        let (url, log) = fake(vec![Act::Drop, Act::Replay]).await;
        let done = client(&url)
            .admin_purge(&project(), &purge_of("x.md"), &IdempotencyKey::new())
            .await
            .unwrap();
        assert!(done.replayed);
        assert_eq!(done.answer["done"], true);
        assert_eq!(log.lock().unwrap().len(), 2);
    }

    #[tokio::test]
    async fn a_write_without_a_key_is_sent_once_and_its_fate_said_to_be_unknown() {
        for act in [
            Act::Hang,
            Act::Drop,
            Act::Answer(502),
            Act::Answer(503),
            Act::Answer(504),
        ] {
            let (url, log) = fake(vec![act, Act::Answer(200)]).await;
            let err = client(&url)
                .allowlist_add(&project(), &allowlist_entry())
                .await
                .unwrap_err();
            assert_eq!(log.lock().unwrap().len(), 1, "{act:?} was retried");
            assert!(log.lock().unwrap()[0].key.is_none());
            let msg = err.to_string();
            assert!(matches!(err, ApiError::Uncertain { .. }), "{act:?}: {msg}");
            assert!(msg.contains("may or may not have been applied"), "{msg}");
            assert!(msg.contains("`memsync allowlist list`"), "{msg}");
            assert!(msg.contains("only once"), "{msg}");
        }
        // The DELETEs without a key: the same.
        let (url, log) = fake(vec![Act::Drop, Act::Answer(204)]).await;
        let err = client(&url).token_revoke("abc").await.unwrap_err();
        assert!(matches!(err, ApiError::Uncertain { .. }), "{err}");
        assert_eq!(log.lock().unwrap().len(), 1);
        let (url, log) = fake(vec![Act::Hang, Act::Answer(204)]).await;
        let err = client(&url)
            .allowlist_remove(&project(), "f00d")
            .await
            .unwrap_err();
        assert!(err.to_string().contains("may or may not"), "{err}");
        assert_eq!(log.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn attempts_are_bounded_and_an_exhausted_keyed_write_says_so() {
        let (url, log) = fake(vec![Act::Drop]).await;
        let err = client(&url)
            .admin_delete(&project(), &purge_of("x.md"), &IdempotencyKey::new())
            .await
            .unwrap_err();
        assert_eq!(log.lock().unwrap().len(), 3);
        let msg = err.to_string();
        assert!(matches!(err, ApiError::Uncertain { .. }), "{msg}");
        assert!(
            msg.contains("tried 3 times, always with the same Idempotency-Key"),
            "{msg}"
        );
        assert!(msg.contains("`memsync admin history x.md`"), "{msg}");
        // A read that keeps failing: the last answer, after three attempts.
        let (url, log) = fake(vec![Act::Answer(503)]).await;
        let err = client(&url).projects().await.unwrap_err();
        assert!(matches!(err, ApiError::Server { status: 503, .. }), "{err}");
        assert_eq!(log.lock().unwrap().len(), 3);
        let (url, log) = fake(vec![Act::Hang]).await;
        let err = client(&url).projects().await.unwrap_err();
        assert!(matches!(err, ApiError::Timeout(_)), "{err}");
        assert_eq!(log.lock().unwrap().len(), 3);
    }

    #[tokio::test]
    async fn reads_are_retried_and_no_answer_below_500_ever_is() {
        for act in [Act::Hang, Act::Drop, Act::Answer(502)] {
            let (url, log) = fake(vec![act, Act::Answer(200)]).await;
            let v = client(&url).projects().await.unwrap();
            assert_eq!(v["done"], true);
            assert_eq!(log.lock().unwrap().len(), 2, "{act:?}");
            assert_eq!(log.lock().unwrap()[1].method, "GET");
        }
        for status in [400, 404, 409, 422, 429, 500] {
            let (url, log) = fake(vec![Act::Answer(status), Act::Answer(200)]).await;
            assert!(client(&url).projects().await.is_err());
            assert_eq!(
                log.lock().unwrap().len(),
                1,
                "a GET answered {status} was retried"
            );
            let (url, log) = fake(vec![Act::Answer(status), Act::Answer(200)]).await;
            let keyed = client(&url)
                .admin_purge(&project(), &purge_of("x.md"), &IdempotencyKey::new())
                .await;
            assert!(keyed.is_err());
            assert_eq!(
                log.lock().unwrap().len(),
                1,
                "a purge answered {status} was retried"
            );
        }
    }

    #[tokio::test]
    async fn no_connection_means_nothing_was_sent() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let api = client(&format!("http://127.0.0.1:{port}"));
        let err = api
            .allowlist_add(&project(), &allowlist_entry())
            .await
            .unwrap_err();
        assert!(matches!(err, ApiError::Unreachable { .. }), "{err}");
        let err = api
            .admin_purge(&project(), &purge_of("x.md"), &IdempotencyKey::new())
            .await
            .unwrap_err();
        assert!(matches!(err, ApiError::Unreachable { .. }), "{err}");
    }
}
