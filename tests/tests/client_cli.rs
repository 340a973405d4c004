//! The `memsync` command line as users and scripts see it: the exit code of every command in
//! every situation (and one JSON document on stdout with --json), a user's own push never shown
//! as "behind", path arguments that mean the same in every command, summaries that count what
//! they print, admin refusals that say which token is needed, and hooks that run the memsync
//! binary by its absolute path.

use std::path::{Path, PathBuf};

use memsync_e2e::*;
use serde_json::{Value, json};

const ORIGIN: &str = "git@github.com:Acme/API.git";

fn mem(name: &str, body: &str) -> String {
    memory(name, &format!("about {name}"), "project", body)
}

/// `memsync push`, asserted to succeed.
fn push(u: &User) -> Value {
    let r = u.run(&["push", "--json"]);
    assert_eq!(r.code, 0, "{} push: {}\n{}", u.name, r.stdout, r.stderr);
    r.json()
}

/// Leaves `b` with an open conflict on `path` against `a`'s edit (both changed one line).
fn conflict(a: &User, b: &User, path: &str) {
    a.write(path, &mem("c", "The line.\n"));
    push(a);
    // (1 when b has other open conflicts already.)
    let r = b.run(&["pull"]);
    assert!(
        r.code <= 1 && b.read(path).is_some(),
        "{}\n{}",
        r.stdout,
        r.stderr
    );
    a.write(
        path,
        &mem("c", &format!("The line, as {} has it.\n", a.name)),
    );
    push(a);
    b.write(
        path,
        &mem("c", &format!("The line, as {} has it.\n", b.name)),
    );
    let r = b.run(&["push", "--json"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    let conflicts = r.json()["push"]["conflicts"].clone();
    assert!(
        conflicts
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["path"] == path),
        "{}",
        r.stdout
    );
}

/// A token signed with a key the server does not have.
fn forged_token() -> String {
    let now = chrono::Utc::now().timestamp();
    let claims = json!({
        "sub": "alice", "name": "alice", "teams": { "acme": "member" }, "admin": false,
        "jti": uuid::Uuid::new_v4(), "iat": now, "exp": now + 3600,
        "iss": "memsync", "aud": "memsync",
    });
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(b"not-the-server-key-0123456789-abcdefghijklmnop")
            .unwrap(),
    )
    .unwrap()
}

/// A server and the people of the exit-code table.
struct World {
    server: Server,
    _db: TestDb,
    /// Member of acme; hook installed; nothing wrong.
    alice: User,
    /// Member of acme with problems: an open conflict (c.md), a refused `type: user` memory
    /// (me.md), and no hook.
    bob: User,
    /// Member of acme with two open conflicts, c0.md and c1.md (one per output mode).
    carl: User,
    /// Team admin of acme.
    ann: User,
    /// Server admin.
    root: User,
    /// Logs in and out.
    lou: User,
    lou_token: String,
    /// Has no configuration at all: logged out, no .memsync.toml.
    nora: User,
}

impl World {
    async fn new() -> World {
        let (server, db) = Server::start().await;
        let alice = User::new(&server, "alice", &["acme"], ORIGIN);
        alice.write("x.md", &mem("x", "Version one.\n"));
        assert_eq!(push(&alice)["push"]["pushed_revision"], 1);
        alice.write("x.md", &mem("x", "Version two.\n"));
        assert_eq!(push(&alice)["push"]["pushed_revision"], 2);
        assert_eq!(alice.run(&["install-hook"]).code, 0);

        let bob = User::new(&server, "bob", &["acme"], ORIGIN);
        conflict(&alice, &bob, "c.md");
        bob.write("me.md", &memory("me", "about me", "user", "I like tabs.\n"));
        let r = bob.run(&["push", "--json"]);
        assert_eq!(
            r.json()["push"]["refused"][0]["path"],
            "me.md",
            "{}",
            r.stdout
        );

        let carl = User::new(&server, "carl", &["acme"], ORIGIN);
        conflict(&alice, &carl, "c0.md");
        conflict(&alice, &carl, "c1.md");
        assert_eq!(alice.run(&["pull"]).code, 0);

        let ann = User::new(&server, "ann", &["acme:admin"], ORIGIN);
        let root = User::with_token(
            &server,
            "root",
            &server.token_with("root", &["--admin"]),
            ORIGIN,
        );
        let lou_token = server.token("lou", &["acme"]);
        let lou = User::with_token(&server, "lou", &lou_token, ORIGIN);
        let nora = User::new(&server, "nora", &["acme"], ORIGIN);
        assert_eq!(nora.run(&["logout"]).code, 0);
        std::fs::remove_file(nora.repo.join(".memsync.toml")).unwrap();
        World {
            server,
            _db: db,
            alice,
            bob,
            carl,
            ann,
            root,
            lou,
            lou_token,
            nora,
        }
    }
}

type Prepare = Box<dyn Fn(&World, usize) -> Vec<String>>;

/// One line of the table: who runs what, and the exit code it must give.
struct Row {
    name: String,
    who: fn(&World) -> &User,
    /// The arguments, for run `n` (0: text, 1: --json); may prepare the situation first.
    prepare: Prepare,
    code: i32,
}

fn row(name: &str, who: fn(&World) -> &User, args: &[&str], code: i32) -> Row {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    Row {
        name: name.to_owned(),
        who,
        prepare: Box::new(move |_, _| args.clone()),
        code,
    }
}

fn row_with(
    name: &str,
    who: fn(&World) -> &User,
    code: i32,
    prepare: impl Fn(&World, usize) -> Vec<String> + 'static,
) -> Row {
    Row {
        name: name.to_owned(),
        who,
        prepare: Box::new(prepare),
        code,
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Runs every row twice, as text and with --json, and reports every mismatch at once.
fn check_rows(w: &World, rows: &[Row], env: &[(&str, &str)]) {
    let mut failures = Vec::new();
    for r in rows {
        for n in 0..2 {
            let mut args = (r.prepare)(w, n);
            if n == 1 {
                args.push("--json".into());
            }
            let argv: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = (r.who)(w).run_with(&argv, env);
            if out.code != r.code {
                failures.push(format!(
                    "{} (`memsync {}`): exit {} instead of {}\n  stdout: {}\n  stderr: {}",
                    r.name,
                    args.join(" "),
                    out.code,
                    r.code,
                    out.stdout.trim(),
                    out.stderr.trim()
                ));
            }
            if n == 1 && serde_json::from_str::<Value>(&out.stdout).is_err() {
                failures.push(format!(
                    "{} (`memsync {}`): stdout is not one JSON document: {:?}",
                    r.name,
                    args.join(" "),
                    out.stdout
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}

fn alice(w: &World) -> &User {
    &w.alice
}
fn bob(w: &World) -> &User {
    &w.bob
}
fn carl(w: &World) -> &User {
    &w.carl
}
fn ann(w: &World) -> &User {
    &w.ann
}
fn root(w: &World) -> &User {
    &w.root
}
fn lou(w: &World) -> &User {
    &w.lou
}
fn nora(w: &World) -> &User {
    &w.nora
}

/// A fingerprint to allowlist (any 64 lowercase hex characters).
fn fingerprint(seed: &str) -> String {
    memsync_core::Sha256::of(seed.as_bytes()).to_hex()
}

fn init_again(w: &World, _: usize) -> Vec<String> {
    let _ = std::fs::remove_file(w.alice.repo.join(".memsync.toml"));
    strings(&["init"])
}

/// The rows of commands that work without the server, and of those that need it (`down`: the
/// code those give when the server cannot be used).
fn rows_without_a_usable_server(down: i32) -> Vec<Row> {
    vec![
        row_with("init (local)", alice, 0, init_again),
        row_with("login", lou, down, |w, _| {
            strings(&[
                "login",
                "--server",
                &w.server.url,
                "--token",
                &forged_token(),
            ])
        }),
        row("pull", alice, &["pull"], down),
        row_with("push", alice, down, |w, n| {
            w.alice
                .write(&format!("offline{n}.md"), &mem("offline", "x\n"));
            strings(&["push"])
        }),
        row("sync", alice, &["sync"], down),
        row("status", alice, &["status"], down),
        row("status --offline", alice, &["status", "--offline"], 0),
        row_with("diff (local)", alice, 0, |w, _| {
            w.alice.write("x.md", &mem("x", "Edited offline.\n"));
            strings(&["diff", "x.md"])
        }),
        row_with("resolve (local)", carl, 0, |_, n| {
            strings(&["resolve", &format!("c{n}.md"), "--take", "local"])
        }),
        row("check (local)", alice, &["check"], 0),
        row("scan (local)", alice, &["scan", "x.md"], 0),
        row("hook session-start", alice, &["hook", "session-start"], 0),
        row_with("hook session-end", alice, 0, |w, n| {
            w.alice
                .write(&format!("ending{n}.md"), &mem("ending", "x\n"));
            strings(&["hook", "session-end"])
        }),
        row("install-hook (local)", alice, &["install-hook"], 0),
        row("doctor finds it", alice, &["doctor"], 1),
        row("review list", alice, &["review", "list"], down),
        row("review show", ann, &["review", "show", "1"], down),
        row("review approve", ann, &["review", "approve", "1"], down),
        row(
            "review reject",
            ann,
            &["review", "reject", "1", "--reason", "r"],
            down,
        ),
        row("admin disable", ann, &["admin", "disable", "x.md"], down),
        row("admin enable", ann, &["admin", "enable", "x.md"], down),
        row(
            "admin rollback",
            ann,
            &["admin", "rollback", "x.md", "--to", "1"],
            down,
        ),
        row(
            "admin project show",
            ann,
            &["admin", "project", "show"],
            down,
        ),
        row(
            "admin project set",
            ann,
            &["admin", "project", "set", "--review", "off"],
            down,
        ),
        row(
            "admin reviewer list",
            ann,
            &["admin", "reviewer", "list"],
            down,
        ),
        row(
            "admin reviewer add",
            ann,
            &["admin", "reviewer", "add", "bob"],
            down,
        ),
        row(
            "admin reviewer remove",
            ann,
            &["admin", "reviewer", "remove", "bob", "--team", "acme"],
            down,
        ),
        row("admin audit", ann, &["admin", "audit"], down),
        row("admin history", ann, &["admin", "history", "x.md"], down),
        row(
            "admin show",
            ann,
            &["admin", "show", "x.md", "--revision", "1"],
            down,
        ),
        row(
            "admin diff",
            ann,
            &["admin", "diff", "x.md", "--from", "1", "--to", "2"],
            down,
        ),
        row(
            "admin rm",
            ann,
            &["admin", "rm", "x.md", "--reason", "r"],
            down,
        ),
        row(
            "admin restore",
            ann,
            &[
                "admin",
                "restore",
                "x.md",
                "--revision",
                "1",
                "--reason",
                "r",
            ],
            down,
        ),
        row(
            "admin purge",
            ann,
            &["admin", "purge", "x.md", "--reason", "r", "--yes"],
            down,
        ),
        row("admin projects", ann, &["admin", "projects"], down),
        row(
            "admin projects --archive",
            ann,
            &["admin", "projects", "--archive", "acme/api"],
            down,
        ),
        row(
            "admin tokens list",
            root,
            &["admin", "tokens", "list"],
            down,
        ),
        row(
            "admin tokens issue",
            root,
            &[
                "admin", "tokens", "issue", "--user", "zed", "--team", "acme",
            ],
            down,
        ),
        row(
            "admin tokens revoke",
            root,
            &[
                "admin",
                "tokens",
                "revoke",
                "00000000-0000-4000-8000-000000000000",
            ],
            down,
        ),
        row("allowlist list", alice, &["allowlist", "list"], down),
        row_with("allowlist add", ann, down, |_, _| {
            strings(&[
                "allowlist",
                "add",
                &fingerprint("a"),
                "--rule",
                "r",
                "--reason",
                "x",
            ])
        }),
        row_with("allowlist remove", ann, down, |_, _| {
            strings(&["allowlist", "remove", &fingerprint("a")])
        }),
    ]
}

#[tokio::test]
async fn exit_codes_when_all_is_well_problems_found_or_usage_is_wrong() {
    let w = World::new().await;
    // Bob's conflict gets its markers, so `resolve --take merged` finds them still there.
    assert_eq!(w.bob.run(&["resolve", "c.md", "--take", "merged"]).code, 0);
    let bob_team = w.bob.team_dir().display().to_string();

    let rows = vec![
        // All is well.
        row_with("init", alice, 0, init_again),
        row_with("login", lou, 0, |w, _| {
            strings(&["login", "--server", &w.server.url, "--token", &w.lou_token])
        }),
        row_with("logout", lou, 0, |w, _| {
            let r = w
                .lou
                .run(&["login", "--server", &w.server.url, "--token", &w.lou_token]);
            assert_eq!(r.code, 0, "{}", r.stderr);
            strings(&["logout"])
        }),
        row("pull", alice, &["pull"], 0),
        row_with("push", alice, 0, |w, n| {
            w.alice.write(&format!("new{n}.md"), &mem("new", "x\n"));
            strings(&["push"])
        }),
        row_with("sync", alice, 0, |w, n| {
            w.alice.write(&format!("sync{n}.md"), &mem("sync", "x\n"));
            strings(&["sync"])
        }),
        row("status", alice, &["status"], 0),
        row("status --offline", alice, &["status", "--offline"], 0),
        row_with("diff", alice, 0, |w, n| {
            w.alice.write("x.md", &mem("x", &format!("Edit {n}.\n")));
            strings(&["diff", "x.md"])
        }),
        row_with("resolve", carl, 0, |_, n| {
            strings(&["resolve", &format!("c{n}.md"), "--take", "local"])
        }),
        row("check", alice, &["check"], 0),
        row("scan", alice, &["scan", "x.md"], 0),
        row("hook session-start", alice, &["hook", "session-start"], 0),
        row_with("hook session-end", alice, 0, |w, n| {
            w.alice.write(&format!("ended{n}.md"), &mem("ended", "x\n"));
            strings(&["hook", "session-end"])
        }),
        row("install-hook", alice, &["install-hook"], 0),
        row("doctor", alice, &["doctor"], 0),
        row("admin audit", ann, &["admin", "audit", "--limit", "5"], 0),
        row("admin history", ann, &["admin", "history", "x.md"], 0),
        row(
            "admin show",
            ann,
            &["admin", "show", "x.md", "--revision", "1"],
            0,
        ),
        row(
            "admin diff",
            ann,
            &["admin", "diff", "x.md", "--from", "1", "--to", "2"],
            0,
        ),
        row_with("admin rm", ann, 0, |w, n| {
            w.alice.write(
                &format!("rm{n}.md"),
                &mem("rm", &format!("remove me {n}\n")),
            );
            push(&w.alice);
            strings(&["admin", "rm", &format!("rm{n}.md"), "--reason", "test"])
        }),
        row_with("admin restore", ann, 0, |w, n| {
            let path = format!("rs{n}.md");
            w.alice
                .write(&path, &mem("rs", &format!("restore me {n}\n")));
            let revision = push(&w.alice)["push"]["pushed_revision"].to_string();
            let r = w.ann.run(&["admin", "rm", &path, "--reason", "gone"]);
            assert_eq!(r.code, 0, "{}", r.stderr);
            strings(&[
                "admin",
                "restore",
                &path,
                "--revision",
                &revision,
                "--reason",
                "back",
            ])
        }),
        row_with("admin purge", ann, 0, |w, n| {
            w.alice
                .write(&format!("pg{n}.md"), &mem("pg", &format!("purge me {n}\n")));
            push(&w.alice);
            strings(&[
                "admin",
                "purge",
                &format!("pg{n}.md"),
                "--reason",
                "leak",
                "--yes",
            ])
        }),
        row("admin projects", ann, &["admin", "projects"], 0),
        row(
            "admin projects --unarchive",
            ann,
            &["admin", "projects", "--unarchive", "acme/api"],
            0,
        ),
        row("admin tokens list", root, &["admin", "tokens", "list"], 0),
        row(
            "admin tokens issue",
            root,
            &[
                "admin", "tokens", "issue", "--user", "zed", "--team", "acme", "--ttl", "30d",
            ],
            0,
        ),
        row_with("admin tokens revoke", root, 0, |w, _| {
            let jti = token_jti(&w.server.token("temp", &["acme"]));
            strings(&["admin", "tokens", "revoke", &jti])
        }),
        row("allowlist list", alice, &["allowlist", "list"], 0),
        row_with("allowlist add", ann, 0, |_, n| {
            strings(&[
                "allowlist",
                "add",
                &fingerprint(&format!("add{n}")),
                "--rule",
                "generic_secret",
                "--reason",
                "a test value",
            ])
        }),
        row_with("allowlist remove", ann, 0, |w, n| {
            let fp = fingerprint(&format!("remove{n}"));
            let r = w
                .ann
                .run(&["allowlist", "add", &fp, "--rule", "r", "--reason", "test"]);
            assert_eq!(r.code, 0, "{}", r.stderr);
            strings(&["allowlist", "remove", &fp])
        }),
        // Problems found.
        row("pull with a conflict", bob, &["pull"], 1),
        row("push with a refused file", bob, &["push"], 1),
        row("sync with both", bob, &["sync"], 1),
        row("status with both", bob, &["status"], 1),
        row(
            "status --offline with both",
            bob,
            &["status", "--offline"],
            1,
        ),
        row(
            "resolve with markers left",
            bob,
            &["resolve", "c.md", "--take", "merged"],
            1,
        ),
        row("check with a finding", bob, &["check"], 1),
        row("scan with a finding", bob, &["scan", &bob_team], 1),
        row("doctor without a hook", bob, &["doctor"], 1),
        // Usage and environment errors.
        row("an unknown flag", alice, &["pull", "--bogus"], 2),
        row(
            "a member's admin command",
            alice,
            &["admin", "history", "x.md"],
            2,
        ),
        row(
            "a team admin's token command",
            ann,
            &["admin", "tokens", "list"],
            2,
        ),
        row(
            "a member's allowlist change",
            alice,
            &["allowlist", "remove", &fingerprint("nope")],
            2,
        ),
        row(
            "resolve without a conflict",
            alice,
            &["resolve", "x.md", "--take", "local"],
            2,
        ),
        row(
            "diff outside the team dir",
            alice,
            &["diff", "/etc/hosts"],
            2,
        ),
        row("diff of nothing", alice, &["diff", "nope.md"], 2),
        row("scan of nothing", alice, &["scan", "/nonexistent/x.md"], 2),
        row("init twice", alice, &["init"], 2),
        row(
            "review reject without a reason",
            ann,
            &["review", "reject", "1"],
            2,
        ),
        row(
            "review show of a non-number",
            ann,
            &["review", "show", "twelve"],
            2,
        ),
        row(
            "admin project set with nothing to set",
            ann,
            &["admin", "project", "set"],
            2,
        ),
        row(
            "admin project set with a bad --review-after",
            ann,
            &["admin", "project", "set", "--review-after", "soon"],
            2,
        ),
        row(
            "admin rollback without --to",
            ann,
            &["admin", "rollback", "x.md"],
            2,
        ),
        row(
            "admin reviewer of a bad team",
            ann,
            &["admin", "reviewer", "list", "--team", "Not A Team"],
            2,
        ),
        row("pull without configuration", nora, &["pull"], 2),
        row("push without configuration", nora, &["push"], 2),
        row("status without configuration", nora, &["status"], 2),
        row("diff without configuration", nora, &["diff"], 2),
        row("doctor without configuration", nora, &["doctor"], 2),
        row(
            "admin without configuration",
            nora,
            &["admin", "projects"],
            2,
        ),
        row(
            "allowlist without configuration",
            nora,
            &["allowlist", "list"],
            2,
        ),
        row(
            "login without a server",
            nora,
            &["login", "--token", "t"],
            2,
        ),
    ];
    check_rows(&w, &rows, &[]);
}

#[tokio::test]
async fn exit_codes_with_a_refused_token() {
    let w = World::new().await;
    let forged = forged_token();
    check_rows(
        &w,
        &rows_without_a_usable_server(2),
        &[("MEMSYNC_TOKEN", &forged)],
    );
}

#[tokio::test]
async fn exit_codes_with_the_server_down() {
    let mut w = World::new().await;
    w.server.kill();
    check_rows(&w, &rows_without_a_usable_server(2), &[]);
}

#[tokio::test]
async fn a_users_own_push_is_never_behind() {
    let (server, _db) = Server::start().await;
    let alice = User::new(&server, "alice", &["acme"], ORIGIN);
    let bob = User::new(&server, "bob", &["acme"], ORIGIN);
    let status = |u: &User| {
        let r = u.run(&["status", "--json"]);
        assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
        r.json()
    };

    // The project's first push, then more of them: never behind, at the server's revision.
    for (i, path) in ["a.md", "b.md", "a.md"].iter().enumerate() {
        alice.write(path, &mem("a", &format!("Take {i}.\n")));
        let r = alice.run(&["push"]);
        assert!(r.stdout.contains("pushed 1 file"), "{}", r.stdout);
        let st = status(&alice);
        assert_eq!(st["behind"], false, "after push {i}: {st}");
        assert_eq!(st["revision"], st["server_revision"], "{st}");
        let text = alice.run(&["status"]).stdout;
        assert!(text.contains("up to date with the server"), "{text}");
    }

    // Someone else's push is behind, and stays so after alice's next push (revision in between).
    assert_eq!(bob.run(&["pull"]).code, 0);
    bob.write("bob.md", &mem("bob", "Bob's.\n"));
    push(&bob);
    let st = status(&alice);
    assert_eq!(st["behind"], true, "{st}");
    alice.write("c.md", &mem("c", "Alice's.\n"));
    push(&alice);
    let st = status(&alice);
    assert_eq!(st["behind"], true, "bob's revision was never pulled: {st}");
    assert_eq!(
        st["server_revision"].as_i64().unwrap(),
        st["revision"].as_i64().unwrap() + 2,
        "{st}"
    );
    // A pull catches up (with bob's file; alice's own file comes back unchanged).
    let r = alice.run(&["pull", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert_eq!(alice.read("bob.md"), Some(mem("bob", "Bob's.\n")));
    let st = status(&alice);
    assert_eq!(st["behind"], false, "{st}");

    // `sync` (pull, then push): not behind either, and the next pull has nothing new.
    alice.write("d.md", &mem("d", "Synced.\n"));
    assert_eq!(alice.run(&["sync"]).code, 0);
    assert_eq!(status(&alice)["behind"], false);
    let r = alice.run(&["pull", "--json"]);
    let pulled = &r.json()["pull"];
    assert_eq!(pulled["updated"], json!([]), "{}", r.stdout);
    assert_eq!(pulled["deleted"], json!([]), "{}", r.stdout);
    // Bob, who did not push, is behind by exactly alice's revisions.
    let st = status(&bob);
    assert_eq!(st["behind"], true, "{st}");
}

/// A PEM private key block (random key material), which the scanner must flag.
fn fake_private_key() -> String {
    use base64::Engine;
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let bytes: Vec<u8> = (0..960)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 56) as u8
        })
        .collect();
    let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
    let lines: Vec<&str> = b64
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    format!(
        "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----\n",
        lines.join("\n")
    )
}

/// Where `memsync diff` found changes: the paths of its JSON answer.
fn diffed(r: &Run) -> Vec<String> {
    r.json()["diffs"]
        .as_array()
        .unwrap_or_else(|| panic!("{}\n{}", r.stdout, r.stderr))
        .iter()
        .map(|d| d["path"].as_str().unwrap().to_owned())
        .collect()
}

/// Runs `memsync` in `cwd`. The team dir is outside the repository, where no .memsync.toml
/// says which project it is, so the project and the dirs come from the environment (as they
/// would for anyone working from there).
fn run_in(u: &User, cwd: &Path, args: &[&str]) -> Run {
    let out = u
        .command(args)
        .current_dir(cwd)
        .env("MEMSYNC_PROJECT", "acme/api")
        .env("MEMSYNC_PRIVATE_DIR", u.private_dir())
        .env("MEMSYNC_TEAM_DIR", u.team_dir())
        .output()
        .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[tokio::test]
async fn path_arguments_mean_the_same_in_every_command() {
    let (server, _db) = Server::start().await;
    let alice = User::new(&server, "alice", &["acme"], ORIGIN);
    let ann = User::new(&server, "ann", &["acme:admin"], ORIGIN);
    alice.write("notes.md", &mem("notes", "One.\n"));
    alice.write("sub/deep.md", &mem("deep", "Two.\n"));
    push(&alice);
    alice.write("notes.md", &mem("notes", "One, edited.\n"));
    alice.write("sub/deep.md", &mem("deep", "Two, edited.\n"));
    let team = alice.team_dir();
    let repo = alice.repo.clone();
    // The repository has a notes.md of its own, which team commands must not take for the
    // memory.
    std::fs::write(repo.join("notes.md"), "the repo's own notes\n").unwrap();

    let deep = team.join("sub/deep.md").to_str().unwrap().to_owned();
    let cases: Vec<(PathBuf, &str, Vec<&str>)> = vec![
        // From the repository: relative to the team dir.
        (repo.clone(), "notes.md", vec!["notes.md"]),
        (repo.clone(), "sub/deep.md", vec!["sub/deep.md"]),
        (repo.clone(), "sub", vec!["sub/deep.md"]),
        // Absolute, inside the team dir.
        (repo.clone(), &deep, vec!["sub/deep.md"]),
        // From inside the team dir: relative to the current directory.
        (team.join("sub"), "deep.md", vec!["sub/deep.md"]),
        (team.join("sub"), "../notes.md", vec!["notes.md"]),
        (team.clone(), ".", vec!["notes.md", "sub/deep.md"]),
        // From the private dir, a path that reaches into the team dir.
        (alice.private_dir(), "team/notes.md", vec!["notes.md"]),
    ];
    for (cwd, arg, want) in &cases {
        let r = run_in(&alice, cwd, &["diff", arg, "--json"]);
        assert_eq!(r.code, 0, "diff {arg} in {}: {}", cwd.display(), r.stderr);
        assert_eq!(&diffed(&r), want, "diff {arg} in {}", cwd.display());
    }
    // Outside the team dir: refused, with the rule.
    let r = run_in(
        &alice,
        &repo,
        &["diff", repo.join("notes.md").to_str().unwrap()],
    );
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("not inside the team dir"), "{}", r.stderr);
    let r = run_in(&alice, &team, &["diff", "../../escape.md"]);
    assert_eq!(r.code, 2, "{}", r.stdout);

    // resolve takes the same paths: an absolute one here.
    let bob = User::new(&server, "bob", &["acme"], ORIGIN);
    conflict(&bob, &alice, "fight.md");
    let r = run_in(
        &alice,
        &repo,
        &[
            "resolve",
            team.join("fight.md").to_str().unwrap(),
            "--take",
            "local",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);

    // Admin commands too: ann names alice's memory by her own team dir's absolute path.
    let r = ann.run(&[
        "admin",
        "history",
        ann.team_dir().join("sub/deep.md").to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json()["path"], "sub/deep.md", "{}", r.stdout);

    // scan reads any file: the repository's own notes.md (it exists here), a file anywhere,
    // and, for a path that exists only there, the team dir's.
    let leak = fake_private_key();
    std::fs::write(repo.join("notes.md"), &leak).unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(elsewhere.path().join("loose.txt"), &leak).unwrap();
    let r = run_in(
        &alice,
        &repo,
        &[
            "scan",
            "notes.md",
            elsewhere.path().join("loose.txt").to_str().unwrap(),
            "sub/deep.md",
            "--json",
        ],
    );
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let j = r.json();
    assert_eq!(j["files"], 3, "{j}");
    let found: Vec<&str> = j["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert!(found.contains(&"notes.md"), "{j}");
    assert!(found.iter().any(|p| p.ends_with("loose.txt")), "{j}");
    let r = run_in(&alice, &repo, &["scan", "missing.md", "notes.md"]);
    assert_eq!(r.code, 2, "a path that cannot be scanned: {}", r.stdout);
    assert!(r.stdout.contains("1 path(s) not scanned"), "{}", r.stdout);
}

#[tokio::test]
async fn summaries_count_what_was_printed() {
    let (server, _db) = Server::start().await;
    let alice = User::new(&server, "alice", &["acme"], ORIGIN);
    let feedback = |name: &str, text: &str, extra: &str| {
        format!("---\nname: {name}\ndescription: {text}\ntype: feedback\n{extra}---\n{text}.\n")
    };
    alice.write(
        "testing.md",
        &feedback(
            "testing-policy",
            "Integration tests must hit a real database, not mocks",
            "",
        ),
    );
    push(&alice);
    std::fs::write(
        alice.private_dir().join("fast.md"),
        feedback(
            "fast-tests",
            "Mock the database in integration tests so they run fast",
            "",
        ),
    )
    .unwrap();
    let r = alice.run(&["check"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    let printed = r
        .stdout
        .lines()
        .filter(|l| l.starts_with("private fast.md contradicts team testing.md"))
        .count();
    assert_eq!(printed, 1, "{}", r.stdout);
    let summary = r.stdout.lines().last().unwrap();
    assert!(
        summary.contains("1 contradiction(s) and 0 related note(s)"),
        "{summary}"
    );
    assert!(summary.contains("0 finding(s)"), "{summary}");

    // A push stopped by a refused file says so in its first line.
    alice.write("me.md", &memory("me", "about me", "user", "Private.\n"));
    let r = alice.run(&["push"]);
    assert_eq!(r.code, 1);
    let first = r.stdout.lines().next().unwrap();
    assert!(
        first.contains("nothing pushed; 1 refused file"),
        "{}",
        r.stdout
    );
    assert_eq!(r.stdout.matches("REFUSED").count(), 1, "{}", r.stdout);
}

#[tokio::test]
async fn admin_refusals_say_which_token_is_needed_and_where_it_was_read() {
    let (server, _db) = Server::start().await;
    let alice = User::new(&server, "alice", &["acme"], ORIGIN);
    let ann = User::new(&server, "ann", &["acme:admin"], ORIGIN);
    let olga = User::new(&server, "olga", &["other"], ORIGIN);
    alice.write("plan.md", &mem("plan", "v1\n"));
    push(&alice);

    let r = alice.run(&["admin", "rm", "plan.md", "--reason", "x"]);
    assert_eq!(r.code, 2);
    for want in [
        "only admins of team `acme`",
        "`memsync admin rm` needs a team-admin token for team `acme`",
        "alice's token (acme:member)",
        "credentials.toml",
        "MEMSYNC_TOKEN",
        "--token",
    ] {
        assert!(r.stderr.contains(want), "missing {want:?}: {}", r.stderr);
    }
    let r = ann.run(&["admin", "tokens", "list", "--json"]);
    assert_eq!(r.code, 2);
    let message = r.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("needs a server-admin token"), "{message}");
    // A token of another team does not learn whether the project exists, but is told what it
    // needs.
    let r = olga.run(&["admin", "history", "plan.md"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("needs a team-admin token for team `acme`")
            && r.stderr.contains("olga's token (other:member)"),
        "{}",
        r.stderr
    );
    // Another token, given by environment: named as the source.
    let admin_token = server.token("ann2", &["acme:admin"]);
    let r = alice.run_with(
        &["admin", "history", "plan.md"],
        &[("MEMSYNC_TOKEN", &admin_token)],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = alice.run_with(
        &["admin", "rm", "plan.md", "--reason", "x"],
        &[("MEMSYNC_TOKEN", &server.token("m", &["acme"]))],
    );
    assert!(r.stderr.contains("read from MEMSYNC_TOKEN"), "{}", r.stderr);
    // A path that really is not there is reported as such, without the token lecture.
    let r = ann.run(&["admin", "history", "never.md"]);
    assert_eq!(r.code, 2);
    assert!(
        !r.stderr.contains("needs a team-admin token"),
        "{}",
        r.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn installed_hooks_run_this_binary_without_memsync_on_path() {
    let (server, _db) = Server::start().await;
    let alice = User::new(&server, "alice", &["acme"], ORIGIN);
    let bob = User::new(&server, "bob", &["acme"], ORIGIN);
    bob.write("shared.md", &mem("shared", "From bob.\n"));
    push(&bob);

    // Someone else's hook is kept.
    let settings_path = alice.repo.join(".claude/settings.json");
    std::fs::create_dir_all(settings_path.parent().unwrap()).unwrap();
    std::fs::write(
        &settings_path,
        r#"{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"echo hello"}]}]}}"#,
    )
    .unwrap();
    let r = alice.run(&["install-hook", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let exe = std::fs::canonicalize(bin_path("memsync")).unwrap();
    assert_eq!(r.json()["program"], exe.to_str().unwrap());
    let settings: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings_path).unwrap()).unwrap();
    let command_of = |settings: &Value, event: &str| -> Vec<String> {
        settings["hooks"][event]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["hooks"].as_array().unwrap().clone())
            .map(|h| h["command"].as_str().unwrap().to_owned())
            .collect()
    };
    let start = command_of(&settings, "SessionStart");
    assert_eq!(start[0], "echo hello");
    assert_eq!(start[1], format!("{} hook session-start", exe.display()));
    let end = command_of(&settings, "SessionEnd");
    assert_eq!(end, [format!("{} hook session-end", exe.display())]);

    // Run the hooks exactly as written, as Claude Code does, with a PATH that has no memsync.
    let path = "/usr/bin:/bin";
    let which = std::process::Command::new("sh")
        .args(["-c", "command -v memsync"])
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(
        !which.status.success(),
        "this test needs a PATH without memsync, but {path} has one"
    );
    let input = json!({ "session_id": "s", "cwd": alice.repo, "hook_event_name": "SessionStart", "source": "startup" });
    let run_hook = |command: &str, stdin: &str| {
        use std::io::Write;
        let mut child = std::process::Command::new("sh")
            .args(["-c", command])
            .current_dir(&alice.repo)
            .env_clear()
            .env("PATH", path)
            .env("HOME", alice.home.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    let out = run_hook(&start[1], &input.to_string());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    let context = j["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(!context.contains("could not sync"), "{context}");
    assert_eq!(alice.read("shared.md"), Some(mem("shared", "From bob.\n")));
    alice.write("mine.md", &mem("mine", "Written in a session.\n"));
    let out = run_hook(&end[0], "{}");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(bob.run(&["pull"]).code, 0);
    assert_eq!(
        bob.read("mine.md"),
        Some(mem("mine", "Written in a session.\n"))
    );

    // Installed again by a memsync elsewhere: memsync's entries follow it, nothing doubles.
    let other = tempfile::tempdir().unwrap();
    let copy = other.path().join("memsync");
    std::fs::copy(&exe, &copy).unwrap();
    let out = std::process::Command::new(&copy)
        .args(["install-hook", "--json"])
        .current_dir(&alice.repo)
        .env("HOME", alice.home.path())
        .env_remove("CLAUDE_CONFIG_DIR")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["updated"], json!(["SessionStart", "SessionEnd"]), "{j}");
    let settings: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings_path).unwrap()).unwrap();
    let copy = std::fs::canonicalize(&copy).unwrap();
    assert_eq!(
        command_of(&settings, "SessionStart"),
        [
            "echo hello".to_owned(),
            format!("{} hook session-start", copy.display())
        ]
    );
    assert_eq!(
        command_of(&settings, "SessionEnd"),
        [format!("{} hook session-end", copy.display())]
    );
}

#[tokio::test]
async fn a_pull_between_the_two_steps_of_a_hand_merge_keeps_the_markers() {
    let (server, _db) = Server::start().await;
    let alice = User::new(&server, "alice", &["acme"], ORIGIN);
    let bob = User::new(&server, "bob", &["acme"], ORIGIN);
    conflict(&alice, &bob, "c.md");
    assert_eq!(bob.run(&["resolve", "c.md", "--take", "merged"]).code, 0);
    let marked = bob.read("c.md").unwrap();
    assert!(marked.contains("<<<<<<<"), "{marked}");
    // The pull sees the conflicted file again from the server; it must not take the half-done
    // merge for the untouched local version.
    assert_eq!(bob.run(&["pull"]).code, 1);
    let r = bob.run(&["resolve", "c.md", "--take", "merged"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stderr.contains("still has conflict markers"),
        "{}",
        r.stderr
    );
    assert_eq!(bob.read("c.md"), Some(marked));
}
