//! The admin console in a real browser: Debian's headless Chromium driven over WebDriver
//! (`memsync_e2e::webdriver`) against the real server, with real members pushing through the real
//! `memsync` client. A team admin finds a memory by text, reads its history and a diff, deletes
//! it with a reason, and the member's next pull and the audit page show it; a hostile memory
//! renders as inert text; forms without the session's CSRF token or from another origin are
//! refused; a member's token opens no session and a revoked token's session ends. Every page is
//! photographed at 1280 and 390 px (into `$MEMSYNC_SCREENSHOTS_DIR`, by default
//! `target/tmp/console-screenshots`; `scripts/screenshots` writes the ones in `docs/console/`), and
//! checked for controls without labels and for overflowing the narrow screen.

use std::path::PathBuf;
use std::time::Duration;

use memsync_e2e::webdriver::{Browser, ENTER, TAB};
use memsync_e2e::*;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const ORIGIN: &str = "git@github.com:Acme/API.git";
const P: &str = "acme/api";
const WAIT: Duration = Duration::from_secs(15);

fn shots_dir() -> PathBuf {
    std::env::var_os("MEMSYNC_SCREENSHOTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("console-screenshots"))
}

/// `memsync <args>` as `u`, asserted to exit 0.
fn ok(u: &User, args: &[&str]) -> Run {
    let r = u.run(args);
    assert_eq!(
        r.code, 0,
        "{} {args:?}:\n{}\n{}",
        u.name, r.stdout, r.stderr
    );
    r
}

async fn start() -> Browser {
    Browser::start().await.expect(
        "start headless Chromium (install it with `apt-get install chromium chromium-driver`; .ci/run does)",
    )
}

/// Signs in on the console's own sign-in page by pasting `token`.
async fn sign_in(b: &Browser, base: &str, token: &str) {
    b.goto(&format!("{base}/admin/login")).await.unwrap();
    let field = b.wait_for("textarea#token", WAIT).await.unwrap();
    field.send_keys(token).await.unwrap();
    click(b, "main form button[type=submit]").await;
}

/// Clicks the element `css` selects.
async fn click(b: &Browser, css: &str) {
    b.find(css).await.unwrap().click().await.unwrap();
}

/// Picks `value` in the `<select>` `css` selects.
async fn select(b: &Browser, css: &str, value: &str) {
    b.find(css)
        .await
        .unwrap()
        .select_value(value)
        .await
        .unwrap();
}

/// The page's visible text.
async fn text(b: &Browser) -> String {
    b.body_text().await.unwrap()
}

/// Controls without a label (by `for`, nesting or `aria-label`), as HTML.
async fn unlabelled(b: &Browser) -> Vec<String> {
    let v = b
        .execute(
            "return [...document.querySelectorAll('input:not([type=hidden]), select, textarea, button')]
               .filter(e => e.tagName === 'BUTTON' ? !e.textContent.trim() && !e.getAttribute('aria-label')
                          : !(e.labels && e.labels.length) && !e.getAttribute('aria-label'))
               .map(e => e.outerHTML);",
            vec![],
        )
        .await
        .unwrap();
    serde_json::from_value(v).unwrap()
}

/// Photographs the page at 1280 and 390 px wide and checks, at both widths, that it does not
/// overflow the screen sideways (wide tables scroll inside their own box) and that every control
/// has a label.
async fn shoot(b: &Browser, name: &str) {
    let dir = shots_dir();
    for (w, h) in [(1280, 900), (390, 844)] {
        b.set_window_size(w, h).await.unwrap();
        let overflow = b
            .execute(
                "return document.documentElement.scrollWidth - document.documentElement.clientWidth;",
                vec![],
            )
            .await
            .unwrap();
        if overflow.as_i64().unwrap_or(0) > 0 {
            let wide = b
                .execute(
                    "const w = document.documentElement.clientWidth;
                     return [...document.querySelectorAll('body *')]
                       .filter(e => e.getBoundingClientRect().right > w + 1)
                       .slice(0, 8).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right));",
                    vec![],
                )
                .await
                .unwrap();
            panic!("{name} overflows a {w} px screen by {overflow} px: {wide}");
        }
        b.screenshot(&dir.join(format!("{name}-{w}.png")))
            .await
            .unwrap();
    }
    b.set_window_size(1280, 900).await.unwrap();
    let missing = unlabelled(b).await;
    assert!(
        missing.is_empty(),
        "{name}: controls without a label: {missing:?}"
    );
}

/// The `memsync_console` session cookie the browser holds.
async fn session_cookie(b: &Browser) -> memsync_e2e::webdriver::Cookie {
    b.cookies()
        .await
        .unwrap()
        .into_iter()
        .find(|c| c.name == "memsync_console")
        .expect("a memsync_console cookie")
}

fn jti_of(token: &str) -> String {
    use base64::Engine;
    let payload = token.split('.').nth(1).expect("a JWT");
    let claims: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .expect("base64url"),
    )
    .expect("claims");
    claims["jti"].as_str().expect("jti").to_owned()
}

/// A page on another loopback origin that posts `fields` to `action` as soon as it loads: what
/// a malicious site would do with a signed-in admin's browser.
async fn attacker_site(action: String, fields: Vec<(&'static str, String)>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let inputs: String = fields
        .iter()
        .map(|(k, v)| format!("<input type=hidden name=\"{k}\" value=\"{v}\">"))
        .collect();
    let page = format!(
        "<!doctype html><title>prize</title><form id=f method=post action=\"{action}\">{inputs}</form>\
         <script>document.getElementById('f').submit()</script>"
    );
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else {
                return;
            };
            let page = page.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let _ = s.read(&mut buf).await;
                let resp = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
                    page.len()
                );
                let _ = s.write_all(resp.as_bytes()).await;
            });
        }
    });
    format!("http://{addr}/")
}

/// A member's memories, pushed with the real client: `testing.md` in two versions, `deploy.md`.
fn seed(server: &Server) -> User {
    let bob = User::new(server, "bob", &["acme"], ORIGIN);
    bob.write(
        "testing.md",
        &memory(
            "Testing",
            "How we run the tests",
            "project",
            "\nRun `scripts/test`. The **flaky** one is `crash`.\n",
        ),
    );
    bob.write(
        "deploy.md",
        &memory(
            "Deploying",
            "Releases go out on Tuesdays",
            "project",
            "\nTag `vX.Y.Z`; CI does the rest.\n",
        ),
    );
    ok(&bob, &["push"]);
    bob.write(
        "testing.md",
        &memory(
            "Testing",
            "How we run the tests",
            "project",
            "\nRun `scripts/test -E 'not test(top_to_bottom)'`. The **flaky** one is `crash`.\n\n- keep the README test last\n",
        ),
    );
    ok(&bob, &["push"]);
    bob
}

#[tokio::test]
async fn a_team_admin_finds_a_memory_reads_its_history_and_diff_deletes_it_and_the_audit_shows_why()
{
    let (server, _db) = Server::start().await;
    let bob = seed(&server);
    let admin = server.token("alice", &["acme:admin"]);
    let b = start().await;
    let base = server.url.clone();

    b.goto(&format!("{base}/admin/projects")).await.unwrap();
    b.wait_for("textarea#token", WAIT).await.unwrap();
    assert!(
        b.current_url().await.unwrap().contains("/admin/login"),
        "signed out, a page sends you to sign in"
    );
    shoot(&b, "login").await;
    sign_in(&b, &base, &admin).await;
    b.wait_for("header nav", WAIT).await.unwrap();
    assert!(b.current_url().await.unwrap().ends_with("/admin/projects"));
    let cookie = session_cookie(&b).await;
    assert!(cookie.http_only, "the session cookie is HttpOnly");
    assert_eq!(cookie.same_site.as_deref(), Some("Strict"));
    assert!(
        !cookie.value.contains(&admin) && !admin.contains(&cookie.value),
        "the cookie is not the token"
    );
    assert!(text(&b).await.contains(P));
    shoot(&b, "projects").await;

    // Find the memory by a word of its body.
    click(&b, &format!("a[href=\"/admin/p/{P}\"]")).await;
    b.wait_for("table.tree", WAIT).await.unwrap();
    shoot(&b, "project").await;
    let q = b.find("input#q").await.unwrap();
    q.send_keys("flaky").await.unwrap();
    q.send_keys(ENTER).await.unwrap();
    b.wait_for("p[role=status]", WAIT).await.unwrap();
    let found = text(&b).await;
    assert!(found.contains("1 memory contains “flaky”"), "{found}");
    assert!(
        found.contains("Testing") && !found.contains("Deploying"),
        "{found}"
    );
    shoot(&b, "project-search").await;

    // Its page: content, history with provenance.
    click(&b, "table.tree td a").await;
    b.wait_for(".memory-body", WAIT).await.unwrap();
    let page = text(&b).await;
    assert!(page.contains("not test(top_to_bottom)"), "{page}");
    let history = b
        .find_all("#history-h ~ .table-wrap tbody tr")
        .await
        .unwrap();
    assert_eq!(history.len(), 2, "two versions in the history");
    assert!(page.contains("bob"), "the author is shown");
    shoot(&b, "memory").await;

    // A diff between the two versions, both ways of showing it.
    select(&b, "select#from", "1").await;
    select(&b, "select#to", "2").await;
    select(&b, "select#view", "split").await;
    click(&b, "form[action$=\"/diff\"] button").await;
    b.wait_for("table.diff", WAIT).await.unwrap();
    let added = b.find_all("table.diff td.added").await.unwrap();
    let mut added_text = String::new();
    for a in &added {
        added_text.push_str(&a.text().await.unwrap());
        added_text.push('\n');
    }
    assert!(
        added_text.contains("keep the README test last"),
        "{added_text}"
    );
    let removed = b.find("table.diff td.removed").await.unwrap();
    assert!(
        removed
            .text()
            .await
            .unwrap()
            .contains("Run `scripts/test`.")
    );
    shoot(&b, "diff-split").await;
    click(&b, "p.actions a").await;
    b.wait_for("table.diff.unified", WAIT).await.unwrap();
    shoot(&b, "diff").await;

    // Delete it, with a reason.
    click(&b, "p.actions a[href*=\"/memory?\"]").await;
    b.wait_for("a.button[href*=\"action=delete\"]", WAIT)
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let reason = b.wait_for("textarea#reason", WAIT).await.unwrap();
    shoot(&b, "confirm-delete").await;
    reason
        .send_keys("superseded by the nextest guide")
        .await
        .unwrap();
    click(&b, "main form button.danger").await;
    let flash = b.wait_for(".flash.ok", WAIT).await.unwrap();
    let said = flash.text().await.unwrap();
    assert!(said.contains("Deleted testing.md"), "{said}");
    assert!(text(&b).await.contains("deleted"));

    // The member's next pull no longer has it.
    assert!(bob.read("testing.md").is_some());
    ok(&bob, &["pull"]);
    assert_eq!(
        bob.read("testing.md"),
        None,
        "the pull removed the deleted memory"
    );
    assert!(bob.read("deploy.md").is_some());

    // The audit page shows the delete and its reason.
    b.goto(&format!("{base}/admin/audit")).await.unwrap();
    b.wait_for("main table", WAIT).await.unwrap();
    let audit = text(&b).await;
    assert!(audit.contains("admin_delete"), "{audit}");
    assert!(audit.contains("superseded by the nextest guide"), "{audit}");
    assert!(audit.contains("content_read"), "reading content is audited");
    shoot(&b, "audit").await;

    // Signing out ends the session: the same cookie opens nothing any more.
    click(&b, "form.signout button").await;
    b.wait_for("textarea#token", WAIT).await.unwrap();
    assert!(text(&b).await.contains("You have signed out"));
    let http = no_redirects();
    let r = http
        .get(format!("{base}/admin/projects"))
        .header("cookie", format!("memsync_console={}", cookie.value))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    b.quit().await.unwrap();
}

#[tokio::test]
async fn a_hostile_memory_renders_as_inert_text() {
    let (server, _db) = Server::start().await;
    let bob = User::new(&server, "bob", &["acme"], ORIGIN);
    bob.write(
        "hostile.md",
        &memory(
            "Looks <b>harmless</b>",
            "see <img src=x onerror=\"window.pwned=2\">",
            "reference",
            "\n<script>window.pwned=1</script>\n\n<img src=x onerror=\"window.pwned=1\">\n\n\
             [click me](javascript:window.pwned=1) and [also](JaVaScRiPt:window.pwned=1)\n\n\
             ![tracker](http://127.0.0.1:9/pixel.png)\n",
        ),
    );
    ok(&bob, &["push"]);
    let admin = server.token("alice", &["acme:admin"]);
    let b = start().await;
    sign_in(&b, &server.url, &admin).await;
    b.wait_for("header nav", WAIT).await.unwrap();

    for url in [
        format!("{}/admin/p/{P}", server.url),
        format!("{}/admin/p/{P}/memory?path=hostile.md", server.url),
    ] {
        b.goto(&url).await.unwrap();
        b.wait_for("main h1", WAIT).await.unwrap();
        let pwned = b
            .execute("return typeof window.pwned;", vec![])
            .await
            .unwrap();
        assert_eq!(
            pwned,
            json!("undefined"),
            "no script of the memory ran on {url}"
        );
        let active = b
            .execute(
                "return [...document.querySelectorAll('main script, main img, main iframe, main object, main embed, main svg, main [onerror], main [onclick], main a[href^=\"javascript\" i], main b')]
                   .map(e => e.outerHTML);",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(
            active,
            json!([]),
            "no active element came from the memory on {url}"
        );
        let page = text(&b).await;
        assert!(page.contains("Looks <b>harmless</b>"), "{page}");
    }
    let page = text(&b).await;
    assert!(page.contains("<script>window.pwned=1</script>"), "{page}");
    assert!(page.contains("click me"), "{page}");
    assert!(page.contains("javascript:window.pwned=1"), "{page}");
    // The link text stays; clicking it goes nowhere.
    let before = b.current_url().await.unwrap();
    let links = b.find_all(".memory-body a").await.unwrap();
    for l in links {
        let href = l.attr("href").await.unwrap().unwrap_or_default();
        assert!(
            href.starts_with("http") || href.starts_with("mailto:") || href.starts_with('#'),
            "{href}"
        );
    }
    assert_eq!(b.current_url().await.unwrap(), before);
    shoot(&b, "memory-hostile").await;
    b.quit().await.unwrap();
}

#[tokio::test]
async fn forms_need_the_session_csrf_token_and_the_console_origin() {
    let (server, _db) = Server::start().await;
    let _bob = seed(&server);
    let admin = server.token("alice", &["acme:admin"]);
    let b = start().await;
    let base = server.url.clone();
    sign_in(&b, &base, &admin).await;
    b.wait_for("header nav", WAIT).await.unwrap();
    let cookie = session_cookie(&b).await;
    b.goto(&format!(
        "{base}/admin/p/{P}/act?action=delete&path=deploy.md"
    ))
    .await
    .unwrap();
    let csrf = b
        .find("main form input[name=csrf]")
        .await
        .unwrap()
        .attr("value")
        .await
        .unwrap()
        .expect("a csrf field");
    let act = format!("{base}/admin/p/{P}/act");
    let http = no_redirects();
    let post = |fields: Vec<(&'static str, String)>, origin: Option<String>| {
        let mut r = http
            .post(&act)
            .header("cookie", format!("memsync_console={}", cookie.value))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form_body(&fields));
        if let Some(o) = origin {
            r = r.header("origin", o);
        }
        r.send()
    };
    let delete = |csrf: Option<&str>| {
        let mut f = vec![
            ("action", "delete".to_owned()),
            ("path", "deploy.md".to_owned()),
            ("reason", "no".to_owned()),
        ];
        if let Some(c) = csrf {
            f.push(("csrf", c.to_owned()));
        }
        f
    };

    // Without the token, with a wrong one, or with the right one from another origin: refused.
    let r = post(delete(None), None).await.unwrap();
    assert_eq!(r.status(), 403);
    assert!(r.text().await.unwrap().contains("CSRF token"));
    let r = post(delete(Some("not-the-token")), None).await.unwrap();
    assert_eq!(r.status(), 403);
    let r = post(delete(Some(&csrf)), Some("http://127.0.0.1:9".into()))
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    assert!(r.text().await.unwrap().contains("another origin"));
    assert!(
        live_paths(&server.client(&admin), P)
            .await
            .contains(&"deploy.md".to_owned())
    );

    // A page on another site that posts the form from the admin's own browser (the cookie goes
    // along: both are on 127.0.0.1), even knowing the CSRF token: refused, nothing deleted.
    for known in [None, Some(csrf.clone())] {
        let mut fields = vec![
            ("action", "delete".to_owned()),
            ("path", "deploy.md".to_owned()),
            ("reason", "pwned".to_owned()),
        ];
        if let Some(c) = known {
            fields.push(("csrf", c));
        }
        let evil = attacker_site(act.clone(), fields).await;
        b.goto(&evil).await.unwrap();
        let mut refused = String::new();
        for _ in 0..50 {
            refused = text(&b).await;
            if refused.contains("Forbidden") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(refused.contains("Forbidden"), "{refused}");
        assert!(
            live_paths(&server.client(&admin), P)
                .await
                .contains(&"deploy.md".to_owned())
        );
    }

    // With the token, from the console's own page: done.
    b.goto(&format!(
        "{base}/admin/p/{P}/act?action=delete&path=deploy.md"
    ))
    .await
    .unwrap();
    b.wait_for("textarea#reason", WAIT)
        .await
        .unwrap()
        .send_keys("the real thing")
        .await
        .unwrap();
    click(&b, "main form button.danger").await;
    b.wait_for(".flash.ok", WAIT).await.unwrap();
    assert!(
        !live_paths(&server.client(&admin), P)
            .await
            .contains(&"deploy.md".to_owned())
    );
    b.quit().await.unwrap();
}

#[tokio::test]
async fn members_get_no_session_and_a_revoked_tokens_session_ends() {
    let (server, _db) = Server::start().await;
    let _bob = seed(&server);
    let base = server.url.clone();
    let b = start().await;

    // A member's token opens no session, and no admin page shows without one.
    let member = server.token("carol", &["acme"]);
    sign_in(&b, &base, &member).await;
    b.wait_for(".flash.error", WAIT).await.unwrap();
    let said = text(&b).await;
    assert!(said.contains("belongs to a team member"), "{said}");
    assert!(
        !b.cookies()
            .await
            .unwrap()
            .iter()
            .any(|c| c.name == "memsync_console"),
        "no session cookie for a member"
    );
    for page in [
        "/admin/projects",
        "/admin/audit",
        "/admin/tokens",
        "/admin/p/acme/api",
    ] {
        b.goto(&format!("{base}{page}")).await.unwrap();
        b.wait_for("textarea#token", WAIT).await.unwrap();
        assert!(
            b.current_url().await.unwrap().contains("/admin/login"),
            "{page}"
        );
    }
    // Nor does a forged or garbled token.
    sign_in(&b, &base, "eyJhbGciOiJub25lIn0.e30.").await;
    b.wait_for(".flash.error", WAIT).await.unwrap();
    assert!(text(&b).await.contains("not accepted"));

    // A team admin of another team sees none of acme's pages.
    let other = server.token("dave", &["web:admin"]);
    sign_in(&b, &base, &other).await;
    b.wait_for("header nav", WAIT).await.unwrap();
    assert!(!text(&b).await.contains(P));
    b.goto(&format!("{base}/admin/p/{P}")).await.unwrap();
    b.wait_for("main h1", WAIT).await.unwrap();
    assert!(
        text(&b).await.contains("404"),
        "another team's project is not found"
    );
    click(&b, "form.signout button").await;
    b.wait_for("textarea#token", WAIT).await.unwrap();

    // Keyboard: the first Tab reaches the skip link, Enter follows it.
    let admin = server.token("erin", &["acme:admin"]);
    sign_in(&b, &base, &admin).await;
    b.wait_for("header nav", WAIT).await.unwrap();
    b.find("body").await.unwrap().send_keys(TAB).await.unwrap();
    let focused = b.active_element().await.unwrap();
    assert_eq!(
        focused.text().await.unwrap(),
        "Skip to content",
        "the first Tab stop skips the navigation"
    );

    // Revoking the token ends its session at the next page.
    let root = forge_token("root", &[], true);
    let r = server
        .client(&root)
        .http
        .delete(format!("{base}/v1/admin/tokens/{}", jti_of(&admin)))
        .bearer_auth(&root)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    b.goto(&format!("{base}/admin/projects")).await.unwrap();
    b.wait_for("textarea#token", WAIT).await.unwrap();
    let said = text(&b).await;
    assert!(said.contains("session has ended"), "{said}");
    b.quit().await.unwrap();
}

#[tokio::test]
async fn a_reviewer_approves_from_the_queue_and_a_server_admin_issues_a_token() {
    let (server, _db) = Server::start().await;
    let bob = seed(&server);
    let admin = server.token("alice", &["acme:admin"]);
    let settings = server
        .client(&admin)
        .http
        .put(format!("{}/v1/admin/projects/{P}/settings", server.url))
        .bearer_auth(&admin)
        .json(&json!({ "review": "required", "review_after_days": 90 }))
        .send()
        .await
        .unwrap();
    assert_eq!(settings.status(), 200);
    bob.write(
        "deploy.md",
        &memory(
            "Deploying",
            "Releases go out on Tuesdays",
            "project",
            "\nTag `vX.Y.Z`; CI does the rest. Never on a Friday.\n",
        ),
    );
    let pushed = ok(&bob, &["push", "--json"]).json();
    assert_eq!(
        pushed["proposed"].as_array().map(Vec::len),
        Some(1),
        "{pushed}"
    );

    let b = start().await;
    let base = server.url.clone();
    sign_in(&b, &base, &admin).await;
    b.wait_for("header nav", WAIT).await.unwrap();
    b.goto(&format!("{base}/admin/review")).await.unwrap();
    let item = b
        .wait_for("main table td a[href^=\"/admin/review/\"]", WAIT)
        .await
        .unwrap();
    assert!(text(&b).await.contains("deploy.md"));
    shoot(&b, "review").await;
    item.click().await.unwrap();
    let note = b.wait_for("textarea#note", WAIT).await.unwrap();
    let page = text(&b).await;
    assert!(
        page.contains("Never on a Friday"),
        "the proposal's diff: {page}"
    );
    shoot(&b, "review-item").await;
    note.send_keys("checked with the release team")
        .await
        .unwrap();
    click(&b, "main form button[type=submit]").await;
    let said = b
        .wait_for(".flash.ok", WAIT)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(said.contains("Approved"), "{said}");
    ok(&bob, &["pull"]);
    assert!(
        bob.read("deploy.md")
            .is_some_and(|t| t.contains("Never on a Friday")),
        "the approved change reached the team"
    );

    b.goto(&format!("{base}/admin/p/{P}/allowlist"))
        .await
        .unwrap();
    b.wait_for("input#fingerprint", WAIT).await.unwrap();
    shoot(&b, "allowlist").await;
    b.goto(&format!("{base}/admin/tokens")).await.unwrap();
    b.wait_for("main h1", WAIT).await.unwrap();
    assert!(
        text(&b).await.contains("403"),
        "a team admin gets no token page"
    );
    click(&b, "form.signout button").await;

    // A server admin issues a token on the Tokens page; it works against the API.
    let root = forge_token("root", &[], true);
    sign_in(&b, &base, &root).await;
    b.wait_for("header nav", WAIT).await.unwrap();
    b.goto(&format!("{base}/admin/tokens")).await.unwrap();
    b.wait_for("input#user", WAIT)
        .await
        .unwrap()
        .send_keys("frank")
        .await
        .unwrap();
    b.find("input#teams")
        .await
        .unwrap()
        .send_keys("acme")
        .await
        .unwrap();
    shoot(&b, "tokens").await;
    click(&b, "main form button[type=submit]").await;
    let field = b.wait_for(".token-once textarea", WAIT).await.unwrap();
    let issued = field.property("value").await.unwrap();
    let issued = issued.as_str().expect("the token").trim().to_owned();
    shoot(&b, "token-issued").await;
    let me = server.client(&issued).fetch("/v1/me").await;
    assert_eq!(me.status, 200, "{:?}", me.body);
    assert_eq!(me.body["sub"], "frank");
    b.quit().await.unwrap();
}
