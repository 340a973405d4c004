//! The configuration file (`--config FILE`, `MEMSYNC_CONFIG`): flags win over the environment,
//! which wins over the file, which wins over the built-in defaults; `config show` says where
//! every value came from and never prints a secret; a server runs with the file's settings; a
//! bad file is refused by name, with status 2, before anything starts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use memsync_e2e::*;

/// `memsync-server` with no `MEMSYNC_*` or `DATABASE_URL` from the test's own environment.
fn server_cmd() -> Command {
    let mut cmd = Command::new(bin_path("memsync-server"));
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("MEMSYNC_") || k == "DATABASE_URL" {
            cmd.env_remove(k);
        }
    }
    cmd.stdin(Stdio::null());
    cmd
}

fn run(cmd: &mut Command) -> (i32, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.output().expect("run memsync-server");
    (
        status.code().unwrap_or(-1),
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write config file");
    p
}

/// The settings lines of `config show`: key -> (value as written, source comment). A commented
/// out (unset) setting has the value `<unset>`.
fn shown(stdout: &str) -> BTreeMap<String, (String, String)> {
    let mut out = BTreeMap::new();
    for line in stdout.lines() {
        let (setting, source) = match line.rsplit_once("  # ") {
            Some(x) => x,
            None => continue,
        };
        let setting = setting.trim_end();
        let setting = setting.strip_prefix("# ").unwrap_or(setting);
        let Some((key, value)) = setting.split_once(" = ") else {
            continue;
        };
        out.insert(key.to_owned(), (value.to_owned(), source.trim().to_owned()));
    }
    out
}

fn get<'a>(m: &'a BTreeMap<String, (String, String)>, key: &str) -> (&'a str, &'a str) {
    let (v, s) = m
        .get(key)
        .unwrap_or_else(|| panic!("`config show` has no {key}: {m:?}"));
    (v.as_str(), s.as_str())
}

const DB_SECRET: &str = "pw-FILE-DB-7f3a9c";
const JWT_FILE_SECRET: &str = "jwt-FILE-SECRET-5d1e8b-0123456789abcdefghijklmnop";
const JWT_ENV_SECRET: &str = "jwt-ENV-SECRET-c4a2f0-0123456789abcdefghijklmnop";
const MIRROR_SECRET: &str = "tok-FLAG-MIRROR-9b7e21";

#[test]
fn flags_beat_environment_beat_file_beat_defaults_and_show_never_prints_secrets() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let file = write(
        tmp.path(),
        "memsync.toml",
        &format!(
            "# a comment\n\
             listen = \"127.0.0.1:1111\"\n\
             max_body_bytes = 1000\n\
             request_timeout = \"45s\"\n\
             export_paused = true\n\
             data_dir = \"/srv/memsync-from-file\"\n\
             database_url = \"postgres://memsync:{DB_SECRET}@db.example/memsync\"\n\
             jwt_secret = \"{JWT_FILE_SECRET}\"\n"
        ),
    );
    let mirror = format!("https://git:{MIRROR_SECRET}@git.example/{{team}}-{{name}}.git");
    let (code, stdout, stderr) = run(server_cmd()
        .args(["--listen", "127.0.0.1:3333", "config", "show"])
        .arg("--config")
        .arg(&file)
        .args(["--mirror-url-template", &mirror])
        .env("MEMSYNC_LISTEN", "127.0.0.1:2222")
        .env("MEMSYNC_MAX_BODY_BYTES", "2000")
        .env("MEMSYNC_JWT_SECRET", JWT_ENV_SECRET));
    assert_eq!(code, 0, "{stderr}");
    let m = shown(&stdout);
    // One key in all three: the flag wins.
    assert_eq!(
        get(&m, "listen"),
        ("\"127.0.0.1:3333\"", "flag"),
        "{stdout}"
    );
    // In the file and the environment: the environment wins.
    assert_eq!(
        get(&m, "max_body_bytes"),
        ("2000", "env MEMSYNC_MAX_BODY_BYTES"),
        "{stdout}"
    );
    // In the file only.
    assert_eq!(get(&m, "request_timeout"), ("\"45s\"", "file"), "{stdout}");
    assert_eq!(get(&m, "export_paused"), ("true", "file"), "{stdout}");
    assert_eq!(
        get(&m, "data_dir"),
        ("\"/srv/memsync-from-file\"", "file"),
        "{stdout}"
    );
    // Nowhere: the built-in default.
    assert_eq!(get(&m, "max_streams"), ("10000", "default"), "{stdout}");
    assert_eq!(
        get(&m, "events_heartbeat"),
        ("\"15s\"", "default"),
        "{stdout}"
    );
    assert_eq!(get(&m, "export_dir"), ("<unset>", "default"), "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("# export_dir = <unset>")),
        "an unset setting is commented out: {stdout}"
    );
    // Secrets: set, where from, never their values.
    assert_eq!(
        get(&m, "database_url"),
        ("\"[redacted]\"", "file"),
        "{stdout}"
    );
    assert_eq!(
        get(&m, "jwt_secret"),
        ("\"[redacted]\"", "env MEMSYNC_JWT_SECRET"),
        "{stdout}"
    );
    assert_eq!(
        get(&m, "mirror_url_template"),
        ("\"[redacted]\"", "flag"),
        "{stdout}"
    );
    for secret in [DB_SECRET, JWT_FILE_SECRET, JWT_ENV_SECRET, MIRROR_SECRET] {
        assert!(!stdout.contains(secret), "stdout shows a secret: {stdout}");
        assert!(!stderr.contains(secret), "stderr shows a secret: {stderr}");
    }
    assert!(
        stdout.contains(&format!("# Configuration file: {}", file.display())),
        "{stdout}"
    );

    // Every setting of --help is shown (plus jwt_secret), each with a source.
    let (_, help, _) = run(server_cmd().arg("--help"));
    for flag in help
        .lines()
        // An option's line, not a wrapped description (indented 10).
        .filter(|l| l.len() - l.trim_start().len() <= 6)
        .filter_map(|l| l.trim_start().strip_prefix("--"))
        .map(|l| l.split([' ', '<']).next().unwrap_or(""))
        .filter(|f| !["help", "version", "config"].contains(f))
    {
        let key = flag.replace('-', "_");
        assert!(m.contains_key(&key), "`config show` lacks {key}: {stdout}");
    }
    assert!(m.contains_key("jwt_secret"));

    // What `config show` prints is a configuration file: fed back (with a signing secret in
    // place of the redacted one, which is too short to be one), it gives the same values.
    let fed = stdout.replace(
        "jwt_secret = \"[redacted]\"",
        &format!("jwt_secret = \"{JWT_FILE_SECRET}\""),
    );
    assert_ne!(fed, stdout);
    let again = write(tmp.path(), "shown.toml", &fed);
    let (code, stdout2, stderr2) = run(server_cmd()
        .args(["config", "show"])
        .env("MEMSYNC_CONFIG", &again));
    assert_eq!(
        code, 0,
        "the shown configuration is refused: {stderr2}\n{stdout}"
    );
    let m2 = shown(&stdout2);
    for (key, (value, _)) in &m {
        let (value2, source2) = get(&m2, key);
        assert_eq!(value2, value, "{key} after a round trip: {stdout2}");
        if value != "<unset>" {
            assert_eq!(source2, "file", "{key}: {stdout2}");
        }
    }
    assert!(
        stdout2.contains(&format!(
            "# Configuration file: {}  (env MEMSYNC_CONFIG)",
            again.display()
        )),
        "{stdout2}"
    );

    // DATABASE_URL is the environment's too: it wins over the file. The file's jwt_secret
    // counts when the environment has none.
    let (code, stdout, stderr) = run(server_cmd()
        .args(["config", "show", "--config"])
        .arg(&file)
        .env("DATABASE_URL", format!("postgres://x:{DB_SECRET}-env@h/db")));
    assert_eq!(code, 0, "{stderr}");
    let m = shown(&stdout);
    assert_eq!(
        get(&m, "database_url"),
        ("\"[redacted]\"", "env DATABASE_URL")
    );
    assert_eq!(get(&m, "jwt_secret"), ("\"[redacted]\"", "file"));
    assert_eq!(get(&m, "listen"), ("\"127.0.0.1:1111\"", "file"));
    assert_eq!(get(&m, "max_body_bytes"), ("1000", "file"));
    assert!(!stdout.contains(DB_SECRET) && !stderr.contains(DB_SECRET));

    // Without a file: defaults, and the unset secrets commented out.
    let (code, stdout, stderr) = run(server_cmd().args(["config", "show"]));
    assert_eq!(code, 0, "{stderr}");
    let m = shown(&stdout);
    assert_eq!(get(&m, "listen"), ("\"127.0.0.1:7878\"", "default"));
    assert_eq!(get(&m, "database_url"), ("<unset>", "default"));
    assert_eq!(get(&m, "jwt_secret"), ("<unset>", "default"));
    assert!(stdout.contains("# Configuration file: none"), "{stdout}");
}

/// A bad file: status 2, a message naming the file and the key, nothing started.
fn refused(text: &str, args: &[&str]) -> String {
    let tmp = tempfile::tempdir().expect("tempdir");
    let file = write(tmp.path(), "memsync.toml", text);
    let data = tmp.path().join("data");
    let mut cmd = server_cmd();
    cmd.arg("--config").arg(&file).args(args);
    let (code, stdout, stderr) = run(cmd.arg("--data-dir").arg(&data));
    assert_eq!(
        code, 2,
        "{text:?} {args:?}: stdout {stdout} stderr {stderr}"
    );
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        !data.exists(),
        "{text:?}: something started in the data dir"
    );
    assert!(
        stderr.contains(&file.display().to_string()),
        "the message names the file: {stderr}"
    );
    stderr
}

#[test]
fn a_bad_configuration_file_is_refused_by_name_before_anything_starts() {
    // A typo, with the key meant.
    let e = refused("listn = \"127.0.0.1:7000\"\n", &["serve"]);
    assert!(e.contains("unknown key `listn`"), "{e}");
    assert!(e.contains("(did you mean `listen`?)"), "{e}");
    // Dashes are not the keys' spelling.
    let e = refused("max-body-bytes = 10\n", &["config", "show"]);
    assert!(
        e.contains("unknown key `max-body-bytes`") && e.contains("did you mean `max_body_bytes`"),
        "{e}"
    );
    // A hidden test hook and the file's own name are no keys.
    let e = refused("export_failpoint = \"after-commit\"\n", &["serve"]);
    assert!(e.contains("unknown key `export_failpoint`"), "{e}");
    let e = refused("config = \"/etc/other.toml\"\n", &["serve"]);
    assert!(
        e.contains("`config`") && e.contains("cannot name another"),
        "{e}"
    );
    // Wrong types, each naming the key and what is expected.
    let e = refused("max_body_bytes = \"lots\"\n", &["serve"]);
    assert!(
        e.contains("`max_body_bytes`") && e.contains("is a string") && e.contains("whole number"),
        "{e}"
    );
    let e = refused("request_timeout = 30\n", &["serve"]);
    assert!(
        e.contains("`request_timeout`") && e.contains("is an integer") && e.contains("\"30s\""),
        "{e}"
    );
    let e = refused("export_paused = \"yes\"\n", &["serve"]);
    assert!(
        e.contains("`export_paused`") && e.contains("true or false"),
        "{e}"
    );
    let e = refused("max_body_bytes = -5\n", &["serve"]);
    assert!(
        e.contains("`max_body_bytes`") && e.contains("not valid"),
        "{e}"
    );
    let e = refused("db_pool_size = 99999999999\n", &["serve"]);
    assert!(
        e.contains("`db_pool_size`") && e.contains("from 0 to 4294967295"),
        "{e}"
    );
    // A value the flag's own parser refuses.
    let e = refused("listen = \"nowhere\"\n", &["serve"]);
    assert!(e.contains("`listen`") && e.contains("\"nowhere\""), "{e}");
    let e = refused("request_timeout = \"soon\"\n", &["serve"]);
    assert!(
        e.contains("`request_timeout`") && e.contains("duration"),
        "{e}"
    );
    // Tables and arrays where a value is expected; flat keys only.
    let e = refused("[server]\nlisten = \"127.0.0.1:7000\"\n", &["serve"]);
    assert!(
        e.contains("`[server]`") && e.contains("flat keys only"),
        "{e}"
    );
    let e = refused("listen = [\"127.0.0.1:7000\"]\n", &["serve"]);
    assert!(e.contains("`listen`") && e.contains("is an array"), "{e}");
    // Every problem at once.
    let e = refused("listn = 1\nmax_streams = \"many\"\n", &["serve"]);
    assert!(e.contains("`listn`") && e.contains("`max_streams`"), "{e}");
    // Not TOML: the line, never its text (it may hold a secret).
    let e = refused(
        &format!("listen = \"127.0.0.1:7000\"\ndatabase_url = \"postgres://u:{DB_SECRET}@h\n"),
        &["serve"],
    );
    assert!(e.contains("not valid TOML") && e.contains("line 2"), "{e}");
    assert!(!e.contains(DB_SECRET), "{e}");
    // A secret's wrong value is not echoed either.
    let e = refused(&format!("jwt_secret = [\"{DB_SECRET}\"]\n"), &["serve"]);
    assert!(e.contains("`jwt_secret`") && !e.contains(DB_SECRET), "{e}");
    let e = refused(&format!("jwt_secret = \"{DB_SECRET}\"\n"), &["serve"]);
    assert!(
        e.contains("`jwt_secret`") && e.contains("shorter than 32") && !e.contains(DB_SECRET),
        "{e}"
    );
}

#[test]
fn a_missing_configuration_file_is_a_clear_error() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let missing = tmp.path().join("no-such.toml");
    for via_env in [false, true] {
        let mut cmd = server_cmd();
        if via_env {
            cmd.env("MEMSYNC_CONFIG", &missing);
        } else {
            cmd.arg("--config").arg(&missing);
        }
        let (code, stdout, stderr) = run(cmd.args(["config", "show"]));
        assert_eq!(code, 2, "{stdout} {stderr}");
        assert!(stdout.is_empty(), "{stdout}");
        assert!(
            stderr.contains(&format!(
                "cannot read the configuration file {}",
                missing.display()
            )),
            "{stderr}"
        );
        let named = if via_env {
            "MEMSYNC_CONFIG"
        } else {
            "--config"
        };
        assert!(stderr.contains(named), "{stderr}");
    }
}

/// A `memsync-server serve` started from a configuration file alone.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn a_server_runs_with_the_settings_of_its_file() {
    let db = TestDb::new().await;
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&data).expect("data dir");
    let file = write(
        tmp.path(),
        "memsync.toml",
        &format!(
            "listen = \"127.0.0.1:0\"\n\
             data_dir = {}\n\
             database_url = {}\n\
             export_paused = true\n\
             max_body_bytes = 4096\n\
             jwt_secret = \"{TEST_JWT_SECRET}\"\n\
             log_format = \"json\"\n",
            toml_string(&data.display().to_string()),
            toml_string(&db.url),
        ),
    );
    let log = std::fs::File::create(tmp.path().join("server.log")).expect("log");
    let mut child = server_cmd()
        .arg("serve")
        .env("MEMSYNC_CONFIG", &file)
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .expect("spawn memsync-server");
    let first = memsync_e2e::first_stdout_line(&mut child, Duration::from_secs(120));
    let server = Running(child);
    let line = first.unwrap_or_else(|_| {
        panic!(
            "memsync-server did not start; its log:\n{}",
            std::fs::read_to_string(tmp.path().join("server.log")).unwrap_or_default()
        )
    });
    let url = line
        .strip_prefix("memsync-server listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {line}"))
        .to_owned();
    // Port 0 from the file: not the default 7878.
    assert!(
        url.starts_with("http://127.0.0.1:") && !url.ends_with(":7878"),
        "{url}"
    );

    // The file's jwt_secret signs: a token made with it is accepted, and a push under the file's
    // body limit lands in the file's database.
    let alice = Client::new(&url, &forge_token("alice", &[("acme", "member")], false));
    let r = alice
        .push(
            "acme/api",
            &batch(vec![put(
                "small.md",
                &memory("small", "a small one", "project", "Short.\n"),
                None,
            )]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let versions = count(&db, "SELECT count(*) FROM memory_versions").await;
    assert!(versions > 0, "the push went to the file's database");
    // Over the file's max_body_bytes (4096, far under the 16 MiB default): refused, nothing stored.
    let body = batch(vec![put(
        "big.md",
        &memory("big", "a big one", "project", &"x".repeat(6000)),
        None,
    )]);
    let r = alice.push("acme/api", &body).await;
    assert_eq!(r.status, 413, "{}", r.text);
    assert!(r.text.contains("payload_too_large"), "{}", r.text);
    assert_eq!(
        count(&db, "SELECT count(*) FROM memory_versions").await,
        versions
    );
    // The file gave the signing secret: no key was generated into the file's data dir.
    assert!(!data.join("jwt.key").exists());
    drop(server);
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    format!("{s:?}")
}
