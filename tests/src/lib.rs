//! Test harness: a fresh database per test on a shared PostgreSQL, and the real
//! `memsync-server` binary started on a loopback port against it.
//!
//! The shared cluster comes from `MEMSYNC_TEST_DATABASE_URL` (an admin URL), which `scripts/test`
//! sets after starting a throwaway cluster.

pub mod agents;
pub mod corpus;
pub mod feedback_corpus;
pub mod feedback_eval;
pub mod feedback_fixtures;
pub mod idp;
pub mod spec;
pub mod webdriver;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::Context;
use serde_json::Value;
use sqlx::Connection;

/// The HS256 secret every test server signs with, so tests can also forge tokens.
pub const TEST_JWT_SECRET: &str = "memsync-test-secret-0123456789-abcdefghijklmnopqrstuvwxyz";

/// Path of a binary built by this workspace (`target/<profile>/<name>`).
pub fn bin_path(name: &str) -> PathBuf {
    let var = format!("MEMSYNC_{}_BIN", name.to_uppercase().replace('-', "_"));
    if let Some(p) = std::env::var_os(var) {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("current_exe");
    let mut dir = exe.parent().expect("exe dir").to_path_buf();
    if dir.ends_with("deps") {
        dir.pop();
    }
    let p = dir.join(name);
    assert!(
        p.is_file(),
        "{} is not built; run `cargo build --workspace --bins` first (scripts/test does)",
        p.display()
    );
    p
}

/// The admin URL of the shared test cluster.
pub fn cluster_url() -> String {
    std::env::var("MEMSYNC_TEST_DATABASE_URL").unwrap_or_else(|_| {
        panic!("MEMSYNC_TEST_DATABASE_URL is not set: run the tests with `scripts/test`, which starts a PostgreSQL for them")
    })
}

/// A fresh, empty database on the shared cluster.
pub struct TestDb {
    pub name: String,
    pub url: String,
}

impl TestDb {
    pub async fn new() -> TestDb {
        let admin = cluster_url();
        let name = format!("t_{}", uuid::Uuid::new_v4().simple());
        let mut conn = sqlx::PgConnection::connect(&admin)
            .await
            .expect("connect to test cluster");
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut conn)
            .await
            .expect("create test database");
        let url = with_database(&admin, &name);
        TestDb { name, url }
    }

    pub async fn connect(&self) -> sqlx::PgConnection {
        sqlx::PgConnection::connect(&self.url)
            .await
            .expect("connect to test database")
    }
}

/// Replaces the database name of a postgres URL.
fn with_database(url: &str, db: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let base = match base[scheme_end..].find('/') {
        Some(i) => &base[..scheme_end + i],
        None => base,
    };
    match query {
        Some(q) => format!("{base}/{db}?{q}"),
        None => format!("{base}/{db}"),
    }
}

/// A running `memsync-server` process.
pub struct Server {
    child: Option<Child>,
    pub url: String,
    pub database_url: Option<String>,
    pub data_dir: PathBuf,
    _tmp: Option<tempfile::TempDir>,
    extra_args: Vec<String>,
    log_path: PathBuf,
    /// Sign with the key the server generates in its data dir instead of TEST_JWT_SECRET.
    generated_key: bool,
    /// No export directory: a stateless API replica (with a database URL, the harness otherwise
    /// gives every server `<data-dir>/git` unless its arguments name one).
    stateless: bool,
    /// Extra environment variables of the server process.
    env: Vec<(String, String)>,
}

impl Server {
    /// Starts a server on a fresh database.
    pub async fn start() -> (Server, TestDb) {
        let db = TestDb::new().await;
        let server = Server::start_with(Some(db.url.clone()), None, &[]);
        (server, db)
    }

    /// Starts a server with the given database URL (None: embedded PostgreSQL) and data dir
    /// (None: a fresh temporary one).
    pub fn start_with(
        database_url: Option<String>,
        data_dir: Option<PathBuf>,
        extra: &[&str],
    ) -> Server {
        let (tmp, data_dir) = match data_dir {
            Some(d) => (None, d),
            None => {
                let t = tempfile::Builder::new()
                    .prefix("memsync-test-")
                    .tempdir()
                    .expect("tempdir");
                let d = t.path().join("data");
                (Some(t), d)
            }
        };
        std::fs::create_dir_all(&data_dir).expect("data dir");
        let log_path = data_dir.join("server.log");
        let mut s = Server {
            child: None,
            url: String::new(),
            database_url,
            data_dir,
            _tmp: tmp,
            extra_args: extra.iter().map(|s| s.to_string()).collect(),
            log_path,
            generated_key: false,
            stateless: false,
            env: Vec::new(),
        };
        s.spawn();
        s
    }

    /// Starts a server on `database_url` (a fresh temporary data dir) with extra environment
    /// variables.
    pub fn start_with_env(database_url: &str, extra: &[&str], env: &[(&str, &str)]) -> Server {
        let mut s = Server::start_stateless_unspawned(database_url, extra);
        s.stateless = false;
        s.env = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        s.spawn();
        s
    }

    /// Starts a stateless API replica on `database_url`: no export directory, so it runs no git
    /// export and forwards clones to the replica that does.
    pub fn start_stateless(database_url: &str, extra: &[&str]) -> Server {
        let mut s = Server::start_stateless_unspawned(database_url, extra);
        s.spawn();
        s
    }

    fn start_stateless_unspawned(database_url: &str, extra: &[&str]) -> Server {
        let t = tempfile::Builder::new()
            .prefix("memsync-test-")
            .tempdir()
            .expect("tempdir");
        let data_dir = t.path().join("data");
        std::fs::create_dir_all(&data_dir).expect("data dir");
        Server {
            child: None,
            url: String::new(),
            database_url: Some(database_url.to_owned()),
            log_path: data_dir.join("server.log"),
            data_dir,
            _tmp: Some(t),
            extra_args: extra.iter().map(|s| s.to_string()).collect(),
            generated_key: false,
            stateless: true,
            env: Vec::new(),
        }
    }

    /// Starts a server on the embedded PostgreSQL in `data_dir`, with the signing key it
    /// generates there: exactly what `memsync-server` alone does.
    pub fn start_embedded(data_dir: PathBuf) -> Server {
        std::fs::create_dir_all(&data_dir).expect("data dir");
        let mut s = Server {
            child: None,
            url: String::new(),
            database_url: None,
            log_path: data_dir.join("server.log"),
            data_dir,
            _tmp: None,
            extra_args: Vec::new(),
            generated_key: true,
            stateless: false,
            env: Vec::new(),
        };
        s.spawn();
        s
    }

    /// Like [`Server::start_embedded`], with extra arguments for `serve`.
    pub fn start_embedded_with(data_dir: PathBuf, extra: &[&str]) -> Server {
        std::fs::create_dir_all(&data_dir).expect("data dir");
        let mut s = Server {
            child: None,
            url: String::new(),
            database_url: None,
            log_path: data_dir.join("server.log"),
            data_dir,
            _tmp: None,
            extra_args: extra.iter().map(|s| s.to_string()).collect(),
            generated_key: true,
            stateless: false,
            env: Vec::new(),
        };
        s.spawn();
        s
    }

    /// True while the server process runs (it has not exited, nor been restarted by the test).
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(bin_path("memsync-server"));
        cmd.arg("--data-dir").arg(&self.data_dir);
        if self.generated_key {
            cmd.env_remove("MEMSYNC_JWT_SECRET");
        } else {
            cmd.env("MEMSYNC_JWT_SECRET", TEST_JWT_SECRET);
        }
        cmd.env("MEMSYNC_LOG_FORMAT", "json")
            .env_remove("DATABASE_URL")
            .env_remove("MEMSYNC_DATABASE_URL")
            .env_remove("MEMSYNC_EXPORT_DIR");
        if let Some(url) = &self.database_url {
            cmd.arg("--database-url").arg(url);
            // With a database URL only a server given an export directory exports; the tests'
            // servers get one in their data dir (as the embedded mode's default) unless stateless.
            if !self.stateless {
                cmd.env("MEMSYNC_EXPORT_DIR", self.data_dir.join("git"));
            }
        }
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log_path)
            .expect("server log");
        let mut cmd = self.command();
        cmd.arg("serve")
            .arg("--listen")
            .arg("127.0.0.1:0")
            .args(&self.extra_args);
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()
            .expect("spawn memsync-server");
        let line = match first_stdout_line(&mut child, Duration::from_secs(120)) {
            Ok(l) => l,
            Err(_) => {
                let _ = child.kill();
                panic!(
                    "memsync-server did not start; its log:\n{}",
                    std::fs::read_to_string(&self.log_path).unwrap_or_default()
                );
            }
        };
        let url = line
            .strip_prefix("memsync-server listening on ")
            .unwrap_or_else(|| panic!("unexpected first line: {line}"))
            .to_owned();
        self.url = url;
        self.child = Some(child);
    }

    /// The server's log so far (stderr).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).expect("running")
    }

    /// SIGKILL: no graceful shutdown.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM and wait for a graceful exit.
    pub fn stop(&mut self) -> std::process::ExitStatus {
        let mut c = self.child.take().expect("running");
        let pid = nix::unistd::Pid::from_raw(c.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        for _ in 0..600 {
            if let Ok(Some(st)) = c.try_wait() {
                return st;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = c.kill();
        c.wait().expect("wait")
    }

    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// Runs `memsync-server <args>` against the same database and data dir.
    pub fn cli(&self, args: &[&str]) -> std::process::Output {
        self.command()
            .args(args)
            .output()
            .expect("run memsync-server")
    }

    /// Issues a token with the server's own CLI: `teams` like `["acme", "ops:admin"]`.
    pub fn token(&self, user: &str, teams: &[&str]) -> String {
        let mut args = vec!["token", "issue", "--user", user, "--email"];
        let email = format!("{user}@example.com");
        args.push(&email);
        for t in teams {
            args.push("--team");
            args.push(t);
        }
        let out = self.cli(&args);
        assert!(
            out.status.success(),
            "token issue failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .expect("utf8")
            .trim()
            .to_owned()
    }

    pub fn client(&self, token: &str) -> Client {
        Client::new(&self.url, token)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A token signed with [`TEST_JWT_SECRET`] without the server's CLI, valid for an hour: it is in
/// no token table, so no API call can revoke it. `teams` like `[("acme", "member")]`.
pub fn forge_token(sub: &str, teams: &[(&str, &str)], admin: bool) -> String {
    let now = chrono::Utc::now().timestamp();
    let teams: serde_json::Map<String, Value> = teams
        .iter()
        .map(|(t, role)| ((*t).to_owned(), Value::from(*role)))
        .collect();
    let claims = serde_json::json!({
        "sub": sub, "name": sub, "email": format!("{sub}@example.com"), "teams": teams,
        "admin": admin, "jti": uuid::Uuid::new_v4().to_string(), "iat": now, "exp": now + 3600,
        "iss": "memsync", "aud": "memsync",
    });
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(TEST_JWT_SECRET.as_bytes()).expect("HS256 key"),
    )
    .expect("sign a test token")
}

/// How many file descriptors process `pid` has open.
pub fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("/proc/<pid>/fd")
        .count()
}

/// A minimal HTTP client for tests: raw status and JSON.
#[derive(Clone)]
pub struct Client {
    pub http: reqwest::Client,
    pub base: String,
    pub token: String,
}

pub struct Resp {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
    pub text: String,
}

impl Resp {
    pub fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }
}

impl Client {
    pub fn new(base: &str, token: &str) -> Client {
        let _ = rustls::crypto::ring::default_provider().install_default();
        Client {
            http: reqwest::Client::builder()
                .no_proxy()
                .timeout(Duration::from_secs(60))
                .build()
                .expect("client"),
            base: base.to_owned(),
            token: token.to_owned(),
        }
    }

    /// Sends a request; a JSON answer is checked against `openapi.yaml` (see [`spec`]).
    pub async fn send(&self, req: reqwest::RequestBuilder) -> Resp {
        let req = req.build().expect("request");
        let (method, path) = (req.method().to_string(), req.url().path().to_owned());
        let r = self.http.execute(req).await.expect("request");
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        let text = r.text().await.expect("body");
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        let is_json = headers
            .get(reqwest::header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
        if is_json && let Err(e) = spec::spec().check(&method, &path, status, &body) {
            panic!("the answer does not match openapi.yaml: {e}\n{text}");
        }
        Resp {
            status,
            headers,
            body,
            text,
        }
    }

    pub fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.http
            .get(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
    }

    /// GET `path` (with the query), as JSON.
    pub async fn fetch(&self, path: &str) -> Resp {
        self.send(self.get(path)).await
    }

    /// POST `body` as JSON to `path`.
    pub async fn post(&self, path: &str, body: &Value) -> Resp {
        self.send(
            self.http
                .post(format!("{}{path}", self.base))
                .bearer_auth(&self.token)
                .json(body),
        )
        .await
    }

    pub async fn pull(&self, project: &str, since: i64) -> Resp {
        self.send(self.get(&format!("/v1/projects/{project}/changes?since={since}")))
            .await
    }

    pub async fn push(&self, project: &str, body: &Value) -> Resp {
        self.push_with_key(project, body, &uuid::Uuid::new_v4().to_string())
            .await
    }

    pub async fn push_with_key(&self, project: &str, body: &Value, key: &str) -> Resp {
        self.send(
            self.http
                .post(format!("{}/v1/projects/{project}/push", self.base))
                .bearer_auth(&self.token)
                .header("idempotency-key", key)
                .json(body),
        )
        .await
    }
}

/// A random AWS access key id (AKIA + 16 base32 characters), made at run time.
pub fn aws_key_id(seed: u64) -> String {
    const B32: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let body: String = (0..16)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            B32[(x >> 59) as usize % 32] as char
        })
        .collect();
    // Assembled here so the source holds no key-shaped literal.
    ["AK", "IA", &body].concat()
}

/// A random 40-character AWS secret access key.
pub fn aws_secret(seed: u64) -> String {
    const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut x = seed ^ 0x9e3779b97f4a7c15;
    (0..40)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            B64[(x >> 58) as usize % 64] as char
        })
        .collect()
}

/// A valid memory file.
pub fn memory(name: &str, description: &str, kind: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\ntype: {kind}\n---\n{body}")
}

/// A put change, with an optional base sha256.
pub fn put(path: &str, content: &str, base: Option<&str>) -> Value {
    serde_json::json!({ "path": path, "op": "put", "content": content, "base_sha256": base })
}

pub fn delete(path: &str, base: Option<&str>) -> Value {
    serde_json::json!({ "path": path, "op": "delete", "base_sha256": base })
}

pub fn batch(changes: Vec<Value>) -> Value {
    serde_json::json!({ "changes": changes })
}

/// The sha256 of a path in a pull or push answer's `changes`.
pub fn sha_of(resp: &Value, path: &str) -> Option<String> {
    resp["changes"]
        .as_array()?
        .iter()
        .find(|c| c["path"] == path)
        .and_then(|c| c["sha256"].as_str())
        .map(str::to_owned)
}

/// The state of a path in a pull or push answer's `changes`.
pub fn change_of<'a>(resp: &'a Value, path: &str) -> Option<&'a Value> {
    resp["changes"]
        .as_array()?
        .iter()
        .find(|c| c["path"] == path)
}

/// A table's row count, for "nothing was stored" checks.
pub async fn count(db: &TestDb, sql: &str) -> i64 {
    let mut conn = db.connect().await;
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
        .fetch_one(&mut conn)
        .await
        .with_context(|| sql.to_owned())
        .expect("count")
}

/// Makes `dir` and its ancestors traversable by the postgres OS user (tempdirs are 0700).
pub fn open_up(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    for d in dir.ancestors() {
        if d.starts_with(std::env::temp_dir()) && d != std::env::temp_dir() {
            let _ = std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755));
        }
    }
}

/// One person using the real `memsync` binary: their own temporary `$HOME` and their own clone
/// of the project's repository (a real git repo whose `origin` names the project).
pub struct User {
    pub name: String,
    pub home: tempfile::TempDir,
    pub repo: PathBuf,
    pub server_url: String,
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}\nstderr: {}", self.stdout, self.stderr))
    }
}

impl User {
    /// A user of `server` in team(s) `teams`, with a clone whose origin is `origin` (e.g.
    /// `git@github.com:acme/api.git`), logged in and initialised.
    pub fn new(server: &Server, name: &str, teams: &[&str], origin: &str) -> User {
        let home = tempfile::Builder::new()
            .prefix(&format!("memsync-home-{name}-"))
            .tempdir()
            .expect("home");
        let repo = home.path().join("src").join("api");
        std::fs::create_dir_all(&repo).expect("repo dir");
        let git = |args: &[&str]| {
            let out = Command::new("git")
                .args(args)
                .current_dir(&repo)
                .env("HOME", home.path())
                .output()
                .expect("git");
            assert!(
                out.status.success(),
                "git {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        git(&["init", "-q"]);
        git(&["remote", "add", "origin", origin]);
        let u = User {
            name: name.to_owned(),
            home,
            repo,
            server_url: server.url.clone(),
        };
        let token = server.token(name, teams);
        let r = u.run_stdin(&["login", "--server", &server.url], &token);
        assert_eq!(r.code, 0, "login: {}", r.stderr);
        let r = u.run(&["init"]);
        assert_eq!(r.code, 0, "init: {}", r.stderr);
        u
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(bin_path("memsync"));
        cmd.args(args)
            .current_dir(&self.repo)
            .env("HOME", self.home.path())
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_STATE_HOME")
            .env_remove("XDG_CACHE_HOME")
            .env_remove("MEMSYNC_FEEDBACK_MODEL")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .env_remove("MEMSYNC_SERVER")
            .env_remove("MEMSYNC_TOKEN")
            .env_remove("MEMSYNC_PROJECT")
            .env_remove("MEMSYNC_TEAM_DIR")
            .env_remove("MEMSYNC_PRIVATE_DIR");
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Run {
        self.run_stdin(args, "")
    }

    pub fn run_stdin(&self, args: &[&str], stdin: &str) -> Run {
        self.run_stdin_with(args, stdin, &[])
    }

    /// `memsync hook session-start` as Claude Code runs it at a session's start in this user's
    /// clone (the hook's JSON on stdin), with `env` added.
    pub fn session_start(&self, env: &[(&str, &str)]) -> Run {
        let input = serde_json::json!({ "session_id": "s", "cwd": self.repo, "hook_event_name": "SessionStart", "source": "startup" });
        self.run_stdin_with(&["hook", "session-start"], &input.to_string(), env)
    }

    /// [`User::run_stdin`] with extra environment variables.
    pub fn run_stdin_with(&self, args: &[&str], stdin: &str, env: &[(&str, &str)]) -> Run {
        use std::io::Write;
        let mut cmd = self.command(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn memsync");
        if let Some(mut s) = child.stdin.take() {
            let _ = s.write_all(stdin.as_bytes());
        }
        let out = child.wait_with_output().expect("memsync");
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Claude Code's private memory dir for this clone.
    pub fn private_dir(&self) -> PathBuf {
        let root = std::fs::canonicalize(&self.repo).expect("repo");
        let key: String = root
            .to_string_lossy()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        self.home
            .path()
            .join(".claude/projects")
            .join(key)
            .join("memory")
    }

    pub fn team_dir(&self) -> PathBuf {
        self.private_dir().join("team")
    }

    pub fn write(&self, rel: &str, content: &str) {
        let p = self.team_dir().join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, content).expect("write");
    }

    pub fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.team_dir().join(rel)).ok()
    }
}

/// Panics if any row of any table holds `needle`; returns how many tables were searched.
pub async fn assert_no_row_contains(db: &TestDb, needle: &str) -> usize {
    let mut conn = db.connect().await;
    let tables: Vec<String> =
        sqlx::query_scalar("SELECT tablename::text FROM pg_tables WHERE schemaname = 'public'")
            .fetch_all(&mut conn)
            .await
            .expect("list tables");
    for t in &tables {
        let hits: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT count(*) FROM \"{t}\" x WHERE x::text LIKE $1"
        )))
        .bind(format!("%{needle}%"))
        .fetch_one(&mut conn)
        .await
        .expect("search table");
        assert_eq!(hits, 0, "table {t} holds the text");
    }
    tables.len()
}

/// A fake memsync server that answers every pull with `changes` (for what only a hostile server
/// would send). Returns its base URL.
pub async fn hostile_server(changes: Value) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let changes = changes.clone();
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut buf = vec![0u8; 65536];
                let n = sock.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).to_string();
                let body = if head.starts_with("GET /v1/projects/acme/api/changes") {
                    serde_json::json!({ "project": "acme/api", "revision": 9, "since": 0, "changes": changes })
                        .to_string()
                } else {
                    serde_json::json!({ "error": { "code": "not_found", "message": "nope", "details": {} } })
                        .to_string()
                };
                let status = if head.starts_with("GET /v1/projects/acme/api/changes") {
                    "200 OK"
                } else {
                    "404 Not Found"
                };
                let resp = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
            });
        }
    });
    url
}

pub fn file_state(path: &str, content: &str) -> Value {
    serde_json::json!({
        "path": path, "revision": 9, "deleted": false,
        "sha256": memsync_core::Sha256::of(content.as_bytes()).to_hex(),
        "content": content, "author": "mallory", "updated_at": "2026-11-30T00:00:00Z",
    })
}

pub fn run_env(user_home: &Path, repo: &Path, server: &str, args: &[&str]) -> Run {
    let out = std::process::Command::new(bin_path("memsync"))
        .args(args)
        .current_dir(repo)
        .env("HOME", user_home)
        .env("MEMSYNC_SERVER", server)
        .env("MEMSYNC_TOKEN", "test-token")
        .env("MEMSYNC_PROJECT", "acme/api")
        .env_remove("XDG_STATE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("CLAUDE_CONFIG_DIR")
        .output()
        .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The pid of the embedded PostgreSQL's postmaster in a server's `data_dir`: the first line of
/// `<data_dir>/postgres/postmaster.pid`.
pub fn postmaster_pid(data_dir: &Path) -> Option<i32> {
    let text = std::fs::read_to_string(data_dir.join("postgres/postmaster.pid")).ok()?;
    text.lines().next()?.trim().parse().ok()
}

/// The installed PostgreSQL server binaries, found as `scripts/test` finds them.
pub fn pg_bindir() -> PathBuf {
    let has_initdb = |d: &Path| d.join("initdb").is_file() && d.join("pg_ctl").is_file();
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
        && out.status.success()
    {
        let d = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if has_initdb(&d) {
            return d;
        }
    }
    let mut dirs: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("no PostgreSQL server binaries in /usr/lib/postgresql")
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            let d = e.path().join("bin");
            has_initdb(&d).then_some((v, d))
        })
        .collect();
    dirs.sort();
    dirs.pop().expect("no PostgreSQL server binaries found").1
}

/// A PostgreSQL cluster of the test's own on a loopback port (as the `postgres` OS user when
/// the tests run as root), which the test may stop and start. Removed when dropped.
pub struct PrivateCluster {
    dir: tempfile::TempDir,
    bindir: PathBuf,
    pub port: u16,
    /// `postgres://postgres@127.0.0.1:PORT/postgres`
    pub url: String,
}

impl PrivateCluster {
    pub fn start() -> PrivateCluster {
        let dir = tempfile::Builder::new()
            .prefix("memsync-privpg-")
            .tempdir()
            .expect("tempdir");
        open_up(dir.path());
        if nix::unistd::geteuid().is_root() {
            let pg = nix::unistd::User::from_name("postgres")
                .expect("look up the postgres user")
                .expect("running as root, the tests need the postgres OS user");
            std::os::unix::fs::chown(dir.path(), Some(pg.uid.as_raw()), Some(pg.gid.as_raw()))
                .expect("chown");
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let c = PrivateCluster {
            url: format!("postgres://postgres@127.0.0.1:{port}/postgres"),
            dir,
            bindir: pg_bindir(),
            port,
        };
        let data = c.data();
        let out = c
            .tool("initdb")
            .arg("-D")
            .arg(&data)
            .args([
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
                "--locale=C",
                "-E",
                "UTF8",
            ])
            .output()
            .expect("initdb");
        assert!(
            out.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        c.start_again();
        c
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn tool(&self, name: &str) -> Command {
        let mut cmd = if nix::unistd::geteuid().is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(self.bindir.join(name));
            c
        } else {
            Command::new(self.bindir.join(name))
        };
        cmd.current_dir("/").stdin(Stdio::null());
        cmd
    }

    fn pg_ctl(&self, args: &[&str]) -> std::process::Output {
        self.tool("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(args)
            .output()
            .expect("pg_ctl")
    }

    /// Starts the (stopped) cluster on its port and waits until it accepts connections.
    pub fn start_again(&self) {
        let opts = format!(
            "-c listen_addresses=127.0.0.1 -p {} -c unix_socket_directories={} -c fsync=off",
            self.port,
            self.dir.path().display()
        );
        let log = self.dir.path().join("postgres.log");
        let out = self.pg_ctl(&[
            "-w",
            "-t",
            "60",
            "-l",
            log.to_str().expect("utf-8 path"),
            "-o",
            &opts,
            "start",
        ]);
        assert!(
            out.status.success(),
            "pg_ctl start: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    }

    /// Stops the cluster (`pg_ctl stop -m fast`: sessions are ended, as in a database restart).
    pub fn stop(&self) {
        let out = self.pg_ctl(&["-m", "fast", "-w", "stop"]);
        assert!(
            out.status.success(),
            "pg_ctl stop: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for PrivateCluster {
    fn drop(&mut self) {
        let _ = self.pg_ctl(&["-m", "immediate", "-w", "stop"]);
    }
}

impl Server {
    /// Issues a token with `memsync-server token issue --user USER <args>` (e.g. `["--admin"]`,
    /// `["--team", "acme", "--ttl", "3d"]`).
    pub fn token_with(&self, user: &str, args: &[&str]) -> String {
        let mut all = vec!["token", "issue", "--user", user];
        all.extend_from_slice(args);
        let out = self.cli(&all);
        assert!(
            out.status.success(),
            "token issue failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .expect("utf8")
            .trim()
            .to_owned()
    }
}

impl User {
    /// Like [`User::new`], but logged in with `token` (e.g. a server admin's, or one about to
    /// expire).
    pub fn with_token(server: &Server, name: &str, token: &str, origin: &str) -> User {
        let u = User::new(server, name, &["scratch"], origin);
        let r = u.run_stdin(&["login", "--server", &server.url], token);
        assert_eq!(r.code, 0, "login: {}", r.stderr);
        u
    }

    /// Runs `memsync` with extra environment variables.
    pub fn run_with(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut cmd = self.command(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.stdin(Stdio::null()).output().expect("memsync");
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// The `jti` of a memsync token (read from its payload, not verified).
pub fn token_jti(token: &str) -> String {
    use base64::Engine;
    let payload = token.split('.').nth(1).expect("a JWT");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .expect("base64url");
    let claims: Value = serde_json::from_slice(&bytes).expect("JSON claims");
    claims["jti"].as_str().expect("jti").to_owned()
}

/// An HTTP proxy in front of `upstream` that answers everything the upstream answers, but with a
/// `Date` header `skew_secs` away from the truth (a server whose clock is off). One request per
/// connection. Returns its base URL; runs on the caller's tokio runtime (use a multi-threaded
/// one when the test blocks on a child process).
pub async fn date_skewing_proxy(upstream: &str, skew_secs: i64) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let upstream = upstream.trim_end_matches('/').to_owned();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((sock, _)) = listener.accept().await else {
                return;
            };
            let (upstream, http) = (upstream.clone(), http.clone());
            tokio::spawn(async move {
                let _ = proxy_one(sock, &upstream, &http, skew_secs).await;
            });
        }
    });
    url
}

/// One HTTP/1.1 request read off a socket by a test proxy, ready to send on with reqwest
/// (`host`, `connection` and `content-length` left for reqwest to set).
pub struct ProxiedRequest {
    pub method: reqwest::Method,
    /// Path and query.
    pub target: String,
    pub headers: reqwest::header::HeaderMap,
    pub body: Vec<u8>,
}

pub async fn read_proxied_request(
    sock: &mut tokio::net::TcpStream,
) -> anyhow::Result<ProxiedRequest> {
    use tokio::io::AsyncReadExt;
    let mut buf = Vec::new();
    let head_end = loop {
        let mut chunk = [0u8; 8192];
        let n = sock.read(&mut chunk).await?;
        anyhow::ensure!(n > 0, "closed before the request ended");
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut parts = lines.next().unwrap_or_default().split(' ');
    let method = reqwest::Method::from_bytes(parts.next().unwrap_or("GET").as_bytes())?;
    let target = parts.next().unwrap_or("/").to_owned();
    let mut headers = reqwest::header::HeaderMap::new();
    let mut length = 0usize;
    for line in lines.filter(|l| !l.is_empty()) {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
        if k == "content-length" {
            length = v.parse()?;
        }
        if matches!(k.as_str(), "host" | "connection" | "content-length") {
            continue;
        }
        headers.insert(
            reqwest::header::HeaderName::from_bytes(k.as_bytes())?,
            reqwest::header::HeaderValue::from_str(v)?,
        );
    }
    let mut body = buf[head_end..].to_vec();
    while body.len() < length {
        let mut chunk = [0u8; 8192];
        let n = sock.read(&mut chunk).await?;
        anyhow::ensure!(n > 0, "closed before the body ended");
        body.extend_from_slice(&chunk[..n]);
    }
    Ok(ProxiedRequest {
        method,
        target,
        headers,
        body,
    })
}

async fn proxy_one(
    mut sock: tokio::net::TcpStream,
    upstream: &str,
    http: &reqwest::Client,
    skew_secs: i64,
) -> anyhow::Result<()> {
    use tokio::io::AsyncWriteExt;
    let ProxiedRequest {
        method,
        target,
        headers,
        body,
    } = read_proxied_request(&mut sock).await?;
    let resp = http
        .request(method, format!("{upstream}{target}"))
        .headers(headers)
        .body(body)
        .send()
        .await?;
    let status = resp.status();
    let mut out = format!(
        "HTTP/1.1 {} {}\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or("")
    );
    for (k, v) in resp.headers() {
        if matches!(
            k.as_str(),
            "date" | "content-length" | "transfer-encoding" | "connection"
        ) {
            continue;
        }
        out.push_str(&format!("{k}: {}\r\n", v.to_str().unwrap_or_default()));
    }
    let date = chrono::Utc::now() + chrono::Duration::seconds(skew_secs);
    let bytes = resp.bytes().await?;
    out.push_str(&format!(
        "date: {}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        date.format("%a, %d %b %Y %H:%M:%S GMT"),
        bytes.len()
    ));
    sock.write_all(out.as_bytes()).await?;
    sock.write_all(&bytes).await?;
    sock.shutdown().await?;
    Ok(())
}

/// `fields` as an `application/x-www-form-urlencoded` body, encoded as a browser encodes a form.
pub fn form_body<V: AsRef<str>>(fields: &[(&str, V)]) -> String {
    let enc = |s: &str| {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => {
                    (b as char).to_string()
                }
                b' ' => "+".to_owned(),
                _ => format!("%{b:02X}"),
            })
            .collect::<String>()
    };
    fields
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v.as_ref())))
        .collect::<Vec<_>>()
        .join("&")
}

/// A plain HTTP client (no proxy) that shows redirects instead of following them.
pub fn no_redirects() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(60))
        .build()
        .expect("client")
}

/// Every live (not deleted) path of `project`, from a full pull.
pub async fn live_paths(c: &Client, project: &str) -> Vec<String> {
    let r = c.pull(project, 0).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["deleted"] == false)
        .map(|c| c["path"].as_str().unwrap().to_owned())
        .collect()
}

/// Starts `n` `memsync-server` processes on one database, at once, each with its own data
/// directory (and so its own export directory): replicas that share nothing but PostgreSQL.
pub fn start_replicas(db: &TestDb, n: usize, extra: &[&str]) -> Vec<Server> {
    std::thread::scope(|s| {
        let started: Vec<_> = (0..n)
            .map(|_| s.spawn(|| Server::start_with(Some(db.url.clone()), None, extra)))
            .collect();
        started
            .into_iter()
            .map(|h| h.join().expect("a replica failed to start"))
            .collect()
    })
}

/// Whether process `pid` owns a TCP socket whose local port is `port` (Linux: the socket inodes
/// of `/proc/net/tcp{,6}` against the links in `/proc/<pid>/fd`). With the `client_port` of
/// `pg_stat_activity`, it tells which process a database session belongs to.
pub fn owns_local_port(pid: u32, port: u16) -> bool {
    let mut inodes = std::collections::HashSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() > 9
                && let Some((_, p)) = f[1].rsplit_once(':')
                && u16::from_str_radix(p, 16) == Ok(port)
            {
                inodes.insert(format!("socket:[{}]", f[9]));
            }
        }
    }
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten().any(|fd| {
        std::fs::read_link(fd.path())
            .ok()
            .and_then(|l| l.to_str().map(|l| inodes.contains(l)))
            .unwrap_or(false)
    })
}

/// The value of the first `/metrics` line of `server` that starts with `line_prefix` (e.g.
/// `"memsync_export_leader "`), None when there is none or the server does not answer.
pub async fn metric_value(server: &Server, line_prefix: &str) -> Option<f64> {
    let text = server
        .client("")
        .http
        .get(format!("{}/metrics", server.url))
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(line_prefix))
        .and_then(|v| v.trim().parse().ok())
}

/// git with no user or system configuration (its own `$HOME`), never prompting, in `cwd` when
/// given: the git the export tests clone and inspect with.
pub fn git_output(cwd: Option<&Path>, args: &[&str]) -> std::process::Output {
    let home = std::env::temp_dir().join("memsync-test-git-home");
    std::fs::create_dir_all(&home).expect("home");
    let mut cmd = Command::new("git");
    cmd.args(args)
        .env("HOME", &home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env_remove("GIT_DIR");
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    cmd.output().expect("run git")
}

/// [`git_output`] that must succeed; its stdout.
pub fn git(cwd: Option<&Path>, args: &[&str]) -> String {
    let out = git_output(cwd, args);
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf8")
}

/// The first line `child` prints on stdout (a server's `listening on` line), waiting up to
/// `within`; the rest of its stdout is drained in the background so that it never blocks on a
/// full pipe.
pub fn first_stdout_line(
    child: &mut std::process::Child,
    within: Duration,
) -> Result<String, std::sync::mpsc::RecvTimeoutError> {
    let stdout = child.stdout.take().expect("stdout piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        if let Some(Ok(line)) = lines.next() {
            let _ = tx.send(line);
        }
        for _ in lines {}
    });
    rx.recv_timeout(within)
}

/// The `Memsync-Revision` of the branch head of a git export repository, None without one.
pub fn head_revision(git_dir: &Path) -> Option<i64> {
    let out = git_output(
        None,
        &[
            &gd(git_dir),
            "log",
            "-1",
            "--format=%(trailers:key=Memsync-Revision,valueonly)",
            "main",
        ],
    );
    if !out.status.success() {
        return None;
    }
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

/// `--git-dir=<repo>`.
pub fn gd(repo: &Path) -> String {
    format!("--git-dir={}", repo.display())
}

/// Which of `servers` says it runs the git export (`memsync_export_leader`); waits up to
/// `within` until exactly one does.
pub async fn export_leader(servers: &[&Server], within: Duration) -> usize {
    let deadline = std::time::Instant::now() + within;
    loop {
        let mut leading = Vec::new();
        for (i, s) in servers.iter().enumerate() {
            if metric_value(s, "memsync_export_leader ").await == Some(1.0) {
                leading.push(i);
            }
        }
        if let [one] = leading[..] {
            return one;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "expected exactly one replica to run the export, these do: {leading:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
