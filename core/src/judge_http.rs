//! The model judge's round trip (feature `judge-http`; the server and the client both use it):
//! every request of one check is sent, at most [`CONCURRENCY`] at a time, and the whole round
//! ends by one deadline. A request without a usable answer by then fails with a [`Failure`]
//! that names neither the key nor memory text. The rest of the judge (building requests,
//! reading answers, applying verdicts) is pure and lives in [`crate::feedback_judge`].

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::HeaderMap;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::feedback_judge::{self as fj, Answer, Api, CONCURRENCY, MAX_RESPONSE_BYTES, ParseError};

/// Why a pair got no usable answer.
#[derive(Debug)]
pub enum Failure {
    Timeout,
    Connect,
    Status(u16),
    TooLarge,
    Answer(ParseError),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Timeout => f.write_str("no answer before the deadline"),
            Failure::Connect => f.write_str("could not reach it"),
            Failure::Status(s) => write!(f, "HTTP status {s}"),
            Failure::TooLarge => f.write_str("its answer was too large"),
            Failure::Answer(e) => write!(f, "unusable answer: {e}"),
        }
    }
}

/// Where and how to ask.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub http: reqwest::Client,
    pub api: Api,
    /// The full URL requests are posted to.
    pub url: String,
    /// Content type and, when set, the key.
    pub headers: HeaderMap,
}

/// Asks about every request body; answer `i` is about `bodies[i]`. Ends by `deadline` (plus a
/// scheduling margin, after which what is left is aborted).
async fn ask_all(
    endpoint: &Endpoint,
    bodies: Vec<serde_json::Value>,
    deadline: Instant,
) -> Vec<Result<Answer, Failure>> {
    let n = bodies.len();
    let permits = Arc::new(Semaphore::new(CONCURRENCY));
    let mut set = JoinSet::new();
    for (i, body) in bodies.into_iter().enumerate() {
        let endpoint = endpoint.clone();
        let permits = permits.clone();
        set.spawn(async move {
            let asked = async {
                let _permit = permits
                    .acquire_owned()
                    .await
                    .map_err(|_| Failure::Timeout)?;
                ask(&endpoint, &body).await
            };
            let r = tokio::time::timeout_at(deadline, asked)
                .await
                .unwrap_or(Err(Failure::Timeout));
            (i, r)
        });
    }
    let mut out: Vec<Result<Answer, Failure>> = (0..n).map(|_| Err(Failure::Timeout)).collect();
    // Every task ends by the deadline; the margin covers scheduling, then the rest is aborted.
    let _ = tokio::time::timeout_at(deadline + Duration::from_millis(50), async {
        while let Some(joined) = set.join_next().await {
            if let Ok((i, r)) = joined {
                out[i] = r;
            }
        }
    })
    .await;
    out
}

/// Asks about the bodies that `answers` has no answer for yet (answers kept from before) and
/// fills in what comes back by `deadline`. Returns how many were asked and why those that got
/// no usable answer did not.
pub async fn ask_unanswered(
    endpoint: &Endpoint,
    bodies: &[serde_json::Value],
    answers: &mut [Option<Answer>],
    deadline: Instant,
) -> (usize, Vec<Failure>) {
    let ask: Vec<usize> = (0..bodies.len())
        .filter(|&i| answers[i].is_none())
        .collect();
    if ask.is_empty() {
        return (0, Vec::new());
    }
    let to_ask = ask.iter().map(|&i| bodies[i].clone()).collect();
    let mut failed = Vec::new();
    for (&i, result) in ask.iter().zip(ask_all(endpoint, to_ask, deadline).await) {
        match result {
            Ok(answer) => answers[i] = Some(answer),
            Err(why) => failed.push(why),
        }
    }
    (ask.len(), failed)
}

async fn ask(endpoint: &Endpoint, body: &serde_json::Value) -> Result<Answer, Failure> {
    let bytes = serde_json::to_vec(body).map_err(|_| Failure::Connect)?;
    let failed = |e: reqwest::Error| {
        if e.is_timeout() {
            Failure::Timeout
        } else {
            Failure::Connect
        }
    };
    let mut resp = endpoint
        .http
        .post(&endpoint.url)
        .headers(endpoint.headers.clone())
        .body(bytes)
        .send()
        .await
        .map_err(failed)?;
    let status = resp.status();
    if !status.is_success() {
        return Err(Failure::Status(status.as_u16()));
    }
    let mut buf = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(failed)? {
        buf.extend_from_slice(&chunk);
        if buf.len() > MAX_RESPONSE_BYTES {
            return Err(Failure::TooLarge);
        }
    }
    fj::parse_response(endpoint.api, &buf).map_err(Failure::Answer)
}
