//! Issuing and revoking tokens, for the admin API and the `token` commands alike. Each action
//! and its audit row commit in one transaction: a token never exists without its record, and a
//! record never names a token that was not issued.

use std::collections::BTreeMap;

use memsync_core::text::Text;
use memsync_core::wire::TeamRole;
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use crate::auth::{Claims, Keys};
use crate::error::{ApiError, ApiResult};
use crate::idempotent::{self, Idem};
use crate::store::audit::{self, AuditEvent};
use crate::store::idempotency::TOKENS;
use crate::store::tokens::{self, Revoked};

/// Who issues or revokes: a principal of the admin API, or `cli:<user>` on the server's host.
pub struct Actor<'a> {
    pub sub: &'a str,
    pub name: Option<&'a str>,
    pub request_id: Option<&'a str>,
    /// The request's `Idempotency-Key`, for issue over the API.
    pub idem: Option<Idem>,
}

impl<'a> Actor<'a> {
    fn event(&self, action: &'a str, details: serde_json::Value) -> AuditEvent<'a> {
        AuditEvent {
            team: None,
            project: None,
            actor_sub: self.sub,
            actor_name: self.name,
            action,
            path: None,
            revision: None,
            request_id: self.request_id,
            details,
        }
    }
}

pub struct IssueRequest {
    pub user: Text,
    pub email: Option<Text>,
    pub teams: BTreeMap<String, TeamRole>,
    pub admin: bool,
    pub ttl_secs: i64,
    /// `pull`, `push`, `admin`; `None` is everything the teams allow.
    pub scope: Option<String>,
    /// `team/name` projects the token is limited to; empty: all of its teams' projects.
    pub projects: Vec<String>,
    pub rate: Option<crate::auth::TokenRate>,
}

/// The `scope` claim for the scopes asked: `None` (everything the teams allow) when none are,
/// else the highest one asked with everything it includes, space-separated.
pub fn scope_claim(scopes: &[crate::auth::Scope]) -> Option<String> {
    let top = scopes.iter().max()?;
    Some(
        crate::auth::Scope::ALL
            .iter()
            .filter(|s| *s <= top)
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// Signs a token and records it (claims only, never the token) with its audit row.
pub async fn issue(
    pool: &PgPool,
    keys: &Keys,
    actor: &Actor<'_>,
    req: IssueRequest,
) -> ApiResult<(String, Claims)> {
    let user = req.user.trim();
    if user.is_empty() || user.len() > 200 {
        return Err(ApiError::bad_request(
            "invalid_user",
            "the user name must be 1-200 characters",
        ));
    }
    if req
        .teams
        .keys()
        .any(|t| !memsync_core::project::valid_segment(t))
    {
        return Err(ApiError::bad_request(
            "invalid_team",
            "team names are lowercase letters, digits, `.`, `_` or `-`",
        ));
    }
    if req.teams.is_empty() && !req.admin {
        return Err(ApiError::bad_request(
            "no_scope",
            "a token needs at least one team (or admin), or it can reach nothing",
        ));
    }
    for p in &req.projects {
        let project: memsync_core::ProjectId = p.parse().map_err(|e| {
            ApiError::bad_request(
                "invalid_project",
                format!("project `{p}`: {e}; name projects as TEAM/NAME"),
            )
        })?;
        if !req.admin && !req.teams.contains_key(project.team()) {
            return Err(ApiError::bad_request(
                "invalid_project",
                format!(
                    "project `{p}` is not in the token's teams; add `--team {}` or drop the project",
                    project.team()
                ),
            ));
        }
    }
    if let Some(rate) = req.rate
        && (rate.rps == 0 || rate.burst < rate.rps)
    {
        return Err(ApiError::bad_request(
            "invalid_rate",
            "a token's rate needs at least 1 request per second and a burst at least that",
        ));
    }
    if req.ttl_secs <= 0 {
        return Err(ApiError::bad_request(
            "invalid_ttl",
            "the lifetime must be positive, e.g. 90 days",
        ));
    }
    let now = chrono::Utc::now().timestamp();
    let claims = Claims {
        sub: user.to_owned(),
        name: user.to_owned(),
        email: req.email.map(Text::into_string),
        teams: req.teams,
        admin: req.admin,
        jti: Uuid::new_v4(),
        iat: now,
        exp: now.saturating_add(req.ttl_secs),
        iss: keys.issuer.clone(),
        aud: keys.audience.clone(),
        scope: req.scope,
        projects: req.projects,
        rate: req.rate,
    };
    let token = keys.sign(&claims)?;
    let mut tx = pool.begin().await?;
    tokens::insert(&mut tx, &claims, actor.sub).await?;
    // The stored answer names the token, never holds it: a retry signs the same claims again.
    let answer = json!({ "jti": claims.jti, "expires_at": claims.exp });
    idempotent::remember(
        &mut tx,
        TOKENS,
        actor.sub,
        actor.idem.as_ref(),
        201,
        &answer,
    )
    .await?;
    audit::record(
        &mut *tx,
        &actor.event(
            "token_issue",
            json!({ "jti": claims.jti, "sub": claims.sub, "teams": claims.teams, "admin": claims.admin, "exp": claims.exp, "scope": claims.scope, "projects": claims.projects, "rate": claims.rate }),
        ),
    )
    .await?;
    tx.commit().await?;
    Ok((token, claims))
}

/// The token an earlier issue with the same key signed, for a retry: signed again from its
/// stored claims.
pub async fn replay(
    pool: &PgPool,
    keys: &Keys,
    actor: &Actor<'_>,
) -> ApiResult<Option<(String, Claims)>> {
    let Some((_, answer)) =
        idempotent::lookup(pool, TOKENS, actor.sub, actor.idem.as_ref()).await?
    else {
        return Ok(None);
    };
    let jti = answer["jti"]
        .as_str()
        .and_then(|j| j.parse::<Uuid>().ok())
        .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("a stored token issue names no jti")))?;
    let claims = tokens::claims(pool, jti, &keys.issuer, &keys.audience)
        .await?
        .ok_or_else(|| {
            ApiError::Internal(anyhow::anyhow!("a stored token issue names an unknown jti"))
        })?;
    Ok(Some((keys.sign(&claims)?, claims)))
}

/// Revokes a token on every replica (NOTIFY in the same transaction), with its audit row.
pub async fn revoke(pool: &PgPool, jti: Uuid, actor: &Actor<'_>) -> ApiResult<Revoked> {
    let mut tx = pool.begin().await?;
    let outcome = tokens::revoke(&mut tx, jti, actor.sub).await?;
    if matches!(outcome, Revoked::Now) {
        audit::record(
            &mut *tx,
            &actor.event("token_revoke", json!({ "jti": jti })),
        )
        .await?;
    }
    tx.commit().await?;
    Ok(outcome)
}
