//! `memsync-server token --server URL …`: the token commands over a running server's admin API,
//! for an operator who is not on the server's disk. The server-admin token comes from
//! `MEMSYNC_ADMIN_TOKEN` (never a flag, so it stays out of shell history and `ps`).

use std::time::Duration;

use anyhow::{Context, bail};
use memsync_core::text::Text;
use memsync_core::wire::{ErrorBody, TokenIssue, TokenIssued};
use reqwest::{Method, StatusCode, Url};
use serde_json::Value;

use crate::config::{IssueArgs, TokenCommand};

const ADMIN_TOKEN_VAR: &str = "MEMSYNC_ADMIN_TOKEN";

struct Remote {
    http: reqwest::Client,
    base: Url,
    token: String,
}

impl Remote {
    fn new(server: &str) -> anyhow::Result<Remote> {
        let base = Url::parse(server)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
            .with_context(|| {
                format!("--server {server}: give the server's base URL, e.g. http://127.0.0.1:7878")
            })?;
        let token = std::env::var(ADMIN_TOKEN_VAR)
            .ok()
            .filter(|t| !t.trim().is_empty())
            .with_context(|| {
                format!(
                    "--server needs a server-admin token in {ADMIN_TOKEN_VAR} \
                     (issue one on the server's host with `memsync-server token issue --user NAME --admin`)"
                )
            })?;
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .context("building the HTTP client")?;
        Ok(Remote {
            http,
            base,
            token: token.trim().to_owned(),
        })
    }

    fn url(&self, segments: &[&str]) -> anyhow::Result<Url> {
        let mut url = self.base.clone();
        url.path_segments_mut()
            .map_err(|()| anyhow::anyhow!("{} cannot be a base URL", self.base))?
            .pop_if_empty()
            .extend(segments);
        Ok(url)
    }

    async fn call(
        &self,
        method: Method,
        segments: &[&str],
        body: Option<&TokenIssue>,
    ) -> anyhow::Result<(StatusCode, Value)> {
        let url = self.url(segments)?;
        let mut req = self
            .http
            .request(method, url.clone())
            .bearer_auth(&self.token);
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = req
            .send()
            .await
            .with_context(|| format!("cannot reach the memsync server at {}", self.base))?;
        let status = resp.status();
        let text = resp.text().await.unwrap_or_default();
        if status.is_success() {
            let v = if text.is_empty() {
                Value::Null
            } else {
                serde_json::from_str(&text).with_context(|| format!("{url} did not answer JSON"))?
            };
            return Ok((status, v));
        }
        let why = serde_json::from_str::<ErrorBody>(&text)
            .map(|e| format!("{} ({})", e.error.message, e.error.code))
            .unwrap_or_else(|_| format!("HTTP {status}"));
        let hint = match status {
            StatusCode::UNAUTHORIZED => {
                format!("; check {ADMIN_TOKEN_VAR} (a valid token issued by this server)")
            }
            StatusCode::FORBIDDEN => format!("; {ADMIN_TOKEN_VAR} must be a server-admin token"),
            _ => String::new(),
        };
        bail!("the server refused: {why}{hint}")
    }
}

pub async fn token(server: &str, cmd: TokenCommand) -> anyhow::Result<()> {
    let remote = Remote::new(server)?;
    match cmd {
        TokenCommand::Issue(args) => {
            let req = issue_request(args)?;
            let (_, v) = remote
                .call(Method::POST, &["v1", "admin", "tokens"], Some(&req))
                .await?;
            let issued: TokenIssued =
                serde_json::from_value(v).context("the server's answer is not a token")?;
            eprintln!(
                "memsync-server: issued token {} for {} through {server}",
                issued.jti, req.user
            );
            println!("{}", issued.token);
        }
        TokenCommand::List { all, json } => {
            let (_, v) = remote
                .call(Method::GET, &["v1", "admin", "tokens"], None)
                .await?;
            let tokens: Vec<crate::store::tokens::TokenRecord> =
                serde_json::from_value(v["tokens"].clone())
                    .context("the server's answer is not a token list")?;
            print_tokens(tokens, all, json)?;
        }
        TokenCommand::Revoke { jti } => {
            remote
                .call(Method::DELETE, &["v1", "admin", "tokens", &jti], None)
                .await?;
            eprintln!("memsync-server: revoked token {jti} through {server}");
        }
    }
    Ok(())
}

fn issue_request(args: IssueArgs) -> anyhow::Result<TokenIssue> {
    let secs = args.ttl.as_secs();
    if secs == 0 || !secs.is_multiple_of(86_400) {
        bail!("over the admin API, --ttl is a whole number of days, e.g. 90d");
    }
    let ttl_days = u32::try_from(secs / 86_400).unwrap_or(u32::MAX);
    Ok(TokenIssue {
        user: Text::new(args.user).context("--user")?,
        email: args.email.map(Text::new).transpose().context("--email")?,
        teams: memsync_core::wire::parse_team_grants(&args.teams).map_err(anyhow::Error::msg)?,
        admin: args.admin,
        ttl_days: Some(ttl_days),
        scopes: args
            .scopes
            .iter()
            .map(|s| s.parse())
            .collect::<Result<Vec<_>, String>>()
            .map_err(|e| anyhow::anyhow!("--scope {e}"))?,
        projects: args.projects,
        rate: args
            .rate
            .as_deref()
            .map(str::parse)
            .transpose()
            .map_err(|e| anyhow::anyhow!("--rate {e}"))?,
    })
}

/// Prints tokens as `token list` does; without `all`, only the active ones.
pub fn print_tokens(
    tokens: Vec<crate::store::tokens::TokenRecord>,
    all: bool,
    json: bool,
) -> anyhow::Result<()> {
    let now = chrono::Utc::now();
    let tokens: Vec<crate::store::tokens::TokenRecord> = tokens
        .into_iter()
        .filter(|t| all || (t.revoked_at.is_none() && t.expires_at > now))
        .collect();
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "tokens": tokens }))?
        );
    } else if tokens.is_empty() {
        println!("no tokens");
    } else {
        for t in tokens {
            let state = if t.revoked_at.is_some() {
                "revoked"
            } else if t.expires_at < now {
                "expired"
            } else {
                "active"
            };
            println!(
                "{}  {:8} {:20} teams={} admin={} expires={}",
                t.jti,
                state,
                t.sub,
                t.teams,
                t.admin,
                t.expires_at.format("%Y-%m-%d")
            );
        }
    }
    Ok(())
}
