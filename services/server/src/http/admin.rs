//! `/v1/admin`: thin handlers over `crate::admin` and the token store.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use memsync_core::wire::{
    AdminPathAction, AdminRelease, AdminRestore, AdminRollback, TokenIssue, TokenIssued,
};
use serde::Deserialize;
use serde_json::json;

use memsync_core::text::Text;

use super::{AppState, IdempotencyKey, JsonBody, QueryParams, replayed_response, request_id};
use crate::admin;
use crate::admin::tokens;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::store::history::AuditFilter;

#[derive(Debug, Deserialize)]
pub struct AuditQuery {
    team: Option<Text>,
    project: Option<Text>,
    actor: Option<Text>,
    action: Option<Text>,
    path: Option<Text>,
    since: Option<String>,
    until: Option<String>,
    cursor: Option<i64>,
    limit: Option<i64>,
    format: Option<String>,
}

fn time(s: &Option<String>, what: &str) -> ApiResult<Option<chrono::DateTime<chrono::Utc>>> {
    s.as_deref()
        .filter(|s| !s.is_empty())
        .map(|s| {
            chrono::DateTime::parse_from_rfc3339(s)
                .map(|t| t.with_timezone(&chrono::Utc))
                .map_err(|_| {
                    ApiError::bad_request(
                        "invalid_time",
                        format!("`{what}` must be an RFC 3339 time, e.g. 2026-11-30T00:00:00Z"),
                    )
                })
        })
        .transpose()
}

pub async fn audit(
    State(state): State<AppState>,
    principal: Principal,
    QueryParams(q): QueryParams<AuditQuery>,
) -> ApiResult<Response> {
    let filter = AuditFilter {
        teams: None,
        team: q.team.clone().map(Text::into_string),
        project: q.project.clone().map(Text::into_string),
        actor: q.actor.clone().map(Text::into_string),
        action: q.action.clone().map(Text::into_string),
        path: q.path.clone().map(Text::into_string),
        since: time(&q.since, "since")?,
        until: time(&q.until, "until")?,
        before_id: q.cursor,
        limit: q.limit.unwrap_or(100),
    };
    let (rows, next) = admin::audit::audit_page(&state.pool, &principal, filter).await?;
    match q.format.as_deref() {
        None | Some("json") => {
            Ok(Json(json!({ "events": rows, "next_cursor": next })).into_response())
        }
        Some("csv") => {
            let out = admin::audit::csv(&rows);
            let mut resp = (
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/csv; charset=utf-8"),
                )],
                out,
            )
                .into_response();
            if let Some(n) = next
                && let Ok(v) = HeaderValue::from_str(&n.to_string())
            {
                resp.headers_mut().insert("x-next-cursor", v);
            }
            Ok(resp)
        }
        Some(other) => Err(ApiError::bad_request(
            "invalid_format",
            format!("format `{other}`: use json or csv"),
        )),
    }
}

pub async fn projects(State(state): State<AppState>, principal: Principal) -> ApiResult<Response> {
    Ok(
        Json(json!({ "projects": admin::projects::list(&state.pool, &principal).await? }))
            .into_response(),
    )
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchiveBody {
    archived: bool,
}

pub async fn archive(
    State(state): State<AppState>,
    principal: Principal,
    Path((team, name)): Path<(String, String)>,
    headers: HeaderMap,
    body: JsonBody<ArchiveBody>,
) -> ApiResult<Response> {
    let project = admin::administered(&principal, &team, &name)?;
    admin::projects::archive(
        &state.pool,
        &principal,
        &project,
        body.value.archived,
        request_id(&headers),
    )
    .await?;
    Ok(
        Json(json!({ "project": project.as_str(), "archived": body.value.archived }))
            .into_response(),
    )
}

#[derive(Debug, Deserialize)]
pub struct PathQuery {
    path: Text,
    revision: Option<i64>,
    from: Option<i64>,
    to: Option<i64>,
}

pub async fn history(
    State(state): State<AppState>,
    principal: Principal,
    Path((team, name)): Path<(String, String)>,
    QueryParams(q): QueryParams<PathQuery>,
) -> ApiResult<Response> {
    let project = admin::administered(&principal, &team, &name)?;
    let versions = admin::memories::history(&state.pool, &project, &q.path).await?;
    Ok(
        Json(json!({ "project": project.as_str(), "path": q.path, "versions": versions }))
            .into_response(),
    )
}

pub async fn version(
    State(state): State<AppState>,
    principal: Principal,
    Path((team, name)): Path<(String, String)>,
    QueryParams(q): QueryParams<PathQuery>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let project = admin::administered(&principal, &team, &name)?;
    let revision = q.revision.ok_or_else(|| {
        ApiError::bad_request(
            "invalid_revision",
            "give `revision`, the revision of the version to show",
        )
    })?;
    let (v, content) = admin::memories::show(
        &state.pool,
        &principal,
        &project,
        &q.path,
        revision,
        request_id(&headers),
    )
    .await?;
    Ok(Json(json!({ "version": v, "content": content })).into_response())
}

pub async fn diff(
    State(state): State<AppState>,
    principal: Principal,
    Path((team, name)): Path<(String, String)>,
    QueryParams(q): QueryParams<PathQuery>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let project = admin::administered(&principal, &team, &name)?;
    let (Some(from), Some(to)) = (q.from, q.to) else {
        return Err(ApiError::bad_request(
            "invalid_revision",
            "give `from` and `to`, two revisions of the path",
        ));
    };
    let patch = admin::memories::diff(
        &state.pool,
        &principal,
        &project,
        &q.path,
        from,
        to,
        request_id(&headers),
    )
    .await?;
    Ok(Json(json!({ "path": q.path, "from": from, "to": to, "diff": patch })).into_response())
}

pub async fn delete(
    State(state): State<AppState>,
    principal: Principal,
    Path((team, name)): Path<(String, String)>,
    headers: HeaderMap,
    key: IdempotencyKey,
    body: JsonBody<AdminPathAction>,
) -> ApiResult<Response> {
    let project = admin::administered(&principal, &team, &name)?;
    let b = body.value;
    let act = admin::memories::AdminAct {
        principal: &principal,
        project: &project,
        reason: &b.reason,
        request_id: request_id(&headers),
        idem: key.with("admin_delete", &body.sha256),
    };
    if let Some((status, answer)) = act.replay(&state.pool).await? {
        return Ok(replayed_response(status, answer));
    }
    let r = admin::memories::delete(&state.pool, state.limits, &act, &b.path).await?;
    Ok(Json(r).into_response())
}

pub async fn restore(
    State(state): State<AppState>,
    principal: Principal,
    Path((team, name)): Path<(String, String)>,
    headers: HeaderMap,
    key: IdempotencyKey,
    body: JsonBody<AdminRestore>,
) -> ApiResult<Response> {
    let project = admin::administered(&principal, &team, &name)?;
    let b = body.value;
    let act = admin::memories::AdminAct {
        principal: &principal,
        project: &project,
        reason: &b.reason,
        request_id: request_id(&headers),
        idem: key.with("admin_restore", &body.sha256),
    };
    if let Some((status, answer)) = act.replay(&state.pool).await? {
        return Ok(replayed_response(status, answer));
    }
    let r = admin::memories::restore(&state.pool, state.limits, &act, &b.path, b.revision).await?;
    Ok(Json(r).into_response())
}

pub async fn purge(
    State(state): State<AppState>,
    principal: Principal,
    Path((team, name)): Path<(String, String)>,
    headers: HeaderMap,
    key: IdempotencyKey,
    body: JsonBody<AdminPathAction>,
) -> ApiResult<Response> {
    let project = admin::administered(&principal, &team, &name)?;
    let b = body.value;
    let act = admin::memories::AdminAct {
        principal: &principal,
        project: &project,
        reason: &b.reason,
        request_id: request_id(&headers),
        idem: key.with("purge", &body.sha256),
    };
    if let Some((status, answer)) = act.replay(&state.pool).await? {
        return Ok(replayed_response(status, answer));
    }
    let p = admin::memories::purge(&state.pool, state.limits, &act, &b.path).await?;
    Ok(Json(p).into_response())
}

/// `disable` and `enable`: one handler, the action named by the route.
async fn release(
    state: AppState,
    principal: Principal,
    (team, name): (String, String),
    headers: HeaderMap,
    key: IdempotencyKey,
    body: JsonBody<AdminRelease>,
    enable: bool,
) -> ApiResult<Response> {
    let project = admin::reviewed(&state.pool, &principal, &team, &name).await?;
    let b = body.value;
    let reason = b.reason.as_ref().map_or("", |r| r.as_str());
    let act = admin::memories::AdminAct {
        principal: &principal,
        project: &project,
        reason,
        request_id: request_id(&headers),
        idem: key.with(
            if enable {
                "admin_enable"
            } else {
                "admin_disable"
            },
            &body.sha256,
        ),
    };
    if let Some((status, answer)) = act.replay(&state.pool).await? {
        return Ok(replayed_response(status, answer));
    }
    let r = if enable {
        admin::release::enable(&state.pool, state.limits, &act, &b.path).await?
    } else {
        admin::release::disable(&state.pool, state.limits, &act, &b.path).await?
    };
    Ok(Json(r).into_response())
}

pub async fn disable(
    State(state): State<AppState>,
    principal: Principal,
    Path(project): Path<(String, String)>,
    headers: HeaderMap,
    key: IdempotencyKey,
    body: JsonBody<AdminRelease>,
) -> ApiResult<Response> {
    release(state, principal, project, headers, key, body, false).await
}

pub async fn enable(
    State(state): State<AppState>,
    principal: Principal,
    Path(project): Path<(String, String)>,
    headers: HeaderMap,
    key: IdempotencyKey,
    body: JsonBody<AdminRelease>,
) -> ApiResult<Response> {
    release(state, principal, project, headers, key, body, true).await
}

pub async fn rollback(
    State(state): State<AppState>,
    principal: Principal,
    Path((team, name)): Path<(String, String)>,
    headers: HeaderMap,
    key: IdempotencyKey,
    body: JsonBody<AdminRollback>,
) -> ApiResult<Response> {
    let project = admin::reviewed(&state.pool, &principal, &team, &name).await?;
    let b = body.value;
    let act = admin::memories::AdminAct {
        principal: &principal,
        project: &project,
        reason: b.reason.as_ref().map_or("", |r| r.as_str()),
        request_id: request_id(&headers),
        idem: key.with("admin_rollback", &body.sha256),
    };
    if let Some((status, answer)) = act.replay(&state.pool).await? {
        return Ok(replayed_response(status, answer));
    }
    let r = admin::release::rollback(&state.pool, state.limits, &act, &b.path, b.revision).await?;
    Ok(Json(r).into_response())
}

fn server_admin(principal: &Principal) -> ApiResult<()> {
    if principal.is_server_admin() {
        Ok(())
    } else {
        Err(ApiError::Forbidden(
            "tokens are managed by server admins (with a token not limited to some projects)"
                .into(),
        ))
    }
}

pub async fn tokens(State(state): State<AppState>, principal: Principal) -> ApiResult<Response> {
    server_admin(&principal)?;
    let tokens = crate::store::tokens::list(&state.pool, true).await?;
    Ok(Json(json!({ "tokens": tokens })).into_response())
}

pub async fn token_issue(
    State(state): State<AppState>,
    principal: Principal,
    headers: HeaderMap,
    key: IdempotencyKey,
    body: JsonBody<TokenIssue>,
) -> ApiResult<Response> {
    server_admin(&principal)?;
    let actor = tokens::Actor {
        sub: &principal.claims.sub,
        name: Some(&principal.claims.name),
        request_id: request_id(&headers),
        idem: key.with("token_issue", &body.sha256),
    };
    let issued = |token: String, claims: &crate::auth::Claims, replayed: bool| {
        let mut r = (
            StatusCode::CREATED,
            Json(TokenIssued {
                token,
                jti: claims.jti.to_string(),
                expires_at: claims.exp,
            }),
        )
            .into_response();
        if replayed {
            r.headers_mut().insert(
                axum::http::HeaderName::from_static("idempotent-replayed"),
                HeaderValue::from_static("true"),
            );
        }
        r
    };
    if let Some((token, claims)) = tokens::replay(&state.pool, &state.keys, &actor).await? {
        return Ok(issued(token, &claims, true));
    }
    let b = body.value;
    let req = tokens::IssueRequest {
        user: b.user,
        email: b.email,
        teams: b.teams,
        admin: b.admin,
        ttl_secs: i64::from(b.ttl_days.unwrap_or(90).clamp(1, 3650)) * 86_400,
        scope: tokens::scope_claim(&b.scopes),
        projects: b.projects,
        rate: b.rate,
    };
    let (token, claims) = tokens::issue(&state.pool, &state.keys, &actor, req).await?;
    Ok(issued(token, &claims, false))
}

pub async fn token_revoke(
    State(state): State<AppState>,
    principal: Principal,
    Path(jti): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    server_admin(&principal)?;
    let jti: uuid::Uuid = jti.parse().map_err(|_| {
        ApiError::bad_request(
            "invalid_jti",
            "a token id is a UUID, as listed by GET /v1/admin/tokens",
        )
    })?;
    let actor = tokens::Actor {
        sub: &principal.claims.sub,
        name: Some(&principal.claims.name),
        request_id: request_id(&headers),
        idem: None,
    };
    match tokens::revoke(&state.pool, jti, &actor).await? {
        crate::store::tokens::Revoked::Unknown => {
            return Err(ApiError::NotFound(format!("no token {jti}")));
        }
        crate::store::tokens::Revoked::Already => {}
        crate::store::tokens::Revoked::Now => state.revocations.insert(jti),
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}
