//! The model judge on this machine (see `memsync_core::feedback_judge`): `memsync check` and the
//! session-start hook can ask an OpenAI- or Anthropic-compatible endpoint that the user
//! configured about the private/team pairs the detector finds. Private memories go to that
//! endpoint only, never to the memsync server.
//!
//! Settings come from the environment (`MEMSYNC_FEEDBACK_JUDGE_*`), else from the user's own
//! `$XDG_CONFIG_HOME/memsync/config.toml` (`[feedback_judge]`), never from the repository's
//! `.memsync.toml`: a file committed by anyone must not be able to send private memories
//! somewhere. The key is read from the environment variable the settings name; memsync never
//! writes it to a file and never prints it.

use std::path::PathBuf;
use std::time::Duration;

use memsync_core::feedback::{Finding, Note};
use memsync_core::feedback_judge::{self as fj, Answer, Api, DEFAULT_TIMEOUT};
use memsync_core::judge_http;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use tokio::time::Instant;

use crate::config::Env;

pub const ENV_URL: &str = "MEMSYNC_FEEDBACK_JUDGE_URL";
pub const ENV_API: &str = "MEMSYNC_FEEDBACK_JUDGE_API";
pub const ENV_MODEL: &str = "MEMSYNC_FEEDBACK_JUDGE_MODEL";
pub const ENV_KEY_ENV: &str = "MEMSYNC_FEEDBACK_JUDGE_KEY_ENV";
pub const ENV_TIMEOUT_MS: &str = "MEMSYNC_FEEDBACK_JUDGE_TIMEOUT_MS";
/// Holds the key when no other variable is named.
pub const ENV_KEY: &str = "MEMSYNC_FEEDBACK_JUDGE_KEY";

/// A setting that is not valid, named with where it came from. Never holds the key.
#[derive(Debug, thiserror::Error)]
#[error("{setting} (from {origin}): {reason}")]
pub struct JudgeConfigError {
    pub setting: String,
    pub origin: String,
    pub reason: String,
}

/// `[feedback_judge]` of the user's config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileJudge {
    url: Option<String>,
    api: Option<String>,
    model: Option<String>,
    key_env: Option<String>,
    timeout_ms: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
struct UserFile {
    #[serde(default)]
    feedback_judge: Option<FileJudge>,
}

/// `$XDG_CONFIG_HOME/memsync/config.toml`, else `$HOME/.config/memsync/config.toml`.
pub fn user_config_path(env: &dyn Env) -> Option<PathBuf> {
    crate::config::Credentials::path(env).map(|p| p.with_file_name("config.toml"))
}

/// A judge configured on this machine.
pub struct Judge {
    /// Where requests go, built once: HTTP client, API, full URL, headers.
    endpoint: judge_http::Endpoint,
    url: String,
    model: String,
    timeout: Duration,
    /// Where its answers are kept for the next check ([`cache_path`]; `None`: not kept).
    cache: Option<PathBuf>,
}

impl std::fmt::Debug for Judge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Judge")
            .field("api", &self.endpoint.api)
            .field("url", &self.url)
            .field("model", &self.model)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

fn nonempty(v: Option<String>) -> Option<String> {
    v.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty())
}

/// The judge the environment and the user's config file describe (`None`: no URL, no judge).
pub fn resolve(env: &dyn Env) -> Result<Option<Judge>, JudgeConfigError> {
    let path = user_config_path(env);
    let file_origin = path
        .as_ref()
        .map_or_else(String::new, |p| format!("{} [feedback_judge]", p.display()));
    let file = match path.as_ref().map(std::fs::read_to_string) {
        Some(Ok(text)) => toml::from_str::<UserFile>(&text)
            .map_err(|e| JudgeConfigError {
                setting: "the user config file".into(),
                origin: file_origin.clone(),
                reason: format!("not valid: {}", e.message().trim()),
            })?
            .feedback_judge
            .unwrap_or_default(),
        _ => FileJudge::default(),
    };
    let pick =
        |var: &str, from_file: Option<String>, key: &str| -> Option<(String, String, String)> {
            match nonempty(env.var(var)) {
                Some(v) => Some((v, var.to_owned(), var.to_owned())),
                None => nonempty(from_file).map(|v| (v, format!("`{key}`"), file_origin.clone())),
            }
        };
    let Some((raw_url, url_setting, url_origin)) = pick(ENV_URL, file.url, "url") else {
        return Ok(None);
    };
    let err = |setting: &str, origin: &str, reason: &str| JudgeConfigError {
        setting: setting.to_owned(),
        origin: origin.to_owned(),
        reason: reason.to_owned(),
    };
    let url = fj::parse_url(&raw_url).map_err(|why| err(&url_setting, &url_origin, why))?;
    let api = match pick(ENV_API, file.api, "api") {
        Some((v, s, o)) => v.parse::<Api>().map_err(|why| err(&s, &o, why))?,
        None => Api::OpenAi,
    };
    let model = match pick(ENV_MODEL, file.model, "model") {
        Some((v, s, o)) => fj::parse_model(&v).map_err(|why| err(&s, &o, why))?,
        None => {
            return Err(err(
                ENV_MODEL,
                "the environment and the user config file",
                "not set; a judge URL needs the model to ask for, e.g. MEMSYNC_FEEDBACK_JUDGE_MODEL=gpt-4o-mini",
            ));
        }
    };
    let timeout = match nonempty(env.var(ENV_TIMEOUT_MS)) {
        Some(v) => {
            let ms = v.parse::<u64>().map_err(|_| {
                err(
                    ENV_TIMEOUT_MS,
                    ENV_TIMEOUT_MS,
                    "expected a whole number of milliseconds",
                )
            })?;
            fj::parse_timeout_ms(ms).map_err(|why| err(ENV_TIMEOUT_MS, ENV_TIMEOUT_MS, why))?
        }
        None => match file.timeout_ms {
            Some(ms) => {
                fj::parse_timeout_ms(ms).map_err(|why| err("`timeout_ms`", &file_origin, why))?
            }
            None => DEFAULT_TIMEOUT,
        },
    };
    let key = match pick(ENV_KEY_ENV, file.key_env, "key_env") {
        Some((name, s, o)) => {
            if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(err(
                    &s,
                    &o,
                    "must be the NAME of an environment variable (letters, digits, `_`), not the key",
                ));
            }
            match nonempty(env.var(&name)) {
                Some(k) => Some(k),
                None => {
                    return Err(err(
                        &s,
                        &o,
                        &format!("names {name}, which is not set in this environment"),
                    ));
                }
            }
        }
        None => nonempty(env.var(ENV_KEY)),
    };
    Judge::new(api, &url, model, key, timeout)
        .map(|j| Some(j.with_cache(cache_path(env))))
        .map_err(|why| err(&url_setting, &url_origin, &why))
}

/// The judge's answers kept for the next check, so that a session start asks only about pairs
/// it has not answered before: `$XDG_CACHE_HOME/memsync/feedback-judge.json`, else
/// `$HOME/.cache/memsync/feedback-judge.json`.
pub fn cache_path(env: &dyn Env) -> Option<PathBuf> {
    crate::config::xdg(env, "XDG_CACHE_HOME")
        .or_else(|| crate::config::home(env).map(|h| h.join(".cache")))
        .map(|d| d.join("memsync").join("feedback-judge.json"))
}

/// At most this many answers are kept, the most recently used first.
const CACHE_ENTRIES: usize = 5_000;
const CACHE_VERSION: u32 = 1;

/// One kept answer: the SHA-256 of what was asked (endpoint, API and the whole request, so a
/// change to either memory, the model, the detector's verdict or the question asks again), the
/// verdict and the judge's one-line reason.
#[derive(serde::Serialize, Deserialize)]
struct Kept {
    key: String,
    verdict: String,
    reason: String,
}

#[derive(serde::Serialize, Deserialize)]
struct KeptFile {
    version: u32,
    answers: Vec<Kept>,
}

/// The kept answers (no file, another version or a damaged file: none; it is only a cache).
fn load_kept(path: &std::path::Path) -> Vec<Kept> {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice::<KeptFile>(&b).ok())
        .filter(|f| f.version == CACHE_VERSION)
        .map(|f| f.answers)
        .unwrap_or_default()
}

/// Keeps this check's answers, then the older ones it did not use, up to [`CACHE_ENTRIES`]
/// (owner-only; a failure to write only costs the next check its questions).
fn keep(path: &std::path::Path, keys: &[String], answers: &[Option<Answer>], old: Vec<Kept>) {
    let mut seen = std::collections::HashSet::new();
    let mut out: Vec<Kept> = keys
        .iter()
        .zip(answers)
        .filter_map(|(key, a)| {
            let a = a.as_ref()?;
            seen.insert(key.clone()).then(|| Kept {
                key: key.clone(),
                verdict: a.verdict.as_str().to_owned(),
                reason: a.reason.clone(),
            })
        })
        .collect();
    if out.is_empty() {
        return;
    }
    out.extend(old.into_iter().filter(|k| !seen.contains(&k.key)));
    out.truncate(CACHE_ENTRIES);
    let file = KeptFile {
        version: CACHE_VERSION,
        answers: out,
    };
    let Ok(bytes) = serde_json::to_vec(&file) else {
        return;
    };
    if std::fs::read(path).is_ok_and(|b| b == bytes) {
        return;
    }
    let _ = crate::atomic::write(path, &bytes, Some(0o600), crate::atomic::Durability::Cache);
}

impl Judge {
    pub fn new(
        api: Api,
        url: &str,
        model: String,
        key: Option<String>,
        timeout: Duration,
    ) -> Result<Judge, String> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        for (name, value) in api.headers(key.as_deref()) {
            let mut v = HeaderValue::from_str(&value)
                .map_err(|_| "the key holds characters a header cannot carry".to_owned())?;
            v.set_sensitive(true);
            headers.insert(HeaderName::from_static(name), v);
        }
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = reqwest::Client::builder();
        if url.starts_with("http://") {
            // Nothing to verify: no certificate store is loaded.
            builder = builder.tls_certs_only([]);
        }
        let http = builder
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(timeout)
            .timeout(timeout)
            .user_agent(concat!("memsync/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(Judge {
            endpoint: judge_http::Endpoint {
                http,
                api,
                url: api.endpoint(url),
                headers,
            },
            url: url.to_owned(),
            model,
            timeout,
            cache: None,
        })
    }

    /// Keeps its answers in `path` for the next check (`None`: asks every time).
    pub fn with_cache(mut self, path: Option<PathBuf>) -> Judge {
        self.cache = path;
        self
    }

    fn key_of(&self, body: &serde_json::Value) -> String {
        fj::question_key(self.endpoint.api, &self.endpoint.url, body).to_hex()
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The findings after the judge, asked about every pair at once (at most [`CONCURRENCY`](fj::CONCURRENCY) at
    /// a time) within `min(timeout, limit)`; `texts(path, is_a)` gives a pair's texts. The
    /// `String` is one line to tell the user when some pairs got no usable answer. Blocking: runs
    /// its own small runtime, so call it outside any other runtime's `block_on`.
    pub fn judge_blocking(
        &self,
        findings: Vec<Finding>,
        texts: impl Fn(&Finding) -> (String, String),
        limit: Duration,
    ) -> (Vec<Finding>, Option<String>) {
        if findings.is_empty() {
            return (findings, None);
        }
        let budget = self.timeout.min(limit);
        let rt = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => return (findings, Some(format!("cannot start its runtime: {e}"))),
        };
        let bodies: Vec<serde_json::Value> = findings
            .iter()
            .map(|f| {
                let (a, b) = texts(f);
                fj::request_body(
                    self.endpoint.api,
                    &self.model,
                    &Note {
                        path: &f.a,
                        text: &a,
                    },
                    &Note {
                        path: &f.b,
                        text: &b,
                    },
                    f,
                )
            })
            .collect();
        // Pairs answered before (the very same request) are not asked again.
        let keys: Vec<String> = bodies.iter().map(|b| self.key_of(b)).collect();
        let kept = self.cache.as_deref().map(load_kept).unwrap_or_default();
        let known: std::collections::HashMap<&str, Answer> = kept
            .iter()
            .filter_map(|k| {
                Some((
                    k.key.as_str(),
                    Answer {
                        verdict: fj::Verdict::parse(&k.verdict)?,
                        reason: k.reason.clone(),
                    },
                ))
            })
            .collect();
        let mut answers: Vec<Option<Answer>> = keys
            .iter()
            .map(|k| known.get(k.as_str()).cloned())
            .collect();
        let (asked, failed) = rt.block_on(judge_http::ask_unanswered(
            &self.endpoint,
            &bodies,
            &mut answers,
            Instant::now() + budget,
        ));
        let note = failed.first().map(|first| {
            format!(
                "the feedback judge at {} was unavailable for {} of {asked} pair(s) ({first}); the detector's verdict stands for those",
                self.url,
                failed.len(),
            )
        });
        if let Some(path) = &self.cache {
            keep(path, &keys, &answers, kept);
        }
        (fj::apply(findings, &answers, &self.model), note)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k: &str| map.get(k).cloned()
    }

    #[test]
    fn kept_answers_put_this_checks_first_and_stay_bounded() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("memsync").join("feedback-judge.json");
        let answer = |v: fj::Verdict| {
            Some(Answer {
                verdict: v,
                reason: format!("says {}", v.as_str()),
            })
        };
        let old: Vec<Kept> = (0..CACHE_ENTRIES)
            .map(|i| Kept {
                key: format!("old{i}"),
                verdict: "compatible".into(),
                reason: "r".into(),
            })
            .collect();
        // Two answers and a failure: the answers lead, the failure is not kept, the oldest go.
        let keys = ["a".to_owned(), "old7".to_owned(), "c".to_owned()];
        let answers = [
            answer(fj::Verdict::Contradiction),
            answer(fj::Verdict::Unrelated),
            None,
        ];
        keep(&path, &keys, &answers, old);
        let kept = load_kept(&path);
        assert_eq!(kept.len(), CACHE_ENTRIES);
        assert_eq!(
            (kept[0].key.as_str(), kept[0].verdict.as_str()),
            ("a", "contradiction")
        );
        assert_eq!(
            (kept[1].key.as_str(), kept[1].verdict.as_str()),
            ("old7", "unrelated")
        );
        assert_eq!(kept.iter().filter(|k| k.key == "old7").count(), 1);
        assert!(kept.iter().all(|k| k.key != "c"));
        assert_eq!(kept[2].key, "old0");
        assert_eq!(
            kept.last().unwrap().key,
            format!("old{}", CACHE_ENTRIES - 2)
        );
        // Another version of the file is not read.
        std::fs::write(&path, r#"{"version":0,"answers":[]}"#).unwrap();
        assert!(load_kept(&path).is_empty());
    }

    #[test]
    fn settings_come_from_the_environment_then_the_user_file() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().to_str().unwrap().to_owned();
        assert!(resolve(&env_of(&[("HOME", &home)])).unwrap().is_none());
        let j = resolve(&env_of(&[
            ("HOME", &home),
            (ENV_URL, "http://127.0.0.1:9/v1/"),
            (ENV_MODEL, "m"),
            (ENV_API, "anthropic"),
            (ENV_KEY_ENV, "MY_KEY"),
            ("MY_KEY", "sk-secret-1"),
            (ENV_TIMEOUT_MS, "1500"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(j.url(), "http://127.0.0.1:9/v1");
        assert_eq!(j.endpoint.url, "http://127.0.0.1:9/v1/messages");
        assert_eq!(j.timeout(), Duration::from_millis(1500));
        assert!(!format!("{j:?}").contains("sk-secret-1"));

        let dir = tmp.path().join(".config/memsync");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("config.toml"),
            "[feedback_judge]\nurl = \"https://llm.example/v1\"\nmodel = \"file-model\"\ntimeout_ms = 800\n",
        )
        .unwrap();
        let j = resolve(&env_of(&[("HOME", &home)])).unwrap().unwrap();
        assert_eq!(
            (j.url(), j.model()),
            ("https://llm.example/v1", "file-model")
        );
        assert_eq!(j.timeout(), Duration::from_millis(800));
        // The environment wins, setting by setting.
        let j = resolve(&env_of(&[("HOME", &home), (ENV_MODEL, "env-model")]))
            .unwrap()
            .unwrap();
        assert_eq!(
            (j.url(), j.model()),
            ("https://llm.example/v1", "env-model")
        );
    }

    #[test]
    fn bad_settings_name_themselves_and_never_the_key() {
        let cases: [(&[(&str, &str)], &str); 6] = [
            (&[(ENV_URL, "ftp://x"), (ENV_MODEL, "m")], ENV_URL),
            (&[(ENV_URL, "http://x")], ENV_MODEL),
            (
                &[(ENV_URL, "http://x"), (ENV_MODEL, "m"), (ENV_API, "gemini")],
                ENV_API,
            ),
            (
                &[
                    (ENV_URL, "http://x"),
                    (ENV_MODEL, "m"),
                    (ENV_TIMEOUT_MS, "soon"),
                ],
                ENV_TIMEOUT_MS,
            ),
            (
                &[
                    (ENV_URL, "http://x"),
                    (ENV_MODEL, "m"),
                    (ENV_KEY_ENV, "NOPE_UNSET"),
                ],
                "NOPE_UNSET",
            ),
            (
                &[
                    (ENV_URL, "http://x"),
                    (ENV_MODEL, "m"),
                    (ENV_KEY_ENV, "sk-live-123"),
                ],
                ENV_KEY_ENV,
            ),
        ];
        for (vars, named) in cases {
            let mut all = vars.to_vec();
            all.push(("HOME", "/nonexistent-memsync-home"));
            let e = resolve(&env_of(&all)).unwrap_err().to_string();
            assert!(e.contains(named), "{e}");
            assert!(!e.contains("sk-live-123"), "{e}");
        }
    }
}
