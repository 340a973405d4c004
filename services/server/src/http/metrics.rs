//! `/metrics` (the metrics themselves are `crate::metrics`; docs/observability.md lists them):
//! the middleware that counts every request by route template, method and status, and the
//! handler that serves them, on the API's listener or, with `--metrics-listen`, on a listener of
//! their own (the API's then answers 404 there).

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::metrics::{Metrics, OPENMETRICS, PROMETHEUS_TEXT};
use crate::state::AppState;

/// Counts the request once answered. Runs after routing, so the matched route's template is
/// known; a request cut off by `--request-timeout` is not counted (the layer is inside it).
pub async fn track(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let route = req.extensions().get::<MatchedPath>().cloned();
    let method = req.method().clone();
    let start = Instant::now();
    let resp = next.run(req).await;
    state.metrics.request(
        &method,
        route.as_ref().map(MatchedPath::as_str),
        resp.status(),
        start.elapsed().as_secs_f64(),
    );
    resp
}

/// `GET /metrics` on the API's listener: 404 when the metrics have a listener of their own.
pub async fn render(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if !state.metrics.on_api_listener() {
        return super::not_found().await.into_response();
    }
    scrape(&state.metrics, &headers)
}

/// The metrics in the format the scraper asks for: OpenMetrics when its `Accept` names
/// `application/openmetrics-text` (Prometheus does), else the Prometheus text format 0.0.4.
fn scrape(metrics: &Metrics, headers: &HeaderMap) -> Response {
    let openmetrics = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/openmetrics-text"));
    let content_type = if openmetrics {
        OPENMETRICS
    } else {
        PROMETHEUS_TEXT
    };
    (
        [(header::CONTENT_TYPE, content_type)],
        metrics.encode(openmetrics),
    )
        .into_response()
}

/// The router of `--metrics-listen`: `GET /metrics` and nothing else (404).
pub fn router(metrics: Arc<Metrics>) -> Router {
    async fn serve(State(m): State<Arc<Metrics>>, headers: HeaderMap) -> Response {
        scrape(&m, &headers)
    }
    Router::new()
        .route("/metrics", get(serve))
        .fallback(|| async { super::not_found().await.into_response() })
        .with_state(metrics)
}
