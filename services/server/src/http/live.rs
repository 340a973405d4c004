//! Pulls (paged, and long-polled with `wait=`) and the project's event stream (SSE), both fed
//! by the revision bus. The contract is docs/protocol.md, "Paged pulls, long-poll and the event
//! stream".

use std::convert::Infallible;
use std::time::Duration;
use tracing::Instrument;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::{Json, middleware::Next};
use memsync_core::ProjectId;
use memsync_core::wire::{EndEvent, ReviewEvent, RevisionEvent};
use serde::Deserialize;
use tokio::sync::{broadcast, watch};
use tokio::time::Instant;

use super::{AppState, QueryParams, reachable};
use crate::auth::Principal;
use crate::bus::ReviewNote;
use crate::error::{ApiError, ApiResult};
use crate::live::{Kind, MAX_WAIT_SECS, Slot};
use crate::sync::{self, Pull};

/// How often a waiter asks the database itself while the bus is not current (its listener is
/// down or has not loaded yet), and, as a safety net, while it is.
const POLL_UNSYNCED: Duration = Duration::from_secs(1);
const POLL_SYNCED: Duration = Duration::from_secs(30);
/// How often an open event stream checks its token (revoked, expired) and, while the bus is
/// not current, whether to ask the database.
const CHECK: Duration = Duration::from_millis(250);
/// What the event stream tells browsers' `EventSource` to wait before reconnecting.
const RETRY: Duration = Duration::from_secs(2);

#[derive(Debug, Deserialize)]
pub(super) struct PullQuery {
    #[serde(default)]
    since: Option<String>,
    #[serde(default)]
    limit: Option<String>,
    #[serde(default)]
    wait: Option<String>,
}

pub(super) async fn pull(
    State(state): State<AppState>,
    principal: Principal,
    Path((team, name)): Path<(String, String)>,
    QueryParams(q): QueryParams<PullQuery>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let project = reachable(&principal, &team, &name)?;
    let since = match q.since.as_deref() {
        None | Some("") => 0,
        Some(s) => s.parse::<i64>().map_err(|_| {
            ApiError::bad_request(
                "invalid_since",
                "`since` must be a revision number (0 for everything)",
            )
        })?,
    };
    let cap = state.live.limits().max_pull_files;
    let limit = match q.limit.as_deref() {
        None | Some("") => cap,
        Some(s) => match s.parse::<usize>() {
            Ok(n) if n >= 1 => n.min(cap),
            _ => {
                return Err(ApiError::bad_request(
                    "invalid_limit",
                    format!(
                        "`limit` must be a number of files, 1 or more (this server answers at most {cap} a page)"
                    ),
                ));
            }
        },
    };
    let wait = parse_wait(q.wait.as_deref())?;
    let inm = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok());

    let answer = answer_pull(&state, &project, since, inm, limit).await?;
    if wait.is_zero() || !sync::is_up_to_date(&answer) {
        return Ok(counted(&state, respond(answer)));
    }

    // Long-poll: wait for the project to move past what the client has.
    let _slot = state.live.open(
        principal.claims.jti,
        project.team(),
        &state.limiter,
        Kind::LongPoll,
    )?;
    let mut revisions = state.bus.subscribe(&project);
    let deadline = Instant::now() + wait;
    let mut closing = std::pin::pin!(state.live.closing());
    let mut last = answer;
    let mut waited = false;
    loop {
        // Asked again after subscribing: a revision that landed in between is not missed.
        last = answer_pull(&state, &project, since, inm, limit)
            .await
            .or_else(|e| {
                if matches!(e, ApiError::Unavailable { .. }) {
                    Ok(last)
                } else {
                    Err(e)
                }
            })?;
        if !sync::is_up_to_date(&last) {
            still_valid(&state, &principal)?;
            if waited {
                state.metrics.long_poll_woken();
            }
            return Ok(counted(&state, respond(last)));
        }
        let poll = if state.bus.is_synced() {
            POLL_SYNCED
        } else {
            POLL_UNSYNCED
        };
        tokio::select! {
            changed = revisions.changed() => {
                if changed.is_err() {
                    // The bus dropped the channel (it cannot while we hold a receiver); wait on
                    // a new one.
                    revisions = state.bus.subscribe(&project);
                }
            }
            () = tokio::time::sleep(poll) => {}
            () = tokio::time::sleep_until(deadline) => break,
            () = &mut closing => break,
        }
        waited = true;
    }
    let revision = match &last {
        Pull::NotModified { revision } => *revision,
        Pull::Changes(body) => body.revision,
    };
    Ok(counted(&state, not_modified(revision)))
}

/// A pull's answer (200 or 304), counted for `/metrics`.
fn counted(state: &AppState, resp: Response) -> Response {
    state.metrics.pulled(resp.status());
    resp
}

fn parse_wait(wait: Option<&str>) -> ApiResult<Duration> {
    match wait {
        None | Some("") => Ok(Duration::ZERO),
        Some(s) => match s.parse::<u64>() {
            Ok(n) if n <= MAX_WAIT_SECS => Ok(Duration::from_secs(n)),
            _ => Err(ApiError::bad_request(
                "invalid_wait",
                format!("`wait` is a number of seconds from 0 to {MAX_WAIT_SECS}"),
            )),
        },
    }
}

/// A pull answered by the revision bus when it can (the client is up to date), else by the
/// database (whose answer then tells the bus where the project is).
async fn answer_pull(
    state: &AppState,
    project: &ProjectId,
    since: i64,
    inm: Option<&str>,
    limit: usize,
) -> ApiResult<Pull> {
    if let Some(answer) = state
        .bus
        .known(project)
        .and_then(|known| sync::pull_up_to_date(project, known, since, inm))
    {
        return Ok(answer);
    }
    let answer = sync::pull(&state.pool, project, since, inm, limit)
        .instrument(tracing::info_span!(
            "pull.query",
            db.system.name = "postgresql",
            memsync.project = %project,
            memsync.since = since
        ))
        .await?;
    let head = match &answer {
        Pull::NotModified { revision } => *revision,
        Pull::Changes(body) => body.head.unwrap_or(body.revision),
    };
    state.bus.read(project, head);
    Ok(answer)
}

fn respond(answer: Pull) -> Response {
    match answer {
        Pull::NotModified { revision } => not_modified(revision),
        Pull::Changes(body) => (
            [
                (header::ETAG, etag_header(body.revision)),
                (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            ],
            Json(body),
        )
            .into_response(),
    }
}

fn not_modified(revision: i64) -> Response {
    (
        StatusCode::NOT_MODIFIED,
        [(header::ETAG, etag_header(revision))],
    )
        .into_response()
}

fn etag_header(revision: i64) -> HeaderValue {
    HeaderValue::from_str(&sync::etag(revision)).unwrap_or(HeaderValue::from_static("\"\""))
}

/// After a wait, the token must still be good: a revoked or expired token gets nothing more.
fn still_valid(state: &AppState, principal: &Principal) -> ApiResult<()> {
    match ended(state, principal) {
        None => Ok(()),
        Some(end) => Err(ApiError::Unauthenticated(end.message)),
    }
}

fn ended(state: &AppState, principal: &Principal) -> Option<EndEvent> {
    let c = &principal.claims;
    if state.revocations.is_revoked(&c.jti) {
        return Some(EndEvent {
            reason: "revoked".into(),
            message: "the token was revoked; ask an admin for a new one".into(),
        });
    }
    if c.exp <= chrono::Utc::now().timestamp() {
        return Some(EndEvent {
            reason: "expired".into(),
            message: "the token has expired; ask an admin for a new one".into(),
        });
    }
    None
}

#[derive(Debug, Deserialize)]
pub(super) struct EventsQuery {
    #[serde(default)]
    since: Option<String>,
}

pub(super) async fn events(
    State(state): State<AppState>,
    principal: Principal,
    Path((team, name)): Path<(String, String)>,
    QueryParams(q): QueryParams<EventsQuery>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let project = reachable(&principal, &team, &name)?;
    let last_id = headers
        .get("last-event-id")
        .map(|v| v.to_str().unwrap_or("?").trim().to_owned());
    let seen = match last_id.or(q.since).as_deref() {
        None | Some("") => None,
        Some(s) => Some(s.parse::<i64>().ok().filter(|n| *n >= 0).ok_or_else(|| {
            ApiError::bad_request(
                "invalid_since",
                "`Last-Event-ID` (or `since`) must be a revision this stream sent, 0 or more",
            )
        })?),
    };
    let slot = state.live.open(
        principal.claims.jti,
        project.team(),
        &state.limiter,
        Kind::Stream,
    )?;
    // Subscribed before the revision is read, so nothing that lands in between is missed.
    let revisions = state.bus.subscribe(&project);
    let current = match state.bus.known(&project) {
        Some(r) => r,
        None => {
            let r = crate::store::memories::revision(&state.pool, &project)
                .await?
                .ok_or_else(|| sync::not_found(&project))?;
            state.bus.read(&project, r);
            r
        }
    };
    let reviewer = crate::review::is_reviewer(&state.pool, &principal, project.team()).await?;
    let mut first = vec![Event::default().retry(RETRY)];
    if seen != Some(current) {
        first.push(revision_event(&project, current));
    }
    let stream = EventStream {
        state: state.clone(),
        principal,
        project,
        revisions,
        reviews: reviewer.then(|| state.bus.review_events()),
        sent: current,
        queue: first.into(),
        done: false,
        heartbeat: tokio::time::interval_at(
            Instant::now() + state.live.limits().heartbeat,
            state.live.limits().heartbeat,
        ),
        check: tokio::time::interval_at(Instant::now() + CHECK, CHECK),
        asked_db: Instant::now(),
        closing: Box::pin(state.live.closing()),
        _slot: slot,
    };
    let body = futures_util::stream::unfold(stream, |mut s| async move {
        let event = s.next().await?;
        Some((Ok::<_, Infallible>(event), s))
    });
    let mut resp = Sse::new(body).into_response();
    resp.headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    Ok(resp)
}

fn revision_event(project: &ProjectId, revision: i64) -> Event {
    let data = RevisionEvent {
        project: project.to_string(),
        revision,
    };
    Event::default()
        .event("revision")
        .id(revision.to_string())
        .data(serde_json::to_string(&data).unwrap_or_default())
}

fn review_event(data: &ReviewEvent) -> Event {
    Event::default()
        .event("review")
        .data(serde_json::to_string(data).unwrap_or_default())
}

fn end_event(end: &EndEvent) -> Event {
    Event::default()
        .event("end")
        .data(serde_json::to_string(end).unwrap_or_default())
}

/// One open event stream: what it has sent, what it waits on. Its memory does not grow with
/// what happens: revisions are a `watch` (the newest only), review events a bounded broadcast.
struct EventStream {
    state: AppState,
    principal: Principal,
    project: ProjectId,
    revisions: watch::Receiver<i64>,
    reviews: Option<broadcast::Receiver<ReviewNote>>,
    /// The newest revision sent (or known to the client).
    sent: i64,
    queue: std::collections::VecDeque<Event>,
    done: bool,
    heartbeat: tokio::time::Interval,
    check: tokio::time::Interval,
    /// When the database was last asked for the revision (only while the bus is not current).
    asked_db: Instant,
    closing: std::pin::Pin<Box<dyn Future<Output = ()> + Send>>,
    _slot: Slot,
}

impl EventStream {
    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(e) = self.queue.pop_front() {
                return Some(e);
            }
            if self.done {
                return None;
            }
            if let Some(end) = ended(&self.state, &self.principal) {
                return Some(self.end(end));
            }
            let reviews = async {
                match self.reviews.as_mut() {
                    Some(rx) => rx.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                changed = self.revisions.changed() => {
                    if changed.is_err() {
                        self.revisions = self.state.bus.subscribe(&self.project);
                        continue;
                    }
                    let newest = *self.revisions.borrow_and_update();
                    if newest > self.sent {
                        self.sent = newest;
                        // Checked again before anything is sent: a revoked token gets nothing.
                        if let Some(end) = ended(&self.state, &self.principal) {
                            return Some(self.end(end));
                        }
                        return Some(revision_event(&self.project, newest));
                    }
                }
                note = reviews => match note {
                    Ok(note) if note.project == self.project.as_str() => {
                        return Some(review_event(&ReviewEvent {
                            project: note.project,
                            proposal: Some(note.proposal),
                            status: Some(note.status),
                            missed: false,
                        }));
                    }
                    Ok(_) => {}
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        return Some(review_event(&ReviewEvent {
                            project: self.project.to_string(),
                            proposal: None,
                            status: None,
                            missed: true,
                        }));
                    }
                    Err(broadcast::error::RecvError::Closed) => self.reviews = None,
                },
                _ = self.heartbeat.tick() => return Some(Event::default().comment("heartbeat")),
                _ = self.check.tick() => {
                    // The loop checks the token again. While the bus is not current, the
                    // database is asked too, once a second (and tells the bus, which wakes this
                    // stream and every other waiter on the project).
                    if !self.state.bus.is_synced() && self.asked_db.elapsed() >= POLL_UNSYNCED {
                        self.asked_db = Instant::now();
                        if let Ok(Some(r)) =
                            crate::store::memories::revision(&self.state.pool, &self.project).await
                        {
                            self.state.bus.read(&self.project, r);
                        }
                    }
                }
                () = &mut self.closing => {
                    return Some(self.end(EndEvent {
                        reason: "shutdown".into(),
                        message: "the server is stopping; reconnect with Last-Event-ID".into(),
                    }));
                }
            }
        }
    }

    fn end(&mut self, end: EndEvent) -> Event {
        self.done = true;
        end_event(&end)
    }
}

/// The request's time limit: `--request-timeout`, plus the wait of a long-poll; an event stream
/// has none (it ends with its token, its client or the server).
pub(super) async fn deadline(
    State(timeout): State<Duration>,
    req: axum::extract::Request,
    next: Next,
) -> Response {
    let limit = request_limit(req.uri(), timeout);
    match limit {
        None => next.run(req).await,
        Some(limit) => match tokio::time::timeout(limit, next.run(req)).await {
            Ok(resp) => resp,
            Err(_) => StatusCode::GATEWAY_TIMEOUT.into_response(),
        },
    }
}

fn request_limit(uri: &axum::http::Uri, timeout: Duration) -> Option<Duration> {
    let path = uri.path();
    if !path.starts_with("/v1/projects/") {
        return Some(timeout);
    }
    if path.ends_with("/events") {
        return None;
    }
    let wait = path
        .ends_with("/changes")
        .then(|| {
            uri.query()?
                .split('&')
                .filter_map(|kv| kv.strip_prefix("wait="))
                .find_map(|v| v.parse::<u64>().ok())
        })
        .flatten()
        .unwrap_or(0)
        .min(MAX_WAIT_SECS);
    Some(timeout + Duration::from_secs(wait))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_and_streams_get_their_own_time_limits() {
        let t = Duration::from_secs(30);
        let limit = |u: &str| request_limit(&u.parse().unwrap(), t);
        assert_eq!(limit("/v1/me"), Some(t));
        assert_eq!(limit("/v1/projects/acme/api/changes?since=3"), Some(t));
        assert_eq!(
            limit("/v1/projects/acme/api/changes?since=3&wait=20"),
            Some(Duration::from_secs(50))
        );
        assert_eq!(
            limit("/v1/projects/acme/api/changes?wait=600"),
            Some(Duration::from_secs(90)),
            "a wait over the maximum is refused by the handler; the limit never exceeds it"
        );
        assert_eq!(limit("/v1/projects/acme/api/push?wait=20"), Some(t));
        assert_eq!(limit("/v1/projects/acme/api/events"), None);
        assert_eq!(limit("/admin/p/acme/api/events"), Some(t));
    }

    #[test]
    fn wait_is_seconds_up_to_the_maximum() {
        assert_eq!(parse_wait(None).unwrap(), Duration::ZERO);
        assert_eq!(parse_wait(Some("")).unwrap(), Duration::ZERO);
        assert_eq!(parse_wait(Some("60")).unwrap(), Duration::from_secs(60));
        for bad in ["61", "-1", "1.5", "soon"] {
            let e = parse_wait(Some(bad)).unwrap_err();
            assert_eq!(e.code(), "invalid_wait", "{bad}");
            assert!(e.to_string().contains("0 to 60"), "{e}");
        }
    }
}
