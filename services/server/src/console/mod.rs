//! The admin web console, served at `/admin/` on the API's listener: server-rendered HTML from
//! askama templates (auto-escaped), one stylesheet, and no JavaScript at all. It is a view over
//! the same domain functions as the admin API (`crate::admin`, `crate::review`), so what a page
//! shows or does is what the API would, with the same scoping and the same audit rows.
//!
//! Reading order: `session` (signing in and out, the `Console` extractor every page takes, the
//! CSRF and origin checks every form post passes), then one module per page, and `render` (memory
//! markdown and diffs made safe to show). Memory text is untrusted: it is escaped by the templates
//! or rendered by `render::markdown`, which lets no HTML, script or remote image through, and the
//! Content-Security-Policy forbids scripts besides.

mod allowlist;
mod audit;
mod diff;
mod memory;
mod project;
mod projects;
pub mod render;
mod review;
mod session;
mod sso;
mod tokens;

use askama::Template;
use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};

use crate::error::ApiError;
use crate::state::AppState;
pub use session::{Console, Posted, Settings};

/// The console's routes; merged into the server's router by `http::router`.
pub fn router(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/admin", get(|| async { Redirect::to("/admin/") }))
        .route("/admin/", get(home))
        .route("/admin/static/console.css", get(stylesheet))
        .route(
            "/admin/login",
            get(session::login_page).post(session::login),
        )
        .route("/admin/logout", post(session::logout))
        .route("/admin/sso", get(sso::start))
        .route("/admin/sso/callback", get(sso::callback))
        .route("/admin/projects", get(projects::page))
        .route("/admin/p/{team}/{name}", get(project::page))
        .route("/admin/p/{team}/{name}/memory", get(memory::page))
        .route("/admin/p/{team}/{name}/diff", get(memory::diff))
        .route(
            "/admin/p/{team}/{name}/act",
            get(memory::confirm).post(memory::act),
        )
        .route("/admin/review", get(review::list))
        .route("/admin/review/{id}", get(review::show).post(review::decide))
        .route("/admin/audit", get(audit::page))
        .route("/admin/audit.csv", get(audit::csv))
        .route("/admin/tokens", get(tokens::page).post(tokens::issue))
        .route(
            "/admin/tokens/{jti}/revoke",
            get(tokens::confirm_revoke).post(tokens::revoke),
        )
        .route(
            "/admin/p/{team}/{name}/allowlist",
            get(allowlist::page).post(allowlist::change),
        )
        .route("/admin/{*rest}", get(not_found).post(not_found))
        .layer(axum::middleware::from_fn_with_state(state, with_nav))
        .layer(axum::middleware::from_fn(security_headers))
}

/// The signed-in landing page: the project list for admins, the review queue for reviewers.
async fn home(console: Console) -> Redirect {
    if console.administers() {
        Redirect::to("/admin/projects")
    } else {
        Redirect::to("/admin/review")
    }
}

async fn not_found() -> PageError {
    PageError::new(
        StatusCode::NOT_FOUND,
        "There is no such page in the console.",
    )
}

const STYLESHEET: &str = include_str!("../../assets/console.css");

async fn stylesheet() -> Response {
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/css; charset=utf-8"),
            ),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=3600"),
            ),
        ],
        STYLESHEET,
    )
        .into_response()
}

/// The policy every console response carries: nothing but this server's stylesheet may load, no
/// script at all, forms post only here, and no other site may frame a page.
pub const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

async fn security_headers(req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    // axum's own refusals (a malformed query or path) come as plain text: shown as a page too,
    // without their text, which may quote the request.
    let status = resp.status();
    let html_page = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/html"));
    if (status.is_client_error() || status.is_server_error()) && !html_page {
        resp = PageError::new(
            status,
            "The page's address is malformed: a parameter is missing, repeated or not of the right kind. Follow a link from the console instead.",
        )
        .into_response();
    }
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static("same-origin"),
    );
    h.insert(
        "cross-origin-resource-policy",
        HeaderValue::from_static("same-origin"),
    );
    // Pages hold memory content and tokens: no cache keeps them (the stylesheet sets its own).
    if !h.contains_key(header::CACHE_CONTROL) {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    resp
}

/// What the page header shows: who is signed in, which sections they have, the CSRF token of the
/// sign-out form, and the message the last action left.
pub struct Nav {
    pub user: String,
    pub server_admin: bool,
    pub administers: bool,
    pub csrf: String,
    pub flash: Option<Flash>,
    /// The section the page belongs to: `projects`, `review`, `audit` or `tokens`.
    pub section: &'static str,
}

/// A one-time message about what the last action did (`ok`) or why it did not happen (`error`).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Flash {
    pub kind: String,
    pub text: String,
}

impl Flash {
    pub fn ok(text: impl Into<String>) -> Flash {
        Flash {
            kind: "ok".into(),
            text: text.into(),
        }
    }

    pub fn error(text: impl Into<String>) -> Flash {
        Flash {
            kind: "error".into(),
            text: text.into(),
        }
    }
}

/// A page that could not be shown: a rendered error page with the status, or (session gone) a
/// redirect to the sign-in page.
#[derive(Debug)]
pub enum PageError {
    /// No live session: to the sign-in page, saying why (`ended`, `revoked`, `expired`).
    SignIn {
        why: &'static str,
    },
    Page {
        status: StatusCode,
        message: String,
    },
}

impl PageError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> PageError {
        PageError::Page {
            status,
            message: message.into(),
        }
    }

    pub fn bad_request(message: impl Into<String>) -> PageError {
        PageError::new(StatusCode::BAD_REQUEST, message)
    }

    pub fn forbidden(message: impl Into<String>) -> PageError {
        PageError::new(StatusCode::FORBIDDEN, message)
    }
}

impl From<ApiError> for PageError {
    fn from(e: ApiError) -> PageError {
        let status = e.status();
        if let ApiError::Internal(cause) = &e {
            tracing::error!(error = format!("{cause:#}"), "console: internal error");
        }
        PageError::new(status, e.to_string())
    }
}

impl From<sqlx::Error> for PageError {
    fn from(e: sqlx::Error) -> PageError {
        ApiError::from(e).into()
    }
}

impl From<askama::Error> for PageError {
    fn from(e: askama::Error) -> PageError {
        ApiError::Internal(anyhow::anyhow!("rendering a console page: {e}")).into()
    }
}

#[derive(Template)]
#[template(path = "console/error.html")]
struct ErrorPage<'a> {
    nav: Option<Nav>,
    status: u16,
    reason: &'a str,
    message: &'a str,
}

/// What an error page said, kept on its response so `with_nav` can show it again in the page
/// frame of the signed-in user.
#[derive(Clone)]
struct Refused {
    status: StatusCode,
    message: String,
}

/// An error page for a signed-in user keeps the console's header (sections, sign-out).
async fn with_nav(
    axum::extract::State(state): axum::extract::State<AppState>,
    req: Request,
    next: Next,
) -> Response {
    let headers = req.headers().clone();
    let resp = next.run(req).await;
    let Some(refused) = resp.extensions().get::<Refused>().cloned() else {
        return resp;
    };
    let Ok(console) = Console::of(&state, &headers).await else {
        return resp;
    };
    let page = ErrorPage {
        nav: console.nav(""),
        status: refused.status.as_u16(),
        reason: refused.status.canonical_reason().unwrap_or("Error"),
        message: &refused.message,
    };
    match page.render() {
        Ok(html) => (refused.status, axum::response::Html(html)).into_response(),
        Err(_) => resp,
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        match self {
            PageError::SignIn { why } => {
                let mut r = Redirect::to(&format!("/admin/login?why={why}")).into_response();
                r.headers_mut()
                    .insert(header::SET_COOKIE, session::clear_cookie());
                r
            }
            PageError::Page { status, message } => {
                let page = ErrorPage {
                    nav: None,
                    status: status.as_u16(),
                    reason: status.canonical_reason().unwrap_or("Error"),
                    message: &message,
                };
                let mut resp = match page.render() {
                    Ok(html) => (status, axum::response::Html(html)).into_response(),
                    Err(_) => (status, message.clone()).into_response(),
                };
                // For `with_nav`, which shows it again with the signed-in user's header.
                resp.extensions_mut().insert(Refused { status, message });
                resp
            }
        }
    }
}

pub type PageResult<T = Response> = Result<T, PageError>;

/// A rendered template as an HTML response.
pub fn html(t: &impl Template) -> PageResult {
    Ok(axum::response::Html(t.render()?).into_response())
}

/// Post/redirect/get: after a form did its work, the browser is sent (303) to `to`.
pub fn see_other(to: &str) -> Response {
    Redirect::to(to).into_response()
}

/// A query-string value, percent-encoded.
pub fn enc(s: &str) -> String {
    serde_urlencoded::to_string([("", s)])
        .map(|s| s.trim_start_matches('=').to_owned())
        .unwrap_or_default()
}

/// The console's URL of a project page (`/admin/p/<team>/<name>`), with `suffix` appended.
pub fn project_url(project: &memsync_core::ProjectId, suffix: &str) -> String {
    format!(
        "/admin/p/{}/{}{suffix}",
        enc(project.team()),
        enc(project.name())
    )
}
