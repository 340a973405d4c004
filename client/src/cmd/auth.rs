//! `memsync init`, `login` (a token, or single sign-on with `--sso`), `logout`: where the
//! project is and who you are.

use std::io::{IsTerminal, Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use memsync::api::{ApiClient, ApiError};
use memsync::config::{self, Credentials, ProcessEnv, SsoLogin};
use memsync::sso::{self, OidcProvider};
use memsync_core::ProjectId;
use serde_json::json;

use super::{Fail, runtime, settings_at};
use crate::{Global, LoginArgs};

pub fn init(g: &Global, cwd: &Path, force: bool) -> Result<u8, Fail> {
    let repo = config::find_repo(cwd).ok_or_else(|| {
        Fail::env("not inside a git repository: run `memsync init` at the project's repository")
    })?;
    let path = repo.root.join(".memsync.toml");
    let existing = config::ProjectFile::load(&path).map_err(Fail::env)?;
    if existing.is_some() && !force {
        return Err(Fail::env(format!(
            "{} exists; pass --force to overwrite it",
            path.display()
        )));
    }
    let project = match &g.project {
        Some(p) => p
            .parse::<ProjectId>()
            .map_err(|e| Fail::env(format!("--project {p}: {e}")))?,
        None => config::origin_project(&repo).ok_or_else(|| {
            Fail::env(
                "cannot derive the project from the `origin` remote; pass --project team/name",
            )
        })?,
    };
    let server = match &g.server {
        Some(s) => Some(s.clone()),
        None => std::env::var("MEMSYNC_SERVER").ok().or_else(|| {
            Credentials::load(&ProcessEnv)
                .ok()
                .and_then(|c| c.default_server().map(str::to_owned))
        }),
    };
    let file = config::ProjectFile {
        server: server.clone(),
        project: Some(project.to_string()),
        private_dir: None,
        team_dir: None,
    };
    file.save(&path).map_err(Fail::env)?;
    if g.json {
        println!(
            "{}",
            json!({ "config": path, "project": project.as_str(), "server": server })
        );
    } else if !g.quiet {
        println!(
            "wrote {} (project {project}{})",
            path.display(),
            server.map(|s| format!(", server {s}")).unwrap_or_default()
        );
        println!(
            "commit it so the team shares it; then `memsync login` and `memsync install-hook`"
        );
    }
    Ok(0)
}

pub fn login(g: &Global, cwd: &Path) -> Result<u8, Fail> {
    let settings = settings_at(g, cwd)?;
    let server = settings
        .server
        .clone()
        .ok_or_else(|| Fail::env("which server? pass --server URL"))?;
    let token = match &g.token {
        Some(t) => t.clone(),
        None => {
            if std::io::stdin().is_terminal() {
                eprint!("paste the token for {server} and press Enter: ");
                let _ = std::io::stderr().flush();
            }
            let mut t = String::new();
            std::io::stdin()
                .take(64 * 1024)
                .read_to_string(&mut t)
                .map_err(|e| Fail::env(format!("reading the token from stdin: {e}")))?;
            t.trim().to_owned()
        }
    };
    if token.is_empty() {
        return Err(Fail::env(
            "no token given (pass --token or pipe it on stdin)",
        ));
    }
    let api = ApiClient::new(&server, &token, g.timeout).map_err(Fail::env)?;
    let me = runtime()?.block_on(api.whoami()).map_err(Fail::env)?;
    let mut creds = Credentials::load(&ProcessEnv).map_err(Fail::env)?;
    creds.set(&server, &token);
    let path = creds.save(&ProcessEnv).map_err(Fail::env)?;
    if g.json {
        println!(
            "{}",
            json!({ "server": server, "user": me.name, "teams": me.teams, "credentials": path })
        );
    } else if !g.quiet {
        let teams: Vec<&String> = me.teams.keys().collect();
        println!(
            "logged in to {server} as {} (teams: {teams:?}); token saved in {}",
            me.name,
            path.display()
        );
    }
    Ok(0)
}

pub fn logout(g: &Global, cwd: &Path) -> Result<u8, Fail> {
    let settings = settings_at(g, cwd)?;
    let server = settings
        .server
        .ok_or_else(|| Fail::env("which server? pass --server URL"))?;
    // Under the lock: a memsync renewing a single sign-on token must not write it back.
    let lock = Credentials::lock(&ProcessEnv, super::LOCK_WAIT).map_err(Fail::env)?;
    let mut creds = Credentials::load(&ProcessEnv).map_err(Fail::env)?;
    let removed = creds.remove(&server);
    creds.save(&ProcessEnv).map_err(Fail::env)?;
    drop(lock);
    if g.json {
        println!("{}", json!({ "server": server, "removed": removed }));
    } else if !g.quiet {
        println!(
            "{}",
            if removed {
                format!("forgot the token for {server}")
            } else {
                format!("no token stored for {server}")
            }
        );
    }
    Ok(0)
}

/// `memsync login --sso`: signs in with the identity provider the server trusts, checks the
/// token with the server, and stores it with what renews it.
pub fn login_sso(g: &Global, cwd: &Path, args: LoginArgs) -> Result<u8, Fail> {
    let settings = settings_at(g, cwd)?;
    let server = settings
        .server
        .clone()
        .ok_or_else(|| Fail::env("which server? pass --server URL"))?;
    let rt = runtime()?;
    let provider = choose_provider(g, &rt, &server, &args)?;
    let http = sso::http_client(&provider.issuer, g.timeout).map_err(Fail::env)?;
    let discovery = rt
        .block_on(sso::discover(&http, &provider.issuer))
        .map_err(Fail::env)?;
    let give_up_at = Instant::now() + args.wait;
    let signed = if args.browser {
        rt.block_on(browser_sign_in(
            &http, &discovery, &provider, give_up_at, args.wait,
        ))
    } else {
        rt.block_on(device_sign_in(&http, &discovery, &provider, give_up_at))
    }
    .map_err(|e| Fail::env(format!("signing in with {}: {e}", provider.issuer)))?;

    let api = ApiClient::new(&server, signed.id_token.expose(), g.timeout).map_err(Fail::env)?;
    let me = rt.block_on(api.whoami()).map_err(|e| match e {
        ApiError::Unauthenticated(m) => Fail::env(format!(
            "signed in with {}, but the server at {server} does not accept its token: {m} (its MEMSYNC_OIDC_ISSUERS and MEMSYNC_OIDC_AUDIENCE must name this issuer and client `{}`)",
            provider.issuer, provider.client_id
        )),
        e => Fail::env(e),
    })?;
    let login = SsoLogin {
        issuer: discovery.issuer.clone(),
        client_id: provider.client_id.clone(),
        token_endpoint: discovery.token_endpoint.clone(),
        refresh_token: signed.refresh_token.clone(),
        expires_at: signed.expires_at,
        refresh_expires_at: signed.refresh_expires_at,
        other: Default::default(),
    };
    // Under the lock: a memsync renewing the previous sign-in must not write over this one.
    let lock = Credentials::lock(&ProcessEnv, super::LOCK_WAIT).map_err(Fail::env)?;
    let mut creds = Credentials::load(&ProcessEnv).map_err(Fail::env)?;
    creds.set_sso(&server, signed.id_token.expose(), login.clone());
    let path = creds.save(&ProcessEnv).map_err(Fail::env)?;
    drop(lock);
    let renews = match (&login.refresh_token, login.refresh_expires_at) {
        (None, _) => format!(
            "the identity provider gave no refresh token: sign in again after {}",
            when(login.expires_at)
        ),
        (Some(_), Some(at)) => format!(
            "it renews by itself (the session lasts until {} at least; each renewal extends it as the identity provider allows)",
            when(at)
        ),
        (Some(_), None) => "it renews by itself".to_owned(),
    };
    if g.json {
        println!(
            "{}",
            json!({
                "server": server, "user": me.name, "teams": me.teams, "credentials": path,
                "sso": {
                    "issuer": login.issuer, "client_id": login.client_id,
                    "expires_at": login.expires_at, "refresh_expires_at": login.refresh_expires_at,
                    "refreshable": login.refresh_token.is_some(),
                },
            })
        );
    } else if !g.quiet {
        let teams: Vec<&String> = me.teams.keys().collect();
        println!(
            "logged in to {server} as {} (teams: {teams:?}) through {}; token saved in {}; {renews}",
            me.name,
            login.issuer,
            path.display(),
        );
    }
    if login.refresh_token.is_none() {
        eprintln!("memsync: {renews}");
    }
    Ok(0)
}

fn when(t: chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// The identity provider and client to sign in with: the flags, else what the server names.
fn choose_provider(
    g: &Global,
    rt: &tokio::runtime::Runtime,
    server: &str,
    args: &LoginArgs,
) -> Result<OidcProvider, Fail> {
    let default_scopes = || sso::DEFAULT_SCOPES.map(str::to_owned).to_vec();
    if let (Some(issuer), Some(client_id)) = (&args.issuer, &args.client_id) {
        return Ok(OidcProvider {
            issuer: issuer.trim_end_matches('/').to_owned(),
            client_id: client_id.clone(),
            scopes: default_scopes(),
        });
    }
    let api = ApiClient::new(server, "", g.timeout).map_err(Fail::env)?;
    let config = rt.block_on(api.auth_config()).map_err(|e| {
        if e.is_unknown_route() {
            Fail::env(format!(
                "the server at {server} does not say which identity provider it trusts (it is older than this client); pass --issuer URL and --client-id ID"
            ))
        } else {
            Fail::env(e)
        }
    })?;
    let listed = || {
        config
            .oidc
            .iter()
            .map(|p| p.issuer.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut provider = match (&args.issuer, config.oidc.as_slice()) {
        (_, []) => {
            return Err(Fail::env(format!(
                "the server at {server} has no single sign-on configured; log in with a token: `memsync login --server {server} --token TOKEN` (or ask its operator to set MEMSYNC_OIDC_ISSUERS)"
            )));
        }
        (Some(issuer), list) => list
            .iter()
            .find(|p| sso::same_issuer(&p.issuer, issuer))
            .cloned()
            .ok_or_else(|| {
                Fail::env(format!(
                    "the server at {server} does not trust {issuer}; it trusts {}",
                    listed()
                ))
            })?,
        (None, [only]) => only.clone(),
        (None, _) => {
            return Err(Fail::env(format!(
                "the server at {server} trusts several identity providers; pick one with --issuer: {}",
                listed()
            )));
        }
    };
    if let Some(c) = &args.client_id {
        provider.client_id = c.clone();
    }
    if provider.scopes.is_empty() {
        provider.scopes = default_scopes();
    }
    Ok(provider)
}

/// RFC 8628: the user approves a code in any browser while memsync polls.
async fn device_sign_in(
    http: &reqwest::Client,
    discovery: &sso::Discovery,
    provider: &OidcProvider,
    give_up_at: Instant,
) -> Result<sso::SignedIn, sso::SsoError> {
    let auth = sso::start_device(http, discovery, &provider.client_id, &provider.scopes).await?;
    eprintln!(
        "memsync: to sign in, open {} and enter the code {}",
        auth.verification_uri, auth.user_code
    );
    if let Some(complete) = &auth.verification_uri_complete {
        eprintln!("memsync: (or open {complete}, which fills in the code)");
    }
    eprintln!(
        "memsync: waiting for the sign-in (the code expires in {})...",
        humantime::format_duration(Duration::from_secs(auth.expires_in))
    );
    sso::poll_device(http, discovery, &provider.client_id, &auth, give_up_at).await
}

/// Authorization code with PKCE: this machine's browser signs in, and the identity provider
/// sends it back to a one-off server on a loopback port with the code.
async fn browser_sign_in(
    http: &reqwest::Client,
    discovery: &sso::Discovery,
    provider: &OidcProvider,
    give_up_at: Instant,
    wait: Duration,
) -> Result<sso::SignedIn, sso::SsoError> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| sso::SsoError::Failed(format!("cannot listen on a loopback port: {e}")))?;
    let port = listener
        .local_addr()
        .map_err(|e| sso::SsoError::Failed(format!("the loopback port: {e}")))?
        .port();
    let redirect_uri = format!("http://127.0.0.1:{port}{}", sso::CALLBACK_PATH);
    let pkce = sso::pkce();
    let state = sso::random_string(16);
    let nonce = sso::random_string(16);
    let url = sso::authorization_url(
        discovery,
        &provider.client_id,
        &redirect_uri,
        &provider.scopes,
        &state,
        &nonce,
        &pkce.challenge,
    )?;
    match open_browser(url.as_str()) {
        Some(program) => eprintln!(
            "memsync: opened the sign-in page with {program}; if no browser shows it, open this address:\n  {url}"
        ),
        None => eprintln!(
            "memsync: open this address in a browser on this machine to sign in:\n  {url}"
        ),
    }
    eprintln!(
        "memsync: waiting for the sign-in (at most {})...",
        humantime::format_duration(wait)
    );
    let code = sso::receive_code(listener, &state, give_up_at).await?;
    sso::exchange_code(
        http,
        discovery,
        &provider.client_id,
        &code,
        &redirect_uri,
        &pkce.verifier,
        &nonce,
    )
    .await
}

/// Opens `url` with `$BROWSER` (a `:`-separated list of commands, `%s` standing for the URL,
/// else it is the last argument), else `xdg-open` or `open` when one is on PATH. The program
/// started, if any; it is not waited for.
fn open_browser(url: &str) -> Option<String> {
    let from_env: Vec<Vec<String>> = std::env::var("BROWSER")
        .ok()
        .map(|b| {
            b.split(':')
                .map(|cmd| cmd.split_whitespace().map(str::to_owned).collect())
                .filter(|words: &Vec<String>| !words.is_empty())
                .collect()
        })
        .unwrap_or_default();
    let candidates = if from_env.is_empty() {
        ["xdg-open", "open"]
            .into_iter()
            .filter(|p| on_path(p))
            .map(|p| vec![p.to_owned()])
            .collect()
    } else {
        from_env
    };
    for words in candidates {
        let mut args: Vec<String> = words[1..].iter().map(|w| w.replace("%s", url)).collect();
        if !words.iter().any(|w| w.contains("%s")) {
            args.push(url.to_owned());
        }
        let spawned = std::process::Command::new(&words[0])
            .args(&args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        if let Ok(mut child) = spawned {
            // Reaped when it exits; memsync does not wait for it.
            std::thread::spawn(move || child.wait());
            return Some(words[0].clone());
        }
    }
    None
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| {
        std::env::split_paths(&p).any(|d| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(d.join(program))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}
