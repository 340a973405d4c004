//! The HTTP/1 accept loop, in place of `axum::serve`, which has neither a header-read timeout
//! nor a connection cap: a client that opens connections and never finishes a request would
//! otherwise hold a file descriptor and buffers for ever.
//!
//! - **Header-read timeout.** A connection has `--header-read-timeout` (default 10 s) to send a
//!   request's head, counted from when it opens or finishes its previous request; hyper closes
//!   it when the time runs out. So it is also how long an idle keep-alive connection stays open.
//! - **Connection cap.** At most `--max-connections` (default 1024) are served at once. One more
//!   gets a fixed `503 unavailable` JSON answer with `Retry-After` and `Connection: close`,
//!   written without reading its request, then its side is shut and it is closed once the client
//!   has closed or [`REJECT_LIMIT`] has passed. At most [`MAX_REJECTING`] such answers are in
//!   flight; past that, a connection is closed at once. The accept loop itself never waits for
//!   a slot, so a full server keeps answering at once instead of leaving connections in the
//!   kernel's queue, and that queue is [`LISTEN_BACKLOG`] long rather than the usual 128.
//! - **Head limits.** [`head_limits`] answers a URL over [`MAX_URI_BYTES`] with `414` and a head
//!   over [`MAX_HEADER_BYTES`] or [`MAX_HEADERS`] fields with `431`, in the JSON error shape.
//!   hyper's own limits, which answer with an empty body, are set well above those
//!   ([`HARD_MAX_HEADER_BYTES`], [`HARD_MAX_HEADERS`], hyper's fixed 65,534-byte URL), so they
//!   only meet a request no client of the API sends.
//! - **Graceful shutdown.** When `shutdown` completes the listener closes, idle connections
//!   close (one in the middle of a request head at its header timeout at the latest), and
//!   requests in flight finish, answered with `Connection: close`; [`serve`] returns once every
//!   connection is done.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::Semaphore;

use crate::error::ApiError;

/// Longest request target (path and query) the API answers; longer is `414 uri_too_long`.
pub const MAX_URI_BYTES: usize = 8 * 1024;
/// Largest header section (names, values and separators) the API answers; larger is
/// `431 headers_too_large`.
pub const MAX_HEADER_BYTES: usize = 32 * 1024;
/// Most header fields the API answers; more is `431 headers_too_large`.
pub const MAX_HEADERS: usize = 100;
/// hyper's limit on a whole request head: past it hyper answers a bare 431 and closes.
pub const HARD_MAX_HEADER_BYTES: usize = 256 * 1024;
/// hyper's limit on the number of header fields: past it hyper answers a bare 431 and closes.
pub const HARD_MAX_HEADERS: usize = 256;
/// How long an over-cap connection may take to receive its 503 and close.
pub const REJECT_LIMIT: Duration = Duration::from_secs(1);
/// Over-cap connections being answered at once; past that they are closed without an answer.
pub const MAX_REJECTING: usize = 256;

/// Connections the kernel queues for the accept loop (capped by `net.core.somaxconn`). The
/// standard library's 128 overflows under a burst of connects while the loop is busy, and a
/// connection dropped from a full queue looks open to a client that has sent nothing.
pub const LISTEN_BACKLOG: u32 = 1024;

/// Listens on `addr` with [`LISTEN_BACKLOG`].
pub fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// How many connections are served at once and how long each has to send a request head.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    pub header_read_timeout: Duration,
    pub max_connections: usize,
}

/// Serves `app` on `listener` until `shutdown` completes and every connection has finished.
pub async fn serve<F>(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: F,
) -> io::Result<()>
where
    F: Future<Output = ()> + Send,
{
    raise_fd_limit(limits.max_connections + MAX_REJECTING + FD_RESERVE);
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_header_size(HARD_MAX_HEADER_BYTES)
        .max_headers(HARD_MAX_HEADERS);
    let busy = Busy::new();
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let rejecting = Arc::new(Semaphore::new(MAX_REJECTING));
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => stream,
                Err(e) => {
                    accept_failed(&e).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            match Arc::clone(&rejecting).try_acquire_owned() {
                Ok(permit) => {
                    let answer = busy.answer();
                    tokio::spawn(async move {
                        let _ = tokio::time::timeout(REJECT_LIMIT, reject(stream, answer)).await;
                        drop(permit);
                    });
                }
                Err(_) => drop(stream),
            }
            continue;
        };
        let conn =
            builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app.clone()));
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                // Header timeouts, resets and malformed requests end up here: the client's doing.
                tracing::debug!(error = %e, "connection ended with an error");
            }
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// File descriptors the process needs besides client connections (database pool, git, logs).
const FD_RESERVE: usize = 256;

/// An accept error: the client's (it reset before we took it) or ours (out of file
/// descriptors, where retrying at once would spin).
async fn accept_failed(e: &io::Error) {
    if matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    ) {
        return;
    }
    tracing::error!(error = %e, "accepting a connection failed; retrying in 1 s");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// Raises the soft limit on open files towards the hard one when the cap needs more (systemd's
/// default soft limit is 1024), like Go's runtime does.
fn raise_fd_limit(wanted: usize) {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return;
    };
    let wanted = u64::try_from(wanted).unwrap_or(u64::MAX);
    if soft >= wanted {
        return;
    }
    let new = wanted.min(hard);
    if setrlimit(Resource::RLIMIT_NOFILE, new, hard).is_err() || new < wanted {
        tracing::warn!(
            soft,
            hard,
            wanted,
            "the open-files limit is below what --max-connections needs; lower --max-connections or raise LimitNOFILE"
        );
    }
}

/// The fixed answer to a connection over the cap.
struct Busy {
    head: String,
    body: String,
}

impl Busy {
    fn new() -> Busy {
        let body = serde_json::to_string(
            &ApiError::Unavailable {
                message: "the server is serving as many connections as it may (--max-connections); retry shortly".into(),
            }
            .body(),
        )
        .unwrap_or_default();
        let head = format!(
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nretry-after: 2\r\nconnection: close\r\n",
            body.len()
        );
        Busy { head, body }
    }

    /// The response bytes, with a request id of its own like every answer.
    fn answer(&self) -> Vec<u8> {
        format!(
            "{}x-request-id: {}\r\n\r\n{}",
            self.head,
            uuid::Uuid::new_v4(),
            self.body
        )
        .into_bytes()
    }
}

/// Writes the 503, shuts our side, and reads until the client closes: closing a socket with
/// unread input resets the connection, and a reset can destroy the answer before the client
/// reads it.
async fn reject(mut stream: TcpStream, answer: Vec<u8>) -> io::Result<()> {
    stream.write_all(&answer).await?;
    stream.shutdown().await?;
    let mut sink = [0u8; 4096];
    while stream.read(&mut sink).await? > 0 {}
    Ok(())
}

/// Middleware: the documented limits on the request target and the header section, answered
/// in the JSON error shape (hyper's own limits, higher, answer with an empty body).
pub async fn head_limits(req: Request, next: Next) -> Response {
    let uri = req.uri();
    let target = uri.path_and_query().map_or(0, |p| p.as_str().len())
        + uri.authority().map_or(0, |a| a.as_str().len());
    if target > MAX_URI_BYTES {
        return refuse(
            StatusCode::URI_TOO_LONG,
            "uri_too_long",
            format!(
                "the URL is longer than this server accepts ({MAX_URI_BYTES} bytes of path and query)"
            ),
        );
    }
    let headers = req.headers();
    let bytes: usize = headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    if headers.len() > MAX_HEADERS || bytes > MAX_HEADER_BYTES {
        return refuse(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "headers_too_large",
            format!(
                "the request headers are larger than this server accepts (at most {MAX_HEADERS} fields and {MAX_HEADER_BYTES} bytes)"
            ),
        );
    }
    next.run(req).await
}

fn refuse(status: StatusCode, code: &'static str, message: String) -> Response {
    let mut resp = ApiError::bad_request(code, message).into_response();
    *resp.status_mut() = status;
    resp
}
