//! What `/metrics` serves (docs/observability.md lists every metric): counters and histograms
//! kept by the code that does the work, and gauges read from memory when scraped. A scrape never
//! queries the database: the export lag is read by a background task (`export::spawn_lag`), the
//! pool's gauges are sqlx's own counters, and the rest are atomics.
//!
//! Every label has a bounded set of values: route templates (never raw paths), the standard
//! HTTP methods (anything else is `other`), the status codes the server answers, fixed outcome
//! names, and rule ids, which come from the built-in and configured scanner and policy rules
//! (capped all the same, past [`MAX_RULES`] they count as `other`).
//!
//! Recording a request costs one lookup of its route in a read-locked map, a scan of that
//! route's few (method, status) counters, an atomic increment and the route histogram's short
//! mutex; nothing is allocated once its series exist.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::{LazyLock, RwLock};

use axum::http::{Method, StatusCode};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeGaugeValue, EncodeLabelSet, EncodeLabelValue, EncodeMetric,
    LabelValueEncoder,
};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use sqlx::PgPool;

use crate::error::{ApiError, ApiResult};
use crate::limits::Limiter;
use crate::live::Live;

/// Request latency buckets (seconds), 1 ms to 10 s, as before this module.
const LATENCY_BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];
/// Buckets of the time to get a database connection (seconds): 100 µs (an idle connection) to
/// the pool's 5 s acquire timeout.
const ACQUIRE_BUCKETS: [f64; 11] = [
    0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 2.5, 5.0,
];
/// Distinct route templates counted before any further one counts as `other` (a router has a
/// fixed set; this only guards the bound).
const MAX_ROUTES: usize = 512;
/// Distinct refusal rule ids counted before any further one counts as `other`.
pub const MAX_RULES: usize = 256;

/// The OpenMetrics text format, served when the scraper's `Accept` asks for it.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The Prometheus text format (0.0.4), served otherwise.
pub const PROMETHEUS_TEXT: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// The `method` label: the standard methods, anything else `other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MethodLabel(&'static str);

impl MethodLabel {
    pub fn of(m: &Method) -> MethodLabel {
        MethodLabel(match *m {
            Method::GET => "GET",
            Method::HEAD => "HEAD",
            Method::POST => "POST",
            Method::PUT => "PUT",
            Method::DELETE => "DELETE",
            Method::PATCH => "PATCH",
            Method::OPTIONS => "OPTIONS",
            Method::CONNECT => "CONNECT",
            Method::TRACE => "TRACE",
            _ => "other",
        })
    }
}

/// A label value that is one of a bounded set of static strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Static(&'static str);

impl EncodeLabelValue for Static {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        encoder.write_str(self.0)
    }
}

impl EncodeLabelValue for MethodLabel {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        encoder.write_str(self.0)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RequestLabels {
    method: MethodLabel,
    route: Static,
    status: u16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RouteLabels {
    route: Static,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: Static,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RuleLabels {
    rule: Static,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, EncodeLabelSet)]
struct StatusLabels {
    status: u16,
}

/// What became of a client's push (`memsync_pushes_total{outcome}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A new revision, stored as pushed.
    Published,
    /// A new revision in which the server merged at least one path (a three-way merge with a
    /// concurrent edit, or a `MEMORY.md` it merged or completed).
    Merged,
    /// Accepted, but every change was already there: no revision.
    Unchanged,
    /// 409 `conflict`: an edit overlapped a concurrent one; nothing applied.
    Conflict,
    /// Refused by a rule (422 `validation_failed`, 409 `feedback_conflict`); nothing applied.
    Refused,
    /// Held for review (202): proposals, nothing published.
    Proposed,
    /// The stored answer of an earlier push with the same idempotency key, replayed.
    Replayed,
    /// Any other error (the project unreachable, the database unavailable, …).
    Error,
}

impl Outcome {
    const ALL: [Outcome; 8] = [
        Outcome::Published,
        Outcome::Merged,
        Outcome::Unchanged,
        Outcome::Conflict,
        Outcome::Refused,
        Outcome::Proposed,
        Outcome::Replayed,
        Outcome::Error,
    ];

    fn label(self) -> &'static str {
        match self {
            Outcome::Published => "published",
            Outcome::Merged => "merged",
            Outcome::Unchanged => "unchanged",
            Outcome::Conflict => "conflict",
            Outcome::Refused => "refused",
            Outcome::Proposed => "proposed",
            Outcome::Replayed => "replayed",
            Outcome::Error => "error",
        }
    }
}

/// Strings made `'static` once each, up to a cap: route templates and rule ids, so that a label
/// set is `Copy` and a lookup allocates nothing.
struct Interner {
    seen: RwLock<HashSet<&'static str>>,
    cap: usize,
}

impl Interner {
    fn new(cap: usize) -> Interner {
        Interner {
            seen: RwLock::new(HashSet::new()),
            cap,
        }
    }

    /// `s` as a `'static` string; `other` once `cap` distinct strings were seen.
    fn get(&self, s: &str) -> &'static str {
        if let Some(v) = self.seen.read().unwrap_or_else(|e| e.into_inner()).get(s) {
            return v;
        }
        let mut seen = self.seen.write().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = seen.get(s) {
            return v;
        }
        if seen.len() >= self.cap {
            return "other";
        }
        let v: &'static str = Box::leak(s.into());
        seen.insert(v);
        v
    }
}

/// One route template's series: its latency histogram and its request counters by method and
/// status (a handful), shared with the families the registry encodes.
struct RouteSlot {
    name: &'static str,
    histogram: Histogram,
    counters: RwLock<Vec<(MethodLabel, u16, Counter)>>,
}

impl RouteSlot {
    fn record(&self, m: &Metrics, method: MethodLabel, status: u16, secs: f64) {
        self.histogram.observe(secs);
        {
            let counters = self.counters.read().unwrap_or_else(|e| e.into_inner());
            if let Some((_, _, c)) = counters
                .iter()
                .find(|(cm, cs, _)| *cs == status && *cm == method)
            {
                c.inc();
                return;
            }
        }
        let mut counters = self.counters.write().unwrap_or_else(|e| e.into_inner());
        if let Some((_, _, c)) = counters
            .iter()
            .find(|(cm, cs, _)| *cs == status && *cm == method)
        {
            c.inc();
            return;
        }
        let c = m.requests.get_or_create_owned(&RequestLabels {
            method,
            route: Static(self.name),
            status,
        });
        c.inc();
        counters.push((method, status, c));
    }
}

/// Every metric of this process.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<RouteLabels, Histogram, fn() -> Histogram>,
    pushes: Family<OutcomeLabels, Counter>,
    refusals: Family<RuleLabels, Counter>,
    pull_200: Counter,
    pull_304: Counter,
    long_poll_wakeups: Counter,
    /// Each route's series, by template: one lookup finds them all.
    routes: RwLock<HashMap<&'static str, RouteSlot>>,
    rules: Interner,
    /// `/metrics` is served on the API's listener (no `--metrics-listen`).
    on_api_listener: bool,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

/// The time each acquire of a request-pool connection took, recorded from sqlx's own
/// `sqlx::pool::acquire` event (see [`AcquireTimes`]).
static ACQUIRE: LazyLock<Histogram> = LazyLock::new(|| Histogram::new(ACQUIRE_BUCKETS));

impl Metrics {
    /// The metrics of a `serve` process: `pool`, `live` and `limiter` are read when scraped.
    pub fn new(pool: PgPool, live: Live, limiter: Limiter, on_api_listener: bool) -> Metrics {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "memsync_http_requests",
            "HTTP requests answered, by method (the standard methods, else other), route template (unmatched when none) and status",
            requests.clone(),
        );
        let latency: Family<RouteLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(latency_histogram);
        registry.register(
            "memsync_http_request_duration_seconds",
            "HTTP request latency by route template",
            latency.clone(),
        );
        let pushes = Family::<OutcomeLabels, Counter>::default();
        for o in Outcome::ALL {
            pushes.get_or_create_owned(&OutcomeLabels {
                outcome: Static(o.label()),
            });
        }
        registry.register(
            "memsync_pushes",
            "Client pushes by outcome: published, merged, unchanged, conflict, refused, proposed (held for review), replayed (an idempotent retry answered from its stored answer), error",
            pushes.clone(),
        );
        let refusals = Family::<RuleLabels, Counter>::default();
        registry.register(
            "memsync_push_refusals",
            "Refused client pushes by the rule that refused them (a push refused by several rules counts once for each)",
            refusals.clone(),
        );
        let pulls = Family::<StatusLabels, Counter>::default();
        let pull_200 = pulls.get_or_create_owned(&StatusLabels { status: 200 });
        let pull_304 = pulls.get_or_create_owned(&StatusLabels { status: 304 });
        registry.register(
            "memsync_pulls",
            "Pulls answered, by status: 200 (an answer with a body) or 304 (not modified), long-polls included",
            pulls,
        );
        let long_poll_wakeups = Counter::default();
        registry.register(
            "memsync_long_poll_wakeups",
            "Long-polls answered with changes after waiting for them",
            long_poll_wakeups.clone(),
        );
        registry.register(
            "memsync_db_pool_acquire_duration_seconds",
            "Time a request took to get a database connection from the pool (waiting for a free one, or opening one); acquires that time out are not in it",
            ACQUIRE.clone(),
        );
        registry.register_collector(Box::new(Sampled {
            pool,
            live,
            limiter,
        }));
        registry.register_collector(Box::new(crate::export::MetricsCollector));
        Metrics {
            registry,
            requests,
            latency,
            pushes,
            refusals,
            pull_200,
            pull_304,
            long_poll_wakeups,
            routes: RwLock::default(),
            rules: Interner::new(MAX_RULES),
            on_api_listener,
        }
    }

    /// Whether `/metrics` is served on the API's listener.
    pub fn on_api_listener(&self) -> bool {
        self.on_api_listener
    }

    /// One answered request: `route` is the matched route template (None: no route matched).
    pub fn request(&self, method: &Method, route: Option<&str>, status: StatusCode, secs: f64) {
        let route = route.unwrap_or("unmatched");
        let (method, status) = (MethodLabel::of(method), status.as_u16());
        {
            let routes = self.routes.read().unwrap_or_else(|e| e.into_inner());
            if let Some(slot) = routes.get(route) {
                slot.record(self, method, status, secs);
                return;
            }
        }
        let mut routes = self.routes.write().unwrap_or_else(|e| e.into_inner());
        let key = if routes.contains_key(route) || routes.len() < MAX_ROUTES {
            route
        } else {
            "other"
        };
        if !routes.contains_key(key) {
            let name: &'static str = Box::leak(key.into());
            let histogram = self.latency.get_or_create_owned(&RouteLabels {
                route: Static(name),
            });
            routes.insert(
                name,
                RouteSlot {
                    name,
                    histogram,
                    counters: RwLock::default(),
                },
            );
        }
        if let Some(slot) = routes.get(key) {
            slot.record(self, method, status, secs);
        }
    }

    /// A client's push ended with `result`.
    pub fn push(&self, result: &ApiResult<crate::sync::PushOutcome>) {
        use crate::sync::PushOutcome as P;
        match result {
            Ok(P::Applied(r)) if !r.created_revision => self.pushed(Outcome::Unchanged, []),
            Ok(P::Applied(r)) if r.merged.is_empty() => self.pushed(Outcome::Published, []),
            Ok(P::Applied(_)) => self.pushed(Outcome::Merged, []),
            Ok(P::Proposed(_)) => self.pushed(Outcome::Proposed, []),
            Ok(P::Replayed(..)) => self.pushed(Outcome::Replayed, []),
            Err(ApiError::Conflict { .. }) => self.pushed(Outcome::Conflict, []),
            Err(ApiError::FeedbackConflict { .. }) => {
                self.pushed(Outcome::Refused, ["feedback_conflict"])
            }
            Err(ApiError::QuotaExceeded { .. }) => {
                self.pushed(Outcome::Refused, ["quota_exceeded"])
            }
            Err(ApiError::Unprocessable {
                code: "validation_failed",
                details,
                ..
            }) => {
                let rules = details["failures"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|f| f["rule"].as_str());
                self.pushed(Outcome::Refused, rules)
            }
            Err(_) => self.pushed(Outcome::Error, []),
        }
    }

    /// A client's push ended with `outcome`; `rules` are the ids of the rules that refused it.
    fn pushed<'a>(&self, outcome: Outcome, rules: impl IntoIterator<Item = &'a str>) {
        self.pushes
            .get_or_create(&OutcomeLabels {
                outcome: Static(outcome.label()),
            })
            .inc();
        let mut counted: Vec<&'static str> = Vec::new();
        for rule in rules {
            let rule = self.rules.get(rule);
            if !counted.contains(&rule) {
                counted.push(rule);
                self.refusals
                    .get_or_create(&RuleLabels { rule: Static(rule) })
                    .inc();
            }
        }
    }

    /// A pull answered `status` (200 or 304).
    pub fn pulled(&self, status: StatusCode) {
        match status {
            StatusCode::OK => self.pull_200.inc(),
            StatusCode::NOT_MODIFIED => self.pull_304.inc(),
            _ => 0,
        };
    }

    /// A long-poll was answered with changes it waited for.
    pub fn long_poll_woken(&self) {
        self.long_poll_wakeups.inc();
    }

    /// The metrics as text: OpenMetrics when `openmetrics`, else the Prometheus text format.
    pub fn encode(&self, openmetrics: bool) -> String {
        let mut out = String::with_capacity(16 * 1024);
        let r = if openmetrics {
            prometheus_client::encoding::text::encode(&mut out, &self.registry)
        } else {
            prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry)
        };
        if let Err(e) = r {
            tracing::error!(error = %e, "encoding the metrics failed");
        }
        out
    }
}

/// Gauges read from memory at each scrape: the request pool's connections (sqlx's own counts),
/// the open event streams and long-polls, and the limiter's refusals and buckets.
#[derive(Debug)]
struct Sampled {
    pool: PgPool,
    live: Live,
    limiter: Limiter,
}

impl Collector for Sampled {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        // size() counts the connections open or being opened; num_idle() those in the pool.
        let size = u64::from(self.pool.size());
        let idle = (self.pool.num_idle() as u64).min(size);
        gauge_family(
            &mut encoder,
            "memsync_db_pool_connections",
            "Connections of the request pool to PostgreSQL by state: in_use (lent to a request or task, or being opened) or idle.",
            &[("in_use", size - idle), ("idle", idle)],
            "state",
        )?;
        let max = self.pool.options().get_max_connections();
        ConstGauge::new(i64::from(max)).encode(encoder.encode_descriptor(
            "memsync_db_pool_max_connections",
            "The most connections the request pool opens (--db-pool-size); a request waits for one while all are in use.",
            None,
            MetricType::Gauge,
        )?)?;
        let (streams, long_polls) = self.live.open_by_kind();
        gauge_family(
            &mut encoder,
            "memsync_live_open",
            "Live updates open now, by kind: event_stream (GET .../events) or long_poll (GET .../changes?wait=).",
            &[("event_stream", streams), ("long_poll", long_polls)],
            "kind",
        )?;
        let mut refusals = encoder.encode_descriptor(
            "memsync_limit_refusals",
            "Requests refused by a rate limit or quota, by limit: token_requests, team_requests (429 rate_limited), token_pushes, team_pushes (429 on a push), project_bytes (413 quota_exceeded), token_streams, team_streams (429 too_many_streams)",
            None,
            MetricType::Counter,
        )?;
        for (kind, n) in self.limiter.refusals() {
            ConstCounter::new(n).encode(refusals.encode_family(&[("limit", kind.label())])?)?;
        }
        let (tracked, forgotten) = self.limiter.tracked();
        ConstGauge::new(tracked as i64).encode(encoder.encode_descriptor(
            "memsync_limit_buckets",
            "Tokens and teams with a rate-limit bucket in this process now (full buckets are dropped; at most 100000)",
            None,
            MetricType::Gauge,
        )?)?;
        ConstCounter::new(forgotten).encode(encoder.encode_descriptor(
            "memsync_limit_buckets_forgotten",
            "Rate-limit buckets dropped before they were full to stay under the cap (their keys start again with a full burst)",
            None,
            MetricType::Counter,
        )?)
    }
}

/// A gauge family with one label, from a collector.
pub(crate) fn gauge_family<N: EncodeGaugeValue + Copy + std::fmt::Debug>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    values: &[(&'static str, N)],
    label: &'static str,
) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (value, v) in values {
        ConstGauge::new(*v).encode(family.encode_family(&[(label, *value)])?)?;
    }
    Ok(())
}

/// Records sqlx's `sqlx::pool::acquire` events, which carry how long each acquire of a pooled
/// connection took, into `memsync_db_pool_acquire_duration_seconds`. sqlx keeps the tasks waiting
/// for a connection inside its pool with no way to count them; it times every acquire, though,
/// wherever the code acquires (explicitly or by running a query on the pool), and says so in
/// this event when the pool's `acquire_time_level` is set (the request pool sets it, see
/// `db::open_for`).
pub struct AcquireTimes;

/// The target sqlx's acquire events have.
pub const ACQUIRE_TARGET: &str = "sqlx::pool::acquire";

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for AcquireTimes {
    fn on_event(
        &self,
        event: &tracing::Event<'_>,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        struct Secs(Option<f64>);
        impl tracing::field::Visit for Secs {
            fn record_f64(&mut self, field: &tracing::field::Field, value: f64) {
                if field.name() == "acquired_after_secs" {
                    self.0 = Some(value);
                }
            }
            fn record_debug(&mut self, _: &tracing::field::Field, _: &dyn std::fmt::Debug) {}
        }
        if event.metadata().target() != ACQUIRE_TARGET {
            return;
        }
        let mut secs = Secs(None);
        event.record(&mut secs);
        if let Some(s) = secs.0 {
            ACQUIRE.observe(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics() -> Metrics {
        let pool = sqlx::postgres::PgPoolOptions::new()
            .connect_lazy("postgres://nobody@127.0.0.1:1/none")
            .expect("a lazy pool");
        let limiter = Limiter::new(Box::leak(Box::default()));
        Metrics::new(pool, Live::new(Default::default()), limiter, true)
    }

    #[tokio::test]
    async fn methods_routes_and_rules_are_bounded() {
        let m = metrics();
        let series = |m: &Metrics| {
            m.encode(false)
                .lines()
                .filter(|l| !l.starts_with('#'))
                .count()
        };
        m.request(&Method::GET, None, StatusCode::NOT_FOUND, 0.001);
        let odd = Method::from_bytes(b"FROB").unwrap();
        m.request(&odd, None, StatusCode::NOT_FOUND, 0.001);
        let before = series(&m);
        for i in 0..100 {
            let odd = Method::from_bytes(format!("X{i}").as_bytes()).unwrap();
            m.request(&odd, None, StatusCode::NOT_FOUND, 0.001);
        }
        assert_eq!(series(&m), before);
        let text = m.encode(false);
        assert!(
            text.contains(
                r#"memsync_http_requests_total{method="other",route="unmatched",status="404"} 101"#
            ),
            "{text}"
        );

        for i in 0..MAX_RULES + 10 {
            m.pushed(Outcome::Refused, [format!("rule_{i}").as_str()]);
        }
        let text = m.encode(false);
        assert!(
            text.contains(r#"memsync_push_refusals_total{rule="other"} 10"#),
            "{text}"
        );
        assert!(text.contains(r#"memsync_pushes_total{outcome="refused"} 266"#));
    }

    #[tokio::test]
    async fn a_rule_counts_once_per_push_and_pulls_by_status() {
        let m = metrics();
        m.pushed(
            Outcome::Refused,
            ["aws-access-key-id", "aws-access-key-id", "x"],
        );
        m.pulled(StatusCode::OK);
        m.pulled(StatusCode::NOT_MODIFIED);
        m.pulled(StatusCode::NOT_MODIFIED);
        let text = m.encode(true);
        assert!(text.ends_with("# EOF\n"), "{text}");
        for line in [
            r#"memsync_push_refusals_total{rule="aws-access-key-id"} 1"#,
            r#"memsync_push_refusals_total{rule="x"} 1"#,
            r#"memsync_pulls_total{status="200"} 1"#,
            r#"memsync_pulls_total{status="304"} 2"#,
            r#"memsync_pushes_total{outcome="published"} 0"#,
            r#"memsync_live_open{kind="event_stream"} 0"#,
            r#"memsync_db_pool_connections{state="in_use"} 0"#,
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in:\n{text}");
        }
    }
}
