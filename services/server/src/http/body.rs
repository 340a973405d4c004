//! `JsonBody<T>`: a JSON request body whose every failure (too large, not UTF-8, malformed,
//! wrong shape) is a clear JSON error, never axum's plain-text rejection.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Query, Request};
use axum::http::header;
use axum::http::request::Parts;
use memsync_core::Sha256;
use memsync_core::text::TEXT_ERROR_PREFIX;
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::state::AppState;

pub struct JsonBody<T> {
    pub value: T,
    /// sha256 of the raw body.
    pub sha256: Sha256,
}

impl<T> FromRequest<AppState> for JsonBody<T>
where
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let too_large = || {
            ApiError::PayloadTooLarge(
                "the request body is larger than this server accepts (--max-body-bytes); split the push into smaller ones".into(),
            )
        };
        // Refuse from the announced length before reading a byte.
        let announced = req
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if announced.is_some_and(|n| n > state.max_body_bytes as u64) {
            return Err(too_large());
        }
        let is_json = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| {
                let ct = ct.split(';').next().unwrap_or("").trim();
                ct.eq_ignore_ascii_case("application/json")
            });
        if !is_json {
            return Err(ApiError::UnsupportedMediaType(
                "send the body as JSON with `Content-Type: application/json`".into(),
            ));
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                too_large()
            } else {
                ApiError::bad_request("body_unreadable", "the request body could not be read")
            }
        })?;
        if let Err(e) = std::str::from_utf8(&bytes) {
            return Err(ApiError::bad_request(
                "invalid_utf8",
                format!(
                    "the request body is not valid UTF-8 (first bad byte at offset {}); memories are UTF-8 text",
                    e.valid_up_to()
                ),
            ));
        }
        let value = serde_json::from_slice(&bytes).map_err(|e| {
            // serde_json's message names the line, column and the expected shape; quoted values
            // in it are cut so that content (maybe a secret) is never echoed.
            let msg = e.to_string();
            if msg.starts_with(TEXT_ERROR_PREFIX) {
                return ApiError::bad_request(
                    "invalid_text",
                    format!("a text field of the request body is not acceptable: {msg}"),
                );
            }
            ApiError::bad_request(
                "malformed_json",
                format!(
                    "the request body is not the expected JSON: {}",
                    redact_quoted(&msg)
                ),
            )
        })?;
        Ok(JsonBody {
            value,
            sha256: Sha256::of(&bytes),
        })
    }
}

/// The optional `Idempotency-Key` header of a write: 1-200 visible ASCII characters.
pub struct IdempotencyKey(pub Option<String>);

impl IdempotencyKey {
    /// The key with the hash of what this request asks (`what`: the route, `body`: its body).
    pub fn with(self, what: &str, body: &Sha256) -> Option<crate::idempotent::Idem> {
        self.0.map(|key| crate::idempotent::Idem {
            key,
            hash: Sha256::of(format!("{what}\n{}", body.to_hex()).as_bytes()).to_hex(),
        })
    }
}

impl<S: Send + Sync> FromRequestParts<S> for IdempotencyKey {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let Some(v) = parts.headers.get("idempotency-key") else {
            return Ok(IdempotencyKey(None));
        };
        v.to_str()
            .ok()
            .filter(|k| !k.is_empty() && k.len() <= 200 && k.bytes().all(|b| b.is_ascii_graphic()))
            .map(|k| IdempotencyKey(Some(k.to_owned())))
            .ok_or_else(|| {
                ApiError::bad_request(
                    "invalid_idempotency_key",
                    "Idempotency-Key must be 1-200 visible ASCII characters, e.g. a UUID",
                )
            })
    }
}

/// A stored answer, sent again for a retry.
pub fn replayed_response(status: u16, body: serde_json::Value) -> axum::response::Response {
    use axum::response::IntoResponse;
    (
        axum::http::StatusCode::from_u16(status).unwrap_or(axum::http::StatusCode::OK),
        [(
            axum::http::HeaderName::from_static("idempotent-replayed"),
            axum::http::HeaderValue::from_static("true"),
        )],
        axum::Json(body),
    )
        .into_response()
}

/// Query parameters whose every failure (a value of the wrong type, text with NUL or control
/// characters) is a clear JSON 400, like a body's.
pub struct QueryParams<T>(pub T);

impl<T, S> FromRequestParts<S> for QueryParams<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        match Query::<T>::try_from_uri(&parts.uri) {
            Ok(Query(v)) => Ok(QueryParams(v)),
            Err(e) => {
                let msg = e.body_text();
                Err(match msg.find(TEXT_ERROR_PREFIX) {
                    Some(i) => ApiError::bad_request(
                        "invalid_text",
                        format!("a query parameter is not acceptable: {}", &msg[i..]),
                    ),
                    None => ApiError::bad_request(
                        "invalid_query",
                        format!(
                            "the query string is not what this route takes: {}",
                            redact_quoted(&msg)
                        ),
                    ),
                })
            }
        }
    }
}

/// Cuts the values a client sent out of a serde error message, so content (maybe a secret) is
/// never echoed: every quoted (`"…"` or `` `…` ``) value before "expected" is what the client sent;
/// what follows "expected" names the schema and stays.
fn redact_quoted(msg: &str) -> String {
    let (sent, schema) = match msg.find("expected") {
        Some(i) => msg.split_at(i),
        None => (msg, ""),
    };
    let mut out = String::with_capacity(msg.len());
    let mut rest = sent;
    while let Some(start) = rest.find(['"', '`']) {
        let quote = rest[start..].chars().next().unwrap_or('"');
        out.push_str(&rest[..=start]);
        let after = &rest[start + 1..];
        out.push('…');
        match after.find(quote) {
            Some(end) => {
                out.push(quote);
                rest = &after[end + 1..];
            }
            None => rest = "",
        }
    }
    out.push_str(rest);
    out.push_str(schema);
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn quoted_values_are_cut() {
        let m = super::redact_quoted(
            "invalid type: string \"AKIAIOSFODNN7EXAMPLEXXXXXXXX\", expected `put`",
        );
        assert!(!m.contains("AKIA"), "{m}");
        assert!(m.contains("expected `put`"));
        let m = super::redact_quoted(
            "unknown variant `ghp_secretsecret`, expected `put` or `delete` at line 1",
        );
        assert_eq!(
            m,
            "unknown variant `…`, expected `put` or `delete` at line 1"
        );
        let plain = "EOF while parsing a list at line 1 column 13";
        assert_eq!(super::redact_quoted(plain), plain);
    }
}
