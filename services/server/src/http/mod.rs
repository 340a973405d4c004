//! The HTTP layer: routes, extractors and middleware. Handlers are thin: extract, call the
//! domain function, map the result.

mod admin;
mod body;
mod live;
pub mod metrics;
mod review;
pub mod serve;

use std::time::Duration;

use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, delete, get, post, put};
use axum::{Json, Router};
use memsync_core::ProjectId;
use memsync_core::wire::WhoAmI;
use tower_http::compression::CompressionLayer;
use tower_http::compression::predicate::{NotForContentType, Predicate, SizeAbove};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

use crate::auth::{Need, Principal, Scope};
use crate::error::{ApiError, ApiResult};
use crate::export::http::{self as git, GitPrincipal};
pub use crate::state::AppState;
use crate::sync::{self, PushMeta, PushOutcome};
pub use body::{IdempotencyKey, JsonBody, QueryParams, replayed_response};

static REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Every route, the one table both the router and the OpenAPI check are built from.
fn routes() -> Vec<(&'static str, &'static str, Need, MethodRouter<AppState>)> {
    vec![
        ("GET", "/healthz", Need::Open, get(healthz)),
        ("GET", "/readyz", Need::Open, get(readyz)),
        ("GET", "/metrics", Need::Open, get(metrics::render)),
        ("GET", "/v1/me", Need::Token, get(whoami)),
        ("GET", "/v1/auth/config", Need::Open, get(auth_config)),
        (
            "GET",
            "/v1/proposals",
            Need::Scope(Scope::Push),
            get(review::list),
        ),
        (
            "GET",
            "/v1/proposals/{id}",
            Need::Scope(Scope::Push),
            get(review::show),
        ),
        (
            "POST",
            "/v1/proposals/{id}/approve",
            Need::Scope(Scope::Push),
            post(review::approve),
        ),
        (
            "POST",
            "/v1/proposals/{id}/reject",
            Need::Scope(Scope::Push),
            post(review::reject),
        ),
        (
            "GET",
            "/v1/admin/projects/{team}/{name}/settings",
            Need::Scope(Scope::Admin),
            get(review::get_settings),
        ),
        (
            "PUT",
            "/v1/admin/projects/{team}/{name}/settings",
            Need::Scope(Scope::Admin),
            put(review::put_settings),
        ),
        (
            "GET",
            "/v1/admin/teams/{team}/reviewers",
            Need::Scope(Scope::Admin),
            get(review::list_reviewers),
        ),
        (
            "PUT",
            "/v1/admin/teams/{team}/reviewers/{user}",
            Need::Scope(Scope::Admin),
            put(review::add_reviewer),
        ),
        (
            "DELETE",
            "/v1/admin/teams/{team}/reviewers/{user}",
            Need::Scope(Scope::Admin),
            delete(review::remove_reviewer),
        ),
        (
            "GET",
            "/v1/projects/{team}/{name}",
            Need::Scope(Scope::Pull),
            get(project_info),
        ),
        (
            "GET",
            "/v1/projects/{team}/{name}/changes",
            Need::Scope(Scope::Pull),
            get(live::pull),
        ),
        (
            "GET",
            "/v1/projects/{team}/{name}/events",
            Need::Scope(Scope::Pull),
            get(live::events),
        ),
        (
            "POST",
            "/v1/projects/{team}/{name}/push",
            Need::Scope(Scope::Push),
            post(push),
        ),
        (
            "POST",
            "/v1/projects/{team}/{name}/feedback/check",
            Need::Scope(Scope::Pull),
            post(feedback_check),
        ),
        (
            "GET",
            "/v1/projects/{team}/{name}/allowlist",
            Need::Scope(Scope::Pull),
            get(allowlist_list),
        ),
        (
            "POST",
            "/v1/projects/{team}/{name}/allowlist",
            Need::Scope(Scope::Admin),
            post(allowlist_add),
        ),
        (
            "DELETE",
            "/v1/projects/{team}/{name}/allowlist/{fingerprint}",
            Need::Scope(Scope::Admin),
            delete(allowlist_remove),
        ),
        (
            "GET",
            "/v1/admin/audit",
            Need::Scope(Scope::Admin),
            get(admin::audit),
        ),
        (
            "GET",
            "/v1/admin/projects",
            Need::Scope(Scope::Admin),
            get(admin::projects),
        ),
        (
            "POST",
            "/v1/admin/projects/{team}/{name}/archive",
            Need::Scope(Scope::Admin),
            post(admin::archive),
        ),
        (
            "GET",
            "/v1/admin/projects/{team}/{name}/history",
            Need::Scope(Scope::Admin),
            get(admin::history),
        ),
        (
            "GET",
            "/v1/admin/projects/{team}/{name}/version",
            Need::Scope(Scope::Admin),
            get(admin::version),
        ),
        (
            "GET",
            "/v1/admin/projects/{team}/{name}/diff",
            Need::Scope(Scope::Admin),
            get(admin::diff),
        ),
        (
            "POST",
            "/v1/admin/projects/{team}/{name}/delete",
            Need::Scope(Scope::Admin),
            post(admin::delete),
        ),
        (
            "POST",
            "/v1/admin/projects/{team}/{name}/restore",
            Need::Scope(Scope::Admin),
            post(admin::restore),
        ),
        (
            "POST",
            "/v1/admin/projects/{team}/{name}/purge",
            Need::Scope(Scope::Admin),
            post(admin::purge),
        ),
        (
            "POST",
            "/v1/admin/projects/{team}/{name}/disable",
            Need::Scope(Scope::Push),
            post(admin::disable),
        ),
        (
            "POST",
            "/v1/admin/projects/{team}/{name}/enable",
            Need::Scope(Scope::Push),
            post(admin::enable),
        ),
        (
            "POST",
            "/v1/admin/projects/{team}/{name}/rollback",
            Need::Scope(Scope::Push),
            post(admin::rollback),
        ),
        (
            "GET",
            "/v1/admin/tokens",
            Need::Scope(Scope::Admin),
            get(admin::tokens),
        ),
        (
            "POST",
            "/v1/admin/tokens",
            Need::Scope(Scope::Admin),
            post(admin::token_issue),
        ),
        (
            "DELETE",
            "/v1/admin/tokens/{jti}",
            Need::Scope(Scope::Admin),
            delete(admin::token_revoke),
        ),
        (
            "GET",
            "/git/{team}/{repo}/info/refs",
            Need::Scope(Scope::Pull),
            get(git_info_refs),
        ),
        (
            "POST",
            "/git/{team}/{repo}/git-upload-pack",
            Need::Scope(Scope::Pull),
            post(git_upload_pack),
        ),
    ]
}

/// (method, path template) of every route; `openapi.yaml` must describe exactly these.
#[cfg_attr(not(test), allow(dead_code))]
pub fn route_table() -> Vec<(&'static str, &'static str)> {
    routes().into_iter().map(|(m, p, _, _)| (m, p)).collect()
}

/// What the route `method path-template` needs of its caller; `None` for paths outside the
/// table (the console's).
pub fn route_need(method: &str, template: &str) -> Option<Need> {
    static NEEDS: std::sync::OnceLock<
        std::collections::HashMap<(&'static str, &'static str), Need>,
    > = std::sync::OnceLock::new();
    NEEDS
        .get_or_init(|| {
            routes()
                .into_iter()
                .map(|(m, p, need, _)| ((m, p), need))
                .collect()
        })
        .get(&(method, template))
        .copied()
}

pub fn router(state: AppState, request_timeout: Duration) -> Router {
    let max_body_bytes = state.max_body_bytes;
    let mut app = Router::new();
    for (_, path, _, handler) in routes() {
        app = app.route(path, handler);
    }
    app.merge(crate::console::router(state.clone()))
        .layer(DefaultBodyLimit::max(max_body_bytes))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::map_response(json_errors))
        .layer(catch_panics())
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            bus_writes,
        ))
        .layer(axum::middleware::from_fn(serve::head_limits))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            metrics::track,
        ))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(request_span)
                .on_response(access_log),
        )
        .layer(compression())
        .layer(axum::middleware::from_fn_with_state(
            request_timeout,
            live::deadline,
        ))
        .layer(PropagateRequestIdLayer::new(REQUEST_ID.clone()))
        .layer(SetRequestIdLayer::new(REQUEST_ID.clone(), MakeRequestUuid))
        .layer(axum::middleware::map_request(drop_bad_request_id))
        .with_state(state)
}

/// Each request's span (the access log's and every event's within it). Router::layer runs after
/// routing, so the matched route template is known here. With traces on it is also an
/// OpenTelemetry server span named `METHOD /route/{template}` (never the raw path, which names
/// projects), child of the caller's `traceparent` when it sent one.
fn request_span(req: &axum::http::Request<axum::body::Body>) -> tracing::Span {
    let id = req
        .headers()
        .get(&REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-");
    let route = req
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map(|m| m.as_str());
    let method = req.method();
    if !crate::telemetry::tracing_on() {
        return tracing::info_span!("request", method = %method, route = route.unwrap_or("unmatched"), path = %req.uri().path(), request_id = %id);
    }
    let name = match route {
        Some(r) => format!("{method} {r}"),
        None => method.to_string(),
    };
    let span = tracing::info_span!(
        "request",
        method = %method,
        route = route.unwrap_or("unmatched"),
        path = %req.uri().path(),
        request_id = %id,
        otel.name = name,
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        http.request.method = %method,
        http.route = route,
        http.response.status_code = tracing::field::Empty,
        url.scheme = "http",
    );
    crate::telemetry::set_remote_parent(&span, req.headers());
    span
}

/// The access log: one INFO line per request when its answer's head is sent (target
/// `memsync_server::access`; the request span adds the method, matched route, path and request
/// id). Never the query string, a header or a body.
/// `MEMSYNC_LOG=info,memsync_server::access=warn` turns it off.
fn access_log(resp: &Response, latency: Duration, span: &tracing::Span) {
    if crate::telemetry::tracing_on() {
        span.record("http.response.status_code", resp.status().as_u16());
        if resp.status().is_server_error() {
            span.record("otel.status_code", "ERROR");
        }
    }
    tracing::info!(
        target: "memsync_server::access",
        status = resp.status().as_u16(),
        latency_ms = latency.as_secs_f64() * 1000.0,
        "request"
    );
}

/// A handler that panics answers a JSON 500 (`internal`) like any internal error, and the panic's
/// message goes to the log at ERROR; the process and the other requests carry on.
fn catch_panics()
-> tower_http::catch_panic::CatchPanicLayer<fn(Box<dyn std::any::Any + Send + 'static>) -> Response>
{
    fn answer(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_owned());
        crate::error::ApiError::Internal(anyhow::anyhow!("a request handler panicked: {message}"))
            .into_response()
    }
    tower_http::catch_panic::CatchPanicLayer::custom(answer as fn(_) -> Response)
}

/// Answers of 1 KiB or more are compressed (zstd or gzip, as the client accepts); never the
/// event stream, whose events must leave as they happen, nor images.
fn compression() -> CompressionLayer<impl Predicate> {
    CompressionLayer::new().no_br().no_deflate().compress_when(
        SizeAbove::new(1024)
            .and(NotForContentType::SSE)
            .and(NotForContentType::IMAGES)
            .and(NotForContentType::GRPC),
    )
}

/// After a successful write through this replica, the revision bus forgets what it knew of the
/// project written (named by the URL: `/v1/projects/{t}/{n}/…`, `/v1/admin/projects/{t}/{n}/…`,
/// the console's `/admin/p/{t}/{n}/…`), or of every project when the URL names none (an approval
/// by proposal id), so that no pull here is answered from before the write.
async fn bus_writes(
    State(state): State<AppState>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let writes = !matches!(
        *req.method(),
        axum::http::Method::GET | axum::http::Method::HEAD | axum::http::Method::OPTIONS
    );
    if !writes {
        return next.run(req).await;
    }
    let path = req.uri().path().to_owned();
    let resp = next.run(req).await;
    if resp.status().is_success() || resp.status().is_redirection() {
        state.bus.wrote(written_project(&path).as_deref());
    }
    resp
}

/// The `team/name` a write's URL names, if it names one.
fn written_project(path: &str) -> Option<String> {
    let rest = ["/v1/projects/", "/v1/admin/projects/", "/admin/p/"]
        .iter()
        .find_map(|p| path.strip_prefix(p))?;
    let mut parts = rest.split('/');
    let (team, name) = (parts.next()?, parts.next()?);
    let project = ProjectId::new(team, name).ok()?;
    Some(project.as_str().to_owned())
}

/// A client's `x-request-id` is kept (it ends up in logs and the audit log) only when it is a
/// short token; anything else is replaced by a fresh UUID.
async fn drop_bad_request_id(mut req: axum::extract::Request) -> axum::extract::Request {
    let ok = req.headers().get(&REQUEST_ID).is_none_or(|v| {
        let b = v.as_bytes();
        !b.is_empty()
            && b.len() <= 64
            && b.iter()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
    });
    if !ok {
        req.headers_mut().remove(&REQUEST_ID);
    }
    req
}

/// Errors produced outside the handlers (axum's own rejections of a malformed URL or query, the
/// request timeout) get the same JSON error shape as the rest. Their original text is dropped: it
/// may quote what the client sent.
async fn json_errors(resp: Response) -> Response {
    let status = resp.status();
    // JSON errors, and the console's own HTML error pages, are left as they are.
    // So are plain-text errors meant for git, which prints nothing else (`remote: ...`).
    let shaped = resp
        .extensions()
        .get::<crate::export::http::PlainTextForGit>()
        .is_some()
        || resp.headers().get(header::CONTENT_TYPE).is_some_and(|v| {
            v.as_bytes().starts_with(b"application/json") || v.as_bytes().starts_with(b"text/html")
        });
    if !(status.is_client_error() || status.is_server_error()) || shaped {
        return resp;
    }
    let err = match status {
        StatusCode::GATEWAY_TIMEOUT | StatusCode::REQUEST_TIMEOUT => ApiError::Timeout(
            "the request took longer than the server allows (--request-timeout); retry, or push fewer files at once".into(),
        ),
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::PayloadTooLarge("the request body is larger than this server accepts".into()),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ApiError::UnsupportedMediaType("the request body's Content-Type is not one this route takes".into()),
        StatusCode::URI_TOO_LONG => ApiError::bad_request("uri_too_long", "the URL is longer than this server accepts"),
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => ApiError::bad_request("headers_too_large", "the request headers are larger than this server accepts"),
        s if s.is_server_error() => ApiError::Internal(anyhow::anyhow!("{s} without a body")),
        _ => ApiError::bad_request(
            "invalid_request",
            "the request's URL, query or headers are malformed (a path segment or query parameter could not be decoded, or one was repeated)",
        ),
    };
    let mut out = err.into_response();
    *out.status_mut() = status;
    for name in [header::ALLOW, header::RETRY_AFTER] {
        if let Some(v) = resp.headers().get(&name) {
            out.headers_mut().insert(name, v.clone());
        }
    }
    out
}

async fn not_found() -> ApiError {
    ApiError::NotFound("no such route; the API is under /v1 (see openapi.yaml)".into())
}

async fn method_not_allowed() -> Response {
    let body =
        ApiError::bad_request("method_not_allowed", "this route does not take that method").body();
    (StatusCode::METHOD_NOT_ALLOWED, Json(body)).into_response()
}

/// Liveness: 200 unless the embedded PostgreSQL could not be restarted, which only a restart of
/// the process may fix.
async fn healthz(State(state): State<AppState>) -> Response {
    if state.db_health.healthy() {
        return Json(serde_json::json!({ "status": "ok" })).into_response();
    }
    database_503(
        "unhealthy: the embedded PostgreSQL died and cannot be restarted; restart memsync-server",
        &state,
    )
}

async fn readyz(State(state): State<AppState>) -> Response {
    if state.db_health.status().phase != crate::db::Phase::Up {
        return database_503("not ready: the database is down", &state);
    }
    match crate::db::ready(&state.pool).await {
        Ok(()) => Json(serde_json::json!({ "status": "ready" })).into_response(),
        Err(reason) => {
            tracing::warn!(%reason, "not ready");
            ApiError::Unavailable {
                message: "not ready: the database is unreachable or not migrated".into(),
            }
            .into_response()
        }
    }
}

/// 503 `unavailable` with the supervisor's view of the database in `details`.
fn database_503(message: &str, state: &AppState) -> Response {
    let mut body = ApiError::Unavailable {
        message: message.to_owned(),
    }
    .body();
    body.error.details = state.db_health.details();
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::RETRY_AFTER, HeaderValue::from_static("2"))],
        Json(body),
    )
        .into_response()
}

pub(crate) fn request_id(headers: &HeaderMap) -> Option<&str> {
    headers.get(&REQUEST_ID).and_then(|v| v.to_str().ok())
}

/// A project the caller may reach; another team's project is "not found", never "forbidden".
pub(crate) fn reachable(principal: &Principal, team: &str, name: &str) -> ApiResult<ProjectId> {
    let project = ProjectId::new(team, name)
        .map_err(|e| ApiError::bad_request("invalid_project", e.to_string()))?;
    if !principal.can_access(&project) {
        return Err(sync::not_found(&project));
    }
    Ok(project)
}

/// How to sign in: the identity providers this server trusts, for `memsync login --sso`.
async fn auth_config(State(state): State<AppState>) -> Json<serde_json::Value> {
    let oidc = state
        .oidc
        .as_ref()
        .map(|o| o.public_issuers())
        .unwrap_or_default();
    Json(serde_json::json!({ "oidc": oidc }))
}

/// The token's claims, and the teams where its user was granted the reviewer role (of the
/// teams the token reaches).
async fn whoami(State(state): State<AppState>, principal: Principal) -> ApiResult<Json<WhoAmI>> {
    let c = principal.claims;
    let reviewer = crate::store::reviewers::teams_of(&state.pool, &c.sub)
        .await?
        .into_iter()
        .filter(|t| c.admin || c.teams.contains_key(t))
        .collect();
    Ok(Json(WhoAmI {
        sub: c.sub,
        name: c.name,
        email: c.email,
        teams: c.teams,
        admin: c.admin,
        expires_at: c.exp,
        reviewer,
        scope: c.scope,
        projects: c.projects,
        issuer: Some(c.iss),
    }))
}

async fn project_info(
    State(state): State<AppState>,
    principal: Principal,
    Path((team, name)): Path<(String, String)>,
) -> ApiResult<Response> {
    let project = reachable(&principal, &team, &name)?;
    let info = crate::store::memories::info(&state.pool, &project)
        .await?
        .ok_or_else(|| sync::not_found(&project))?;
    Ok(Json(info).into_response())
}

async fn push(
    State(state): State<AppState>,
    principal: Principal,
    Path((team, name)): Path<(String, String)>,
    headers: HeaderMap,
    IdempotencyKey(key): IdempotencyKey,
    body: JsonBody<memsync_core::wire::PushRequest>,
) -> ApiResult<Response> {
    let project = reachable(&principal, &team, &name)?;
    let meta = PushMeta {
        request_id: request_id(&headers),
        idempotency_key: key.as_deref(),
        request_hash: body.sha256.to_hex(),
        ..PushMeta::new(&project, &principal, "push")
    };
    let pushed = sync::push(
        &state.pool,
        &state.announcer,
        state.limits,
        meta,
        body.value,
    )
    .await;
    state.metrics.push(&pushed);
    if let Err(ApiError::QuotaExceeded { .. }) = &pushed {
        state
            .limiter
            .refused(crate::limits::LimitKind::ProjectBytes);
    }
    match pushed? {
        PushOutcome::Applied(resp) => Ok(Json(resp).into_response()),
        PushOutcome::Proposed(resp) => Ok((StatusCode::ACCEPTED, Json(resp)).into_response()),
        PushOutcome::Replayed(status, stored) => Ok(replayed_response(status, stored)),
    }
}

/// Checks a candidate feedback memory against the team's; the content is neither stored nor
/// logged (nor audited).
async fn feedback_check(
    State(state): State<AppState>,
    principal: Principal,
    Path((team, name)): Path<(String, String)>,
    body: JsonBody<memsync_core::wire::FeedbackCheckRequest>,
) -> ApiResult<Response> {
    let project = reachable(&principal, &team, &name)?;
    let req = body.value;
    if req.path.is_empty() || req.path.len() > 255 {
        return Err(ApiError::bad_request(
            "invalid_path",
            "`path` names the candidate in 1-255 bytes, e.g. its path in your private dir",
        ));
    }
    if req.content.len() > state.limits.file.max_file_bytes {
        return Err(ApiError::PayloadTooLarge(
            "the candidate is larger than a memory may be".into(),
        ));
    }
    let findings =
        crate::sync::feedback::check_candidate(&state.pool, &project, &req.path, &req.content)
            .await?;
    Ok(Json(memsync_core::wire::FeedbackCheckResponse { findings }).into_response())
}

async fn allowlist_list(
    State(state): State<AppState>,
    principal: Principal,
    Path((team, name)): Path<(String, String)>,
) -> ApiResult<Response> {
    let project = reachable(&principal, &team, &name)?;
    Ok(Json(crate::admin::allowlist::list(&state.pool, &project).await?).into_response())
}

async fn allowlist_add(
    State(state): State<AppState>,
    principal: Principal,
    Path((team, name)): Path<(String, String)>,
    headers: HeaderMap,
    body: JsonBody<memsync_core::wire::AllowlistAdd>,
) -> ApiResult<Response> {
    let project = reachable(&principal, &team, &name)?;
    let added = crate::admin::allowlist::add(
        &state.pool,
        &principal,
        &project,
        body.value,
        request_id(&headers),
    )
    .await?;
    let status = if added {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(crate::admin::allowlist::list(&state.pool, &project).await?),
    )
        .into_response())
}

async fn allowlist_remove(
    State(state): State<AppState>,
    principal: Principal,
    Path((team, name, fingerprint)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let project = reachable(&principal, &team, &name)?;
    crate::admin::allowlist::remove(
        &state.pool,
        &principal,
        &project,
        &fingerprint,
        request_id(&headers),
    )
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Read-only `git clone` of a project's export: the refs advertisement.
async fn git_info_refs(
    State(state): State<AppState>,
    GitPrincipal(principal): GitPrincipal,
    Path((team, repo)): Path<(String, String)>,
    QueryParams(q): QueryParams<git::InfoRefsQuery>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let project = reachable(&principal, &team, git::project_name(&repo))?;
    git::info_refs(&state.pool, &project, q.service.as_deref(), &headers).await
}

/// Read-only `git clone` of a project's export: the pack.
async fn git_upload_pack(
    State(state): State<AppState>,
    GitPrincipal(principal): GitPrincipal,
    Path((team, repo)): Path<(String, String)>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> ApiResult<Response> {
    let project = reachable(&principal, &team, git::project_name(&repo))?;
    git::upload_pack(&state.pool, &project, &headers, body, state.max_body_bytes).await
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    #[tokio::test]
    async fn a_panicking_handler_answers_a_json_500_and_the_server_carries_on() {
        use axum::body::Body;
        use axum::routing::get;
        use tower::ServiceExt;
        async fn boom() -> &'static str {
            panic!("the handler broke on secret-looking state")
        }
        let app = axum::Router::new()
            .route("/boom", get(boom))
            .route("/ok", get(|| async { "ok" }))
            .layer(super::catch_panics());
        let req = |p: &str| axum::http::Request::get(p).body(Body::empty()).unwrap();
        let resp = app.clone().oneshot(req("/boom")).await.unwrap();
        assert_eq!(resp.status(), 500);
        assert_eq!(
            resp.headers()["content-type"].to_str().unwrap(),
            "application/json"
        );
        let body = axum::body::to_bytes(resp.into_body(), 1 << 16)
            .await
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["error"]["code"], "internal", "{v}");
        assert_eq!(
            v["error"]["message"], "internal error",
            "nothing of the panic: {v}"
        );
        let resp = app.oneshot(req("/ok")).await.unwrap();
        assert_eq!(resp.status(), 200);
    }

    #[test]
    fn writes_name_their_project_by_url() {
        use super::written_project as w;
        assert_eq!(w("/v1/projects/acme/api/push").as_deref(), Some("acme/api"));
        assert_eq!(
            w("/v1/admin/projects/acme/api/rollback").as_deref(),
            Some("acme/api")
        );
        assert_eq!(w("/admin/p/acme/api/act").as_deref(), Some("acme/api"));
        assert_eq!(w("/v1/proposals/7/approve"), None);
        assert_eq!(w("/v1/projects/acme"), None);
        assert_eq!(w("/v1/projects/Not A Team/api/push"), None);
    }

    /// `openapi.yaml` and the router describe the same routes, no more, no fewer.
    #[test]
    fn openapi_matches_routes() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../openapi.yaml");
        let text = std::fs::read_to_string(path).expect("openapi.yaml at the repository root");
        let spec: serde_json::Value = serde_saphyr::from_str(&text).expect("openapi.yaml parses");
        let mut documented = BTreeSet::new();
        for (p, item) in spec["paths"].as_object().expect("paths") {
            for method in item.as_object().expect("path item").keys() {
                if ["get", "post", "put", "patch", "delete", "head", "options"]
                    .contains(&method.as_str())
                {
                    documented.insert((method.to_uppercase(), p.clone()));
                }
            }
        }
        // Each operation names the scope it needs exactly as the router enforces it.
        for (method, path) in super::route_table() {
            let documented = spec["paths"][path][method.to_lowercase()]["x-memsync-scope"]
                .as_str()
                .map(str::to_owned);
            let enforced = match super::route_need(method, path) {
                Some(crate::auth::Need::Scope(s)) => Some(s.as_str().to_owned()),
                _ => None,
            };
            assert_eq!(
                documented, enforced,
                "{method} {path}: x-memsync-scope in openapi.yaml and the route table differ"
            );
        }
        let served: BTreeSet<(String, String)> = super::route_table()
            .into_iter()
            .map(|(m, p)| (m.to_owned(), p.to_owned()))
            .collect();
        let missing: Vec<_> = served.difference(&documented).collect();
        let extra: Vec<_> = documented.difference(&served).collect();
        assert!(
            missing.is_empty(),
            "routes missing from openapi.yaml: {missing:?}"
        );
        assert!(
            extra.is_empty(),
            "openapi.yaml documents routes the server lacks: {extra:?}"
        );
    }
}
