//! Logging and tracing: structured `tracing` events to stderr (JSON when stderr is not a
//! terminal, or when asked), and, when an OTLP endpoint is configured with the standard
//! `OTEL_*` variables, spans sent to it over OTLP/HTTP (protobuf).
//!
//! Traces are off unless `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
//! is set (and `OTEL_SDK_DISABLED` is not `true`, nor `OTEL_TRACES_EXPORTER` `none`). The
//! exporter reads the rest itself: `OTEL_EXPORTER_OTLP_HEADERS`, `_TIMEOUT`, `_COMPRESSION`,
//! `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES` (the service is `memsync-server` unless
//! they name it), `OTEL_BSP_*` for the batching, `OTEL_TRACES_SAMPLER[_ARG]` for sampling.
//! Span attributes carry routes, methods, statuses, project names, revisions and counts: never a
//! memory's content, a token or a query string.
//!
//! Beside the log, sqlx's pool-acquire events feed `/metrics` ([`crate::metrics::AcquireTimes`]),
//! whatever the log's filter.

use std::io::IsTerminal;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, filter};

use crate::metrics::{ACQUIRE_TARGET, AcquireTimes};

/// Whether spans are being sent to an OTLP endpoint (request spans then carry the OpenTelemetry
/// fields; otherwise they are kept as cheap as before).
static TRACING: AtomicBool = AtomicBool::new(false);
static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();

pub fn tracing_on() -> bool {
    TRACING.load(Ordering::Relaxed)
}

/// What `init` found in the `OTEL_*` variables.
#[derive(Debug, PartialEq, Eq)]
pub enum OtlpSetting {
    Off,
    /// Send spans; the endpoint as configured (the exporter reads it again itself).
    On(String),
}

/// Reads the standard variables (from `var`, the process environment in production). An
/// unsupported protocol is an error naming the variable and what to do.
pub fn otlp_setting(var: impl Fn(&str) -> Option<String>) -> Result<OtlpSetting, String> {
    let set = |k: &str| var(k).filter(|v| !v.trim().is_empty());
    if set("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
        || set("OTEL_TRACES_EXPORTER").is_some_and(|v| v.trim().eq_ignore_ascii_case("none"))
    {
        return Ok(OtlpSetting::Off);
    }
    if let Some(exporter) = set("OTEL_TRACES_EXPORTER")
        && !exporter.trim().eq_ignore_ascii_case("otlp")
    {
        return Err(format!(
            "OTEL_TRACES_EXPORTER={exporter} is not supported: memsync-server sends traces with OTLP only; set it to `otlp` or `none`, or unset it"
        ));
    }
    let Some(endpoint) =
        set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").or_else(|| set("OTEL_EXPORTER_OTLP_ENDPOINT"))
    else {
        return Ok(OtlpSetting::Off);
    };
    for key in [
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ] {
        if let Some(p) = set(key) {
            if p.trim() != "http/protobuf" {
                return Err(format!(
                    "{key}={p} is not supported: memsync-server sends traces with OTLP over HTTP (`http/protobuf`); point the endpoint at the collector's OTLP/HTTP port (4318 by default) and set {key}=http/protobuf or unset it"
                ));
            }
            break;
        }
    }
    for key in [
        "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
        "OTEL_EXPORTER_OTLP_COMPRESSION",
    ] {
        if let Some(c) = set(key) {
            if !c.trim().eq_ignore_ascii_case("none") {
                return Err(format!(
                    "{key}={c} is not supported: memsync-server sends traces uncompressed; unset it or set it to `none`"
                ));
            }
            break;
        }
    }
    if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
        return Err(format!(
            "the OTLP endpoint `{endpoint}` is not an http:// or https:// URL (e.g. http://otel-collector:4318)"
        ));
    }
    Ok(OtlpSetting::On(endpoint))
}

/// Sets up logging, and tracing when configured. Must run inside the tokio runtime (the OTLP
/// client sends on it). An `OTEL_*` setting memsync cannot honour is returned as an error before
/// anything is installed; logging is set up either way.
pub fn init(format: &str) -> Result<(), String> {
    let filter = EnvFilter::try_from_env("MEMSYNC_LOG")
        .or_else(|_| EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,tower_http=warn"));
    let json = match format {
        "json" => true,
        "text" => false,
        _ => !std::io::stderr().is_terminal(),
    };
    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let fmt: Box<dyn Layer<tracing_subscriber::Registry> + Send + Sync> = if json {
        fmt.json()
            .flatten_event(true)
            .with_current_span(true)
            .with_filter(filter)
            .boxed()
    } else {
        fmt.with_filter(filter).boxed()
    };
    let acquires = AcquireTimes.with_filter(
        filter::Targets::new()
            .with_target(ACQUIRE_TARGET, tracing::level_filters::LevelFilter::TRACE),
    );
    let setting = otlp_setting(|k| std::env::var(k).ok());
    let provider = match &setting {
        Ok(OtlpSetting::On(_)) => match provider() {
            Ok(p) => Some(p),
            Err(e) => {
                let _ = tracing_subscriber::registry()
                    .with(fmt)
                    .with(acquires)
                    .try_init();
                return Err(e);
            }
        },
        _ => None,
    };
    let otel = provider.as_ref().map(|p| {
        // The server's own spans (requests, pushes, pulls, export jobs), whatever the log level.
        tracing_opentelemetry::layer()
            .with_tracer(p.tracer("memsync-server"))
            .with_filter(filter::Targets::new().with_target("memsync_server", tracing::Level::INFO))
    });
    let _ = match otel {
        Some(otel) => tracing_subscriber::registry()
            .with(fmt)
            .with(acquires)
            .with(otel)
            .try_init(),
        None => tracing_subscriber::registry()
            .with(fmt)
            .with(acquires)
            .try_init(),
    };
    if let Some(p) = provider {
        opentelemetry::global::set_text_map_propagator(
            opentelemetry_sdk::propagation::TraceContextPropagator::new(),
        );
        let _ = PROVIDER.set(p);
        TRACING.store(true, Ordering::Relaxed);
    }
    match setting {
        Ok(OtlpSetting::On(endpoint)) => {
            tracing::info!(%endpoint, "sending traces over OTLP/HTTP");
            Ok(())
        }
        Ok(OtlpSetting::Off) => Ok(()),
        Err(e) => Err(e),
    }
}

fn provider() -> Result<SdkTracerProvider, String> {
    use opentelemetry_otlp::WithHttpConfig;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(OtlpClient::new()?)
        .build()
        .map_err(|e| format!("the OTLP trace exporter: {e}"))?;
    let mut resource = opentelemetry_sdk::Resource::builder();
    let named = std::env::var("OTEL_SERVICE_NAME").is_ok_and(|v| !v.is_empty())
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|v| v.contains("service.name="));
    if !named {
        resource = resource.with_service_name("memsync-server");
    }
    resource = resource.with_attribute(opentelemetry::KeyValue::new(
        "service.version",
        env!("CARGO_PKG_VERSION"),
    ));
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build())
}

/// Sends what is left of the spans (bounded by `OTEL_BSP_EXPORT_TIMEOUT`); at exit.
pub fn shutdown() {
    if let Some(p) = PROVIDER.get() {
        // The batch processor flushes on its own thread; this waits for it.
        if let Err(e) = p.shutdown() {
            eprintln!("memsync-server: sending the last spans failed: {e}");
        }
    }
}

/// The trace context a request came with (`traceparent`/`tracestate`), as the parent of its
/// span. Only called when tracing is on.
pub fn set_remote_parent(span: &tracing::Span, headers: &axum::http::HeaderMap) {
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    if !headers.contains_key("traceparent") {
        return;
    }
    let cx = opentelemetry::global::get_text_map_propagator(|p| {
        p.extract(&opentelemetry_http::HeaderExtractor(headers))
    });
    let _ = span.set_parent(cx);
}

/// Adds the current span's trace context (`traceparent`) to an outgoing request's headers, when
/// tracing is on.
pub fn inject_current(headers: &mut axum::http::HeaderMap) {
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    if !tracing_on() {
        return;
    }
    let cx = tracing::Span::current().context();
    opentelemetry::global::get_text_map_propagator(|p| {
        p.inject_context(&cx, &mut opentelemetry_http::HeaderInjector(headers))
    });
}

/// The OTLP exporter's HTTP client: the server's own reqwest, run on the server's tokio runtime
/// (the batch processor exports from a thread of its own, outside any runtime).
#[derive(Debug)]
struct OtlpClient {
    client: reqwest::Client,
    rt: tokio::runtime::Handle,
}

impl OtlpClient {
    fn new() -> Result<OtlpClient, String> {
        let rt = tokio::runtime::Handle::try_current()
            .map_err(|_| "the OTLP client needs the async runtime".to_owned())?;
        // https endpoints: rustls with ring, as the rest of the server.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(std::time::Duration::from_secs(30))
            .build()
            .map_err(|e| format!("the OTLP HTTP client: {e}"))?;
        Ok(OtlpClient { client, rt })
    }
}

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for OtlpClient {
    async fn send_bytes(
        &self,
        request: http::Request<bytes::Bytes>,
    ) -> Result<http::Response<bytes::Bytes>, opentelemetry_http::HttpError> {
        let client = self.client.clone();
        let sent = self.rt.spawn(async move {
            let request = reqwest::Request::try_from(request)?;
            let response = client.execute(request).await?;
            let status = response.status();
            let headers = response.headers().clone();
            // A collector's answer is small; a body that is not is cut short.
            let body = response.bytes().await?;
            let body = body.slice(..body.len().min(1 << 20));
            let mut out = http::Response::new(body);
            *out.status_mut() = status;
            *out.headers_mut() = headers;
            Ok::<_, opentelemetry_http::HttpError>(out)
        });
        sent.await
            .map_err(|e| Box::new(e) as opentelemetry_http::HttpError)?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(vars: &[(&str, &str)]) -> Result<OtlpSetting, String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        otlp_setting(move |k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
    }

    #[test]
    fn traces_are_off_unless_an_endpoint_is_set_and_only_otlp_http_is_taken() {
        assert_eq!(with(&[]), Ok(OtlpSetting::Off));
        assert_eq!(with(&[("OTEL_SERVICE_NAME", "x")]), Ok(OtlpSetting::Off));
        let on = OtlpSetting::On("http://c:4318".into());
        assert_eq!(
            with(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")]),
            Ok(on)
        );
        assert_eq!(
            with(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                (
                    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                    "http://t:4318/v1/traces"
                ),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
            ]),
            Ok(OtlpSetting::On("http://t:4318/v1/traces".into()))
        );
        for off in [
            ("OTEL_SDK_DISABLED", "true"),
            ("OTEL_TRACES_EXPORTER", "none"),
        ] {
            assert_eq!(
                with(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"), off]),
                Ok(OtlpSetting::Off)
            );
        }
        let grpc = with(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ])
        .expect_err("grpc");
        assert!(
            grpc.contains("OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported"),
            "{grpc}"
        );
        // The signal's own protocol wins over the general one.
        assert!(
            with(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ])
            .is_ok()
        );
        let gzip = with(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"),
        ])
        .expect_err("gzip");
        assert!(
            gzip.contains("OTEL_EXPORTER_OTLP_COMPRESSION=gzip is not supported"),
            "{gzip}"
        );
        assert!(
            with(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ("OTEL_EXPORTER_OTLP_COMPRESSION", "none"),
            ])
            .is_ok()
        );
        let bad = with(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "c:4318")]).expect_err("no scheme");
        assert!(bad.contains("not an http:// or https:// URL"), "{bad}");
        let zipkin = with(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_TRACES_EXPORTER", "zipkin"),
        ])
        .expect_err("zipkin");
        assert!(zipkin.contains("OTEL_TRACES_EXPORTER=zipkin"), "{zipkin}");
    }
}
