//! The docs say what the binaries do. The README's server configuration table and command list,
//! and the same tables of `docs/operations.md`, are checked both ways against what
//! `memsync-server --help` (and every subcommand's help) prints; the metrics table of
//! `docs/observability.md` against what a running server serves at `/metrics`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use memsync_e2e::*;
use regex::Regex;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_owned()
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo_root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// What one command's `--help` lists: its options (each with its environment variable, if it
/// has one) and its subcommands.
#[derive(Debug, Default)]
struct Help {
    flags: BTreeMap<String, Option<String>>,
    commands: Vec<String>,
}

/// `--help` and `--version`: clap's own, not configuration.
const CLAP_FLAGS: [&str; 2] = ["--help", "--version"];

fn help_of(path: &[String]) -> Help {
    let mut cmd = Command::new(bin_path("memsync-server"));
    cmd.args(path).arg("--help");
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("MEMSYNC_") || k == "DATABASE_URL" {
            cmd.env_remove(k);
        }
    }
    let out = cmd.output().expect("run memsync-server --help");
    assert!(
        out.status.success(),
        "memsync-server {path:?} --help failed"
    );
    parse_help(&String::from_utf8(out.stdout).expect("utf-8 help"))
}

fn parse_help(text: &str) -> Help {
    // An option's line is indented 2 to 6 spaces; its description, below it, 10.
    let flag = Regex::new(r"^ {2,6}(?:-[a-zA-Z], )?(--[a-z][a-z0-9-]*)").unwrap();
    let env = Regex::new(r"\[env: ([A-Z][A-Z0-9_]*)").unwrap();
    let mut help = Help::default();
    let mut section = "";
    let mut current: Option<String> = None;
    for line in text.lines() {
        if !line.starts_with(' ') && !line.is_empty() {
            section = line.trim_end_matches(':');
            current = None;
            continue;
        }
        match section {
            "Options" => {
                if let Some(m) = flag.captures(line) {
                    let name = m[1].to_owned();
                    help.flags.insert(name.clone(), None);
                    current = Some(name);
                }
                if let (Some(c), Some(e)) = (&current, env.captures(line)) {
                    help.flags.insert(c.clone(), Some(e[1].to_owned()));
                }
            }
            "Commands" => {
                if let Some(name) = line.split_whitespace().next()
                    && name != "help"
                {
                    help.commands.push(name.to_owned());
                }
            }
            _ => {}
        }
    }
    help.flags.retain(|f, _| !CLAP_FLAGS.contains(&f.as_str()));
    help
}

/// Every command of `memsync-server` (the root is `[]`) with its help.
fn all_helps() -> BTreeMap<Vec<String>, Help> {
    let mut out = BTreeMap::new();
    let mut todo = vec![Vec::<String>::new()];
    while let Some(path) = todo.pop() {
        let help = help_of(&path);
        for c in &help.commands {
            let mut p = path.clone();
            p.push(c.clone());
            todo.push(p);
        }
        out.insert(path, help);
    }
    assert!(
        out.len() >= 8,
        "memsync-server has more commands than {:?}",
        out.keys()
    );
    out
}

/// The flags a command adds to those of its parent (the root's are the global ones).
fn own_flags(
    helps: &BTreeMap<Vec<String>, Help>,
    path: &[String],
) -> BTreeMap<String, Option<String>> {
    let mine = &helps[path].flags;
    match path.split_last() {
        None => mine.clone(),
        Some((_, parent)) => mine
            .iter()
            .filter(|(f, _)| !helps[parent].flags.contains_key(*f))
            .map(|(f, e)| (f.clone(), e.clone()))
            .collect(),
    }
}

/// The `MEMSYNC_*` variables the server's source reads by name (clap's `env = ...` included).
fn source_env_names() -> BTreeSet<String> {
    let lit = Regex::new(r#""(MEMSYNC_[A-Z][A-Z0-9_]*)""#).unwrap();
    let mut names = BTreeSet::new();
    let mut dirs = vec![repo_root().join("services/server/src")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("read source dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).expect("read source");
                names.extend(lit.captures_iter(&text).map(|c| c[1].to_owned()));
            }
        }
    }
    assert!(names.contains("MEMSYNC_JWT_SECRET"), "{names:?}");
    names
}

/// The cells of a markdown table row (split at pipes that are not escaped).
fn cells(row: &str) -> Vec<String> {
    let row = row.trim().trim_start_matches('|').trim_end_matches('|');
    let mut out = vec![String::new()];
    let mut chars = row.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                out.last_mut().unwrap().push('|');
                chars.next();
            }
            '|' => out.push(String::new()),
            c => out.last_mut().unwrap().push(c),
        }
    }
    out.into_iter().map(|c| c.trim().to_owned()).collect()
}

/// The body rows of the first table after the line that starts with `marker`.
fn table_after(doc: &str, marker: &str) -> Vec<Vec<String>> {
    let start = doc
        .lines()
        .position(|l| l.starts_with(marker))
        .unwrap_or_else(|| panic!("no line starting with {marker:?}"));
    let rows: Vec<Vec<String>> = doc
        .lines()
        .skip(start + 1)
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(cells)
        .collect();
    assert!(!rows.is_empty(), "no table after {marker:?}");
    rows
}

/// The code spans of a text.
fn code_spans(text: &str) -> Vec<String> {
    Regex::new(r"`([^`]+)`")
        .unwrap()
        .captures_iter(text)
        .map(|c| c[1].to_owned())
        .collect()
}

fn flags_in(text: &str) -> BTreeSet<String> {
    Regex::new(r"--[a-z][a-z0-9-]*")
        .unwrap()
        .find_iter(text)
        .map(|m| m.as_str().to_owned())
        .collect()
}

fn memsync_vars_in(text: &str) -> BTreeSet<String> {
    Regex::new(r"\bMEMSYNC_[A-Z][A-Z0-9_]*")
        .unwrap()
        .find_iter(text)
        .map(|m| m.as_str().to_owned())
        .collect()
}

/// A server configuration table (flag | environment | default | meaning) against the global
/// flags: every one is listed with its variable, nothing else is, and a variable on a row of its
/// own is one the server reads.
fn check_config_table(
    doc: &str,
    rows: &[Vec<String>],
    helps: &BTreeMap<Vec<String>, Help>,
    errors: &mut Vec<String>,
) {
    let globals = &helps[&Vec::new()].flags;
    let clap_envs: BTreeSet<&String> = helps
        .values()
        .flat_map(|h| h.flags.values().flatten())
        .collect();
    let source = source_env_names();
    for row in rows {
        let flags = flags_in(&row[0]);
        let vars = memsync_vars_in(&row[1]);
        for f in &flags {
            if !globals.contains_key(f) {
                errors.push(format!(
                    "{doc}: the configuration table lists {f}, which memsync-server does not have"
                ));
            }
        }
        for v in &vars {
            let of_flag = flags
                .iter()
                .any(|f| globals.get(f).is_some_and(|e| e.as_ref() == Some(v)));
            let read_by_name = flags.is_empty() && source.contains(v) && !clap_envs.contains(v);
            if !of_flag && !read_by_name {
                errors.push(format!(
                    "{doc}: the configuration table gives {v} on the row of {flags:?}, which is not how memsync-server reads it"
                ));
            }
        }
    }
    for (flag, env) in globals {
        let on: Vec<&Vec<String>> = rows
            .iter()
            .filter(|r| flags_in(&r[0]).contains(flag))
            .collect();
        match on.as_slice() {
            [row] => {
                if let Some(env) = env
                    && !memsync_vars_in(&row[1]).contains(env)
                {
                    errors.push(format!(
                        "{doc}: the configuration table's row of {flag} does not give its variable {env}"
                    ));
                }
            }
            [] => errors.push(format!(
                "{doc}: the configuration table does not list {flag}"
            )),
            _ => errors.push(format!(
                "{doc}: the configuration table lists {flag} more than once"
            )),
        }
    }
    for v in &source {
        if !clap_envs.contains(v) && !doc_text(doc).contains(v.as_str()) {
            errors.push(format!(
                "{doc}: the server reads {v}, which the document does not mention"
            ));
        }
    }
}

fn doc_text(doc: &str) -> String {
    read(doc)
}

/// A documented command line: the command it names (words after `memsync-server` that are
/// subcommands, `[serve]` included) and the text documenting it.
struct Entry {
    command: Vec<String>,
    text: String,
}

fn entry(helps: &BTreeMap<Vec<String>, Help>, line: &str, text: &str) -> Entry {
    let mut command = Vec::new();
    let mut words = line.split_whitespace();
    assert_eq!(words.next(), Some("memsync-server"), "{line}");
    for w in words {
        let w = w.trim_start_matches('[').trim_end_matches(']');
        match helps.get(&command) {
            Some(h) if h.commands.iter().any(|c| c == w) => command.push(w.to_owned()),
            _ => break,
        }
    }
    Entry {
        command,
        text: text.to_owned(),
    }
}

/// Documented command lines against the commands: every command that runs has a line, every
/// command's own flags (and their variables) are on its line, and every flag on a line is one of
/// that command (or of one of its subcommands).
fn check_commands(
    doc: &str,
    entries: &[Entry],
    helps: &BTreeMap<Vec<String>, Help>,
    errors: &mut Vec<String>,
) {
    for e in entries {
        let reachable: BTreeSet<&String> = helps
            .iter()
            .filter(|(p, _)| p.starts_with(&e.command))
            .flat_map(|(_, h)| h.flags.keys())
            .collect();
        for f in flags_in(&e.text) {
            if !reachable.contains(&f) && !CLAP_FLAGS.contains(&f.as_str()) {
                errors.push(format!(
                    "{doc}: `memsync-server {}` is documented with {f}, which it does not have",
                    e.command.join(" ")
                ));
            }
        }
    }
    for (path, help) in helps {
        let lines: Vec<&Entry> = entries.iter().filter(|e| &e.command == path).collect();
        let name = format!("memsync-server {}", path.join(" "));
        if help.commands.is_empty() && lines.is_empty() {
            errors.push(format!("{doc}: `{name}` is not in the command list"));
        }
        if path.is_empty() {
            continue;
        }
        for (flag, env) in own_flags(helps, path) {
            if !lines.iter().any(|e| flags_in(&e.text).contains(&flag)) {
                errors.push(format!("{doc}: `{name}` is listed without its {flag}"));
            }
            if let Some(env) = env
                && !lines.iter().any(|e| e.text.contains(&env))
            {
                errors.push(format!(
                    "{doc}: `{name}` is listed without {env}, the variable of its {flag}"
                ));
            }
        }
    }
}

#[test]
fn readme_and_operations_list_every_server_flag_variable_and_command() {
    let helps = all_helps();
    let mut errors = Vec::new();

    // README: the configuration table, and the command list (a code block; a line that starts
    // with `memsync-server`, and the indented lines under it).
    let readme = read("README.md");
    let rows = table_after(&readme, "## Configuration");
    check_config_table("README.md", &rows, &helps, &mut errors);
    let block: Vec<&str> = readme
        .lines()
        .skip_while(|l| *l != "## Server commands")
        .skip_while(|l| !l.starts_with("```"))
        .skip(1)
        .take_while(|l| !l.starts_with("```"))
        .collect();
    let mut entries: Vec<Entry> = Vec::new();
    for line in block {
        if line.starts_with("memsync-server") {
            entries.push(entry(&helps, line, line));
        } else if let Some(last) = entries.last_mut()
            && line.starts_with(' ')
        {
            last.text.push('\n');
            last.text.push_str(line);
        } else {
            errors.push(format!(
                "README.md: unexpected line in the command list: {line}"
            ));
        }
    }
    check_commands("README.md", &entries, &helps, &mut errors);

    // docs/operations.md: the configuration table, the subcommands table (a row documents the
    // command lines in its first cell), and the options of `token issue`.
    let ops = read("docs/operations.md");
    let rows = table_after(&ops, "## Configuration");
    check_config_table("docs/operations.md", &rows, &helps, &mut errors);
    let entries: Vec<Entry> = table_after(&ops, "Subcommands:")
        .iter()
        .flat_map(|row| {
            let text = row.join(" | ");
            code_spans(&row[0])
                .into_iter()
                .filter(|s| s.starts_with("memsync-server"))
                .map(|s| entry(&helps, &s, &text))
                .collect::<Vec<_>>()
        })
        .collect();
    check_commands("docs/operations.md", &entries, &helps, &mut errors);
    let issue: Vec<String> = vec!["token".into(), "issue".into()];
    let documented: BTreeSet<String> = table_after(&ops, "Options of `token issue`:")
        .iter()
        .flat_map(|r| flags_in(&r[0]))
        .collect();
    let real: BTreeSet<String> = own_flags(&helps, &issue).into_keys().collect();
    if documented != real {
        errors.push(format!(
            "docs/operations.md: the options of `token issue` are {documented:?}, the command's are {real:?}"
        ));
    }

    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn the_checks_catch_a_missing_or_unknown_flag() {
    // The same checks on a configuration table with one flag missing and one made up, and a
    // command list without `export rebuild`, find exactly those.
    let helps = all_helps();
    let readme = read("README.md");
    let mut rows = table_after(&readme, "## Configuration");
    rows.retain(|r| !r[0].contains("--mirror-timeout"));
    rows.push(cells(
        "| `--max-widgets` | `MEMSYNC_MAX_WIDGETS` | `1` | made up |",
    ));
    let mut errors = Vec::new();
    check_config_table("README.md", &rows, &helps, &mut errors);
    let entries = vec![
        entry(&helps, "memsync-server [serve]", "memsync-server [serve]"),
        entry(
            &helps,
            "memsync-server export rebuild",
            "memsync-server export rebuild --nope",
        ),
    ];
    check_commands("README.md", &entries, &helps, &mut errors);
    let joined = errors.join("\n");
    for want in [
        "does not list --mirror-timeout",
        "lists --max-widgets, which memsync-server does not have",
        "gives MEMSYNC_MAX_WIDGETS",
        "`memsync-server migrate` is not in the command list",
        "`memsync-server export rebuild` is listed without its --project",
        "`memsync-server export rebuild` is documented with --nope",
        "`memsync-server token` is listed without its --server",
    ] {
        assert!(joined.contains(want), "missing {want:?} in:\n{joined}");
    }
}

/// One family of the Prometheus text: its type and the label names its samples carry.
#[derive(Debug, PartialEq, Eq)]
struct Family {
    kind: String,
    labels: BTreeSet<String>,
}

fn parse_metrics(text: &str) -> BTreeMap<String, Family> {
    let label = Regex::new(r#"([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*""#).unwrap();
    let mut families: BTreeMap<String, Family> = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("# TYPE name kind");
            families.insert(
                name.to_owned(),
                Family {
                    kind: kind.to_owned(),
                    labels: BTreeSet::new(),
                },
            );
            continue;
        }
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let name_end = line.find(['{', ' ']).expect("a sample line");
        let name = &line[..name_end];
        let family = if families.contains_key(name) {
            name.to_owned()
        } else {
            let base = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| name.strip_suffix(s))
                .filter(|b| families.get(*b).is_some_and(|f| f.kind == "histogram"))
                .unwrap_or_else(|| panic!("sample {line:?} of no declared family"));
            base.to_owned()
        };
        let f = families.get_mut(&family).expect("family");
        if let Some(open) = line.find('{') {
            let close = line.rfind('}').expect("closing brace");
            for c in label.captures_iter(&line[open + 1..close]) {
                if !(f.kind == "histogram" && &c[1] == "le") {
                    f.labels.insert(c[1].to_owned());
                }
            }
        }
    }
    families
}

/// The metrics table of `docs/observability.md`: name, type, label names (a parenthesis is a
/// comment, such as the values of a label), meaning.
fn documented_metrics() -> BTreeMap<String, Family> {
    let doc = read("docs/observability.md");
    let parens = Regex::new(r"\([^)]*\)").unwrap();
    table_after(&doc, "Every metric `/metrics` serves")
        .iter()
        .map(|r| {
            assert!(r.len() == 4 && !r[3].is_empty(), "a metric row: {r:?}");
            let name = code_spans(&r[0]).pop().expect("a metric name");
            let labels = code_spans(&parens.replace_all(&r[2], ""))
                .into_iter()
                .collect();
            (
                name,
                Family {
                    kind: r[1].clone(),
                    labels,
                },
            )
        })
        .collect()
}

async fn scrape(url: &str) -> String {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let r = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .get(format!("{url}/metrics"))
        .send()
        .await
        .expect("GET /metrics");
    assert_eq!(r.status(), 200);
    r.text().await.expect("metrics text")
}

/// Sends a push whose body never finishes, and returns the answer's status line.
fn unfinished_push(url: &str, token: &str) -> String {
    let addr = url.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "POST /v1/projects/acme/api/push HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {token}\r\n\
         content-type: application/json\r\nidempotency-key: slow-1\r\ncontent-length: 100\r\n\r\n{{\"changes\""
    )
    .unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&buf[..n]);
        if answer.windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
    }
    let text = String::from_utf8_lossy(&answer);
    text.lines().next().unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operations_lists_every_metric_the_server_serves() {
    let db = TestDb::new().await;
    let server = Server::start_with(
        Some(db.url.clone()),
        None,
        &["--request-timeout", "1s", "--export-interval", "100ms"],
    );
    let token = server.token("alice", &["acme"]);
    let alice = server.client(&token);

    // Traffic, so that every labelled series exists: a push, a push refused for a secret, pulls
    // (200 and 304), a refused token, a path no route matches, and a request cut off by the
    // request timeout.
    let r = alice
        .push(
            "acme/api",
            &batch(vec![put(
                "testing.md",
                &memory("testing", "how tests run", "project", "Real database.\n"),
                None,
            )]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let key = aws_key_id(3);
    let r = alice
        .push(
            "acme/api",
            &batch(vec![put(
                "keys.md",
                &memory(
                    "keys",
                    "keys",
                    "project",
                    &format!("aws_access_key_id = {key}\n"),
                ),
                None,
            )]),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(alice.pull("acme/api", 0).await.status, 200);
    let r = alice
        .send(
            alice
                .get("/v1/projects/acme/api/changes?since=1")
                .header("if-none-match", "\"r1\""),
        )
        .await;
    assert_eq!(r.status, 304);
    assert_eq!(
        Client::new(&server.url, "not-a-token")
            .pull("acme/api", 0)
            .await
            .status,
        401
    );
    assert_eq!(alice.fetch("/no/such/route").await.status, 404);
    let status = tokio::task::spawn_blocking({
        let (url, token) = (server.url.clone(), token.clone());
        move || unfinished_push(&url, &token)
    })
    .await
    .unwrap();
    assert!(status.starts_with("HTTP/1.1 504"), "{status}");

    // The exporter commits the push.
    let deadline = Instant::now() + Duration::from_secs(60);
    let text = loop {
        let text = scrape(&server.url).await;
        let commits = text
            .lines()
            .find_map(|l| l.strip_prefix("memsync_export_commits_total "))
            .and_then(|v| v.parse::<u64>().ok());
        if commits.is_some_and(|n| n > 0) {
            break text;
        }
        assert!(Instant::now() < deadline, "nothing exported:\n{text}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let served = parse_metrics(&text);
    let documented = documented_metrics();

    let mut errors = Vec::new();
    for (name, family) in &served {
        match documented.get(name) {
            None => errors.push(format!(
                "{name} ({family:?}) is served but not in docs/observability.md"
            )),
            Some(d) if d != family => {
                errors.push(format!("{name}: served as {family:?}, documented as {d:?}"))
            }
            Some(_) => {}
        }
    }
    for name in documented.keys() {
        if !served.contains_key(name) {
            errors.push(format!(
                "{name} is in docs/observability.md but not served:\n{text}"
            ));
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));

    // What the table's notes say: route templates (no project names), `unmatched`, and no 504.
    assert!(
        text.contains(r#"route="/v1/projects/{team}/{name}/push""#),
        "{text}"
    );
    assert!(text.contains(r#"route="unmatched""#), "{text}");
    assert!(
        !text.contains("acme"),
        "a project name in the metrics:\n{text}"
    );
    assert!(!text.contains(r#"status="504""#), "{text}");
    for status in ["200", "304", "401", "404"] {
        assert!(text.contains(&format!(r#"status="{status}""#)), "{text}");
    }
}

/// What a command printed on stderr, with the user's home as `~` and the server's URL as the
/// quick start's.
fn shown(stderr: &str, home: &Path, server: &str) -> String {
    stderr
        .replace(&home.display().to_string(), "~")
        .replace(server, "http://127.0.0.1:7878")
        .trim_end()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_md_shows_the_refusals_and_ttl_messages_admins_get() {
    const ORIGIN: &str = "git@github.com:acme/api.git";
    let doc = read("docs/admin.md");
    let (server, _db) = Server::start().await;
    let alice = User::new(&server, "alice", &["acme"], ORIGIN);
    let ann = User::new(&server, "ann", &["acme:admin"], ORIGIN);
    let olga = User::new(&server, "olga", &["other"], ORIGIN);
    alice.write("plan.md", &memory("plan", "the plan", "project", "v1\n"));
    assert_eq!(alice.run(&["push"]).code, 0);
    let mut missing = Vec::new();
    let mut expect = |what: &str, text: &str| {
        if !doc.contains(text) {
            missing.push(format!("{what}:\n{text}"));
        }
    };

    // The example, whole.
    let r = alice.run(&["admin", "rm", "plan.md", "--reason", "outdated"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    expect(
        "the example of `memsync admin rm` as a member",
        &shown(&r.stderr, alice.home.path(), &server.url),
    );

    // The table: what each command needs, and the server's reason.
    let fingerprint = "0".repeat(64);
    let needs = Regex::new(r"^`memsync [^`]+` needs (.+?)\. memsync sent").unwrap();
    for (user, args) in [
        (&alice, vec!["admin", "rm", "plan.md", "--reason", "x"]),
        (&alice, vec!["admin", "history", "plan.md"]),
        (&alice, vec!["admin", "projects", "--archive", "acme/api"]),
        (&olga, vec!["admin", "history", "plan.md"]),
        (&alice, vec!["admin", "audit"]),
        (&alice, vec!["admin", "projects"]),
        (&ann, vec!["admin", "tokens", "list"]),
        (
            &alice,
            vec![
                "allowlist",
                "add",
                &fingerprint,
                "--rule",
                "r",
                "--reason",
                "x",
            ],
        ),
    ] {
        let r = user.run(&args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        let mut lines = r.stderr.lines();
        let reason = lines.next().unwrap();
        let reason = reason
            .strip_prefix("memsync: the server refused: ")
            .or_else(|| reason.strip_prefix("memsync: "))
            .unwrap();
        expect(&format!("the server's reason for {args:?}"), reason);
        let need = needs
            .captures(lines.next().unwrap_or_default())
            .unwrap_or_else(|| panic!("{args:?}: {}", r.stderr));
        expect(&format!("the token {args:?} needs"), &need[1]);
    }

    // memsync-server token --server, without a token, with a member's, with a bad one.
    let member = server.token("m", &["acme"]);
    for token in [None, Some(member.as_str()), Some("not-a-token")] {
        let mut cmd = Command::new(bin_path("memsync-server"));
        cmd.args(["token", "--server", &server.url, "list"])
            .env_remove("MEMSYNC_ADMIN_TOKEN");
        if let Some(t) = token {
            cmd.env("MEMSYNC_ADMIN_TOKEN", t);
        }
        let out = cmd.output().expect("memsync-server token --server");
        assert_eq!(out.status.code(), Some(1));
        let stderr = String::from_utf8_lossy(&out.stderr);
        let message = stderr
            .lines()
            .find_map(|l| l.strip_prefix("memsync-server: "))
            .unwrap_or_else(|| panic!("{stderr}"));
        expect("a refusal of `memsync-server token --server`", message);
    }

    // The --ttl refusals of the three ways to issue a token.
    let out = server.cli(&[
        "token", "issue", "--user", "q", "--team", "acme", "--ttl", "0s",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let message = stderr
        .lines()
        .find_map(|l| l.strip_prefix("memsync-server: "))
        .unwrap_or_else(|| panic!("{stderr}"));
    expect("`token issue --ttl 0s`", &format!("`{message}`"));
    let root = server.token_with("root", &["--admin"]);
    let out = Command::new(bin_path("memsync-server"))
        .args([
            "token",
            "--server",
            &server.url,
            "issue",
            "--user",
            "q",
            "--team",
            "acme",
            "--ttl",
            "12h",
        ])
        .env("MEMSYNC_ADMIN_TOKEN", &root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let message = stderr
        .lines()
        .find_map(|l| l.strip_prefix("memsync-server: "))
        .unwrap_or_else(|| panic!("{stderr}"));
    expect(
        "`token --server … issue --ttl 12h`",
        &format!("`{message}`"),
    );
    let admin = User::with_token(&server, "root", &root, ORIGIN);
    let r = admin.run(&[
        "admin", "tokens", "issue", "--user", "q", "--team", "acme", "--ttl", "0s",
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    let message = r.stderr.trim().strip_prefix("memsync: ").unwrap();
    expect(
        "`memsync admin tokens issue --ttl 0s`",
        &format!("`{message}`"),
    );
    // And what the table says the accepted ones give: a 12-hour token from the server's host,
    // a one-day token from the client's rounding.
    let lifetime = |token: &str| {
        let claims = jwt_claims(token);
        claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap()
    };
    let t = server.token_with("h", &["--team", "acme", "--ttl", "12h"]);
    assert_eq!(lifetime(&t), 12 * 3600);
    let r = admin.run(&[
        "admin", "tokens", "issue", "--user", "d", "--team", "acme", "--ttl", "12h",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(lifetime(r.stdout.trim()), 86_400);

    assert!(
        missing.is_empty(),
        "docs/admin.md does not show:\n{}",
        missing.join("\n\n")
    );
}

/// The claims of a token (its payload, not verified).
fn jwt_claims(token: &str) -> serde_json::Value {
    use base64::Engine;
    let payload = token.split('.').nth(1).expect("a JWT");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .expect("base64url");
    serde_json::from_slice(&bytes).expect("JSON claims")
}
