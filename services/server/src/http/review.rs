//! Review routes: the queue (`/v1/proposals`), a project's release policy and a team's
//! reviewers (`/v1/admin/...`). Thin handlers over `crate::review`.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use memsync_core::ProjectId;
use memsync_core::wire::{ProjectSettings, ProposalApprove, ProposalReject};
use serde::Deserialize;

use super::{
    AppState, IdempotencyKey, JsonBody, QueryParams, reachable, replayed_response, request_id,
};
use crate::admin;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::review::decision::{self, Actor, Answer};
use crate::review::{queue, reviewers, settings};

#[derive(Debug, Deserialize)]
pub struct ListParams {
    project: Option<String>,
    status: Option<String>,
    mine: Option<bool>,
    limit: Option<i64>,
}

pub async fn list(
    State(state): State<AppState>,
    principal: Principal,
    QueryParams(q): QueryParams<ListParams>,
) -> ApiResult<Response> {
    let project = match q.project.as_deref().filter(|p| !p.is_empty()) {
        None => None,
        Some(p) => {
            let (team, name) = p.split_once('/').ok_or_else(|| {
                ApiError::bad_request(
                    "invalid_project",
                    "`project` is `<team>/<name>`, e.g. `acme/api`",
                )
            })?;
            Some(reachable(&principal, team, name)?)
        }
    };
    let query = queue::ListQuery {
        project,
        status: q.status.filter(|s| !s.is_empty()),
        mine: q.mine.unwrap_or(false),
        limit: q.limit,
    };
    Ok(Json(queue::list(&state.pool, &principal, query).await?).into_response())
}

pub async fn show(
    State(state): State<AppState>,
    principal: Principal,
    Path(id): Path<i64>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let detail = queue::show(&state.pool, &principal, id, request_id(&headers)).await?;
    Ok(Json(detail).into_response())
}

fn answered(a: Answer) -> Response {
    match a {
        Answer::Decided(d) => Json(d).into_response(),
        Answer::Replayed(status, body) => replayed_response(status, body),
    }
}

pub async fn approve(
    State(state): State<AppState>,
    principal: Principal,
    Path(id): Path<i64>,
    headers: HeaderMap,
    key: IdempotencyKey,
    body: JsonBody<ProposalApprove>,
) -> ApiResult<Response> {
    let actor = Actor {
        principal: &principal,
        request_id: request_id(&headers),
        idem: key.with(&format!("proposal_approve {id}"), &body.sha256),
    };
    let a = decision::approve(&state.pool, state.limits, &actor, id, body.value).await?;
    Ok(answered(a))
}

pub async fn reject(
    State(state): State<AppState>,
    principal: Principal,
    Path(id): Path<i64>,
    headers: HeaderMap,
    key: IdempotencyKey,
    body: JsonBody<ProposalReject>,
) -> ApiResult<Response> {
    let actor = Actor {
        principal: &principal,
        request_id: request_id(&headers),
        idem: key.with(&format!("proposal_reject {id}"), &body.sha256),
    };
    let a = decision::reject(&state.pool, state.limits, &actor, id, body.value).await?;
    Ok(answered(a))
}

pub async fn get_settings(
    State(state): State<AppState>,
    principal: Principal,
    Path((team, name)): Path<(String, String)>,
) -> ApiResult<Response> {
    let project: ProjectId = admin::administered(&principal, &team, &name)?;
    Ok(Json(settings::get(&state.pool, &project).await?).into_response())
}

pub async fn put_settings(
    State(state): State<AppState>,
    principal: Principal,
    Path((team, name)): Path<(String, String)>,
    headers: HeaderMap,
    body: JsonBody<ProjectSettings>,
) -> ApiResult<Response> {
    let project = admin::administered(&principal, &team, &name)?;
    let stored = settings::put(
        &state.pool,
        &principal,
        &project,
        body.value,
        request_id(&headers),
    )
    .await?;
    Ok(Json(stored).into_response())
}

pub async fn list_reviewers(
    State(state): State<AppState>,
    principal: Principal,
    Path(team): Path<String>,
) -> ApiResult<Response> {
    let team = reviewers::administered(&principal, &team)?;
    Ok(Json(reviewers::list(&state.pool, &team).await?).into_response())
}

pub async fn add_reviewer(
    State(state): State<AppState>,
    principal: Principal,
    Path((team, user)): Path<(String, String)>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let team = reviewers::administered(&principal, &team)?;
    let added = reviewers::add(&state.pool, &principal, &team, &user, request_id(&headers)).await?;
    let status = if added {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(reviewers::list(&state.pool, &team).await?)).into_response())
}

pub async fn remove_reviewer(
    State(state): State<AppState>,
    principal: Principal,
    Path((team, user)): Path<(String, String)>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let team = reviewers::administered(&principal, &team)?;
    reviewers::remove(&state.pool, &principal, &team, &user, request_id(&headers)).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
