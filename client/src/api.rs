//! The HTTP client for the memsync API: timeouts, retries with backoff on 5xx/429 (honouring
//! `Retry-After`), and one error type whose messages say what went wrong and what to do.

use std::time::{Duration, Instant};

use memsync_core::wire::{
    AdminPathAction, AdminRestore, Allowlist, AllowlistAdd, ConflictDetails, ErrorBody,
    ProjectInfo, PullResponse, PushRequest, PushResponse, TokenIssue, TokenIssued,
    ValidationDetails, WhoAmI,
};
use memsync_core::{MemoryPath, ProjectId};
use reqwest::header::{HeaderMap, HeaderValue};
use reqwest::{StatusCode, Url};
use serde::Serialize;
use serde::de::DeserializeOwned;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("cannot reach the memsync server at {server}: {reason}")]
    Unreachable { server: String, reason: String },
    #[error("the server refused the token: {0} (run `memsync login` with a new token)")]
    Unauthenticated(String),
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
    #[error("unexpected answer from the server: {0}")]
    Protocol(String),
}

impl ApiError {
    /// True when the failure says nothing about the data: offline, timeouts, 5xx.
    pub fn is_transient(&self) -> bool {
        matches!(self, ApiError::Unreachable { .. } | ApiError::Timeout(_))
            || matches!(self, ApiError::Server { status, .. } if *status >= 500 || *status == 429)
    }
}

pub enum Pulled {
    NotModified,
    Changes {
        body: PullResponse,
        etag: Option<String>,
    },
}

#[derive(Clone)]
pub struct ApiClient {
    http: reqwest::Client,
    /// The server as configured (normalised, no trailing `/`): the key of the sync state.
    base: String,
    /// The same, parsed: every request URL is built from it.
    base_url: Url,
    token: String,
    /// No request (retries included) goes past this instant.
    deadline: Option<Instant>,
}

const ATTEMPTS: u32 = 4;

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

/// `POST /v1/admin/projects/{team}/{name}/archive`. Not in `memsync_core::wire` (yet): the
/// server reads it as a private struct.
#[derive(Debug, Serialize)]
struct ArchiveRequest {
    archived: bool,
}

impl ApiClient {
    pub fn new(server: &str, token: &str, timeout: Duration) -> Result<ApiClient, ApiError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let base = server.trim_end_matches('/').to_owned();
        let base_url = Url::parse(&base)
            .ok()
            .filter(|u| !u.cannot_be_a_base())
            .ok_or_else(|| ApiError::Protocol(format!("`{base}` is not a server URL")))?;
        let http = reqwest::Client::builder()
            .connect_timeout(timeout.min(Duration::from_secs(5)))
            .timeout(timeout)
            .user_agent(concat!("memsync/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ApiError::Protocol(format!("cannot build the HTTP client: {e}")))?;
        Ok(ApiClient {
            http,
            base,
            base_url,
            token: token.to_owned(),
            deadline: None,
        })
    }

    /// Bounds every later call, retries included, by `deadline`.
    pub fn with_deadline(mut self, deadline: Instant) -> ApiClient {
        self.deadline = Some(deadline);
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

    async fn send(
        &self,
        build: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, ApiError> {
        let mut delay = Duration::from_millis(200);
        for attempt in 1..=ATTEMPTS {
            let mut req = build().bearer_auth(&self.token);
            if let Some(d) = self.deadline {
                let left = d.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(ApiError::Timeout(Duration::ZERO));
                }
                req = req.timeout(left);
            }
            let result = req.send().await;
            let retry_after = match &result {
                Ok(r)
                    if r.status() == StatusCode::TOO_MANY_REQUESTS
                        || r.status().is_server_error() =>
                {
                    Some(retry_after(r.headers()).unwrap_or(delay))
                }
                Err(e) if e.is_connect() => Some(delay),
                _ => None,
            };
            let Some(wait) = retry_after.filter(|_| attempt < ATTEMPTS) else {
                return result.map_err(|e| self.transport_error(e));
            };
            let wait = wait.min(Duration::from_secs(10));
            if let Some(d) = self.deadline
                && Instant::now() + wait >= d
            {
                return result.map_err(|e| self.transport_error(e));
            }
            tokio::time::sleep(wait).await;
            delay *= 2;
        }
        Err(ApiError::Protocol("retries exhausted".into()))
    }

    fn transport_error(&self, e: reqwest::Error) -> ApiError {
        if e.is_timeout() {
            return ApiError::Timeout(Duration::ZERO);
        }
        let mut reason = e.to_string();
        let mut src = std::error::Error::source(&e);
        while let Some(s) = src {
            reason = s.to_string();
            src = s.source();
        }
        ApiError::Unreachable {
            server: self.base.clone(),
            reason,
        }
    }

    async fn get<T: DeserializeOwned>(
        &self,
        url: Url,
        project: Option<&ProjectId>,
    ) -> Result<T, ApiError> {
        let resp = self.send(|| self.http.get(url.clone())).await?;
        json_or_error(resp, project).await
    }

    async fn post<B: Serialize, T: DeserializeOwned>(
        &self,
        url: Url,
        body: &B,
        project: Option<&ProjectId>,
    ) -> Result<T, ApiError> {
        let bytes = serde_json::to_vec(body).map_err(|e| ApiError::Protocol(e.to_string()))?;
        let resp = self
            .send(|| {
                self.http
                    .post(url.clone())
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(bytes.clone())
            })
            .await?;
        json_or_error(resp, project).await
    }

    /// DELETE; 204 is success.
    async fn delete(&self, url: Url, project: Option<&ProjectId>) -> Result<(), ApiError> {
        let resp = self.send(|| self.http.delete(url.clone())).await?;
        if resp.status() == StatusCode::NO_CONTENT {
            return Ok(());
        }
        json_or_error::<serde_json::Value>(resp, project)
            .await
            .map(|_| ())
    }

    pub async fn pull(
        &self,
        project: &ProjectId,
        since: i64,
        etag: Option<&str>,
    ) -> Result<Pulled, ApiError> {
        let url = self.project_url(project, &["changes"], &[("since", since.to_string())]);
        let resp = self
            .send(|| {
                let mut r = self.http.get(url.clone());
                if let Some(t) = etag {
                    r = r.header(reqwest::header::IF_NONE_MATCH, t);
                }
                r
            })
            .await?;
        if resp.status() == StatusCode::NOT_MODIFIED {
            return Ok(Pulled::NotModified);
        }
        let etag = resp
            .headers()
            .get(reqwest::header::ETAG)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body: PullResponse = json_or_error(resp, Some(project)).await?;
        Ok(Pulled::Changes { body, etag })
    }

    pub async fn push(
        &self,
        project: &ProjectId,
        req: &PushRequest,
        idempotency_key: &str,
    ) -> Result<PushResponse, ApiError> {
        let url = self.project_url(project, &["push"], &[]);
        let body = serde_json::to_vec(req).map_err(|e| ApiError::Protocol(e.to_string()))?;
        let resp = self
            .send(|| {
                self.http
                    .post(url.clone())
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .header("idempotency-key", idempotency_key)
                    .body(body.clone())
            })
            .await?;
        json_or_error(resp, Some(project)).await
    }

    pub async fn whoami(&self) -> Result<WhoAmI, ApiError> {
        self.get(self.url(&["v1", "me"], &[]), None).await
    }

    /// `GET /healthz` (no token needed): whether the server answers, and the time it says it is
    /// (its `Date` header), for a clock check.
    pub async fn health(&self) -> Result<Option<chrono::DateTime<chrono::Utc>>, ApiError> {
        let url = self.url(&["healthz"], &[]);
        let resp = self.send(|| self.http.get(url.clone())).await?;
        let date = resp
            .headers()
            .get(reqwest::header::DATE)
            .and_then(|v| v.to_str().ok())
            .and_then(|s| chrono::DateTime::parse_from_rfc2822(s).ok())
            .map(|t| t.with_timezone(&chrono::Utc));
        json_or_error::<serde_json::Value>(resp, None).await?;
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

    pub async fn allowlist_add(
        &self,
        project: &ProjectId,
        add: &AllowlistAdd,
    ) -> Result<Allowlist, ApiError> {
        self.post(
            self.project_url(project, &["allowlist"], &[]),
            add,
            Some(project),
        )
        .await
    }

    pub async fn allowlist_remove(
        &self,
        project: &ProjectId,
        fingerprint: &str,
    ) -> Result<(), ApiError> {
        self.delete(
            self.project_url(project, &["allowlist", fingerprint], &[]),
            Some(project),
        )
        .await
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
        let url = self.url(&["v1", "admin", "audit"], &pairs);
        let resp = self.send(|| self.http.get(url.clone())).await?;
        if resp.status().is_success() {
            return resp
                .text()
                .await
                .map_err(|e| ApiError::Protocol(e.to_string()));
        }
        json_or_error::<serde_json::Value>(resp, None)
            .await
            .map(|_| String::new())
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
    ) -> Result<serde_json::Value, ApiError> {
        self.post(
            self.admin_project_url(project, "delete", &[]),
            req,
            Some(project),
        )
        .await
    }

    pub async fn admin_restore(
        &self,
        project: &ProjectId,
        req: &AdminRestore,
    ) -> Result<serde_json::Value, ApiError> {
        self.post(
            self.admin_project_url(project, "restore", &[]),
            req,
            Some(project),
        )
        .await
    }

    pub async fn admin_purge(
        &self,
        project: &ProjectId,
        req: &AdminPathAction,
    ) -> Result<serde_json::Value, ApiError> {
        self.post(
            self.admin_project_url(project, "purge", &[]),
            req,
            Some(project),
        )
        .await
    }

    pub async fn projects(&self) -> Result<serde_json::Value, ApiError> {
        self.get(self.url(&["v1", "admin", "projects"], &[]), None)
            .await
    }

    pub async fn archive(
        &self,
        project: &ProjectId,
        archived: bool,
    ) -> Result<serde_json::Value, ApiError> {
        self.post(
            self.admin_project_url(project, "archive", &[]),
            &ArchiveRequest { archived },
            Some(project),
        )
        .await
    }

    pub async fn tokens(&self) -> Result<serde_json::Value, ApiError> {
        self.get(self.url(&["v1", "admin", "tokens"], &[]), None)
            .await
    }

    pub async fn token_issue(&self, req: &TokenIssue) -> Result<TokenIssued, ApiError> {
        self.post(self.url(&["v1", "admin", "tokens"], &[]), req, None)
            .await
    }

    pub async fn token_revoke(&self, jti: &str) -> Result<(), ApiError> {
        self.delete(self.url(&["v1", "admin", "tokens", jti], &[]), None)
            .await
    }
}

fn retry_after(h: &HeaderMap) -> Option<Duration> {
    h.get(reqwest::header::RETRY_AFTER)
        .and_then(|v: &HeaderValue| v.to_str().ok())
        .and_then(|s| s.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
}

async fn json_or_error<T: serde::de::DeserializeOwned>(
    resp: reqwest::Response,
    project: Option<&ProjectId>,
) -> Result<T, ApiError> {
    let status = resp.status();
    let bytes = resp
        .bytes()
        .await
        .map_err(|e| ApiError::Protocol(format!("reading the answer: {e}")))?;
    if status.is_success() {
        return serde_json::from_slice(&bytes)
            .map_err(|e| ApiError::Protocol(format!("the answer is not what this client expects ({e}); is the server a different version?")));
    }
    let err: Option<ErrorBody> = serde_json::from_slice(&bytes).ok();
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
}
