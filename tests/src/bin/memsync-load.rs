//! `memsync-load`: a load generator for a running memsync server.
//!
//! It starts nothing itself. Against `--server` (loopback only unless `--allow-remote`) and with a
//! bearer token whose `teams` claim includes `--team`, it seeds `--projects` projects
//! `<team>/<prefix>-<i>` with `--memories` memories each (idempotently: files that already hold
//! the wanted content are not pushed again), makes a few single-file revisions so that
//! "changes since revision - k" stays small, and then runs each selected phase for `--duration`
//! with `--concurrency` concurrent clients sharing one connection pool:
//!
//! - `nochange-pull`: `GET changes?since=<revision>` with `If-None-Match`, expecting 304;
//! - `changed-pull`: `GET changes?since=<revision - k>` (k = 1..5), expecting 200 and a JSON body;
//! - `push-1`: a single-file push per request to the client's own file `clients/cNNN.md`,
//!   expecting 200 (a 409 takes the server's sha256 as the next base and counts as an error);
//! - `wake`: a long-poll (`changes?since=<revision>&wait=`) on `--replica` (another replica on
//!   the same database), then a single-file push through `--server`; the latency is from the
//!   push's answer to the long-poll's answer, i.e. how long a push takes to reach a client
//!   watching through another replica. A long-poll that answers before the push without it
//!   is an error (the replica did not wait: no long-poll there).
//!
//! Seeding runs `--seed-concurrency` projects at a time; `--seed-only` stops after it.
//!
//! For every phase it prints requests, requests/s, p50/p99/max latency and errors (or one JSON
//! document with `--json`). Latency covers every request that completed before the phase
//! deadline, errors included; requests still in flight at the deadline are abandoned and not
//! counted. Exit status: 0 when every request answered as expected, 1 when some did not or the
//! set-up failed, 2 on usage errors (including a non-loopback server without `--allow-remote`).

use std::collections::HashMap;
use std::net::IpAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Parser, ValueEnum};
use memsync_core::wire::{
    ConflictDetails, ErrorBody, FileState, PullResponse, PushChange, PushOp, PushRequest,
    PushResponse, ValidationDetails,
};
use memsync_core::{ProjectId, Sha256};
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue, IF_NONE_MATCH};
use reqwest::{Client, StatusCode, Url};
use serde::Serialize;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

/// Single-file revisions made after seeding, so that `since=revision-k` (k <= 5) stays small.
const TAIL_REVISIONS: u32 = 5;
/// Largest `k` of `changed-pull`.
const MAX_K: i64 = 5;
/// Files per directory, for both the seeded memories and the push-1 client files.
const FILES_PER_DIR: u32 = 100;
/// Distinct error messages kept per phase.
const MAX_ERROR_SAMPLES: usize = 3;
/// Header that makes a retried push apply once.
const IDEMPOTENCY_KEY: &str = "idempotency-key";

#[derive(Parser, Debug)]
#[command(
    name = "memsync-load",
    version,
    about = "Load generator for a running memsync server (seeds projects, then measures pulls and pushes)"
)]
struct Args {
    /// Base URL of the server; only loopback hosts are accepted without --allow-remote.
    #[arg(long, env = "MEMSYNC_SERVER", default_value = "http://127.0.0.1:7878")]
    server: String,

    /// Bearer token whose `teams` claim includes --team.
    #[arg(long, env = "MEMSYNC_TOKEN", hide_env_values = true)]
    token: String,

    /// Team that owns the load projects.
    #[arg(long, default_value = "load")]
    team: String,

    /// Projects are named `<team>/<prefix>-<i>`.
    #[arg(long, default_value = "load")]
    prefix: String,

    /// Number of projects.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    projects: u32,

    /// Projects seeded (and refreshed) at a time.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=1024))]
    seed_concurrency: u32,

    /// Seed, then exit without running any phase.
    #[arg(long)]
    seed_only: bool,

    /// Another replica's base URL, for the `wake` phase's long-polls (loopback only unless
    /// --allow-remote).
    #[arg(long)]
    replica: Option<String>,

    /// How long a `wake` long-poll may wait, in seconds (the server's `wait=`).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=60))]
    wait: u32,

    /// Memories seeded per project (100 per directory).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(0..=100_000))]
    memories: u32,

    /// Files per seeding push (at most 200).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=200))]
    batch: u32,

    /// Use the projects as they are: no seeding and no tail revisions.
    #[arg(long)]
    skip_seed: bool,

    /// Length of each phase: `10s`, `500ms`, `2m` or plain seconds.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    duration: Duration,

    /// Concurrent clients (tokio tasks sharing one connection pool).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=4096))]
    concurrency: u32,

    /// Phases to run, in this order.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "nochange-pull,changed-pull,push-1"
    )]
    phases: Vec<Phase>,

    /// Per-request timeout.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    timeout: Duration,

    /// Print one JSON document instead of text lines.
    #[arg(long)]
    json: bool,

    /// Allow a server that is not on a loopback address.
    #[arg(long)]
    allow_remote: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Phase {
    #[value(name = "nochange-pull")]
    NochangePull,
    #[value(name = "changed-pull")]
    ChangedPull,
    #[value(name = "push-1")]
    Push1,
    #[value(name = "wake")]
    Wake,
}

impl Phase {
    fn name(self) -> &'static str {
        match self {
            Phase::NochangePull => "nochange-pull",
            Phase::ChangedPull => "changed-pull",
            Phase::Push1 => "push-1",
            Phase::Wake => "wake",
        }
    }
}

/// Parses `10s`, `1.5s`, `500ms`, `2m`, `1h` or plain seconds (`10`), between 1 ms and 1 h.
fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a duration (e.g. 10s, 500ms, 2m or 10)"))?;
    let secs = match unit.trim() {
        "" | "s" | "sec" | "secs" => value,
        "ms" => value / 1000.0,
        "m" | "min" | "mins" => value * 60.0,
        "h" => value * 3600.0,
        other => {
            return Err(format!(
                "unknown duration unit `{other}` (use ms, s, m or h)"
            ));
        }
    };
    if !secs.is_finite() || !(0.001..=3600.0).contains(&secs) {
        return Err(format!("`{s}` is out of range (1ms to 1h)"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Whether the URL's host is loopback: 127.0.0.0/8, ::1 (or v4-mapped loopback) or `localhost`.
fn is_loopback(url: &Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.eq_ignore_ascii_case("localhost") || host.eq_ignore_ascii_case("localhost.") {
        return true;
    }
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V4(a)) => a.is_loopback(),
        Ok(IpAddr::V6(a)) => {
            a.is_loopback() || a.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
        Err(_) => false,
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let _ = rustls::crypto::ring::default_provider().install_default();

    let url = match Url::parse(&args.server) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => u,
        _ => {
            eprintln!(
                "memsync-load: --server `{}` is not an http(s) URL with a host",
                args.server
            );
            return ExitCode::from(2);
        }
    };
    if !args.allow_remote && !is_loopback(&url) {
        eprintln!(
            "memsync-load: refusing to load-test `{}`: its host is not loopback (127.0.0.0/8, ::1, localhost); pass --allow-remote to override",
            args.server
        );
        return ExitCode::from(2);
    }
    if args.token.trim().is_empty() {
        eprintln!("memsync-load: --token (or MEMSYNC_TOKEN) is empty");
        return ExitCode::from(2);
    }
    match &args.replica {
        Some(r) => match Url::parse(r) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => {
                if !args.allow_remote && !is_loopback(&u) {
                    eprintln!(
                        "memsync-load: refusing --replica `{r}`: its host is not loopback; pass --allow-remote to override"
                    );
                    return ExitCode::from(2);
                }
            }
            _ => {
                eprintln!("memsync-load: --replica `{r}` is not an http(s) URL with a host");
                return ExitCode::from(2);
            }
        },
        None if args.phases.contains(&Phase::Wake) && !args.seed_only => {
            eprintln!(
                "memsync-load: the wake phase long-polls another replica: give its URL with --replica"
            );
            return ExitCode::from(2);
        }
        None => {}
    }
    if args.phases.contains(&Phase::Wake) && args.concurrency > args.projects {
        eprintln!(
            "memsync-load: the wake phase needs a project per client (each waits for its own pushes): --concurrency {} is more than --projects {}",
            args.concurrency, args.projects
        );
        return ExitCode::from(2);
    }
    let mut projects = Vec::new();
    for i in 0..args.projects {
        match ProjectId::new(&args.team, &format!("{}-{i}", args.prefix)) {
            Ok(p) => projects.push(p.as_str().to_string()),
            Err(e) => {
                eprintln!("memsync-load: --team/--prefix: {e}");
                return ExitCode::from(2);
            }
        }
    }

    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("memsync-load: cannot start the tokio runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(run(args, projects)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("memsync-load: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// The HTTP side: one shared client with the bearer token as a default header.
struct Api {
    http: Client,
    base: String,
    /// `--replica`'s base URL (the `wake` phase's long-polls).
    replica: Option<String>,
}

enum Pulled {
    NotFound,
    Ok {
        resp: PullResponse,
        etag: Option<String>,
    },
}

impl Api {
    fn new(args: &Args) -> Result<Api> {
        let mut auth = HeaderValue::from_str(&format!("Bearer {}", args.token.trim()))
            .context("the token contains characters that cannot go in a header")?;
        auth.set_sensitive(true);
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, auth);
        let http = Client::builder()
            .default_headers(headers)
            .timeout(args.timeout)
            .connect_timeout(args.timeout.min(Duration::from_secs(5)))
            .pool_max_idle_per_host(args.concurrency as usize + 8)
            .tcp_nodelay(true)
            .no_proxy()
            .user_agent(concat!("memsync-load/", env!("CARGO_PKG_VERSION")))
            .build()
            .context("building the HTTP client")?;
        Ok(Api {
            http,
            base: args.server.trim_end_matches('/').to_string(),
            replica: args
                .replica
                .as_deref()
                .map(|r| r.trim_end_matches('/').to_string()),
        })
    }

    fn changes_url(&self, project: &str, since: i64) -> String {
        format!("{}/v1/projects/{project}/changes?since={since}", self.base)
    }

    fn push_url(&self, project: &str) -> String {
        format!("{}/v1/projects/{project}/push", self.base)
    }

    /// A pull for the set-up (no `If-None-Match`); 404 means the project does not exist yet.
    async fn pull(&self, project: &str, since: i64) -> Result<Pulled> {
        let resp = self
            .http
            .get(self.changes_url(project, since))
            .send()
            .await
            .with_context(|| format!("pulling {project} since {since}"))?;
        let status = resp.status();
        let etag = header_string(resp.headers(), "etag");
        let body = resp.bytes().await.context("reading a pull answer")?;
        match status {
            StatusCode::OK => {
                let resp: PullResponse = serde_json::from_slice(&body)
                    .with_context(|| format!("pull of {project} since {since}: invalid JSON"))?;
                Ok(Pulled::Ok { resp, etag })
            }
            StatusCode::NOT_FOUND => Ok(Pulled::NotFound),
            _ => bail!(
                "pull of {project} since {since}: {}",
                describe(status, &body)
            ),
        }
    }

    /// A push for the set-up, retried (with the same idempotency key) on 429, 5xx and transport
    /// errors.
    async fn push(&self, project: &str, req: &PushRequest) -> Result<PushResponse> {
        let key = uuid::Uuid::new_v4().to_string();
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let sent = self
                .http
                .post(self.push_url(project))
                .header(IDEMPOTENCY_KEY, &key)
                .json(req)
                .send()
                .await;
            let failure = match sent {
                Ok(resp) => {
                    let status = resp.status();
                    let body = resp.bytes().await.context("reading a push answer")?;
                    if status == StatusCode::OK {
                        return serde_json::from_slice(&body)
                            .with_context(|| format!("push to {project}: invalid JSON answer"));
                    }
                    let text = describe(status, &body);
                    if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error() {
                        bail!("push to {project}: {text}");
                    }
                    text
                }
                Err(e) => format!("transport error: {}", error_chain(&e)),
            };
            if attempt >= 4 {
                bail!("push to {project}: {failure} (after {attempt} attempts)");
            }
            tokio::time::sleep(Duration::from_millis(250 * u64::from(attempt))).await;
        }
    }
}

fn header_string(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// `reqwest::Error` with its sources, which carry the useful part ("connection refused").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// One line for an unexpected answer: status, error code and message, and for a 422 the first
/// failures.
fn describe(status: StatusCode, body: &[u8]) -> String {
    match serde_json::from_slice::<ErrorBody>(body) {
        Ok(err) => {
            let mut text = format!(
                "{} {}: {}",
                status.as_u16(),
                err.error.code,
                err.error.message
            );
            if let Ok(v) = serde_json::from_value::<ValidationDetails>(err.error.details) {
                for f in v.failures.iter().take(3) {
                    text.push_str(&format!(" [{} {}: {}]", f.path, f.rule, f.message));
                }
                if v.failures.len() > 3 {
                    text.push_str(&format!(" [+{} more]", v.failures.len() - 3));
                }
            }
            text
        }
        Err(_) => {
            let snippet: String = String::from_utf8_lossy(body).chars().take(160).collect();
            let snippet = snippet.trim();
            if snippet.is_empty() {
                format!("{status}")
            } else {
                format!("{status}: {snippet}")
            }
        }
    }
}

/// What the tool knows of one project between phases.
struct ProjectState {
    id: String,
    exists: bool,
    revision: i64,
    /// The ETag of `changes?since=<revision>`.
    etag: Option<String>,
    /// Live files and their sha256 (tombstones removed).
    files: HashMap<String, Sha256>,
}

impl ProjectState {
    fn new(id: String) -> ProjectState {
        ProjectState {
            id,
            exists: false,
            revision: 0,
            etag: None,
            files: HashMap::new(),
        }
    }

    fn apply(&mut self, changes: &[FileState]) {
        for f in changes {
            match (f.deleted, f.sha256) {
                (false, Some(sha)) => {
                    self.files.insert(f.path.clone(), sha);
                }
                _ => {
                    self.files.remove(&f.path);
                }
            }
        }
    }

    /// Catches up from `revision` and records the ETag of `since=<revision>`.
    async fn refresh(&mut self, api: &Api) -> Result<()> {
        for _ in 0..20 {
            match api.pull(&self.id, self.revision).await? {
                Pulled::NotFound => {
                    self.exists = false;
                    self.revision = 0;
                    self.etag = None;
                    self.files.clear();
                    return Ok(());
                }
                Pulled::Ok { resp, etag } => {
                    self.exists = true;
                    self.apply(&resp.changes);
                    if resp.revision == self.revision {
                        self.etag = etag;
                        return Ok(());
                    }
                    self.revision = resp.revision;
                }
            }
        }
        bail!(
            "{}: the revision kept moving while catching up (someone else is pushing?)",
            self.id
        )
    }
}

/// Deterministic filler text: a small xorshift generator over an innocuous vocabulary.
struct Filler(u64);

impl Filler {
    #[rustfmt::skip]
    const WORDS: &'static [&'static str] = &[
        "the", "service", "build", "cache", "deploy", "review", "schema", "migration", "tests",
        "staging", "release", "branch", "module", "handler", "queue", "worker", "index", "query",
        "latency", "budget", "owner", "team", "runbook", "alert", "dashboard", "metric", "retry",
        "backoff", "config", "flag", "rollout", "feature", "client", "server", "storage",
        "snapshot", "revision", "merge", "conflict", "layout", "docs", "guide", "convention",
        "naming", "format", "lint", "check", "before", "after", "always", "usually", "prefer",
        "keep", "avoid", "small", "stable", "fast", "clear", "weekly", "nightly", "on", "with",
        "for", "in", "and", "of",
    ];

    fn new(seed: u64) -> Filler {
        Filler(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn paragraph(&mut self, out: &mut String) {
        let sentences = 2 + self.below(3);
        for s in 0..sentences {
            if s > 0 {
                out.push(' ');
            }
            let words = 6 + self.below(10);
            for w in 0..words {
                let word = Self::WORDS[self.below(Self::WORDS.len() as u64) as usize];
                if w == 0 {
                    let mut cs = word.chars();
                    if let Some(first) = cs.next() {
                        out.extend(first.to_uppercase());
                        out.push_str(cs.as_str());
                    }
                } else {
                    out.push(' ');
                    out.push_str(word);
                }
            }
            out.push('.');
        }
        out.push('\n');
    }
}

fn memory_path(j: u32) -> String {
    format!("d{:02}/mem-{j:04}.md", j / FILES_PER_DIR)
}

fn memory_content(project: u32, j: u32) -> String {
    let mut out = format!(
        "---\nname: mem-{j}\ndescription: load-test memory {j} of project {project}\ntype: project\n---\n"
    );
    out.push_str(&format!(
        "Memory {j} of project {project}, written by the memsync load tool.\n\n"
    ));
    let mut filler = Filler::new((u64::from(project) << 32) | u64::from(j));
    let paragraphs = 1 + filler.below(3);
    for p in 0..paragraphs {
        if p > 0 {
            out.push('\n');
        }
        filler.paragraph(&mut out);
    }
    out
}

fn client_path(c: u32) -> String {
    if c < FILES_PER_DIR {
        format!("clients/c{c:03}.md")
    } else {
        format!("clients/g{:02}/c{c:03}.md", c / FILES_PER_DIR)
    }
}

fn client_content(c: u32, run: i64, n: u64) -> String {
    let mut out = format!(
        "---\nname: load-client-{c:03}\ndescription: load-test scratch memory of client {c}\ntype: project\n---\n"
    );
    out.push_str(&format!(
        "Client {c} of load run {run} wrote this in push {n}.\n\n"
    ));
    Filler::new((u64::from(c) << 40) ^ n).paragraph(&mut out);
    out
}

fn put(path: String, base: Option<Sha256>, content: String) -> PushChange {
    PushChange {
        path,
        op: PushOp::Put,
        base_sha256: base,
        content: Some(content),
        named_paths: Vec::new(),
    }
}

/// Seeds one project: every memory whose content differs from the wanted one, then a few
/// single-file revisions.
async fn seed(
    api: &Api,
    state: &mut ProjectState,
    index: u32,
    memories: u32,
    batch: u32,
    run: i64,
    total: usize,
) -> Result<()> {
    state.refresh(api).await?;
    let mut todo = Vec::new();
    for j in 0..memories {
        let path = memory_path(j);
        let content = memory_content(index, j);
        let existing = state.files.get(&path).copied();
        if existing != Some(Sha256::of(content.as_bytes())) {
            todo.push(put(path, existing, content));
        }
    }
    let written = todo.len();
    let mut todo = todo.into_iter().peekable();
    while todo.peek().is_some() {
        let changes: Vec<PushChange> = todo.by_ref().take(batch as usize).collect();
        let resp = api
            .push(
                &state.id,
                &PushRequest {
                    changes,
                    allow_mass_delete: false,
                    allow_purged: false,
                    provenance: None,
                },
            )
            .await?;
        state.apply(&resp.changes);
        state.revision = state.revision.max(resp.revision);
        state.exists = true;
    }
    for t in 0..TAIL_REVISIONS.min(memories) {
        let path = memory_path(t);
        let mut content = memory_content(index, t);
        content.push_str(&format!("\nTouched by load run {run}, step {t}.\n"));
        let base = state.files.get(&path).copied();
        let resp = api
            .push(
                &state.id,
                &PushRequest {
                    changes: vec![put(path, base, content)],
                    allow_mass_delete: false,
                    allow_purged: false,
                    provenance: None,
                },
            )
            .await?;
        state.apply(&resp.changes);
        state.revision = state.revision.max(resp.revision);
    }
    // One line per project, or per thousandth project when there are many.
    if total <= 20 || index as usize % 1000 == 999 {
        eprintln!(
            "memsync-load: seeded {}: {written} of {} memories written, revision {}",
            state.id, memories, state.revision
        );
    }
    Ok(())
}

/// A read-only view of one project for the clients of a phase.
struct PhaseProject {
    id: String,
    revision: i64,
    etag: Option<String>,
    /// The current sha256 of each client's file, by client number.
    client_bases: Vec<Option<Sha256>>,
}

#[derive(Default)]
struct TaskStats {
    latencies_us: Vec<u32>,
    errors: u64,
    samples: Vec<String>,
}

impl TaskStats {
    fn record(&mut self, elapsed: Duration, outcome: Result<(), String>) {
        self.latencies_us
            .push(u32::try_from(elapsed.as_micros()).unwrap_or(u32::MAX));
        if let Err(msg) = outcome {
            self.errors += 1;
            if self.samples.len() < MAX_ERROR_SAMPLES && !self.samples.contains(&msg) {
                self.samples.push(msg);
            }
        }
    }
}

#[derive(Serialize)]
struct PhaseResult {
    phase: &'static str,
    requests: u64,
    errors: u64,
    seconds: f64,
    requests_per_second: f64,
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
    error_samples: Vec<String>,
}

/// Nearest-rank percentile of sorted microseconds, in milliseconds.
fn percentile_ms(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    f64::from(sorted[rank.clamp(1, sorted.len()) - 1]) / 1000.0
}

/// Outcome of one request: `Err(message)` for an unexpected status or a transport error, with
/// whether it was a transport error (the loop then pauses briefly instead of spinning).
type Outcome = Result<(), (String, bool)>;

fn transport(e: &reqwest::Error) -> (String, bool) {
    let kind = if e.is_timeout() {
        "timeout"
    } else if e.is_connect() {
        "connect error"
    } else {
        "transport error"
    };
    (format!("{kind}: {}", error_chain(e)), true)
}

async fn unexpected(resp: reqwest::Response, expected: StatusCode) -> (String, bool) {
    let status = resp.status();
    match resp.bytes().await {
        Ok(body) => (
            format!(
                "{} (expected {})",
                describe(status, &body),
                expected.as_u16()
            ),
            false,
        ),
        Err(e) => transport(&e),
    }
}

async fn nochange_pull(api: &Api, p: &PhaseProject) -> Outcome {
    let mut req = api.http.get(api.changes_url(&p.id, p.revision));
    if let Some(etag) = &p.etag {
        req = req.header(IF_NONE_MATCH, etag);
    }
    let resp = req.send().await.map_err(|e| transport(&e))?;
    if resp.status() != StatusCode::NOT_MODIFIED {
        return Err(unexpected(resp, StatusCode::NOT_MODIFIED).await);
    }
    resp.bytes().await.map_err(|e| transport(&e))?;
    Ok(())
}

async fn changed_pull(api: &Api, p: &PhaseProject, k: i64) -> Outcome {
    let since = (p.revision - k).max(0);
    let resp = api
        .http
        .get(api.changes_url(&p.id, since))
        .send()
        .await
        .map_err(|e| transport(&e))?;
    if resp.status() != StatusCode::OK {
        return Err(unexpected(resp, StatusCode::OK).await);
    }
    let body = resp.bytes().await.map_err(|e| transport(&e))?;
    let parsed: PullResponse = serde_json::from_slice(&body)
        .map_err(|e| (format!("200 with an invalid PullResponse: {e}"), false))?;
    if parsed.since != since {
        return Err((
            format!("200 with since={} for since={since}", parsed.since),
            false,
        ));
    }
    Ok(())
}

/// A single-file push; Ok: the revision it made (or the project's, if it made none).
async fn push_one(
    api: &Api,
    project: &str,
    path: &str,
    base: &mut Option<Sha256>,
    content: String,
) -> Result<i64, (String, bool)> {
    let request = PushRequest {
        changes: vec![put(path.to_string(), *base, content)],
        allow_mass_delete: false,
        allow_purged: false,
        provenance: None,
    };
    let resp = api
        .http
        .post(api.push_url(project))
        .header(IDEMPOTENCY_KEY, uuid::Uuid::new_v4().to_string())
        .json(&request)
        .send()
        .await
        .map_err(|e| transport(&e))?;
    let status = resp.status();
    let body = resp.bytes().await.map_err(|e| transport(&e))?;
    match status {
        StatusCode::OK => {
            let parsed: PushResponse = serde_json::from_slice(&body)
                .map_err(|e| (format!("200 with an invalid PushResponse: {e}"), false))?;
            match parsed.changes.iter().find(|f| f.path == path) {
                Some(f) if !f.deleted && f.sha256.is_some() => {
                    *base = f.sha256;
                    Ok(parsed.revision)
                }
                _ => {
                    // Fall back to what we sent, and report the contract breach.
                    *base = request.changes[0]
                        .content
                        .as_deref()
                        .map(|c| Sha256::of(c.as_bytes()));
                    Err((
                        "200 without the pushed path (and its sha256) in `changes`".to_string(),
                        false,
                    ))
                }
            }
        }
        StatusCode::CONFLICT => {
            if let Ok(err) = serde_json::from_slice::<ErrorBody>(&body)
                && let Ok(details) = serde_json::from_value::<ConflictDetails>(err.error.details)
                && let Some(c) = details.conflicts.iter().find(|c| c.path == path)
            {
                *base = c
                    .server
                    .as_ref()
                    .filter(|s| !s.deleted)
                    .and_then(|s| s.sha256);
            }
            Err((format!("{} (expected 200)", describe(status, &body)), false))
        }
        _ => Err((format!("{} (expected 200)", describe(status, &body)), false)),
    }
}

/// One `wake` round on `project`, known to be at `since` (only this client pushes to it): a
/// long-poll on the replica, then a push through the server. Ok: the time from the push's answer
/// to the long-poll's (zero when the long-poll answered first), and the project's new revision.
async fn wake_once(
    api: &Api,
    project: &str,
    path: &str,
    base: &mut Option<Sha256>,
    since: i64,
    content: String,
    wait: u32,
) -> Result<(Duration, i64), (String, bool)> {
    let Some(replica) = api.replica.as_deref() else {
        return Err(("the wake phase needs --replica".to_string(), false));
    };
    let poll = api
        .http
        .get(format!(
            "{replica}/v1/projects/{project}/changes?since={since}&wait={wait}"
        ))
        .timeout(Duration::from_secs(u64::from(wait) + 10))
        .send();
    let poll = tokio::spawn(async move {
        let resp = poll.await?;
        let status = resp.status();
        let body = resp.bytes().await?;
        Ok::<_, reqwest::Error>((status, body, Instant::now()))
    });
    // Let the long-poll reach the replica first; if the push still commits before the replica
    // registers the wait, the replica answers at once with the new revision, which is fine.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let poll_done_early = poll.is_finished();
    let revision = push_one(api, project, path, base, content).await?;
    let pushed = Instant::now();
    let (status, body, answered) = match poll.await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return Err(transport(&e)),
        Err(e) => return Err((format!("the long-poll task failed: {e}"), false)),
    };
    let head = match status {
        StatusCode::OK => {
            let parsed: PullResponse = serde_json::from_slice(&body).map_err(|e| {
                (
                    format!("long-poll: 200 with an invalid PullResponse: {e}"),
                    false,
                )
            })?;
            parsed.head.unwrap_or(parsed.revision)
        }
        StatusCode::NOT_MODIFIED => since,
        _ => return Err((format!("long-poll: {}", describe(status, &body)), false)),
    };
    if head < revision {
        let why = if poll_done_early || answered < pushed {
            "the replica answered the long-poll before the push was applied, without it: it does not wait (no `wait=` support?)"
        } else {
            "the long-poll ended without the push's revision"
        };
        return Err((
            format!("{why} (since {since}, pushed revision {revision}, answered {head})"),
            false,
        ));
    }
    Ok((answered.saturating_duration_since(pushed), revision))
}

/// One client of a phase: requests back to back until the deadline, round-robin over projects.
async fn client_loop(
    phase: Phase,
    api: Arc<Api>,
    projects: Arc<Vec<PhaseProject>>,
    client: u32,
    deadline: tokio::time::Instant,
    run: i64,
    wait: u32,
) -> TaskStats {
    let mut stats = TaskStats::default();
    let path = client_path(client);
    let mut bases: Vec<Option<Sha256>> = projects
        .iter()
        .map(|p| p.client_bases[client as usize])
        .collect();
    let mut sinces: Vec<i64> = projects.iter().map(|p| p.revision).collect();
    let mut i: u64 = 0;
    while tokio::time::Instant::now() < deadline {
        // A wake client keeps to its own project, so that it alone moves that project's revision.
        let pi = if phase == Phase::Wake {
            client as usize % projects.len()
        } else {
            (client as usize + i as usize) % projects.len()
        };
        let project = &projects[pi];
        let started = Instant::now();
        let request = async {
            match phase {
                Phase::NochangePull => nochange_pull(&api, project).await.map(|()| None),
                Phase::ChangedPull => changed_pull(&api, project, 1 + (i as i64 % MAX_K))
                    .await
                    .map(|()| None),
                Phase::Push1 => {
                    let content = client_content(client, run, i);
                    push_one(&api, &project.id, &path, &mut bases[pi], content)
                        .await
                        .map(|_| None)
                }
                Phase::Wake => {
                    let content = client_content(client, run, i);
                    let (latency, revision) = wake_once(
                        &api,
                        &project.id,
                        &path,
                        &mut bases[pi],
                        sinces[pi],
                        content,
                        wait,
                    )
                    .await?;
                    sinces[pi] = revision;
                    Ok(Some(latency))
                }
            }
        };
        let Ok(outcome) = tokio::time::timeout_at(deadline, request).await else {
            break; // abandoned at the deadline: not counted
        };
        let elapsed = match &outcome {
            Ok(Some(latency)) => *latency,
            _ => started.elapsed(),
        };
        let pause = matches!(outcome, Err((_, true)));
        stats.record(elapsed, outcome.map(|_| ()).map_err(|(msg, _)| msg));
        if pause {
            let until = (tokio::time::Instant::now() + Duration::from_millis(10)).min(deadline);
            tokio::time::sleep_until(until).await;
        }
        i += 1;
    }
    stats
}

async fn run_phase(
    phase: Phase,
    api: &Arc<Api>,
    projects: Arc<Vec<PhaseProject>>,
    args: &Args,
    run: i64,
) -> Result<PhaseResult> {
    let started = Instant::now();
    let deadline = tokio::time::Instant::now() + args.duration;
    let mut set = JoinSet::new();
    for client in 0..args.concurrency {
        set.spawn(client_loop(
            phase,
            Arc::clone(api),
            Arc::clone(&projects),
            client,
            deadline,
            run,
            args.wait,
        ));
    }
    let mut latencies = Vec::new();
    let mut errors = 0u64;
    let mut samples: Vec<String> = Vec::new();
    while let Some(joined) = set.join_next().await {
        let stats = joined.context("a client task failed")?;
        latencies.extend_from_slice(&stats.latencies_us);
        errors += stats.errors;
        for s in stats.samples {
            if samples.len() < MAX_ERROR_SAMPLES && !samples.contains(&s) {
                samples.push(s);
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    latencies.sort_unstable();
    let requests = latencies.len() as u64;
    Ok(PhaseResult {
        phase: phase.name(),
        requests,
        errors,
        seconds,
        requests_per_second: if seconds > 0.0 {
            requests as f64 / seconds
        } else {
            0.0
        },
        p50_ms: percentile_ms(&latencies, 50.0),
        p99_ms: percentile_ms(&latencies, 99.0),
        max_ms: latencies.last().map_or(0.0, |&m| f64::from(m) / 1000.0),
        error_samples: samples,
    })
}

/// Refreshes every project (in parallel) from its last known revision.
async fn refresh_all(
    api: &Arc<Api>,
    states: Vec<ProjectState>,
    concurrency: u32,
) -> Result<Vec<ProjectState>> {
    let permits = Arc::new(Semaphore::new(concurrency as usize));
    let mut set = JoinSet::new();
    for (i, mut st) in states.into_iter().enumerate() {
        let api = Arc::clone(api);
        let permits = Arc::clone(&permits);
        set.spawn(async move {
            let r = match permits.acquire().await {
                Ok(_permit) => st.refresh(&api).await,
                Err(e) => Err(e.into()),
            };
            (i, st, r)
        });
    }
    let mut out: Vec<Option<ProjectState>> = Vec::new();
    while let Some(joined) = set.join_next().await {
        let (i, st, r) = joined.context("a refresh task failed")?;
        r?;
        if out.len() <= i {
            out.resize_with(i + 1, || None);
        }
        out[i] = Some(st);
    }
    Ok(out.into_iter().flatten().collect())
}

#[derive(Serialize)]
struct Report<'a> {
    server: &'a str,
    team: &'a str,
    projects: Vec<&'a str>,
    memories_per_project: u32,
    seeded: bool,
    concurrency: u32,
    duration_seconds: f64,
    phases: &'a [PhaseResult],
}

/// Runs everything; `Ok(true)` when every phase request answered as expected.
async fn run(args: Args, project_ids: Vec<String>) -> Result<bool> {
    let api = Arc::new(Api::new(&args)?);
    let run = chrono::Utc::now().timestamp();
    let mut phases = Vec::new();
    for p in &args.phases {
        if !phases.contains(p) {
            phases.push(*p);
        }
    }

    let mut states: Vec<ProjectState> = project_ids.into_iter().map(ProjectState::new).collect();
    if !args.skip_seed {
        let (memories, batch) = (args.memories, args.batch);
        let total = states.len();
        let permits = Arc::new(Semaphore::new(args.seed_concurrency as usize));
        let mut set = JoinSet::new();
        for (i, mut st) in states.into_iter().enumerate() {
            let api = Arc::clone(&api);
            let permits = Arc::clone(&permits);
            set.spawn(async move {
                let r = match permits.acquire().await {
                    Ok(_permit) => seed(&api, &mut st, i as u32, memories, batch, run, total).await,
                    Err(e) => Err(e.into()),
                };
                (i, st, r)
            });
        }
        let mut out: Vec<Option<ProjectState>> = Vec::new();
        let mut first_err = None;
        while let Some(joined) = set.join_next().await {
            let (i, st, r) = joined.context("a seeding task failed")?;
            if let Err(e) = r {
                first_err.get_or_insert(e.context(format!("seeding {}", st.id)));
            }
            if out.len() <= i {
                out.resize_with(i + 1, || None);
            }
            out[i] = Some(st);
        }
        if let Some(e) = first_err {
            return Err(e);
        }
        states = out.into_iter().flatten().collect();
    }

    if args.seed_only {
        return Ok(true);
    }
    let mut results = Vec::new();
    for phase in phases {
        states = refresh_all(&api, states, args.seed_concurrency).await?;
        for st in &states {
            if !st.exists && phase != Phase::Push1 {
                eprintln!(
                    "memsync-load: warning: {} does not exist; {} requests to it will fail",
                    st.id,
                    phase.name()
                );
            } else if phase == Phase::NochangePull && st.etag.is_none() {
                eprintln!(
                    "memsync-load: warning: {} answered without an ETag; expect no 304",
                    st.id
                );
            } else if phase == Phase::ChangedPull && st.revision < MAX_K {
                eprintln!(
                    "memsync-load: warning: {} is only at revision {}; changed-pull becomes a full pull",
                    st.id, st.revision
                );
            }
        }
        let snapshot: Vec<PhaseProject> = states
            .iter()
            .map(|st| PhaseProject {
                id: st.id.clone(),
                revision: st.revision,
                etag: st.etag.clone(),
                client_bases: (0..args.concurrency)
                    .map(|c| st.files.get(&client_path(c)).copied())
                    .collect(),
            })
            .collect();
        if !args.json {
            eprintln!(
                "memsync-load: {} for {:?} with {} clients over {} projects",
                phase.name(),
                args.duration,
                args.concurrency,
                states.len()
            );
        }
        let result = run_phase(phase, &api, Arc::new(snapshot), &args, run).await?;
        if !args.json {
            print_line(&result);
        }
        results.push(result);
    }

    if args.json {
        let report = Report {
            server: &args.server,
            team: &args.team,
            projects: states.iter().map(|s| s.id.as_str()).collect(),
            memories_per_project: args.memories,
            seeded: !args.skip_seed,
            concurrency: args.concurrency,
            duration_seconds: args.duration.as_secs_f64(),
            phases: &results,
        };
        println!("{}", serde_json::to_string_pretty(&report)?);
    }
    Ok(results.iter().all(|r| r.errors == 0))
}

fn print_line(r: &PhaseResult) {
    println!(
        "{:<14} requests={} rps={:.1} p50_ms={:.3} p99_ms={:.3} max_ms={:.3} errors={}",
        r.phase, r.requests, r.requests_per_second, r.p50_ms, r.p99_ms, r.max_ms, r.errors
    );
    for s in &r.error_samples {
        println!("  error: {s}");
    }
}
