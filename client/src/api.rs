//! The HTTP client for the memsync API: timeouts, retries with backoff on 5xx/429 (honouring
//! `Retry-After`), and one error type whose messages say what went wrong and what to do.

use std::time::{Duration, Instant};

use memsync_core::ProjectId;
use memsync_core::wire::{
    Allowlist, AllowlistAdd, ConflictDetails, ErrorBody, ProjectInfo, PullResponse, PushRequest,
    PushResponse, ValidationDetails, WhoAmI,
};
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderValue};

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("cannot reach the memsync server at {server}: {reason}")]
    Unreachable { server: String, reason: String },
    #[error("the server refused the token: {0} (run `memsync login` with a new token)")]
    Unauthenticated(String),
    #[error("{0}")]
    NotFound(String),
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
    base: String,
    token: String,
    /// No request (retries included) goes past this instant.
    deadline: Option<Instant>,
}

const ATTEMPTS: u32 = 4;

impl ApiClient {
    pub fn new(server: &str, token: &str, timeout: Duration) -> Result<ApiClient, ApiError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(timeout.min(Duration::from_secs(5)))
            .timeout(timeout)
            .user_agent(concat!("memsync/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ApiError::Protocol(format!("cannot build the HTTP client: {e}")))?;
        Ok(ApiClient {
            http,
            base: server.trim_end_matches('/').to_owned(),
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

    pub async fn pull(
        &self,
        project: &ProjectId,
        since: i64,
        etag: Option<&str>,
    ) -> Result<Pulled, ApiError> {
        let url = format!("{}/v1/projects/{project}/changes?since={since}", self.base);
        let resp = self
            .send(|| {
                let mut r = self.http.get(&url);
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
        let url = format!("{}/v1/projects/{project}/push", self.base);
        let body = serde_json::to_vec(req).map_err(|e| ApiError::Protocol(e.to_string()))?;
        let resp = self
            .send(|| {
                self.http
                    .post(&url)
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .header("idempotency-key", idempotency_key)
                    .body(body.clone())
            })
            .await?;
        json_or_error(resp, Some(project)).await
    }

    pub async fn whoami(&self) -> Result<WhoAmI, ApiError> {
        let url = format!("{}/v1/me", self.base);
        let resp = self.send(|| self.http.get(&url)).await?;
        json_or_error(resp, None).await
    }

    pub async fn allowlist(&self, project: &ProjectId) -> Result<Allowlist, ApiError> {
        let url = format!("{}/v1/projects/{project}/allowlist", self.base);
        let resp = self.send(|| self.http.get(&url)).await?;
        json_or_error(resp, Some(project)).await
    }

    pub async fn allowlist_add(
        &self,
        project: &ProjectId,
        add: &AllowlistAdd,
    ) -> Result<Allowlist, ApiError> {
        let url = format!("{}/v1/projects/{project}/allowlist", self.base);
        let body = serde_json::to_vec(add).map_err(|e| ApiError::Protocol(e.to_string()))?;
        let resp = self
            .send(|| {
                self.http
                    .post(&url)
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(body.clone())
            })
            .await?;
        json_or_error(resp, Some(project)).await
    }

    pub async fn allowlist_remove(
        &self,
        project: &ProjectId,
        fingerprint: &str,
    ) -> Result<(), ApiError> {
        let url = format!(
            "{}/v1/projects/{project}/allowlist/{fingerprint}",
            self.base
        );
        let resp = self.send(|| self.http.delete(&url)).await?;
        if resp.status() == StatusCode::NO_CONTENT {
            return Ok(());
        }
        json_or_error::<serde_json::Value>(resp, Some(project))
            .await
            .map(|_| ())
    }

    /// GET of any API path (e.g. `/v1/admin/audit?limit=10`), as JSON.
    pub async fn get_json(
        &self,
        path: &str,
        project: Option<&ProjectId>,
    ) -> Result<serde_json::Value, ApiError> {
        let url = format!("{}{path}", self.base);
        let resp = self.send(|| self.http.get(&url)).await?;
        json_or_error(resp, project).await
    }

    /// GET of any API path, as text (e.g. the audit log as CSV).
    pub async fn get_text(
        &self,
        path: &str,
        project: Option<&ProjectId>,
    ) -> Result<String, ApiError> {
        let url = format!("{}{path}", self.base);
        let resp = self.send(|| self.http.get(&url)).await?;
        if resp.status().is_success() {
            return resp
                .text()
                .await
                .map_err(|e| ApiError::Protocol(e.to_string()));
        }
        json_or_error::<serde_json::Value>(resp, project)
            .await
            .map(|_| String::new())
    }

    /// POST of a JSON body to any API path.
    pub async fn post_json(
        &self,
        path: &str,
        body: &serde_json::Value,
        project: Option<&ProjectId>,
    ) -> Result<serde_json::Value, ApiError> {
        let url = format!("{}{path}", self.base);
        let bytes = serde_json::to_vec(body).map_err(|e| ApiError::Protocol(e.to_string()))?;
        let resp = self
            .send(|| {
                self.http
                    .post(&url)
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(bytes.clone())
            })
            .await?;
        json_or_error(resp, project).await
    }

    /// DELETE of any API path; 204 is success.
    pub async fn delete_path(
        &self,
        path: &str,
        project: Option<&ProjectId>,
    ) -> Result<(), ApiError> {
        let url = format!("{}{path}", self.base);
        let resp = self.send(|| self.http.delete(&url)).await?;
        if resp.status() == StatusCode::NO_CONTENT {
            return Ok(());
        }
        json_or_error::<serde_json::Value>(resp, project)
            .await
            .map(|_| ())
    }

    pub async fn project_info(&self, project: &ProjectId) -> Result<ProjectInfo, ApiError> {
        let url = format!("{}/v1/projects/{project}", self.base);
        let resp = self.send(|| self.http.get(&url)).await?;
        json_or_error(resp, Some(project)).await
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
        StatusCode::NOT_FOUND if code == "not_found" && message.contains("no such route") => ApiError::Server {
            status: 404,
            code,
            message: "the server does not know this API; it may be older than this client (upgrade it)".into(),
        },
        StatusCode::NOT_FOUND => ApiError::NotFound(match project {
            Some(project) => format!(
                "project {project} not found on the server, or your token cannot reach it (a member's first push creates it)"
            ),
            None => message,
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
