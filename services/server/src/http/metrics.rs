//! Prometheus metrics at `/metrics`: request counts by route and status, and a latency
//! histogram by route. Labels are route templates, never raw paths (project names stay out).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::state::AppState;

const BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

/// One route's counters. Latencies are counted in the first bucket they fit (made cumulative
/// when rendered), so an observation touches one bucket.
#[derive(Default)]
struct RouteStats {
    /// (method, status, count): a route answers a handful of these.
    requests: Vec<(Method, u16, u64)>,
    buckets: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

/// Counters by route template. Observing a request allocates nothing once its route, method and
/// status have been seen: it runs on every request, the cheapest ones included.
#[derive(Default)]
pub struct Metrics {
    routes: Mutex<HashMap<Arc<str>, RouteStats>>,
}

impl Metrics {
    fn observe(&self, method: &Method, route: Option<&MatchedPath>, status: u16, secs: f64) {
        let route = route.map_or("unmatched", MatchedPath::as_str);
        let Ok(mut routes) = self.routes.lock() else {
            return;
        };
        let stats = match routes.get_mut(route) {
            Some(s) => s,
            None => routes.entry(Arc::from(route)).or_default(),
        };
        match stats
            .requests
            .iter_mut()
            .find(|(m, s, _)| *s == status && m == method)
        {
            Some((_, _, n)) => *n += 1,
            None => stats.requests.push((method.clone(), status, 1)),
        }
        if let Some(i) = BUCKETS.iter().position(|b| secs <= *b) {
            stats.buckets[i] += 1;
        }
        stats.count += 1;
        stats.sum += secs;
    }

    fn render(&self) -> String {
        // Sorted as before: requests by (method, route, status), latencies by route.
        let mut requests: BTreeMap<(String, String, u16), u64> = BTreeMap::new();
        let mut latency: BTreeMap<String, ([u64; BUCKETS.len()], u64, f64)> = BTreeMap::new();
        if let Ok(routes) = self.routes.lock() {
            for (route, stats) in routes.iter() {
                for (method, status, n) in &stats.requests {
                    requests.insert((method.as_str().to_owned(), route.to_string(), *status), *n);
                }
                latency.insert(route.to_string(), (stats.buckets, stats.count, stats.sum));
            }
        }
        let mut out = String::new();
        out.push_str(
            "# HELP memsync_http_requests_total HTTP requests by method, route and status.\n",
        );
        out.push_str("# TYPE memsync_http_requests_total counter\n");
        for ((method, route, status), n) in &requests {
            let _ = writeln!(
                out,
                "memsync_http_requests_total{{method=\"{method}\",route=\"{route}\",status=\"{status}\"}} {n}"
            );
        }
        out.push_str(
            "# HELP memsync_http_request_duration_seconds HTTP request latency by route.\n",
        );
        out.push_str("# TYPE memsync_http_request_duration_seconds histogram\n");
        for (route, (buckets, count, sum)) in &latency {
            let mut cumulative = 0;
            for (b, n) in BUCKETS.iter().zip(buckets) {
                cumulative += n;
                let _ = writeln!(
                    out,
                    "memsync_http_request_duration_seconds_bucket{{route=\"{route}\",le=\"{b}\"}} {cumulative}"
                );
            }
            let _ = writeln!(
                out,
                "memsync_http_request_duration_seconds_bucket{{route=\"{route}\",le=\"+Inf\"}} {count}"
            );
            let _ = writeln!(
                out,
                "memsync_http_request_duration_seconds_sum{{route=\"{route}\"}} {sum}"
            );
            let _ = writeln!(
                out,
                "memsync_http_request_duration_seconds_count{{route=\"{route}\"}} {count}"
            );
        }
        out
    }
}

pub async fn track(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let route = req.extensions().get::<MatchedPath>().cloned();
    let method = req.method().clone();
    let start = Instant::now();
    let resp = next.run(req).await;
    state.metrics.observe(
        &method,
        route.as_ref(),
        resp.status().as_u16(),
        start.elapsed().as_secs_f64(),
    );
    resp
}

pub async fn render(State(state): State<AppState>) -> impl IntoResponse {
    let mut body = state.metrics.render();
    body.push_str(&crate::export::metrics(&state.pool).await);
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        body,
    )
}
