//! `/metrics` against a real server and PostgreSQL: both text formats parse strictly; pushes,
//! pulls, long-polls, streams and the pool are counted; invented methods and paths add no
//! series; `--metrics-listen` moves `/metrics` to a listener of its own; a scrape queries nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use memsync_e2e::*;
use serde_json::{Value, json};

const P: &str = "acme/api";
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// One sample: its full name, labels, value.
#[derive(Debug, Clone)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

#[derive(Debug, Default)]
struct Family {
    kind: String,
    help: Option<String>,
    samples: Vec<Sample>,
}

/// A parsed exposition: families by name.
#[derive(Debug)]
struct Exposition {
    families: BTreeMap<String, Family>,
}

impl Exposition {
    /// Every series: (sample name, labels).
    fn series(&self) -> BTreeSet<(String, Vec<(String, String)>)> {
        self.families
            .values()
            .flat_map(|f| &f.samples)
            .map(|s| {
                (
                    s.name.clone(),
                    s.labels
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                )
            })
            .collect()
    }

    /// The value of the sample `name` whose labels include `labels`; None when there is none.
    fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let found: Vec<f64> = self
            .families
            .values()
            .flat_map(|f| &f.samples)
            .filter(|s| {
                s.name == name
                    && labels
                        .iter()
                        .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
            })
            .map(|s| s.value)
            .collect();
        assert!(found.len() <= 1, "{name} {labels:?} names several series");
        found.first().copied()
    }

    fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.get(name, labels)
            .unwrap_or_else(|| panic!("no {name} {labels:?} in {:#?}", self.series()))
    }
}

fn is_metric_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_' || f == ':')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_' || x == ':')
}

fn is_label_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
        && !s.starts_with("__")
}

fn parse_value(s: &str) -> Result<f64, String> {
    match s {
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ => s.parse::<f64>().map_err(|e| format!("value {s:?}: {e}")),
    }
}

/// `{a="x",b="y"}` (after the name) into labels; the rest of the line.
fn parse_labels(s: &str) -> Result<(BTreeMap<String, String>, &str), String> {
    let mut labels = BTreeMap::new();
    let Some(mut rest) = s.strip_prefix('{') else {
        return Ok((labels, s));
    };
    loop {
        if let Some(r) = rest.strip_prefix('}') {
            return Ok((labels, r));
        }
        let eq = rest.find('=').ok_or("a label without =")?;
        let name = &rest[..eq];
        if !is_label_name(name) {
            return Err(format!("label name {name:?}"));
        }
        rest = rest[eq + 1..]
            .strip_prefix('"')
            .ok_or("a label value not in quotes")?;
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let end = loop {
            match chars.next() {
                None => return Err("an unterminated label value".into()),
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, '\\')) => value.push('\\'),
                    Some((_, '"')) => value.push('"'),
                    Some((_, 'n')) => value.push('\n'),
                    other => return Err(format!("a bad escape {other:?}")),
                },
                Some((_, '\n')) => return Err("a newline in a label value".into()),
                Some((_, c)) => value.push(c),
            }
        };
        if labels.insert(name.to_owned(), value).is_some() {
            return Err(format!("label {name} twice"));
        }
        rest = &rest[end + 1..];
        if let Some(r) = rest.strip_prefix(',') {
            rest = r;
        } else if !rest.starts_with('}') {
            return Err("labels not separated by ,".into());
        }
    }
}

/// Parses the Prometheus text format (0.0.4) or OpenMetrics text strictly: every sample line
/// belongs to the family declared (with HELP and TYPE) just before it, names and labels are
/// valid, no series appears twice, counters are not negative, and every histogram's buckets are
/// cumulative, ascending and end with `+Inf` equal to `_count`. OpenMetrics must end with
/// `# EOF` and name counter families without `_total` (their samples have it).
fn parse(text: &str, openmetrics: bool) -> Result<Exposition, String> {
    let mut families: BTreeMap<String, Family> = BTreeMap::new();
    let mut current: Option<String> = None;
    let mut seen = BTreeSet::new();
    let mut eof = false;
    for line in text.lines() {
        let fail = |e: String| format!("{e}, in line {line:?}");
        if eof {
            return Err(fail("a line after # EOF".into()));
        }
        if line == "# EOF" {
            if !openmetrics {
                return Err(fail("# EOF in the Prometheus text format".into()));
            }
            eof = true;
            continue;
        }
        if let Some(rest) = line.strip_prefix("# ") {
            let (keyword, rest) = rest
                .split_once(' ')
                .ok_or_else(|| fail("a bare #".into()))?;
            let (name, arg) = rest.split_once(' ').unwrap_or((rest, ""));
            if !is_metric_name(name) {
                return Err(fail(format!("metric name {name:?}")));
            }
            match keyword {
                "HELP" | "TYPE" => {}
                _ => return Err(fail(format!("an unknown keyword {keyword}"))),
            }
            if current.as_deref() != Some(name) {
                // A new family: declared once, its lines together.
                if families.contains_key(name) {
                    return Err(fail(format!("family {name} declared twice")));
                }
                families.insert(name.to_owned(), Family::default());
                current = Some(name.to_owned());
            }
            let f = families.get_mut(name).expect("declared");
            if keyword == "HELP" {
                if f.help.is_some() || arg.is_empty() {
                    return Err(fail("a second or empty HELP".into()));
                }
                f.help = Some(arg.to_owned());
            } else {
                if !f.kind.is_empty() || !f.samples.is_empty() {
                    return Err(fail("a second TYPE, or one after samples".into()));
                }
                if !["counter", "gauge", "histogram"].contains(&arg) {
                    return Err(fail(format!("type {arg:?} (the server serves none)")));
                }
                if openmetrics && arg == "counter" && name.ends_with("_total") {
                    return Err(fail("an OpenMetrics counter family named *_total".into()));
                }
                f.kind = arg.to_owned();
            }
            continue;
        }
        if line.is_empty() || line.starts_with('#') {
            return Err(fail("an empty line or a bad comment".into()));
        }
        let name_end = line
            .find(['{', ' '])
            .ok_or_else(|| fail("no value".into()))?;
        let name = &line[..name_end];
        let (labels, rest) = parse_labels(&line[name_end..]).map_err(&fail)?;
        let value = rest
            .strip_prefix(' ')
            .ok_or_else(|| fail("no space before the value".into()))?;
        if value.contains(' ') {
            return Err(fail("a timestamp or trailing text".into()));
        }
        let value = parse_value(value).map_err(&fail)?;
        let family_name = current
            .clone()
            .ok_or_else(|| fail("a sample before any family".into()))?;
        let f = families.get_mut(&family_name).expect("current");
        if f.kind.is_empty() || f.help.is_none() {
            return Err(fail(format!("family {family_name} lacks HELP or TYPE")));
        }
        let suffix = name
            .strip_prefix(family_name.as_str())
            .ok_or_else(|| fail(format!("a sample of no declared family ({family_name})")))?;
        let ok = match (f.kind.as_str(), openmetrics) {
            ("counter", true) => suffix == "_total",
            ("counter", false) | ("gauge", _) => suffix.is_empty(),
            ("histogram", _) => ["_bucket", "_sum", "_count"].contains(&suffix),
            _ => false,
        };
        if !ok {
            return Err(fail(format!("{name} in a {} family", f.kind)));
        }
        if (suffix == "_bucket") != labels.contains_key("le") {
            return Err(fail(
                "le on a sample that is not a bucket, or none on one".into(),
            ));
        }
        if f.kind == "counter" && (value.is_nan() || value < 0.0) {
            return Err(fail("a negative counter".into()));
        }
        if !seen.insert((name.to_owned(), labels.clone())) {
            return Err(fail("a series twice".into()));
        }
        f.samples.push(Sample {
            name: name.to_owned(),
            labels,
            value,
        });
    }
    if openmetrics && !eof {
        return Err("no # EOF at the end".into());
    }
    for (name, f) in &families {
        if f.kind.is_empty() {
            return Err(format!("family {name} without TYPE"));
        }
        if f.kind == "histogram" {
            check_histogram(name, f)?;
        }
    }
    Ok(Exposition { families })
}

fn check_histogram(name: &str, f: &Family) -> Result<(), String> {
    let mut by_series: BTreeMap<Vec<(String, String)>, Vec<&Sample>> = BTreeMap::new();
    for s in &f.samples {
        let key = s
            .labels
            .iter()
            .filter(|(k, _)| *k != "le")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        by_series.entry(key).or_default().push(s);
    }
    for (labels, samples) in by_series {
        let buckets: Vec<&&Sample> = samples
            .iter()
            .filter(|s| s.name.ends_with("_bucket"))
            .collect();
        let count = samples
            .iter()
            .find(|s| s.name.ends_with("_count"))
            .ok_or(format!("{name} {labels:?} without _count"))?;
        samples
            .iter()
            .find(|s| s.name.ends_with("_sum"))
            .ok_or(format!("{name} {labels:?} without _sum"))?;
        let mut last_le = f64::NEG_INFINITY;
        let mut last_n = 0.0;
        for b in &buckets {
            let le = parse_value(&b.labels["le"])?;
            if le <= last_le || b.value < last_n {
                return Err(format!(
                    "{name} {labels:?}: buckets not ascending or not cumulative"
                ));
            }
            (last_le, last_n) = (le, b.value);
        }
        if last_le != f64::INFINITY || last_n != count.value {
            return Err(format!(
                "{name} {labels:?}: the last bucket is not +Inf equal to _count"
            ));
        }
    }
    Ok(())
}

/// Scrapes `url` (a base URL) in the given format, checking the content type and parsing.
async fn scrape_at(url: &str, openmetrics: bool) -> Exposition {
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let mut req = http.get(format!("{url}/metrics"));
    if openmetrics {
        // What Prometheus sends.
        req = req.header(
            "accept",
            "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.4,*/*;q=0.1",
        );
    }
    let r = req.send().await.expect("GET /metrics");
    assert_eq!(r.status(), 200);
    let ct = r.headers()["content-type"].to_str().unwrap().to_owned();
    assert_eq!(
        ct,
        if openmetrics {
            OPENMETRICS
        } else {
            PROMETHEUS_TEXT
        }
    );
    let text = r.text().await.unwrap();
    parse(&text, openmetrics).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

async fn scrape(server: &Server) -> Exposition {
    scrape_at(&server.url, false).await
}

/// Scrapes until `f` holds (the gauges read in the background, a long-poll being opened).
async fn until(server: &Server, what: &str, f: impl Fn(&Exposition) -> bool) -> Exposition {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let m = scrape(server).await;
        if f(&m) {
            return m;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn pushes(m: &Exposition, outcome: &str) -> f64 {
    m.value("memsync_pushes_total", &[("outcome", outcome)])
}

fn note(name: &str, body: &str) -> String {
    memory(name, &format!("{name} notes"), "project", body)
}

#[test]
fn the_parser_refuses_what_is_not_exposition_text() {
    let good = "# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"1\"} 2\n";
    parse(good, false).unwrap();
    for bad in [
        "a_total 1\n",                                               // no family
        "# HELP a A.\n# TYPE a gauge\nb 1\n",                        // another family's sample
        "# HELP a A.\n# TYPE a gauge\na{x=\"1\"} 1\na{x=\"1\"} 2\n", // a series twice
        "# HELP a A.\n# TYPE a gauge\na{1x=\"1\"} 1\n",              // a bad label name
        "# HELP a A.\n# TYPE a gauge\na one\n",                      // a bad value
        "# HELP a A.\n# TYPE a counter\na -1\n",                     // a negative counter
        "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
        "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n", // no +Inf
        "# HELP a A.\n# TYPE a gauge\na 1\n# EOF\n", // EOF in 0.0.4
    ] {
        assert!(parse(bad, false).is_err(), "{bad}");
    }
    let om = "# HELP a A.\n# TYPE a counter\na_total 1\n# EOF\n";
    parse(om, true).unwrap();
    assert!(parse("# HELP a A.\n# TYPE a counter\na_total 1\n", true).is_err());
    assert!(parse("# HELP a A.\n# TYPE a counter\na 1\n# EOF\n", true).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushes_pulls_streams_and_the_pool_are_counted() {
    let db = TestDb::new().await;
    // A short heartbeat: a closed stream is noticed at its next one.
    let server = Server::start_with(
        Some(db.url.clone()),
        None,
        &["--db-pool-size", "7", "--events-heartbeat", "200ms"],
    );
    let alice = server.client(&server.token("alice", &["acme"]));
    let bob = server.client(&server.token("bob", &["acme"]));

    // Both formats parse before anything happened, and every outcome is there at 0.
    let m = scrape_at(&server.url, true).await;
    for o in [
        "published",
        "merged",
        "unchanged",
        "conflict",
        "refused",
        "proposed",
        "replayed",
        "error",
    ] {
        assert_eq!(pushes(&m, o), 0.0, "{o}");
    }

    // Published, then merged, then a conflict.
    let base = note("style", "Para one.\n\nPara two.\n\nPara three.\n");
    let r = alice
        .push(P, &batch(vec![put("style.md", &base, None)]))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let base_sha = sha_of(&r.body, "style.md").unwrap();
    let ours = base.replace("Para one.", "Para one, alice.");
    let r = alice
        .push(P, &batch(vec![put("style.md", &ours, Some(&base_sha))]))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let theirs = base.replace("Para three.", "Para three, bob.");
    let r = bob
        .push(P, &batch(vec![put("style.md", &theirs, Some(&base_sha))]))
        .await;
    assert_eq!((r.status, &r.body["merged"]), (200, &json!(["style.md"])));
    let clash = base.replace("Para one.", "Para one, bob.");
    let r = bob
        .push(P, &batch(vec![put("style.md", &clash, Some(&base_sha))]))
        .await;
    assert_eq!(r.status, 409, "{}", r.text);
    let m = scrape(&server).await;
    assert_eq!(pushes(&m, "published"), 2.0);
    assert_eq!(pushes(&m, "merged"), 1.0);
    assert_eq!(pushes(&m, "conflict"), 1.0);

    // Refused for a secret: the refusing rule's id is a label.
    let key = aws_key_id(5);
    let r = alice
        .push(
            P,
            &batch(vec![put(
                "aws.md",
                &note("aws", &format!("The key: aws_access_key_id = {key}\n")),
                None,
            )]),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    let rules: BTreeSet<&str> = r.body["error"]["details"]["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    assert!(!rules.is_empty());
    let m = scrape(&server).await;
    assert_eq!(pushes(&m, "refused"), 1.0);
    for rule in &rules {
        assert_eq!(
            m.value("memsync_push_refusals_total", &[("rule", rule)]),
            1.0,
            "{rule}"
        );
    }

    // An idempotent retry is counted apart, as replayed; a push of what is there is unchanged.
    let body = batch(vec![put("retry.md", &note("retry", "Once.\n"), None)]);
    assert_eq!(alice.push_with_key(P, &body, "k-1").await.status, 200);
    assert_eq!(alice.push_with_key(P, &body, "k-1").await.status, 200);
    assert_eq!(alice.push(P, &body).await.status, 200);
    let m = scrape(&server).await;
    assert_eq!(pushes(&m, "published"), 3.0);
    assert_eq!(pushes(&m, "replayed"), 1.0);
    assert_eq!(pushes(&m, "unchanged"), 1.0);

    // A 200 pull and a 304 pull are counted apart.
    let pulls = |m: &Exposition, status: &str| {
        m.get("memsync_pulls_total", &[("status", status)])
            .unwrap_or(0.0)
    };
    let before = scrape(&server).await;
    let r = alice.pull(P, 0).await;
    assert_eq!(r.status, 200);
    let revision = r.body["revision"].as_i64().unwrap();
    let mid = scrape(&server).await;
    assert_eq!(pulls(&mid, "200") - pulls(&before, "200"), 1.0);
    assert_eq!(pulls(&mid, "304") - pulls(&before, "304"), 0.0);
    let r = alice
        .send(
            alice
                .get(&format!("/v1/projects/{P}/changes?since={revision}"))
                .header("if-none-match", format!("\"r{revision}\"")),
        )
        .await;
    assert_eq!(r.status, 304);
    let after = scrape(&server).await;
    assert_eq!(pulls(&after, "200") - pulls(&mid, "200"), 0.0);
    assert_eq!(pulls(&after, "304") - pulls(&mid, "304"), 1.0);

    // A long-poll is open while it waits, and woken by a push.
    let open = |m: &Exposition, kind: &str| m.value("memsync_live_open", &[("kind", kind)]);
    assert_eq!(open(&after, "long_poll"), 0.0);
    let wakeups = after.value("memsync_long_poll_wakeups_total", &[]);
    let poll = tokio::spawn({
        let alice = server.client(&server.token("alice", &["acme"]));
        async move {
            alice
                .fetch(&format!(
                    "/v1/projects/{P}/changes?since={revision}&wait=30"
                ))
                .await
        }
    });
    until(&server, "an open long-poll", |m| {
        open(m, "long_poll") == 1.0
    })
    .await;
    let r = alice
        .push(
            P,
            &batch(vec![put("wake.md", &note("wake", "Up.\n"), None)]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = poll.await.unwrap();
    assert_eq!(r.status, 200, "{}", r.text);
    let m = until(&server, "the long-poll closed", |m| {
        open(m, "long_poll") == 0.0
    })
    .await;
    assert_eq!(
        m.value("memsync_long_poll_wakeups_total", &[]),
        wakeups + 1.0
    );
    assert_eq!(pulls(&m, "200") - pulls(&after, "200"), 1.0);

    // An open event stream shows 1, and 0 once closed.
    assert_eq!(open(&m, "event_stream"), 0.0);
    let stream = alice
        .http
        .execute(
            alice
                .get(&format!("/v1/projects/{P}/events"))
                .build()
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let m = until(&server, "an open stream", |m| {
        open(m, "event_stream") == 1.0
    })
    .await;
    assert_eq!(open(&m, "long_poll"), 0.0);
    drop(stream);
    until(&server, "the stream closed", |m| {
        open(m, "event_stream") == 0.0
    })
    .await;

    // The pool: sane gauges, and acquires were timed.
    let m = scrape_at(&server.url, true).await;
    let in_use = m.value("memsync_db_pool_connections", &[("state", "in_use")]);
    let idle = m.value("memsync_db_pool_connections", &[("state", "idle")]);
    let max = m.value("memsync_db_pool_max_connections", &[]);
    assert_eq!(max, 7.0);
    assert!(
        in_use >= 0.0 && idle >= 0.0 && in_use + idle <= max,
        "{in_use} {idle}"
    );
    assert!(
        in_use + idle >= 1.0,
        "the pool keeps a connection: {in_use} {idle}"
    );
    assert!(m.value("memsync_db_pool_acquire_duration_seconds_count", &[]) >= 10.0);

    // Requests by route template, method and status; a latency histogram by route.
    let push_route = "/v1/projects/{team}/{name}/push";
    assert_eq!(
        m.value(
            "memsync_http_requests_total",
            &[("method", "POST"), ("route", push_route), ("status", "409")]
        ),
        1.0
    );
    assert!(
        m.value(
            "memsync_http_request_duration_seconds_count",
            &[("route", push_route)]
        ) >= 8.0
    );

    // The export: the lag (read in the background) and the leadership. The backlog gauges are
    // the last values read, so a read from before the pushes also says 0: the export has caught
    // up when its four commits are counted and the backlog read after them is empty.
    let m = until(&server, "the export caught up", |m| {
        m.get("memsync_export_commits_total", &[]).unwrap_or(0.0) >= 4.0
            && m.get("memsync_export_pending_revisions", &[]) == Some(0.0)
            && m.get("memsync_export_leader", &[]) == Some(1.0)
    })
    .await;
    assert_eq!(m.value("memsync_export_lag_seconds", &[]), 0.0);
    assert!(
        !m.series()
            .iter()
            .any(|(_, labels)| labels.iter().any(|(_, v)| v.contains("acme"))),
        "a project name in a label"
    );

    // Held for review: proposed.
    let ann = server.client(&forge_token("ann", &[("acme", "admin")], false));
    let carol = server.client(&forge_token("carol", &[("acme", "member")], false));
    let r = ann
        .send(
            ann.http
                .put(format!("{}/v1/admin/projects/{P}/settings", server.url))
                .bearer_auth(&ann.token)
                .json(&json!({ "review": "required", "review_after_days": null })),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = carol
        .push(
            P,
            &batch(vec![put("held.md", &note("held", "For review.\n"), None)]),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let m = scrape(&server).await;
    assert_eq!(pushes(&m, "proposed"), 1.0);
    assert_eq!(pushes(&m, "published"), 4.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invented_methods_and_paths_add_no_series() {
    let (server, _db) = Server::start().await;
    let alice = server.client(&server.token("alice", &["acme"]));
    let http = &alice.http;
    let odd =
        |i: usize| reqwest::Method::from_bytes(format!("X-{i}-{}", i * 7919).as_bytes()).unwrap();
    // One of each kind first: an invented method on a route, an invented path, both.
    let send = |method: reqwest::Method, path: String| {
        http.request(method, format!("{}{path}", server.url))
            .bearer_auth(&alice.token)
            .send()
    };
    let warm = [
        (odd(0), "/v1/me".to_owned()),
        (reqwest::Method::GET, "/no/such/0".to_owned()),
        (odd(1), "/no/such/1".to_owned()),
        (reqwest::Method::GET, "/v1/me".to_owned()),
    ];
    for (method, path) in warm {
        send(method, path).await.unwrap();
    }
    scrape(&server).await;
    let before = scrape(&server).await;
    let other = |m: &Exposition| -> f64 {
        m.families["memsync_http_requests_total"]
            .samples
            .iter()
            .filter(|s| s.labels["method"] == "other")
            .map(|s| s.value)
            .sum()
    };
    for i in 2..1002 {
        let (method, path) = match i % 3 {
            0 => (odd(i), "/v1/me".to_owned()),
            1 => (reqwest::Method::GET, format!("/no/such/{i}")),
            _ => (odd(i), format!("/invented-{i}/path")),
        };
        let r = send(method, path).await.unwrap();
        assert!([404, 405].contains(&r.status().as_u16()), "{}", r.status());
    }
    let after = scrape(&server).await;
    assert_eq!(before.series(), after.series());
    // Every invented method was counted, as `other`.
    assert_eq!(other(&after) - other(&before), 667.0);
    let methods: BTreeSet<String> = after.families["memsync_http_requests_total"]
        .samples
        .iter()
        .map(|s| s.labels["method"].clone())
        .collect();
    assert_eq!(methods, BTreeSet::from(["GET".into(), "other".into()]));
}

/// The address in the server's `metrics listening` log line.
fn metrics_addr(server: &Server) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let found = server.log().lines().find_map(|l| {
            let v: Value = serde_json::from_str(l).ok()?;
            (v["message"] == "metrics listening").then(|| v["addr"].as_str().map(str::to_owned))?
        });
        if let Some(a) = found {
            return a;
        }
        assert!(
            Instant::now() < deadline,
            "no metrics address in the log:\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_listen_moves_metrics_off_the_api_port() {
    let db = TestDb::new().await;
    let mut server = Server::start_with(
        Some(db.url.clone()),
        None,
        &["--metrics-listen", "127.0.0.1:0"],
    );
    let addr = metrics_addr(&server);
    let metrics_url = format!("http://{addr}");
    assert_ne!(metrics_url, server.url);
    let alice = server.client(&server.token("alice", &["acme"]));
    assert_eq!(alice.fetch("/v1/me").await.status, 200);

    // The API's port: 404 for /metrics, in the API's JSON error shape.
    let r = alice
        .send(alice.http.get(format!("{}/metrics", server.url)))
        .await;
    assert_eq!((r.status, r.code()), (404, "not_found"), "{}", r.text);

    // The metrics port: the metrics (the API's requests included), and nothing else.
    let m = scrape_at(&metrics_url, true).await;
    assert_eq!(
        m.value(
            "memsync_http_requests_total",
            &[("method", "GET"), ("route", "/v1/me"), ("status", "200")]
        ),
        1.0
    );
    assert_eq!(
        m.value(
            "memsync_http_requests_total",
            &[("method", "GET"), ("route", "/metrics"), ("status", "404")]
        ),
        1.0
    );
    scrape_at(&metrics_url, false).await;
    let r = alice
        .http
        .get(format!("{metrics_url}/v1/me"))
        .bearer_auth(&alice.token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);

    // It shuts down with the server.
    assert!(server.stop().success());
    assert!(
        std::net::TcpStream::connect(&addr).is_err(),
        "the metrics port is still open"
    );
}

/// Transactions PostgreSQL counted in the server's database (its statistics are flushed by each
/// backend within about a second of going idle).
async fn transactions(db: &TestDb) -> i64 {
    count(
        db,
        "SELECT (xact_commit + xact_rollback)::bigint FROM pg_stat_database WHERE datname = current_database()",
    )
    .await
}

/// The transaction count once it grows by at most 3 in a second (the server's background work),
/// within a minute.
async fn quiet(db: &TestDb) -> i64 {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = transactions(db).await;
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = transactions(db).await;
        if now - last <= 3 {
            return now;
        }
        assert!(
            Instant::now() < deadline,
            "the database kept counting transactions ({} in the last second)",
            now - last
        );
        last = now;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrape_queries_nothing() {
    let db = TestDb::new().await;
    let server = Server::start_with(Some(db.url.clone()), None, &[]);
    let alice = server.client(&server.token("alice", &["acme"]));
    let r = alice
        .push(P, &batch(vec![put("a.md", &note("a", "A.\n"), None)]))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    until(&server, "the export lag read", |m| {
        m.get("memsync_export_pending_revisions", &[]) == Some(0.0)
    })
    .await;
    const N: i64 = 300;

    // The measure sees the server's queries: N requests that each read the database are all
    // counted, once every backend has flushed its statistics; how long that took is how long
    // the scrapes' count is left to settle.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let t0 = transactions(&db).await;
    for _ in 0..N {
        assert_eq!(alice.fetch(&format!("/v1/projects/{P}")).await.status, 200);
    }
    let read = Instant::now();
    let deadline = read + Duration::from_secs(60);
    let mut querying = transactions(&db).await - t0;
    while querying < N {
        assert!(
            Instant::now() < deadline,
            "{N} project reads made {querying} transactions"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
        querying = transactions(&db).await - t0;
    }
    let settle = read.elapsed() + Duration::from_secs(1);

    // N scrapes: only what the server does in the background meanwhile (the export lag every
    // 5 s, the exporter's poll), as in a window as long without scrapes, far from one a scrape.
    // (First the rest of the reads' statistics, some take more than one transaction: on a busy
    // machine they are flushed late, so the count is left until it grows no faster than the
    // background's.)
    tokio::time::sleep(settle).await;
    let t1 = quiet(&db).await;
    let started = Instant::now();
    for _ in 0..N {
        scrape(&server).await;
    }
    let took = started.elapsed();
    tokio::time::sleep(settle).await;
    let scraping = transactions(&db).await - t1;
    let t2 = transactions(&db).await;
    tokio::time::sleep(took + settle).await;
    let idle = transactions(&db).await - t2;
    eprintln!(
        "{N} reads: {querying} transactions (counted within {settle:?}); {N} scrapes: {scraping}; as long idle: {idle}"
    );
    assert!(
        scraping <= idle + N / 10,
        "{N} scrapes came with {scraping} transactions in the server's database ({idle} in as long idle)"
    );
}
