//! Logging: structured `tracing` events, JSON when stderr is not a terminal (or when asked).
//! Beside the log, sqlx's pool-acquire events feed `/metrics` ([`crate::metrics::AcquireTimes`]),
//! whatever the log's filter.

use std::io::IsTerminal;

use tracing_subscriber::filter::{EnvFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, fmt};

use crate::metrics::{ACQUIRE_TARGET, AcquireTimes};

pub fn init(format: &str) {
    let filter = EnvFilter::try_from_env("MEMSYNC_LOG")
        .or_else(|_| EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,tower_http=warn"));
    let json = match format {
        "json" => true,
        "text" => false,
        _ => !std::io::stderr().is_terminal(),
    };
    let log = fmt::layer().with_writer(std::io::stderr);
    let log = if json {
        log.json()
            .flatten_event(true)
            .with_current_span(true)
            .with_filter(filter)
            .boxed()
    } else {
        log.with_filter(filter).boxed()
    };
    let acquires = AcquireTimes.with_filter(
        Targets::new().with_target(ACQUIRE_TARGET, tracing::level_filters::LevelFilter::TRACE),
    );
    let _ = tracing_subscriber::registry()
        .with(log)
        .with(acquires)
        .try_init();
}
