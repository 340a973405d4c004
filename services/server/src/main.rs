//! `memsync-server`: serve, migrate, and token administration.

mod admin;
mod auth;
mod config;
mod db;
mod error;
mod export;
mod guard;
mod http;
mod store;
mod sync;
mod telemetry;

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Parser;
use memsync_core::project::valid_segment;
use memsync_core::wire::TeamRole;
use uuid::Uuid;

use crate::auth::{Claims, Keys, Revocations};
use crate::config::{Cli, Command, Config, ExportCommand, TokenCommand};
use crate::db::Database;

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    telemetry::init(&cli.global.log_format);
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("memsync-server: cannot start the async runtime: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    match rt.block_on(run(cli)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = format!("{e:#}"), "memsync-server failed");
            eprintln!("memsync-server: {e:#}");
            std::process::ExitCode::from(1)
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let cfg = Config::from_args(&cli.global);
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => serve(cfg).await,
        Command::Migrate => {
            let db = Database::open(&cfg).await?;
            let r = db.migrate().await;
            db.close().await;
            r?;
            eprintln!("memsync-server: migrations applied");
            Ok(())
        }
        Command::Token(cmd) => token(cfg, cmd).await,
        Command::Export(cmd) => export_cmd(cfg, cmd).await,
    }
}

fn keys(cfg: &Config) -> anyhow::Result<Keys> {
    let secret =
        auth::load_or_create_secret(cfg.jwt_secret.as_ref().map(|s| s.expose()), &cfg.data_dir)?;
    Keys::hs256(&secret, &cfg.jwt_issuer, &cfg.jwt_audience)
}

async fn serve(cfg: Config) -> anyhow::Result<()> {
    cfg.export.validate()?;
    let keys = Arc::new(keys(&cfg)?);
    let db = Database::open(&cfg).await?;
    if let Err(e) = db.migrate().await {
        db.close().await;
        return Err(e);
    }
    let revocations = Revocations::default();
    revocations.reload(&db.pool).await?;
    revocations.spawn_watcher(db.pool.clone());
    spawn_housekeeping(db.pool.clone());
    let state = http::AppState {
        pool: db.pool.clone(),
        keys,
        revocations,
        limits: sync::SyncLimits {
            file: sync::validate::Limits {
                max_file_bytes: cfg.max_file_bytes,
                max_changes_per_push: cfg.max_changes_per_push,
            },
            max_files_per_project: cfg.max_files_per_project,
        },
        metrics: Arc::default(),
        max_body_bytes: cfg.max_body_bytes,
    };
    let app = http::router(state, cfg.request_timeout);
    let listener = match http::serve::bind(cfg.listen) {
        Ok(l) => l,
        Err(e) => {
            db.close().await;
            bail!("cannot listen on {}: {e}", cfg.listen);
        }
    };
    let addr = listener.local_addr()?;
    tracing::info!(%addr, embedded_postgres = db.embedded.is_some(), "memsync-server listening");
    // Tests and scripts read this line to learn the port when listening on port 0.
    println!("memsync-server listening on http://{addr}");
    let _ = std::io::stdout().flush();
    if let Err(e) = export::start(db.pool.clone(), cfg.export.clone()) {
        db.close().await;
        return Err(e.context("starting the git export"));
    }
    // On SIGTERM/SIGINT: stop accepting, let requests in flight finish, but not for ever.
    let (stopping_tx, stopping_rx) = tokio::sync::oneshot::channel::<()>();
    let serve = http::serve::serve(listener, app, cfg.connections, async move {
        shutdown_signal().await;
        tracing::info!("shutdown requested; finishing requests in flight");
        let _ = stopping_tx.send(());
    });
    let deadline = async move {
        if stopping_rx.await.is_ok() {
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } else {
            std::future::pending::<()>().await;
        }
    };
    let served = tokio::select! {
        r = serve => r,
        () = deadline => {
            tracing::warn!(grace = ?SHUTDOWN_GRACE, "requests still in flight after the grace period; stopping anyway");
            Ok(())
        }
    };
    tracing::info!("shutting down");
    db.close().await;
    served.context("serving HTTP")
}

const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(20);

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}

/// Expires old idempotency keys once an hour.
fn spawn_housekeeping(pool: sqlx::PgPool) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(3600));
        loop {
            tick.tick().await;
            match store::idempotency::expire(&pool, 7).await {
                Ok(n) if n > 0 => tracing::info!(expired = n, "expired idempotency keys"),
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "expiring idempotency keys failed"),
            }
        }
    });
}

async fn export_cmd(cfg: Config, cmd: ExportCommand) -> anyhow::Result<()> {
    let ExportCommand::Rebuild { projects } = cmd;
    let projects = projects
        .iter()
        .map(|p| {
            p.parse::<memsync_core::ProjectId>()
                .with_context(|| format!("--project {p}"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let db = Database::open(&cfg).await?;
    let result = async {
        if let Err(reason) = db::ready(&db.pool).await {
            bail!("{reason}; run `memsync-server migrate` first");
        }
        export::rebuild(&db.pool, cfg.export.clone(), projects).await
    }
    .await;
    db.close().await;
    result
}

fn parse_teams(specs: &[String]) -> anyhow::Result<BTreeMap<String, TeamRole>> {
    let mut teams = BTreeMap::new();
    for spec in specs {
        let (team, role) = match spec.split_once(':') {
            None => (spec.as_str(), TeamRole::Member),
            Some((t, "admin")) => (t, TeamRole::Admin),
            Some((t, "member")) => (t, TeamRole::Member),
            Some((_, other)) => {
                bail!("unknown role `{other}` in --team {spec}: use TEAM or TEAM:admin")
            }
        };
        if !valid_segment(team) {
            bail!(
                "`{team}` is not a valid team name: use lowercase letters, digits, `.`, `_` or `-`"
            );
        }
        let e = teams.entry(team.to_owned()).or_insert(role);
        *e = (*e).max(role);
    }
    Ok(teams)
}

async fn token(cfg: Config, cmd: TokenCommand) -> anyhow::Result<()> {
    let keys = keys(&cfg)?;
    let db = Database::open(&cfg).await?;
    let result = async {
        // A fresh database gets its schema; an existing one is never upgraded behind the back of
        // the servers running on it.
        if let Err(reason) = db::ready(&db.pool).await {
            if db::is_fresh(&db.pool).await? {
                db.migrate().await?;
            } else {
                bail!("{reason}; run `memsync-server migrate` first");
            }
        }
        let operator = std::env::var("USER").unwrap_or_else(|_| "cli".into());
        match cmd {
            TokenCommand::Issue(args) => {
                if args.user.trim().is_empty() || args.user.len() > 200 {
                    bail!("--user must be 1-200 characters");
                }
                let teams = parse_teams(&args.teams)?;
                if teams.is_empty() && !args.admin {
                    bail!("a token needs at least one --team TEAM (or --admin), or it can reach nothing");
                }
                let now = chrono::Utc::now().timestamp();
                let ttl = i64::try_from(args.ttl.as_secs()).unwrap_or(i64::MAX / 2);
                if ttl <= 0 {
                    bail!("--ttl must be positive, e.g. 90d");
                }
                let claims = Claims {
                    sub: args.user.clone(),
                    name: args.user,
                    email: args.email,
                    teams,
                    admin: args.admin,
                    jti: Uuid::new_v4(),
                    iat: now,
                    exp: now.saturating_add(ttl),
                    iss: keys.issuer.clone(),
                    aud: keys.audience.clone(),
                };
                let token = keys.sign(&claims)?;
                store::tokens::insert(&db.pool, &claims, &format!("cli:{operator}")).await?;
                store::audit::record(
                    &db.pool,
                    &store::audit::AuditEvent {
                        team: None,
                        project: None,
                        actor_sub: &format!("cli:{operator}"),
                        actor_name: None,
                        action: "token_issue",
                        path: None,
                        revision: None,
                        request_id: None,
                        details: serde_json::json!({ "jti": claims.jti, "sub": claims.sub, "teams": claims.teams, "admin": claims.admin, "exp": claims.exp }),
                    },
                )
                .await?;
                eprintln!("memsync-server: issued token {} for {}", claims.jti, claims.sub);
                println!("{token}");
            }
            TokenCommand::List { all, json } => {
                let tokens = store::tokens::list(&db.pool, all).await?;
                if json {
                    println!("{}", serde_json::to_string_pretty(&serde_json::json!({ "tokens": tokens }))?);
                } else if tokens.is_empty() {
                    println!("no tokens");
                } else {
                    for t in tokens {
                        let state = if t.revoked_at.is_some() {
                            "revoked"
                        } else if t.expires_at < chrono::Utc::now() {
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
            }
            TokenCommand::Revoke { jti } => {
                let jti: Uuid = jti
                    .parse()
                    .context("a token id is a UUID, as shown by `memsync-server token list`")?;
                let by = format!("cli:{operator}");
                match store::tokens::revoke(&db.pool, jti, &by).await? {
                    store::tokens::Revoked::Unknown => bail!("no token with id {jti}"),
                    store::tokens::Revoked::Already => eprintln!("memsync-server: token {jti} was already revoked"),
                    store::tokens::Revoked::Now => {
                        store::audit::record(
                            &db.pool,
                            &store::audit::AuditEvent {
                                team: None,
                                project: None,
                                actor_sub: &by,
                                actor_name: None,
                                action: "token_revoke",
                                path: None,
                                revision: None,
                                request_id: None,
                                details: serde_json::json!({ "jti": jti }),
                            },
                        )
                        .await?;
                        eprintln!("memsync-server: revoked token {jti}");
                    }
                }
            }
        }
        Ok(())
    }
    .await;
    db.close().await;
    result
}
