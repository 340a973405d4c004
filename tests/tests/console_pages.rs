//! The console's review queue, audit log, tokens and allowlist pages over HTTP: a real server,
//! signed in the way a browser signs in (the sign-in form, then the session cookie), every form
//! posted with the session's CSRF token; what the pages did is checked through the API and the
//! database.

use memsync_e2e::*;
use regex::Regex;
use serde_json::{Value, json};

const P: &str = "acme/api";

/// A page as the browser got it.
struct Page {
    status: u16,
    location: Option<String>,
    headers: reqwest::header::HeaderMap,
    text: String,
}

impl Page {
    /// The text with askama's five escapes undone, for assertions on what a user reads.
    fn plain(&self) -> String {
        unescape(&self.text)
    }
}

fn unescape(s: &str) -> String {
    s.replace("&#34;", "\"")
        .replace("&#39;", "'")
        .replace("&#60;", "<")
        .replace("&#62;", ">")
        .replace("&#38;", "&")
}

/// The values of the hidden (or any) inputs named `name`, in page order.
fn inputs(html: &str, name: &str) -> Vec<String> {
    Regex::new(&format!(
        r#"name="{}" value="([^"]*)""#,
        regex::escape(name)
    ))
    .expect("regex")
    .captures_iter(html)
    .map(|c| unescape(&c[1]))
    .collect()
}

fn input(html: &str, name: &str) -> String {
    inputs(html, name)
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no input {name} in:\n{html}"))
}

/// The value of cookie `name` a response sets.
fn set_cookie(headers: &reqwest::header::HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(reqwest::header::SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| v.split(';').next())
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
}

async fn page(resp: reqwest::Response) -> Page {
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let location = headers
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    Page {
        status,
        location,
        headers,
        text: resp.text().await.expect("body"),
    }
}

/// A browser signed in to the console: its session cookie and the session's CSRF token.
struct Browser {
    http: reqwest::Client,
    base: String,
    session: String,
    csrf: String,
}

impl Browser {
    async fn get(&self, path: &str) -> Page {
        let r = self
            .http
            .get(format!("{}{path}", self.base))
            .header("cookie", format!("memsync_console={}", self.session))
            .send()
            .await
            .expect("GET");
        page(r).await
    }

    /// Posts a form as the page would, with the session's CSRF token.
    async fn post(&self, path: &str, form: &[(&str, &str)]) -> Page {
        let mut fields = vec![("csrf", self.csrf.as_str())];
        fields.extend_from_slice(form);
        self.post_raw(path, &fields).await
    }

    /// Posts exactly these fields.
    async fn post_raw(&self, path: &str, fields: &[(&str, &str)]) -> Page {
        let r = self
            .http
            .post(format!("{}{path}", self.base))
            .header("cookie", format!("memsync_console={}", self.session))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form_body(fields))
            .send()
            .await
            .expect("POST");
        page(r).await
    }

    /// Follows a 303 (post/redirect/get) to the page it names.
    async fn follow(&self, p: &Page) -> Page {
        assert_eq!(p.status, 303, "not a redirect: {}", p.text);
        self.get(p.location.as_deref().expect("location")).await
    }
}

/// Signs in with `token` through the sign-in form: the browser, or the page that refused it.
async fn sign_in(server: &Server, token: &str) -> Result<Browser, Page> {
    let http = no_redirects();
    let login = page(
        http.get(format!("{}/admin/login", server.url))
            .send()
            .await
            .expect("GET /admin/login"),
    )
    .await;
    assert_eq!(login.status, 200, "{}", login.text);
    let login_cookie = set_cookie(&login.headers, "memsync_console_login").expect("login cookie");
    let login_csrf = input(&login.text, "login_csrf");
    let body = form_body(&[("token", token), ("login_csrf", &login_csrf)]);
    let r = page(
        http.post(format!("{}/admin/login", server.url))
            .header("cookie", format!("memsync_console_login={login_cookie}"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .expect("POST /admin/login"),
    )
    .await;
    if r.status != 303 {
        return Err(r);
    }
    let session = set_cookie(&r.headers, "memsync_console").expect("session cookie");
    let mut b = Browser {
        http,
        base: server.url.clone(),
        session,
        csrf: String::new(),
    };
    let home = b.follow(&r).await;
    let home = if home.status == 303 {
        b.follow(&home).await
    } else {
        home
    };
    assert_eq!(home.status, 200, "{}", home.text);
    b.csrf = input(&home.text, "csrf");
    Ok(b)
}

async fn signed_in(server: &Server, token: &str) -> Browser {
    match sign_in(server, token).await {
        Ok(b) => b,
        Err(p) => panic!("sign-in refused ({}): {}", p.status, p.text),
    }
}

fn note(name: &str, body: &str) -> String {
    memory(name, &format!("about {name}"), "project", body)
}

async fn send_json(c: &Client, method: reqwest::Method, path: &str, body: Value) -> Resp {
    c.send(
        c.http
            .request(method, format!("{}{path}", c.base))
            .bearer_auth(&c.token)
            .json(&body),
    )
    .await
}

#[tokio::test]
async fn members_cannot_sign_in_and_team_admins_see_only_their_teams_audit_rows() {
    let (server, db) = Server::start().await;
    let ann = forge_token("ann", &[("acme", "admin")], false);
    let bob = server.client(&forge_token("bob", &[("acme", "member")], false));
    let eve = server.client(&forge_token("eve", &[("other", "admin")], false));
    let r = bob
        .push(
            P,
            &batch(vec![put("plan.md", &note("plan", "Ship it.\n"), None)]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = eve
        .push(
            "other/web",
            &batch(vec![put(
                "secret-plan.md",
                &note("x", "Other team.\n"),
                None,
            )]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);

    // A member's token opens no session.
    let refused = sign_in(&server, &forge_token("bob", &[("acme", "member")], false))
        .await
        .err()
        .expect("a member is refused");
    assert_eq!(refused.status, 403, "{}", refused.text);
    assert!(refused.plain().contains("team member"), "{}", refused.text);
    assert_eq!(set_cookie(&refused.headers, "memsync_console"), None);

    // A team admin sees their team's rows, not another team's; no tokens page.
    let b = signed_in(&server, &ann).await;
    let audit = b.get("/admin/audit").await;
    assert_eq!(audit.status, 200, "{}", audit.text);
    let text = audit.plain();
    assert!(text.contains("plan.md") && text.contains("bob"), "{text}");
    assert!(
        !text.contains("secret-plan.md") && !text.contains("other/web"),
        "{text}"
    );
    let tokens = b.get("/admin/tokens").await;
    assert_eq!(tokens.status, 403, "{}", tokens.text);
    assert!(tokens.plain().contains("server admins"), "{}", tokens.text);
    let r = b
        .post("/admin/tokens", &[("user", "x"), ("teams", "acme")])
        .await;
    assert_eq!(r.status, 403, "{}", r.text);

    // Filters: by project and action; an unparsable time is a clear 400, not a 500.
    let f = b.get("/admin/audit?project=acme%2Fapi&action=write").await;
    assert_eq!(f.status, 200, "{}", f.text);
    assert!(f.plain().contains("plan.md"));
    let f = b.get("/admin/audit?actor=nobody").await;
    assert!(
        f.plain().contains("No event matches these filters"),
        "{}",
        f.text
    );
    let bad = b.get("/admin/audit?since=last+tuesday").await;
    assert_eq!(bad.status, 400, "{}", bad.text);
    assert!(
        bad.plain()
            .contains("“last tuesday” is not a date and time"),
        "{}",
        bad.text
    );
    assert!(
        bad.text.contains(r#"value="last tuesday""#),
        "the filter is kept"
    );
    // A time range that holds nothing, then one that holds everything.
    let f = b.get("/admin/audit?until=2000-01-01T00%3A00").await;
    assert!(!f.plain().contains("plan.md"));
    let f = b.get("/admin/audit?since=2000-01-01T00%3A00").await;
    assert!(f.plain().contains("plan.md"));

    // The CSV: an attachment, the API's columns, the same scope and filters.
    let csv = b.get("/admin/audit.csv?project=acme%2Fapi").await;
    assert_eq!(csv.status, 200, "{}", csv.text);
    let h = |name: &str| csv.headers.get(name).unwrap().to_str().unwrap().to_owned();
    assert_eq!(h("content-type"), "text/csv; charset=utf-8");
    assert_eq!(
        h("content-disposition"),
        "attachment; filename=\"memsync-audit.csv\""
    );
    let lines: Vec<&str> = csv.text.lines().collect();
    assert_eq!(
        lines[0],
        "id,at,team,project,actor,action,path,revision,request_id,details"
    );
    assert!(lines.len() > 1, "{}", csv.text);
    assert!(
        lines[1..].iter().all(|l| l.contains("\"acme/api\"")),
        "{}",
        csv.text
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("\"plan.md\"") && l.contains("\"bob\""))
    );
    let all = b.get("/admin/audit.csv").await;
    assert!(!all.text.contains("other/web"), "{}", all.text);
    let bad = b.get("/admin/audit.csv?until=soon").await;
    assert_eq!(bad.status, 400, "{}", bad.text);

    // Paging: 50 rows, then "Older →" keeps the filters.
    let many: Vec<Value> = (0..60)
        .map(|i| put(&format!("n{i}.md"), &note(&format!("n{i}"), "N.\n"), None))
        .collect();
    let r = bob.push(P, &batch(many)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let first = b.get("/admin/audit?action=write").await;
    let rows = first.text.matches("<tr>").count() - 1;
    assert_eq!(rows, 50, "{}", first.text);
    let older = Regex::new(r#"<a href="([^"]+)" rel="next">Older"#)
        .unwrap()
        .captures(&first.text)
        .map(|c| unescape(&c[1]))
        .expect("an Older link");
    assert!(
        older.contains("action=write") && older.contains("cursor="),
        "{older}"
    );
    let second = b.get(&older).await;
    assert_eq!(second.status, 200);
    let rows2 = second.text.matches("<tr>").count() - 1;
    let writes = count(
        &db,
        "SELECT count(*) FROM audit_log WHERE action = 'write' AND team = 'acme'",
    )
    .await;
    assert!(writes > 50 && writes <= 100, "{writes}");
    assert_eq!(rows2 as i64, writes - 50, "{}", second.text);
    assert!(second.text.contains("Newest"));
}

#[tokio::test]
async fn tokens_are_issued_once_and_revoking_one_ends_its_sessions() {
    let (server, db) = Server::start().await;
    let root = signed_in(&server, &forge_token("root", &[], true)).await;
    let list = root.get("/admin/tokens").await;
    assert_eq!(list.status, 200, "{}", list.text);
    let key = input(&list.text, "key");

    // A bad teams field comes back with the values kept and nothing issued.
    let bad = root
        .post(
            "/admin/tokens",
            &[
                ("key", &key),
                ("user", "dave"),
                ("teams", "acme:owner"),
                ("ttl_days", "30"),
            ],
        )
        .await;
    assert_eq!(bad.status, 400, "{}", bad.text);
    assert!(bad.plain().contains("unknown role `owner`"), "{}", bad.text);
    assert!(bad.text.contains(r#"value="acme:owner""#));
    assert_eq!(count(&db, "SELECT count(*) FROM tokens").await, 0);

    let form = [
        ("key", key.as_str()),
        ("user", "dave"),
        ("email", "dave@example.com"),
        ("teams", "acme:admin, ops"),
        ("ttl_days", "30"),
    ];
    let issued = root.post("/admin/tokens", &form).await;
    assert_eq!(issued.status, 200, "{}", issued.text);
    assert!(
        issued.plain().contains("not shown again"),
        "{}",
        issued.text
    );
    let token = Regex::new(r#"<textarea id="token"[^>]*>([^<]+)</textarea>"#)
        .unwrap()
        .captures(&issued.text)
        .map(|c| c[1].trim().to_owned())
        .expect("the token on the page");
    // The token works against the API, with what the form asked.
    let dave = server.client(&token);
    let me = dave.fetch("/v1/me").await;
    assert_eq!(me.status, 200, "{}", me.text);
    assert_eq!(me.body["sub"], "dave");
    assert_eq!(
        me.body["teams"],
        json!({ "acme": "admin", "ops": "member" })
    );
    // A second submit of the same form shows the same token; it does not issue another.
    let again = root.post("/admin/tokens", &form).await;
    assert_eq!(again.status, 200, "{}", again.text);
    assert!(again.text.contains(&token));
    assert!(again.plain().contains("not a second one"));
    assert_eq!(
        count(&db, "SELECT count(*) FROM tokens WHERE sub = 'dave'").await,
        1
    );
    // The token is kept nowhere: not in the tokens table, a flash, or the audit log.
    assert_no_row_contains(&db, &token).await;

    // The list shows it active, with its teams and a revoke link.
    let list = root.get("/admin/tokens").await;
    let text = list.plain();
    assert!(
        text.contains("dave") && text.contains("acme (admin), ops"),
        "{text}"
    );
    let jti = token_jti(&token);
    assert!(list.text.contains(&format!("/admin/tokens/{jti}/revoke")));

    // dave signs in to the console; then root revokes the token, after a confirmation page.
    let dave_console = signed_in(&server, &token).await;
    assert_eq!(dave_console.get("/admin/audit").await.status, 200);
    let confirm = root.get(&format!("/admin/tokens/{jti}/revoke")).await;
    assert_eq!(confirm.status, 200, "{}", confirm.text);
    let text = confirm.plain();
    assert!(
        text.contains("Revoke the token of dave?") && text.contains("acme (admin), ops"),
        "{text}"
    );
    let done = root.post(&format!("/admin/tokens/{jti}/revoke"), &[]).await;
    assert_eq!(
        done.location.as_deref(),
        Some("/admin/tokens"),
        "{}",
        done.text
    );
    let after = root.follow(&done).await;
    assert!(
        after.plain().contains("Revoked the token of dave")
            && after.plain().contains("console sessions ended"),
        "{}",
        after.text
    );
    // The API refuses it, and the console session opened with it has ended.
    assert_eq!(dave.fetch("/v1/me").await.status, 401);
    let gone = dave_console.get("/admin/audit").await;
    assert_eq!(gone.status, 303, "{}", gone.text);
    assert!(
        gone.location
            .as_deref()
            .unwrap_or("")
            .starts_with("/admin/login?why="),
        "{:?}",
        gone.location
    );
    assert!(sign_in(&server, &token).await.is_err());
    // Revoked tokens have no revoke link; revoking twice says so.
    let revoked = root.get("/admin/tokens?state=revoked").await;
    assert!(
        revoked.plain().contains("dave")
            && !revoked
                .text
                .contains(&format!("/admin/tokens/{jti}/revoke"))
    );
    let twice = root.post(&format!("/admin/tokens/{jti}/revoke"), &[]).await;
    assert!(
        root.follow(&twice)
            .await
            .plain()
            .contains("already revoked")
    );
    // Both actions are in the audit log as root's.
    assert_eq!(
        count(&db, "SELECT count(*) FROM audit_log WHERE actor_sub = 'root' AND action IN ('token_issue', 'token_revoke')").await,
        2
    );

    // A POST without the CSRF token changes nothing.
    let other = server.token("erin", &["acme"]);
    let erin = token_jti(&other);
    let r = root
        .post_raw(&format!("/admin/tokens/{erin}/revoke"), &[])
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert_eq!(server.client(&other).fetch("/v1/me").await.status, 200);
    let r = root
        .post_raw(
            "/admin/tokens",
            &[("key", "k-1"), ("user", "mallory"), ("teams", "acme:admin")],
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert_eq!(
        count(&db, "SELECT count(*) FROM tokens WHERE sub = 'mallory'").await,
        0
    );
}

/// The proposal ids of a 202 push answer, by path.
fn proposed(r: &Resp, path: &str) -> i64 {
    assert_eq!(r.status, 202, "{}", r.text);
    r.body["proposed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["path"] == path)
        .and_then(|p| p["id"].as_i64())
        .unwrap_or_else(|| panic!("{path} not proposed: {}", r.text))
}

#[tokio::test]
async fn proposals_are_approved_and_rejected_on_the_review_page() {
    let (server, db) = Server::start().await;
    let ann_token = forge_token("ann", &[("acme", "admin")], false);
    let ann = server.client(&ann_token);
    let bob = server.client(&forge_token("bob", &[("acme", "member")], false));
    let r = send_json(
        &ann,
        reqwest::Method::PUT,
        &format!("/v1/admin/projects/{P}/settings"),
        json!({ "review": "required" }),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);

    let b = signed_in(&server, &ann_token).await;
    let empty = b.get("/admin/review").await;
    assert_eq!(empty.status, 200, "{}", empty.text);
    assert!(
        empty.plain().contains("Nothing waits for review"),
        "{}",
        empty.text
    );

    let good = note("deploy", "Deploys go through **the pipeline**.\n");
    let r = bob
        .push(P, &batch(vec![put("deploy.md", &good, None)]))
        .await;
    let good_id = proposed(&r, "deploy.md");
    let r = bob
        .push(
            P,
            &batch(vec![put("guess.md", &note("guess", "A guess.\n"), None)]),
        )
        .await;
    let bad_id = proposed(&r, "guess.md");

    // The queue lists both, newest first.
    let queue = b.get("/admin/review").await;
    let text = queue.plain();
    let (at_good, at_bad) = (
        text.find("deploy.md").expect("listed"),
        text.find("guess.md").expect("listed"),
    );
    assert!(at_bad < at_good, "newest first: {text}");
    assert!(text.contains("2 items"), "{text}");
    // A granted reviewer who is not a team admin has the queue, and only the queue.
    let r = send_json(
        &ann,
        reqwest::Method::PUT,
        "/v1/admin/teams/acme/reviewers/carol",
        json!({}),
    )
    .await;
    assert!(r.status == 200 || r.status == 201, "{}", r.text);
    let carol = signed_in(&server, &forge_token("carol", &[("acme", "member")], false)).await;
    let queue = carol.get("/admin/review").await;
    assert_eq!(queue.status, 200, "{}", queue.text);
    assert!(queue.plain().contains("deploy.md") && queue.plain().contains("guess.md"));
    assert!(
        !queue.text.contains(r#"href="/admin/audit""#),
        "no audit section in the nav"
    );
    assert_eq!(carol.get("/admin/audit").await.status, 403);
    assert_eq!(
        carol.get(&format!("/admin/p/{P}/allowlist")).await.status,
        403
    );
    let item = carol.get(&format!("/admin/review/{good_id}")).await;
    assert!(
        item.text.contains(r#"name="decision" value="approve""#),
        "{}",
        item.text
    );

    let filtered = b.get("/admin/review?project=acme%2Fnone").await;
    assert!(filtered.plain().contains("acme/none"), "{}", filtered.text);
    let bad_status = b.get("/admin/review?status=maybe").await;
    assert_eq!(bad_status.status, 400, "{}", bad_status.text);

    // The item: its provenance, diff and the content, rendered inert.
    let item = b.get(&format!("/admin/review/{good_id}")).await;
    assert_eq!(item.status, 200, "{}", item.text);
    assert!(
        item.text.contains("<strong>the pipeline</strong>"),
        "{}",
        item.text
    );
    assert!(item.plain().contains("bob"));
    let keys = inputs(&item.text, "key");
    assert_eq!(keys.len(), 2, "an approve and a reject form");

    // A POST without the CSRF token is refused and decides nothing.
    let r = b
        .post_raw(
            &format!("/admin/review/{good_id}"),
            &[("decision", "approve"), ("key", &keys[0])],
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
    let api = ann.fetch(&format!("/v1/proposals/{good_id}")).await;
    assert_eq!(api.body["status"], "pending", "{}", api.text);

    // Approve with a note: published, reported, and a double submit decides once.
    let form = [
        ("decision", "approve"),
        ("key", keys[0].as_str()),
        ("note", "reviewed in the console"),
    ];
    let done = b.post(&format!("/admin/review/{good_id}"), &form).await;
    assert_eq!(
        done.location.as_deref(),
        Some(format!("/admin/review/{good_id}").as_str())
    );
    let after = b.follow(&done).await;
    let api = ann.fetch(&format!("/v1/proposals/{good_id}")).await;
    assert_eq!(api.body["status"], "approved", "{}", api.text);
    assert_eq!(api.body["note"], "reviewed in the console");
    let revision = api.body["published_revision"].as_i64().expect("published");
    assert!(
        after.plain().contains(&format!(
            "Approved #{good_id} (deploy.md in acme/api): published at revision {revision}."
        )),
        "{}",
        after.text
    );
    assert!(after.plain().contains("reviewed in the console"));
    assert!(
        !after.text.contains(r#"name="decision""#),
        "no forms on a decided item"
    );
    let twice = b.post(&format!("/admin/review/{good_id}"), &form).await;
    assert!(b.follow(&twice).await.plain().contains("decided once"));
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM audit_log WHERE action = 'proposal_approved'"
        )
        .await,
        1
    );
    // Deciding it again from a fresh form is a 409 shown on the item, not an error page.
    let fresh = [
        ("decision", "reject"),
        ("key", "another-key"),
        ("reason", "too late"),
    ];
    let late = b.post(&format!("/admin/review/{good_id}"), &fresh).await;
    let late = b.follow(&late).await;
    assert_eq!(late.status, 200);
    assert!(
        late.plain().contains("Not rejected: proposal #"),
        "{}",
        late.text
    );
    assert!(late.plain().contains("approved already"), "{}", late.text);

    // Reject: a reason is required; then with one.
    let item = b.get(&format!("/admin/review/{bad_id}")).await;
    let reject_key = inputs(&item.text, "key")[1].clone();
    let r = b
        .post(
            &format!("/admin/review/{bad_id}"),
            &[
                ("decision", "reject"),
                ("key", &reject_key),
                ("reason", "  "),
            ],
        )
        .await;
    let shown = b.follow(&r).await;
    assert!(
        shown.plain().contains("Not rejected: give a reason"),
        "{}",
        shown.text
    );
    assert_eq!(
        ann.fetch(&format!("/v1/proposals/{bad_id}")).await.body["status"],
        "pending"
    );
    let r = b
        .post(
            &format!("/admin/review/{bad_id}"),
            &[
                ("decision", "reject"),
                ("key", &reject_key),
                ("reason", "a guess is not a fact"),
            ],
        )
        .await;
    let shown = b.follow(&r).await;
    assert!(
        shown.plain().contains(&format!(
            "Rejected #{bad_id} (guess.md in acme/api). Reason: a guess is not a fact"
        )),
        "{}",
        shown.text
    );
    let api = ann.fetch(&format!("/v1/proposals/{bad_id}")).await;
    assert_eq!(api.body["status"], "rejected");
    assert_eq!(api.body["reason"], "a guess is not a fact");

    // The published one reaches members; nothing is left in the queue.
    let pulled = bob.pull(P, 0).await;
    assert!(
        change_of(&pulled.body, "deploy.md").is_some(),
        "{}",
        pulled.text
    );
    assert!(change_of(&pulled.body, "guess.md").is_none());
    assert!(
        b.get("/admin/review")
            .await
            .plain()
            .contains("Nothing waits for review")
    );
    let all = b.get("/admin/review?status=all").await.text;
    assert!(
        all.contains(r#"<span class="badge good">approved</span>"#)
            && all.contains(r#"<span class="badge bad">rejected</span>"#),
        "{all}"
    );
}

#[tokio::test]
async fn team_admins_manage_a_projects_allowlist() {
    let (server, db) = Server::start().await;
    let ann_token = forge_token("ann", &[("acme", "admin")], false);
    let ann = server.client(&ann_token);
    let bob = server.client(&forge_token("bob", &[("acme", "member")], false));
    let r = ann
        .push(P, &batch(vec![put("a.md", &note("a", "A.\n"), None)]))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let key = aws_key_id(31);
    let text = note("fixture", &format!("The mock uses the fake id {key}.\n"));
    let r = bob
        .push(P, &batch(vec![put("fixture.md", &text, None)]))
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    let failure = &r.body["error"]["details"]["failures"][0];
    let fingerprint = failure["fingerprint"].as_str().unwrap().to_owned();
    let rule = failure["rule"].as_str().unwrap().to_owned();

    let b = signed_in(&server, &ann_token).await;
    let url = format!("/admin/p/{P}/allowlist");
    let empty = b.get(&url).await;
    assert_eq!(empty.status, 200, "{}", empty.text);
    assert!(
        empty.plain().contains("Nothing is allowlisted"),
        "{}",
        empty.text
    );

    // A malformed fingerprint comes back with the error and the fields kept.
    let bad = b
        .post(
            &url,
            &[
                ("op", "add"),
                ("fingerprint", "abc"),
                ("rule", &rule),
                ("reason", "mock"),
            ],
        )
        .await;
    assert_eq!(bad.status, 400, "{}", bad.text);
    assert!(
        bad.plain()
            .contains("Not added: a fingerprint is the 64 lowercase hex"),
        "{}",
        bad.text
    );
    assert!(bad.text.contains(r#"value="abc""#));

    let added = b
        .post(
            &url,
            &[
                ("op", "add"),
                ("fingerprint", &fingerprint),
                ("rule", &rule),
                ("reason", "a fake key of the local mock"),
            ],
        )
        .await;
    let page = b.follow(&added).await;
    assert!(
        page.plain()
            .contains(&format!("Added {fingerprint} ({rule})")),
        "{}",
        page.text
    );
    assert!(page.plain().contains("a fake key of the local mock") && page.text.contains(">ann<"));
    // The finding passes now.
    let r = bob
        .push(P, &batch(vec![put("fixture.md", &text, None)]))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);

    // Removing: a confirmation page, then the form; CSRF required.
    let confirm = b.get(&format!("{url}?remove={fingerprint}")).await;
    assert_eq!(confirm.status, 200, "{}", confirm.text);
    assert!(
        confirm
            .plain()
            .contains("Remove this entry from the allowlist of acme/api?")
    );
    let r = b
        .post_raw(&url, &[("op", "remove"), ("fingerprint", &fingerprint)])
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
    let removed = b
        .post(&url, &[("op", "remove"), ("fingerprint", &fingerprint)])
        .await;
    let page = b.follow(&removed).await;
    assert!(
        page.plain().contains(&format!("Removed {fingerprint}")),
        "{}",
        page.text
    );
    assert!(page.plain().contains("Nothing is allowlisted"));
    let again = b
        .post(&url, &[("op", "remove"), ("fingerprint", &fingerprint)])
        .await;
    assert!(b.follow(&again).await.plain().contains("Not removed"));
    assert_eq!(
        count(&db, "SELECT count(*) FROM audit_log WHERE action IN ('allowlist_add', 'allowlist_remove') AND actor_sub = 'ann'").await,
        2
    );

    // Another team's admin cannot see it, nor change it.
    let eve = signed_in(&server, &forge_token("eve", &[("other", "admin")], false)).await;
    assert_eq!(eve.get(&url).await.status, 404);
    let r = eve
        .post(
            &url,
            &[
                ("op", "add"),
                ("fingerprint", &fingerprint),
                ("rule", &rule),
                ("reason", "x"),
            ],
        )
        .await;
    assert_eq!(r.status, 404, "{}", r.text);
}

#[tokio::test]
async fn project_pages_show_the_bytes_stored_against_the_quota_and_the_limits() {
    let db = TestDb::new().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("memsync.toml");
    std::fs::write(
        &config,
        "[limits.teams.acme]\nmax_project_bytes = 2048\nrate = \"50/100\"\n",
    )
    .expect("config");
    let config = config.display().to_string();
    let server = Server::start_with(Some(db.url.clone()), None, &["--config", &config]);
    let ann_token = forge_token("ann", &[("acme", "admin")], false);
    let ann = server.client(&ann_token);
    let body = format!("{}\n", "x".repeat(1850));
    let r = ann
        .push(P, &batch(vec![put("a.md", &note("a", &body), None)]))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let bytes = ann.fetch(&format!("/v1/projects/{P}")).await.body["bytes"]
        .as_i64()
        .unwrap();
    let kib = format!("{:.1} KiB", bytes as f64 / 1024.0);

    let browser = signed_in(&server, &ann_token).await;
    let list = browser.get("/admin/projects").await;
    assert_eq!(list.status, 200);
    let text = list.plain();
    assert!(
        text.contains(&format!("{kib} of 2 KiB (")) && text.contains("nearly full"),
        "{kib} of 2 KiB in the list: {text}"
    );
    let page = browser.get(&format!("/admin/p/{P}")).await;
    assert_eq!(page.status, 200);
    let text = page.plain();
    for want in [
        format!("stored {kib} of 2 KiB"),
        "Rate limits and quotas".to_owned(),
        "100 requests/s, bursts of 500".to_owned(),
        "50 requests/s, bursts of 100".to_owned(),
        "120 a minute".to_owned(),
    ] {
        assert!(text.contains(&want), "{want} in: {text}");
    }
}
