//! Issued tokens, by `jti`. Only the claims are kept; the signed token never is.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::auth::{Claims, REVOCATION_CHANNEL};

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct TokenRecord {
    pub jti: Uuid,
    pub sub: String,
    pub name: String,
    pub email: Option<String>,
    pub teams: serde_json::Value,
    pub admin: bool,
    pub issued_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub issued_by: String,
    pub revoked_at: Option<DateTime<Utc>>,
    pub revoked_by: Option<String>,
    #[serde(default)]
    pub scope: Option<String>,
    #[serde(default)]
    pub projects: Vec<String>,
    #[serde(default)]
    pub rate: Option<serde_json::Value>,
}

pub async fn insert(conn: &mut PgConnection, claims: &Claims, issued_by: &str) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO tokens (jti, sub, name, email, teams, admin, issued_at, expires_at, issued_by,
                             scope, projects, rate)
         VALUES ($1, $2, $3, $4, $5, $6, to_timestamp($7), to_timestamp($8), $9, $10, $11, $12)",
    )
    .bind(claims.jti)
    .bind(&claims.sub)
    .bind(&claims.name)
    .bind(&claims.email)
    .bind(serde_json::to_value(&claims.teams).unwrap_or_default())
    .bind(claims.admin)
    .bind(claims.iat as f64)
    .bind(claims.exp as f64)
    .bind(issued_by)
    .bind(&claims.scope)
    .bind(&claims.projects)
    .bind(
        claims
            .rate
            .map(|r| serde_json::to_value(r).unwrap_or_default()),
    )
    .execute(&mut *conn)
    .await?;
    Ok(())
}

type ClaimsRow = (
    String,
    String,
    Option<String>,
    serde_json::Value,
    bool,
    i64,
    i64,
    Option<String>,
    Vec<String>,
    Option<serde_json::Value>,
);

/// The claims of an issued token, to sign it again for an idempotent retry of its issue (HS256
/// signing is deterministic: the same claims give the same token).
pub async fn claims(
    pool: &PgPool,
    jti: Uuid,
    issuer: &str,
    audience: &str,
) -> sqlx::Result<Option<Claims>> {
    let row: Option<ClaimsRow> = sqlx::query_as(
        "SELECT sub, name, email, teams, admin,
                    extract(epoch FROM issued_at)::bigint, extract(epoch FROM expires_at)::bigint,
                    scope, projects, rate
             FROM tokens WHERE jti = $1",
    )
    .bind(jti)
    .fetch_optional(pool)
    .await?;
    Ok(row.map(
        |(sub, name, email, teams, admin, iat, exp, scope, projects, rate)| Claims {
            sub,
            name,
            email,
            teams: serde_json::from_value(teams).unwrap_or_default(),
            admin,
            jti,
            iat,
            exp,
            iss: issuer.to_owned(),
            aud: audience.to_owned(),
            scope,
            projects,
            rate: rate.and_then(|r| serde_json::from_value(r).ok()),
        },
    ))
}

type TokenRow = (
    Uuid,
    String,
    String,
    Option<String>,
    serde_json::Value,
    bool,
    DateTime<Utc>,
    DateTime<Utc>,
    String,
    Option<DateTime<Utc>>,
    Option<String>,
    Option<String>,
    Vec<String>,
    Option<serde_json::Value>,
);

pub async fn list(pool: &PgPool, include_inactive: bool) -> sqlx::Result<Vec<TokenRecord>> {
    let rows: Vec<TokenRow> = sqlx::query_as(
        "SELECT jti, sub, name, email, teams, admin, issued_at, expires_at, issued_by, revoked_at, revoked_by,
                scope, projects, rate
         FROM tokens WHERE $1 OR (revoked_at IS NULL AND expires_at > now())
         ORDER BY issued_at DESC",
    )
    .bind(include_inactive)
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| TokenRecord {
            jti: r.0,
            sub: r.1,
            name: r.2,
            email: r.3,
            teams: r.4,
            admin: r.5,
            issued_at: r.6,
            expires_at: r.7,
            issued_by: r.8,
            revoked_at: r.9,
            revoked_by: r.10,
            scope: r.11,
            projects: r.12,
            rate: r.13,
        })
        .collect())
}

pub enum Revoked {
    Now,
    Already,
    Unknown,
}

/// Marks the token revoked, ends the console sessions opened with it, and tells every replica
/// (NOTIFY), in the caller's transaction.
pub async fn revoke(tx: &mut PgConnection, jti: Uuid, by: &str) -> sqlx::Result<Revoked> {
    let prior: Option<Option<DateTime<Utc>>> =
        sqlx::query_scalar("SELECT revoked_at FROM tokens WHERE jti = $1 FOR UPDATE")
            .bind(jti)
            .fetch_optional(&mut *tx)
            .await?;
    let outcome = match prior {
        None => Revoked::Unknown,
        Some(Some(_)) => Revoked::Already,
        Some(None) => {
            sqlx::query("UPDATE tokens SET revoked_at = now(), revoked_by = $2 WHERE jti = $1")
                .bind(jti)
                .bind(by)
                .execute(&mut *tx)
                .await?;
            // Console sessions opened with the token end with it.
            super::sessions::close_for_token(&mut *tx, jti).await?;
            Revoked::Now
        }
    };
    if !matches!(outcome, Revoked::Unknown) {
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(REVOCATION_CHANNEL)
            .bind(jti.to_string())
            .execute(&mut *tx)
            .await?;
    }
    Ok(outcome)
}

/// Ids of revoked tokens that have not yet expired (with a minute's grace for clock skew): the
/// set every replica keeps in memory to refuse them.
pub async fn revoked_unexpired(pool: &PgPool) -> sqlx::Result<Vec<Uuid>> {
    sqlx::query_scalar(
        "SELECT jti FROM tokens WHERE revoked_at IS NOT NULL AND expires_at > now() - interval '1 minute'",
    )
    .fetch_all(pool)
    .await
}
