//! `ApiError`: every failure a handler can answer with, mapped once to the JSON error shape
//! `{"error":{"code","message","details"}}` with a stable `code`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use memsync_core::wire::{ErrorBody, ErrorInfo};
use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    Unauthenticated(String),
    #[error("{0}")]
    Forbidden(String),
    /// The token lacks the scope the route needs (403 `insufficient_scope`).
    #[error(
        "this token's scope ({has}) does not include `{needed}`, which this needs; use a token issued with `--scope {needed}` (or without --scope)"
    )]
    MissingScope {
        needed: memsync_core::wire::Scope,
        has: String,
    },
    /// Also what another team's project answers, so project names don't leak.
    #[error("{0}")]
    NotFound(String),
    #[error("{message}")]
    BadRequest { code: &'static str, message: String },
    #[error("{message}")]
    Unprocessable {
        code: &'static str,
        message: String,
        details: Value,
    },
    #[error("{message}")]
    Conflict { message: String, details: Value },
    #[error("{message}")]
    FeedbackConflict { message: String, details: Value },
    /// The thing asked for existed and is gone for good (a purged push, replayed).
    #[error("{message}")]
    Gone { code: &'static str, message: String },
    #[error("{0}")]
    PayloadTooLarge(String),
    #[error("{0}")]
    UnsupportedMediaType(String),
    #[error("{0}")]
    Timeout(String),
    #[error("{message}")]
    Unavailable { message: String },
    /// A per-caller cap was reached (429, with `Retry-After`).
    #[error("{message}")]
    TooMany { code: &'static str, message: String },
    /// A rate limit (`crate::limits`): 429 `rate_limited`, `Retry-After` the seconds until the
    /// bucket holds a request again.
    #[error("{message}")]
    RateLimited {
        message: String,
        retry_after: u64,
        details: Value,
    },
    /// A push would take its project over its storage quota: 413 `quota_exceeded`.
    #[error("{message}")]
    QuotaExceeded { message: String, details: Value },
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

impl ApiError {
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        ApiError::BadRequest {
            code,
            message: message.into(),
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) | ApiError::MissingScope { .. } => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::BadRequest { .. } => StatusCode::BAD_REQUEST,
            ApiError::Unprocessable { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Conflict { .. } | ApiError::FeedbackConflict { .. } => StatusCode::CONFLICT,
            ApiError::Gone { .. } => StatusCode::GONE,
            ApiError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Timeout(_) => StatusCode::GATEWAY_TIMEOUT,
            ApiError::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::TooMany { .. } | ApiError::RateLimited { .. } => {
                StatusCode::TOO_MANY_REQUESTS
            }
            ApiError::QuotaExceeded { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            ApiError::Unauthenticated(_) => "unauthenticated",
            ApiError::Forbidden(_) => "forbidden",
            ApiError::MissingScope { .. } => "insufficient_scope",
            ApiError::NotFound(_) => "not_found",
            ApiError::BadRequest { code, .. }
            | ApiError::Unprocessable { code, .. }
            | ApiError::Gone { code, .. }
            | ApiError::TooMany { code, .. } => code,
            ApiError::Conflict { .. } => "conflict",
            ApiError::FeedbackConflict { .. } => "feedback_conflict",
            ApiError::PayloadTooLarge(_) => "payload_too_large",
            ApiError::RateLimited { .. } => "rate_limited",
            ApiError::QuotaExceeded { .. } => "quota_exceeded",
            ApiError::UnsupportedMediaType(_) => "unsupported_media_type",
            ApiError::Timeout(_) => "timeout",
            ApiError::Unavailable { .. } => "unavailable",
            ApiError::Internal(_) => "internal",
        }
    }

    /// The JSON body this error answers with; also what an idempotent replay stores.
    pub fn body(&self) -> ErrorBody {
        let details = match self {
            ApiError::Unprocessable { details, .. }
            | ApiError::Conflict { details, .. }
            | ApiError::FeedbackConflict { details, .. }
            | ApiError::RateLimited { details, .. }
            | ApiError::QuotaExceeded { details, .. } => details.clone(),
            ApiError::MissingScope { needed, has } => {
                serde_json::json!({ "required_scope": needed, "token_scope": has })
            }
            _ => Value::Object(Default::default()),
        };
        ErrorBody {
            error: ErrorInfo {
                code: self.code().to_owned(),
                // A 500 never leaks internals: the cause goes to the log only.
                message: self.to_string(),
                details,
            },
        }
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(e: sqlx::Error) -> Self {
        if database_unavailable(&e) {
            tracing::warn!(error = %e, "database unavailable");
            return db_unavailable();
        }
        ApiError::Internal(e.into())
    }
}

impl From<anyhow::Error> for ApiError {
    fn from(e: anyhow::Error) -> Self {
        match e.chain().find_map(|c| c.downcast_ref::<sqlx::Error>()) {
            Some(db) if database_unavailable(db) => {
                tracing::warn!(error = format!("{e:#}"), "database unavailable");
                db_unavailable()
            }
            _ => ApiError::Internal(e),
        }
    }
}

fn db_unavailable() -> ApiError {
    ApiError::Unavailable {
        message: "the database is unavailable; retry shortly".into(),
    }
}

/// True for errors that say the database could not be reached or the connection was lost, not
/// that the request or the code is wrong: no connection to be had (the pool timed out, or the
/// supervisor made it fail fast while the database is down), the connection broke mid-request,
/// or the server ended the session (SQLSTATE class 08 connection exception, 57P01-57P05 admin or
/// crash shutdown, starting up, dropped database, idle-session timeout, and 53300 too many
/// connections). A write cut off this way may or may not have committed; a retry with the same
/// idempotency key finds out.
pub fn database_unavailable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_) => true,
        sqlx::Error::Database(d) => d
            .code()
            .is_some_and(|c| c.starts_with("08") || c.starts_with("57P") || c == "53300"),
        _ => false,
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        match &self {
            ApiError::Internal(e) => tracing::error!(error = format!("{e:#}"), "internal error"),
            ApiError::Unavailable { .. } => tracing::warn!(code = self.code(), "unavailable"),
            _ => tracing::debug!(
                code = self.code(),
                status = status.as_u16(),
                "request refused"
            ),
        }
        let mut resp = (status, axum::Json(self.body())).into_response();
        if matches!(self, ApiError::Unauthenticated(_)) {
            resp.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"memsync\""),
            );
        }
        if let ApiError::MissingScope { needed, .. } = &self
            && let Ok(v) = HeaderValue::from_str(&format!(
                "Bearer realm=\"memsync\", error=\"insufficient_scope\", scope=\"{needed}\""
            ))
        {
            resp.headers_mut().insert(header::WWW_AUTHENTICATE, v);
        }
        if matches!(self, ApiError::Unavailable { .. }) {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("2"));
        }
        if matches!(self, ApiError::TooMany { .. }) {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        }
        if let ApiError::RateLimited { retry_after, .. } = &self {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(*retry_after));
        }
        resp
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_or_missing_connections_answer_503_other_database_errors_500() {
        let broken = sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        assert_eq!(
            ApiError::from(broken).status(),
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(
            ApiError::from(sqlx::Error::PoolTimedOut).code(),
            "unavailable"
        );
        let wrapped = anyhow::Error::new(sqlx::Error::PoolClosed).context("exporting");
        assert_eq!(
            ApiError::from(wrapped).status(),
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(
            ApiError::from(sqlx::Error::RowNotFound).status(),
            StatusCode::INTERNAL_SERVER_ERROR
        );
        assert_eq!(
            ApiError::from(anyhow::anyhow!("a bug")).status(),
            StatusCode::INTERNAL_SERVER_ERROR
        );
    }
}
