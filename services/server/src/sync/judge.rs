//! The model judge on the server (`--feedback-judge-url`, see `memsync_core::feedback_judge`):
//! the detector's candidate pairs of one check are sent to the operator's endpoint, at most
//! [`CONCURRENCY`](fj::CONCURRENCY) at a time, and the whole judging step ends by its deadline. A pair without a
//! usable answer by then (timeout, connection error, a status other than 2xx, an answer that
//! does not parse) keeps the detector's verdict, and one warning is logged for the step: never
//! the key, never memory text.
//!
//! The judge is installed once per process at start-up ([`install`]), like the extra scanner
//! rules, and read by every feedback check ([`get`]).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use memsync_core::feedback::{Finding, Note};
use memsync_core::feedback_judge::{self as fj, Answer, Api};
use memsync_core::judge_http;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use tokio::time::Instant;

/// The environment variable that may hold the key (never a flag, never the file).
pub const KEY_ENV: &str = "MEMSYNC_FEEDBACK_JUDGE_KEY";

/// The judge's settings as given (flags, environment, file); checked by [`JudgeArgs::build`].
#[derive(Debug, Clone, Default)]
pub struct JudgeArgs {
    pub url: Option<String>,
    pub api: String,
    pub model: Option<String>,
    /// The name of the environment variable holding the key.
    pub key_env: Option<String>,
    pub timeout_ms: u64,
}

fn set(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

impl JudgeArgs {
    /// The judge these settings describe (`None`: no URL, no judge), or what is wrong, naming
    /// the setting. Reads the key from the environment.
    pub fn build(&self) -> Result<Option<FeedbackJudge>, String> {
        let Some(raw_url) = set(&self.url) else {
            if set(&self.model).is_some() || set(&self.key_env).is_some() {
                return Err("--feedback-judge-model or --feedback-judge-key-env is set but --feedback-judge-url (MEMSYNC_FEEDBACK_JUDGE_URL) is not; give the endpoint's base URL, or unset them".into());
            }
            return Ok(None);
        };
        let url = fj::parse_url(raw_url).map_err(|why| {
            format!("--feedback-judge-url (MEMSYNC_FEEDBACK_JUDGE_URL) is not a valid URL: {why}")
        })?;
        let api: Api = self.api.parse().map_err(|why| {
            format!(
                "--feedback-judge-api (MEMSYNC_FEEDBACK_JUDGE_API) `{}`: {why}",
                fj::one_line(&self.api, 40)
            )
        })?;
        let model = fj::parse_model(set(&self.model).unwrap_or_default()).map_err(|why| {
            format!("--feedback-judge-model (MEMSYNC_FEEDBACK_JUDGE_MODEL), needed with --feedback-judge-url: {why}")
        })?;
        let timeout = fj::parse_timeout_ms(self.timeout_ms).map_err(|why| {
            format!("--feedback-judge-timeout-ms (MEMSYNC_FEEDBACK_JUDGE_TIMEOUT_MS): {why}")
        })?;
        let key = match set(&self.key_env) {
            Some(name) => {
                if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    return Err("--feedback-judge-key-env (MEMSYNC_FEEDBACK_JUDGE_KEY_ENV) must be the NAME of an environment variable (letters, digits, `_`), not the key".into());
                }
                match std::env::var(name) {
                    Ok(k) if !k.trim().is_empty() => Some(k),
                    _ => {
                        return Err(format!(
                            "--feedback-judge-key-env (MEMSYNC_FEEDBACK_JUDGE_KEY_ENV) names {name}, which is not set in the server's environment"
                        ));
                    }
                }
            }
            None => std::env::var(KEY_ENV).ok().filter(|k| !k.trim().is_empty()),
        };
        FeedbackJudge::new(api, &url, model, key, timeout).map(Some)
    }
}

/// A configured judge: where it is, what it speaks, its deadline.
pub struct FeedbackJudge {
    /// Where requests go, built once: HTTP client, API, full URL, headers.
    endpoint: judge_http::Endpoint,
    url: String,
    model: String,
    timeout: Duration,
    /// Answers already given, by [`fj::question_key`] (with the order they were last used in),
    /// so that the same question (a proposal viewed again, a push retried) is not asked twice.
    kept: Mutex<Kept>,
}

/// At most this many answers are kept per process; when full, the least recently used half goes.
const KEPT_ANSWERS: usize = 10_000;

#[derive(Default)]
struct Kept {
    answers: HashMap<memsync_core::Sha256, (Answer, u64)>,
    clock: u64,
}

impl Kept {
    fn get(&mut self, key: &memsync_core::Sha256) -> Option<Answer> {
        self.clock += 1;
        let now = self.clock;
        self.answers.get_mut(key).map(|(a, used)| {
            *used = now;
            a.clone()
        })
    }

    fn put(&mut self, key: memsync_core::Sha256, answer: Answer) {
        if self.answers.len() >= KEPT_ANSWERS && !self.answers.contains_key(&key) {
            let mut uses: Vec<u64> = self.answers.values().map(|(_, u)| *u).collect();
            uses.sort_unstable();
            let cut = uses[uses.len() / 2];
            self.answers.retain(|_, (_, u)| *u > cut);
        }
        self.clock += 1;
        self.answers.insert(key, (answer, self.clock));
    }
}

impl std::fmt::Debug for FeedbackJudge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FeedbackJudge")
            .field("api", &self.endpoint.api)
            .field("url", &self.url)
            .field("model", &self.model)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl FeedbackJudge {
    pub fn new(
        api: Api,
        url: &str,
        model: String,
        key: Option<String>,
        timeout: Duration,
    ) -> Result<FeedbackJudge, String> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        for (name, value) in api.headers(key.as_deref()) {
            let mut v = HeaderValue::from_str(&value).map_err(|_| {
                "the feedback judge's key holds characters a header cannot carry".to_owned()
            })?;
            v.set_sensitive(true);
            headers.insert(HeaderName::from_static(name), v);
        }
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(timeout)
            .timeout(timeout)
            .user_agent(concat!("memsync-server/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot build the feedback judge's HTTP client: {e}"))?;
        Ok(FeedbackJudge {
            endpoint: judge_http::Endpoint {
                http,
                api,
                url: api.endpoint(url),
                headers,
            },
            url: url.to_owned(),
            model,
            timeout,
            kept: Mutex::default(),
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn api(&self) -> Api {
        self.endpoint.api
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The judge's answer about each pair (`None` where it gave none by the deadline); `what`
    /// names the check in the warning. Pairs are `(finding, a's text, b's text)`.
    pub async fn answers(
        &self,
        pairs: &[(&Finding, &str, &str)],
        what: &str,
    ) -> Vec<Option<Answer>> {
        if pairs.is_empty() {
            return Vec::new();
        }
        let bodies: Vec<serde_json::Value> = pairs
            .iter()
            .map(|(f, a, b)| {
                fj::request_body(
                    self.endpoint.api,
                    &self.model,
                    &Note {
                        path: &f.a,
                        text: a,
                    },
                    &Note {
                        path: &f.b,
                        text: b,
                    },
                    f,
                )
            })
            .collect();
        // The same question asked before (the same texts, model and verdict) is not asked again.
        let keys: Vec<memsync_core::Sha256> = bodies
            .iter()
            .map(|b| fj::question_key(self.endpoint.api, &self.endpoint.url, b))
            .collect();
        let mut answers: Vec<Option<Answer>> = {
            let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
            keys.iter().map(|k| kept.get(k)).collect()
        };
        let was_kept: Vec<bool> = answers.iter().map(Option::is_some).collect();
        let started = Instant::now();
        let (asked, failed) = judge_http::ask_unanswered(
            &self.endpoint,
            &bodies,
            &mut answers,
            started + self.timeout,
        )
        .await;
        if let Some(first) = failed.first() {
            tracing::warn!(
                check = what,
                judge = %self.url,
                failed = failed.len(),
                pairs = asked,
                elapsed_ms = started.elapsed().as_millis() as u64,
                reason = %first,
                "feedback judge unavailable for some pairs; the detector's verdict stands for those"
            );
        }
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        for ((key, answer), was_kept) in keys.iter().zip(&answers).zip(was_kept) {
            if let (Some(answer), false) = (answer, was_kept) {
                kept.put(*key, answer.clone());
            }
        }
        answers
    }
}

static JUDGE: OnceLock<Option<FeedbackJudge>> = OnceLock::new();

/// Installs the process's judge (once, at start-up; later calls change nothing).
pub fn install(judge: Option<FeedbackJudge>) {
    if let Some(j) = &judge {
        tracing::info!(
            judge = %j.url,
            api = %j.endpoint.api,
            model = %j.model,
            timeout_ms = j.timeout.as_millis() as u64,
            "feedback judge configured"
        );
    }
    let _ = JUDGE.set(judge);
}

/// The process's judge, if one is configured.
pub fn get() -> Option<&'static FeedbackJudge> {
    JUDGE.get().and_then(Option::as_ref)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_answers_drop_the_least_recently_used_half_when_full() {
        let key = |i: usize| memsync_core::Sha256::of(&i.to_le_bytes());
        let answer = |i: usize| Answer {
            verdict: fj::Verdict::Compatible,
            reason: format!("r{i}"),
        };
        let mut kept = Kept::default();
        for i in 0..KEPT_ANSWERS {
            kept.put(key(i), answer(i));
        }
        // Reading the first one makes it recent.
        assert_eq!(kept.get(&key(0)).unwrap().reason, "r0");
        kept.put(key(KEPT_ANSWERS), answer(KEPT_ANSWERS));
        assert!(kept.answers.len() <= KEPT_ANSWERS / 2 + 2);
        assert!(
            kept.get(&key(0)).is_some(),
            "the recently read answer stays"
        );
        assert!(
            kept.get(&key(KEPT_ANSWERS)).is_some(),
            "the new answer is in"
        );
        assert!(kept.get(&key(1)).is_none(), "the least recently used went");
        assert!(kept.get(&key(KEPT_ANSWERS - 1)).is_some());
    }
}
