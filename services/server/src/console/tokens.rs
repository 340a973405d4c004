//! Tokens, for server admins: the issued tokens (never the tokens themselves: only their
//! claims are kept), issuing one (shown once, on the answer page, and never stored: not even in
//! a flash message, which lives in the database), and revoking one after a confirmation page.
//! The same domain functions as `POST /v1/admin/tokens` and `.../revoke`, so the same audit rows.

use std::collections::BTreeMap;

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use chrono::Utc;
use memsync_core::Sha256;
use memsync_core::text::Text;
use memsync_core::wire::TeamRole;
use serde::Deserialize;
use uuid::Uuid;

use super::audit::utc_display;
use super::{Console, Flash, Nav, PageError, PageResult, Posted, html, see_other};
use crate::admin::tokens::{self, Actor, IssueRequest};
use crate::error::ApiError;
use crate::idempotent::Idem;
use crate::state::AppState;
use crate::store::tokens::{Revoked, TokenRecord};

/// Tokens per page.
const PAGE: usize = 50;
/// The lifetime the issue form proposes, and the longest one, in days.
const DEFAULT_TTL_DAYS: u32 = 90;
const MAX_TTL_DAYS: u32 = 3650;

fn require_server_admin(console: &Console) -> PageResult<()> {
    if console.server_admin() {
        Ok(())
    } else {
        Err(PageError::forbidden(
            "Tokens are managed by server admins; sign in with a server-admin token (issued with --admin) to see this page.",
        ))
    }
}

/// What a token can do now.
#[derive(Clone, Copy, PartialEq, Eq)]
enum TokenState {
    Active,
    Revoked,
    Expired,
}

impl TokenState {
    fn of(t: &TokenRecord, now: chrono::DateTime<Utc>) -> TokenState {
        if t.revoked_at.is_some() {
            TokenState::Revoked
        } else if t.expires_at <= now {
            TokenState::Expired
        } else {
            TokenState::Active
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            TokenState::Active => "active",
            TokenState::Revoked => "revoked",
            TokenState::Expired => "expired",
        }
    }
}

/// A token's teams as the page shows them: `acme (admin), ops`.
fn teams_text(teams: &serde_json::Value) -> String {
    let teams: BTreeMap<String, TeamRole> =
        serde_json::from_value(teams.clone()).unwrap_or_default();
    teams
        .iter()
        .map(|(t, r)| match r {
            TeamRole::Admin => format!("{t} (admin)"),
            TeamRole::Member => t.clone(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The issue form's teams field: `acme, ops:admin` (commas or spaces between grants; a team
/// named twice keeps its highest role), checked by the same rule as `--team`.
pub fn parse_teams(field: &str) -> Result<BTreeMap<String, TeamRole>, String> {
    let specs: Vec<&str> = field
        .split([',', ' ', '\n', '\t', '\r'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    memsync_core::wire::parse_team_grants(&specs).map_err(|e| {
        format!("Teams: {e}. Write grants separated by commas, e.g. `acme, ops:admin`.")
    })
}

pub struct Row {
    pub jti: String,
    pub name: String,
    pub sub: String,
    pub email: Option<String>,
    pub teams: String,
    pub admin: bool,
    /// The scope in words (`all` when the token has none).
    pub scope: String,
    /// The projects it is limited to, comma-separated; empty when none.
    pub projects: String,
    pub issued_at: String,
    pub expires_at: String,
    pub issued_by: String,
    pub state: &'static str,
    pub revoked: Option<String>,
    pub revoke_url: Option<String>,
}

fn row(t: &TokenRecord, now: chrono::DateTime<Utc>) -> Row {
    let state = TokenState::of(t, now);
    Row {
        jti: t.jti.to_string(),
        name: t.name.clone(),
        sub: t.sub.clone(),
        email: t.email.clone(),
        teams: teams_text(&t.teams),
        admin: t.admin,
        scope: t.scope.as_deref().map_or_else(
            || "all".to_owned(),
            |s| s.split(' ').next_back().unwrap_or(s).to_owned(),
        ),
        projects: t.projects.join(", "),
        issued_at: utc_display(&t.issued_at.to_rfc3339()),
        expires_at: utc_display(&t.expires_at.to_rfc3339()),
        issued_by: t.issued_by.clone(),
        state: state.as_str(),
        revoked: t.revoked_at.map(|at| {
            format!(
                "{} by {}",
                utc_display(&at.to_rfc3339()),
                t.revoked_by.as_deref().unwrap_or("?")
            )
        }),
        revoke_url: (state == TokenState::Active)
            .then(|| format!("/admin/tokens/{}/revoke", t.jti)),
    }
}

/// The issue form's fields, as typed (kept when the form comes back with an error).
#[derive(Deserialize, Default)]
pub struct IssueForm {
    #[serde(default)]
    user: String,
    #[serde(default)]
    email: String,
    #[serde(default)]
    teams: String,
    /// A checkbox: present (`on`) when ticked.
    #[serde(default)]
    admin: Option<String>,
    #[serde(default)]
    ttl_days: String,
    /// `pull`, `push`, `admin`, or empty for everything the teams allow.
    #[serde(default)]
    scope: String,
    /// `team/name`, comma-separated.
    #[serde(default)]
    projects: String,
    #[serde(default)]
    key: String,
}

#[derive(Deserialize)]
pub struct ListQuery {
    #[serde(default)]
    state: String,
    #[serde(default)]
    page: String,
}

/// One of the state filters above the list, with its count.
pub struct Tab {
    pub url: String,
    pub label: &'static str,
    pub count: usize,
    pub current: bool,
}

#[derive(Template)]
#[template(path = "console/tokens.html")]
struct TokensPage {
    nav: Option<Nav>,
    rows: Vec<Row>,
    state: String,
    tabs: Vec<Tab>,
    page: usize,
    pages: usize,
    prev: Option<String>,
    next: Option<String>,
    form: IssueForm,
    admin_checked: bool,
    form_error: Option<String>,
}

async fn list_page(
    state: &AppState,
    console: &Console,
    query: ListQuery,
    form: IssueForm,
    form_error: Option<String>,
) -> PageResult {
    let now = Utc::now();
    let all = crate::store::tokens::list(&state.pool, true).await?;
    let count = |s: Option<TokenState>| {
        all.iter()
            .filter(|t| s.is_none_or(|s| TokenState::of(t, now) == s))
            .count()
    };
    let wanted = match query.state.as_str() {
        "revoked" => Some(TokenState::Revoked),
        "expired" => Some(TokenState::Expired),
        "all" => None,
        _ => Some(TokenState::Active),
    };
    let shown = wanted.map_or("all", TokenState::as_str);
    let tabs = [
        (Some(TokenState::Active), "Active"),
        (Some(TokenState::Revoked), "Revoked"),
        (Some(TokenState::Expired), "Expired"),
        (None, "All"),
    ]
    .into_iter()
    .map(|(s, label)| Tab {
        url: format!(
            "/admin/tokens?state={}",
            s.map_or("all", TokenState::as_str)
        ),
        label,
        count: count(s),
        current: s == wanted,
    })
    .collect();
    let matching: Vec<&TokenRecord> = all
        .iter()
        .filter(|t| wanted.is_none_or(|s| TokenState::of(t, now) == s))
        .collect();
    let pages = matching.len().div_ceil(PAGE).max(1);
    let page = query.page.parse::<usize>().unwrap_or(1).clamp(1, pages);
    let rows = matching
        .iter()
        .skip((page - 1) * PAGE)
        .take(PAGE)
        .map(|t| row(t, now))
        .collect();
    let link = |n: usize| format!("/admin/tokens?state={shown}&page={n}");
    let status = if form_error.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    let page = TokensPage {
        nav: console.nav("tokens"),
        rows,
        state: shown.to_owned(),
        tabs,
        page,
        pages,
        prev: (page > 1).then(|| link(page - 1)),
        next: (page < pages).then(|| link(page + 1)),
        admin_checked: form.admin.is_some(),
        form: IssueForm {
            key: if form.key.is_empty() {
                Uuid::new_v4().to_string()
            } else {
                form.key
            },
            ttl_days: if form.ttl_days.is_empty() {
                DEFAULT_TTL_DAYS.to_string()
            } else {
                form.ttl_days
            },
            ..form
        },
        form_error,
    };
    Ok((status, axum::response::Html(page.render()?)).into_response())
}

pub async fn page(
    State(state): State<AppState>,
    console: Console,
    Query(query): Query<ListQuery>,
) -> PageResult {
    require_server_admin(&console)?;
    list_page(&state, &console, query, IssueForm::default(), None).await
}

#[derive(Template)]
#[template(path = "console/token_issued.html")]
struct IssuedPage {
    nav: Option<Nav>,
    token: String,
    jti: String,
    user: String,
    teams: String,
    admin: bool,
    expires_at: String,
    replayed: bool,
}

/// The issue form, checked: what `tokens::issue` takes, or what to fix.
fn issue_request(f: &IssueForm) -> Result<IssueRequest, String> {
    let text = |what: &str, s: &str| Text::new(s.trim()).map_err(|e| format!("{what}: {e}."));
    let user = text("User", &f.user)?;
    if user.is_empty() {
        return Err("User: give the name of the person or agent the token is for.".into());
    }
    let email = Some(text("Email", &f.email)?).filter(|e| !e.is_empty());
    let teams = parse_teams(&f.teams)?;
    let admin = f.admin.is_some();
    if teams.is_empty() && !admin {
        return Err(
            "Teams: give at least one team (or tick “Server admin”): a token without either reaches nothing."
                .into(),
        );
    }
    let scope = match f.scope.trim() {
        "" => None,
        s => crate::admin::tokens::scope_claim(&[s
            .parse::<crate::auth::Scope>()
            .map_err(|e| format!("Scope: {e}."))?]),
    };
    let projects: Vec<String> = f
        .projects
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect();
    let ttl_days: u32 = match f.ttl_days.trim() {
        "" => DEFAULT_TTL_DAYS,
        d => d
            .parse()
            .ok()
            .filter(|d| (1..=MAX_TTL_DAYS).contains(d))
            .ok_or_else(|| {
                format!("Lifetime: “{d}” is not a whole number of days from 1 to {MAX_TTL_DAYS}.")
            })?,
    };
    Ok(IssueRequest {
        user,
        email,
        teams,
        admin,
        ttl_secs: i64::from(ttl_days) * 86_400,
        scope,
        projects,
        rate: None,
    })
}

/// What an issue asks, for telling a double submit of the same form from a reused key.
fn issue_hash(r: &IssueRequest) -> String {
    let what = serde_json::json!({
        "user": r.user.as_str(),
        "email": r.email.as_ref().map(Text::as_str),
        "teams": r.teams,
        "admin": r.admin,
        "ttl_secs": r.ttl_secs,
        "scope": r.scope,
        "projects": r.projects,
    });
    Sha256::of(format!("console token_issue\n{what}").as_bytes()).to_hex()
}

fn valid_key(key: &str) -> bool {
    !key.is_empty() && key.len() <= 200 && key.bytes().all(|b| b.is_ascii_graphic())
}

pub async fn issue(
    State(state): State<AppState>,
    headers: HeaderMap,
    posted: Posted<IssueForm>,
) -> PageResult {
    let Posted { console, form } = posted;
    require_server_admin(&console)?;
    let again = |form, error: String| {
        let query = ListQuery {
            state: String::new(),
            page: String::new(),
        };
        list_page(&state, &console, query, form, Some(error))
    };
    if !valid_key(&form.key) {
        return again(
            IssueForm {
                key: String::new(),
                ..form
            },
            "This form is incomplete (its key is missing); check the fields and issue again."
                .into(),
        )
        .await;
    }
    let req = match issue_request(&form) {
        Ok(r) => r,
        Err(e) => return again(form, e).await,
    };
    let actor = Actor {
        sub: &console.principal.claims.sub,
        name: Some(&console.principal.claims.name),
        request_id: crate::http::request_id(&headers),
        idem: Some(Idem {
            key: form.key.clone(),
            hash: issue_hash(&req),
        }),
    };
    // A second submit of the same form shows the same token again (signed again from its
    // stored claims) instead of issuing another.
    let (token, claims, replayed) = match tokens::replay(&state.pool, &state.keys, &actor).await {
        Ok(Some((token, claims))) => (token, claims, true),
        Ok(None) => match tokens::issue(&state.pool, &state.keys, &actor, req).await {
            Ok((token, claims)) => (token, claims, false),
            Err(ApiError::Internal(e)) => return Err(ApiError::Internal(e).into()),
            Err(e) => return again(form, format!("Not issued: {e}.")).await,
        },
        Err(ApiError::Internal(e)) => return Err(ApiError::Internal(e).into()),
        Err(e) => {
            return again(
                IssueForm {
                    key: String::new(),
                    ..form
                },
                format!("Not issued: {e}."),
            )
            .await;
        }
    };
    let teams = serde_json::to_value(&claims.teams).unwrap_or_default();
    html(&IssuedPage {
        nav: console.nav("tokens"),
        token,
        jti: claims.jti.to_string(),
        user: claims.name.clone(),
        teams: teams_text(&teams),
        admin: claims.admin,
        expires_at: chrono::DateTime::from_timestamp(claims.exp, 0)
            .map(|t| utc_display(&t.to_rfc3339()))
            .unwrap_or_default(),
        replayed,
    })
}

#[derive(Template)]
#[template(path = "console/token_revoke.html")]
struct RevokePage {
    nav: Option<Nav>,
    token: Row,
    own: bool,
}

async fn find(state: &AppState, jti: &str) -> PageResult<TokenRecord> {
    let not_found = || {
        PageError::new(
            StatusCode::NOT_FOUND,
            format!("There is no token {jti}; the Tokens page lists every issued token."),
        )
    };
    let jti: Uuid = jti.parse().map_err(|_| not_found())?;
    crate::store::tokens::list(&state.pool, true)
        .await?
        .into_iter()
        .find(|t| t.jti == jti)
        .ok_or_else(not_found)
}

pub async fn confirm_revoke(
    State(state): State<AppState>,
    console: Console,
    Path(jti): Path<String>,
) -> PageResult {
    require_server_admin(&console)?;
    let t = find(&state, &jti).await?;
    html(&RevokePage {
        nav: console.nav("tokens"),
        own: t.jti == console.principal.claims.jti,
        token: row(&t, Utc::now()),
    })
}

#[derive(Deserialize)]
pub struct RevokeForm {}

pub async fn revoke(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(jti): Path<String>,
    posted: Posted<RevokeForm>,
) -> PageResult {
    let console = posted.console;
    require_server_admin(&console)?;
    let t = find(&state, &jti).await?;
    let actor = Actor {
        sub: &console.principal.claims.sub,
        name: Some(&console.principal.claims.name),
        request_id: crate::http::request_id(&headers),
        idem: None,
    };
    let who = format!("{} ({})", t.name, t.jti);
    let flash = match tokens::revoke(&state.pool, t.jti, &actor).await? {
        Revoked::Now => {
            state.revocations.insert(t.jti);
            Flash::ok(format!(
                "Revoked the token of {who}: the API refuses it from now on, and its console sessions ended."
            ))
        }
        Revoked::Already => Flash::error(format!("The token of {who} was already revoked.")),
        Revoked::Unknown => {
            return Err(PageError::new(
                StatusCode::NOT_FOUND,
                format!("There is no token {jti}."),
            ));
        }
    };
    // Revoking the token this session was opened with ends this session too: the next page
    // is the sign-in page, which says so.
    console.tell(&state, flash).await?;
    Ok(see_other("/admin/tokens"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_teams_field_takes_grants_separated_by_commas() {
        let t = parse_teams("acme, ops:admin,,  web:member acme:admin").unwrap();
        assert_eq!(
            t.into_iter().collect::<Vec<_>>(),
            vec![
                ("acme".to_owned(), TeamRole::Admin),
                ("ops".to_owned(), TeamRole::Admin),
                ("web".to_owned(), TeamRole::Member),
            ]
        );
        assert!(parse_teams("").unwrap().is_empty());
        assert!(parse_teams(" , ").unwrap().is_empty());
        for bad in ["Acme", "ops:owner", ":admin", "a/b"] {
            let e = parse_teams(bad).unwrap_err();
            assert!(
                e.starts_with("Teams: ") && e.contains("acme, ops:admin"),
                "{bad}: {e}"
            );
        }
    }

    fn form(user: &str, teams: &str, admin: bool, ttl: &str) -> IssueForm {
        IssueForm {
            user: user.into(),
            email: String::new(),
            teams: teams.into(),
            admin: admin.then(|| "on".to_owned()),
            ttl_days: ttl.into(),
            scope: String::new(),
            projects: String::new(),
            key: "k".into(),
        }
    }

    #[test]
    fn the_issue_form_takes_a_scope_and_projects() {
        let mut f = form("ci", "acme", false, "30");
        f.scope = "pull".into();
        f.projects = " acme/api, ,acme/web ".into();
        let r = issue_request(&f).unwrap();
        assert_eq!(r.scope.as_deref(), Some("pull"));
        assert_eq!(r.projects, ["acme/api", "acme/web"]);
        f.scope = "read".into();
        let err = issue_request(&f).err().unwrap();
        assert!(err.starts_with("Scope: `read` is not a scope"), "{err}");
    }

    #[test]
    fn the_issue_form_is_checked_before_anything_is_issued() {
        let r = issue_request(&form(" ann ", "acme:admin", false, "")).unwrap();
        assert_eq!(r.user.as_str(), "ann");
        assert_eq!(r.email, None);
        assert_eq!(r.ttl_secs, 90 * 86_400);
        assert_eq!(r.teams.get("acme"), Some(&TeamRole::Admin));
        let r = issue_request(&form("root", "", true, "7")).unwrap();
        assert!(r.admin && r.teams.is_empty());
        assert_eq!(r.ttl_secs, 7 * 86_400);

        let bad = |f: IssueForm, says: &str| {
            let e = issue_request(&f).err().expect("refused");
            assert!(e.contains(says), "{e}");
        };
        bad(form("  ", "acme", false, ""), "User");
        bad(form("ann", "", false, ""), "at least one team");
        bad(form("ann", "acme", false, "0"), "Lifetime");
        bad(form("ann", "acme", false, "3651"), "Lifetime");
        bad(form("ann", "acme", false, "ninety"), "Lifetime");
        bad(form("ann\u{7}", "acme", false, ""), "User");
    }

    #[test]
    fn the_same_form_hashes_the_same() {
        let a = issue_request(&form("ann", "acme", false, "")).unwrap();
        let b = issue_request(&form("ann", " acme ", false, "90")).unwrap();
        let c = issue_request(&form("ann", "acme:admin", false, "")).unwrap();
        assert_eq!(issue_hash(&a), issue_hash(&b));
        assert_ne!(issue_hash(&a), issue_hash(&c));
    }

    #[test]
    fn teams_show_with_their_roles() {
        let v = serde_json::json!({ "acme": "admin", "ops": "member" });
        assert_eq!(teams_text(&v), "acme (admin), ops");
        assert_eq!(teams_text(&serde_json::json!({})), "");
    }
}
