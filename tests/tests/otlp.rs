//! Traces over OTLP/HTTP: a receiver started here (plain HTTP/1.1 on loopback, decoding the
//! protobuf the server sends) gets the server's spans for a push made by the real `memsync`
//! binary, as children of the client's `traceparent`, named by route, with no memory content or
//! token in any attribute.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use memsync_e2e::{Server, TestDb, User, memory};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

const ORIGIN: &str = "git@github.com:acme/api.git";

/// Every export request the receiver got, decoded.
type Received = Arc<Mutex<Vec<ExportTraceServiceRequest>>>;

/// An OTLP/HTTP trace receiver on 127.0.0.1: `POST /v1/traces` with a protobuf body, answered
/// 200 with an empty `ExportTraceServiceResponse`. Anything else fails the test.
async fn receiver() -> (String, Received) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let got: Received = Arc::default();
    let sink = got.clone();
    tokio::spawn(async move {
        loop {
            let Ok((conn, _)) = listener.accept().await else {
                return;
            };
            let sink = sink.clone();
            tokio::spawn(async move {
                let mut conn = BufReader::new(conn);
                loop {
                    let mut head = Vec::new();
                    loop {
                        let mut line = String::new();
                        if conn.read_line(&mut line).await.unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        head.push(line.trim_end().to_owned());
                    }
                    assert!(
                        head[0].starts_with("POST /v1/traces "),
                        "unexpected request: {}",
                        head[0]
                    );
                    let header = |name: &str| {
                        head.iter().find_map(|h| {
                            let (k, v) = h.split_once(':')?;
                            k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
                        })
                    };
                    assert_eq!(
                        header("content-type").as_deref(),
                        Some("application/x-protobuf")
                    );
                    let len: usize = header("content-length")
                        .expect("a content-length")
                        .parse()
                        .unwrap();
                    let mut body = vec![0; len];
                    conn.read_exact(&mut body).await.unwrap();
                    let req = ExportTraceServiceRequest::decode(body.as_slice())
                        .expect("an ExportTraceServiceRequest");
                    sink.lock().unwrap().push(req);
                    let ok = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                    if conn.get_mut().write_all(ok.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (format!("http://{addr}"), got)
}

fn spans(got: &Received) -> Vec<Span> {
    got.lock()
        .unwrap()
        .iter()
        .flat_map(|r| r.resource_spans.iter())
        .flat_map(|rs| rs.scope_spans.iter())
        .flat_map(|ss| ss.spans.iter().cloned())
        .collect()
}

fn attr(span: &Span, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref()?.value.clone())
        .map(|v| match v {
            AnyValue::StringValue(s) => s,
            AnyValue::IntValue(i) => i.to_string(),
            AnyValue::BoolValue(b) => b.to_string(),
            AnyValue::DoubleValue(d) => d.to_string(),
            other => format!("{other:?}"),
        })
}

/// Waits for spans matching `pred` to arrive (the server batches them every 100 ms here).
async fn wait_for(got: &Received, what: &str, pred: impl Fn(&[Span]) -> bool) -> Vec<Span> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let all = spans(got);
        if pred(&all) {
            return all;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not received within 20 s; got {} spans: {:?}",
            all.len(),
            all.iter().map(|s| &s.name).collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_push_is_traced_under_the_clients_traceparent_without_content_or_token() {
    let (endpoint, got) = receiver().await;
    let db = TestDb::new().await;
    let server = Server::start_with_env(
        &db.url,
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_SERVICE_NAME", "memsync-under-test"),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
    );
    let alice = User::new(&server, "alice", &["acme"], ORIGIN);
    let canary = format!("otlp-canary-{}", uuid::Uuid::new_v4().simple());
    alice.write(
        "deploys.md",
        &memory(
            "deploys",
            "how deploys go",
            "project",
            &format!("Deploys go through the queue. {canary}\n"),
        ),
    );
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let parent = "00f067aa0ba902b7";
    let out = alice
        .command(&["push"])
        .env("TRACEPARENT", format!("00-{trace_id}-{parent}-01"))
        .output()
        .expect("memsync push");
    assert!(
        out.status.success(),
        "push: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let route = "/v1/projects/{team}/{name}/push";
    let all = wait_for(&got, "the push's spans", |all| {
        let push = all
            .iter()
            .find(|s| hex(&s.trace_id) == trace_id && s.name == format!("POST {route}"));
        push.is_some_and(|p| {
            ["push.screen", "push.transaction"]
                .iter()
                .all(|n| all.iter().any(|s| s.name == *n && s.trace_id == p.trace_id))
        })
    })
    .await;
    let push = all
        .iter()
        .find(|s| hex(&s.trace_id) == trace_id && s.name == format!("POST {route}"))
        .unwrap();
    assert_eq!(
        hex(&push.parent_span_id),
        parent,
        "the client's span is the parent"
    );
    assert_eq!(push.kind, SpanKind::Server as i32);
    assert_eq!(attr(push, "http.route").as_deref(), Some(route));
    assert_eq!(attr(push, "http.request.method").as_deref(), Some("POST"));
    assert_eq!(
        attr(push, "http.response.status_code").as_deref(),
        Some("200")
    );
    // The database work is under the request's span.
    for name in ["push.screen", "push.transaction"] {
        let child = all
            .iter()
            .find(|s| s.name == name && s.trace_id == push.trace_id)
            .unwrap();
        assert_eq!(
            child.parent_span_id, push.span_id,
            "{name} under the request"
        );
    }
    let tx = all
        .iter()
        .find(|s| s.name == "push.transaction" && s.trace_id == push.trace_id)
        .unwrap();
    assert_eq!(attr(tx, "memsync.project").as_deref(), Some("acme/api"));
    assert_eq!(attr(tx, "db.system.name").as_deref(), Some("postgresql"));

    // The export job that followed is traced too (a trace of its own).
    wait_for(&got, "the export's span", |all| {
        all.iter().any(|s| {
            s.name == "export.project" && attr(s, "memsync.project").as_deref() == Some("acme/api")
        })
    })
    .await;

    // One command, one trace: a pull without TRACEPARENT gets a fresh trace id shared by all its
    // requests.
    let before = spans(&got).len();
    let r = alice.run(&["pull"]);
    assert_eq!(r.code, 0, "pull: {}", r.stderr);
    let all = wait_for(&got, "the pull's spans", |all| {
        all[before..]
            .iter()
            .any(|s| s.name == "GET /v1/projects/{team}/{name}/changes")
    })
    .await;
    let pulls: Vec<&Span> = all[before..]
        .iter()
        .filter(|s| s.kind == SpanKind::Server as i32)
        .collect();
    let first = pulls[0].trace_id.clone();
    assert!(hex(&first) != trace_id);
    assert!(
        pulls.iter().all(|s| s.trace_id == first),
        "every request of one command in one trace: {:?}",
        pulls
            .iter()
            .map(|s| (&s.name, hex(&s.trace_id)))
            .collect::<Vec<_>>()
    );

    // The service is named as configured.
    let resource = format!("{:?}", got.lock().unwrap()[0].resource_spans[0].resource);
    assert!(resource.contains("memsync-under-test"), "{resource}");
    // Nothing of the memory, and no token, anywhere in what was sent.
    let everything = format!("{:?}", got.lock().unwrap());
    assert!(!everything.contains(&canary), "memory content in a span");
    assert!(
        !everything.contains("Deploys go through"),
        "memory content in a span"
    );
    assert!(!everything.contains("eyJ"), "a token in a span");
    assert!(
        !everything.to_lowercase().contains("bearer"),
        "a token in a span"
    );
}
