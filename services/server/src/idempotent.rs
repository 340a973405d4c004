//! Idempotent writes: a request that carries an `Idempotency-Key` is applied once; a retry with
//! the same key and the same request gets the stored answer, a retry with a different request is
//! refused, and the answer of a push whose content was purged since is "purged". Pushes and the
//! admin writes (delete, restore, purge, token issue) share these rules.

use serde::Serialize;
use serde_json::{Value, json};
use sqlx::{PgConnection, PgPool};

use crate::error::{ApiError, ApiResult};
use crate::store::idempotency::{self, Scope, Stored};

/// A request's key and the hash of what it asks (route and body), to tell a retry from a
/// different request that reuses the key.
#[derive(Debug, Clone)]
pub struct Idem {
    pub key: String,
    pub hash: String,
}

/// The stored answer for a retry: (status, body).
pub fn replayed(stored: Stored, request_hash: &str) -> ApiResult<(u16, Value)> {
    if stored.purged {
        return Err(ApiError::Gone {
            code: "purged",
            message: "this push was applied, and an admin has since purged content it carried; \
                      it is not applied again. Pull to bring your copy up to date"
                .into(),
        });
    }
    if stored.request_hash != request_hash {
        return Err(ApiError::Unprocessable {
            code: "idempotency_key_reused",
            message: "this Idempotency-Key was already used for a different request; use a new key for a new request".into(),
            details: json!({}),
        });
    }
    Ok((u16::try_from(stored.status).unwrap_or(200), stored.response))
}

/// The answer of an earlier request with this key, if there was one.
pub async fn lookup(
    pool: &PgPool,
    scope: Scope<'_>,
    sub: &str,
    idem: Option<&Idem>,
) -> ApiResult<Option<(u16, Value)>> {
    let Some(idem) = idem else {
        return Ok(None);
    };
    match idempotency::find(pool, scope, sub, &idem.key).await? {
        Some(stored) => Ok(Some(replayed(stored, &idem.hash)?)),
        None => Ok(None),
    }
}

/// Stores the answer in the action's own transaction, so that it exists exactly when the action
/// does.
pub async fn remember(
    tx: &mut PgConnection,
    scope: Scope<'_>,
    sub: &str,
    idem: Option<&Idem>,
    status: u16,
    answer: &impl Serialize,
) -> ApiResult<()> {
    let Some(idem) = idem else {
        return Ok(());
    };
    let body = serde_json::to_value(answer).map_err(|e| ApiError::Internal(e.into()))?;
    let status = i16::try_from(status).unwrap_or(200);
    if idempotency::store(&mut *tx, scope, sub, &idem.key, &idem.hash, status, &body).await? {
        Ok(())
    } else {
        Err(ApiError::Unavailable {
            message: "a request with this Idempotency-Key is being applied; retry shortly".into(),
        })
    }
}
