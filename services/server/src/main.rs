//! `memsync-server`: serve, migrate, and token administration.

use std::io::Write;
use std::sync::Arc;

use anyhow::{Context, bail};
use memsync_core::text::Text;
use uuid::Uuid;

use memsync_server::admin::tokens;
use memsync_server::auth::{self, Keys, Revocations};
use memsync_server::config::{
    self, Cli, Command, Config, ConfigCommand, ExportCommand, TokenCommand,
};
use memsync_server::db::{self, Database};
use memsync_server::state::AppState;
use memsync_server::{export, http, remote, rescan, store, sync, telemetry};

fn main() -> std::process::ExitCode {
    let cli = config::parse();
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
    // The OTLP exporter sends on this runtime.
    let traced = {
        let _rt = rt.enter();
        telemetry::init(&cli.global.log_format)
    };
    if let Err(e) = traced {
        eprintln!("memsync-server: {e}");
        return std::process::ExitCode::from(2);
    }
    let code = match rt.block_on(run(cli)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = format!("{e:#}"), "memsync-server failed");
            eprintln!("memsync-server: {e:#}");
            std::process::ExitCode::from(1)
        }
    };
    // The last spans leave while the runtime still runs.
    telemetry::shutdown();
    code
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let cfg = Config::from_args(&cli.global);
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => serve(cfg).await,
        Command::Migrate => {
            existing_installation(&cfg)?;
            let db = Database::open(&cfg).await?;
            let r = db.migrate().await;
            db.close().await;
            r?;
            eprintln!("memsync-server: migrations applied");
            Ok(())
        }
        Command::Token(args) => match &args.server {
            Some(server) => remote::token(server, args.command).await,
            None => token(cfg, args.command).await,
        },
        Command::Export(cmd) => export_cmd(cfg, cmd).await,
        Command::Rescan { all, json } => rescan_cmd(cfg, all, json).await,
        Command::Config(ConfigCommand::Show) => {
            print!("{}", cli.global.resolved.show());
            // What `serve` would refuse, said now (the key itself is never printed).
            cfg.feedback_judge.build().map_err(anyhow::Error::msg)?;
            Ok(())
        }
    }
}

fn sync_limits(cfg: &Config) -> sync::SyncLimits {
    sync::SyncLimits {
        file: memsync_core::policy::Limits {
            max_file_bytes: cfg.max_file_bytes,
            max_changes_per_push: cfg.max_changes_per_push,
        },
        max_files_per_project: cfg.max_files_per_project,
        quotas: cfg.limits,
    }
}

/// The extra scanner rules, installed before anything is scanned.
fn install_scan_rules(cfg: &Config) -> anyhow::Result<()> {
    let extra = cfg.install_scan_rules()?;
    tracing::info!(
        rule_set = memsync_core::scan::rule_set_id(),
        extra_rules = extra,
        "scanner rules"
    );
    Ok(())
}

/// The feedback check's embedding model, when one is configured; a directory that does not hold
/// one stops the server, naming the setting.
fn install_feedback_model(cfg: &Config) -> anyhow::Result<()> {
    let Some(dir) = &cfg.feedback_model_dir else {
        return Ok(());
    };
    let started = std::time::Instant::now();
    let model = memsync_core::feedback::embed::Model::load_dir(dir).map_err(|e| {
        anyhow::anyhow!(
            "--feedback-model-dir (MEMSYNC_FEEDBACK_MODEL_DIR): {e}; scripts/fetch-feedback-model DIR installs the model, or leave the setting out to run the detector alone"
        )
    })?;
    memsync_core::feedback::embed::install(model);
    tracing::info!(
        dir = %dir.display(),
        load_ms = started.elapsed().as_millis() as u64,
        "feedback embedding model loaded"
    );
    Ok(())
}

fn keys(cfg: &Config) -> anyhow::Result<Keys> {
    let secret =
        auth::load_or_create_secret(cfg.jwt_secret.as_ref().map(|s| s.expose()), &cfg.data_dir)?;
    Keys::hs256(&secret, &cfg.jwt_issuer, &cfg.jwt_audience)
}

async fn serve(cfg: Config) -> anyhow::Result<()> {
    cfg.export.validate()?;
    install_scan_rules(&cfg)?;
    sync::judge::install(cfg.feedback_judge.build().map_err(anyhow::Error::msg)?);
    install_feedback_model(&cfg)?;
    // Every pattern now, so that no request pays for compiling one.
    memsync_core::scan::scanner().compile_all();
    let keys = Arc::new(keys(&cfg)?);
    let oidc = cfg.oidc.build().map_err(anyhow::Error::msg)?.map(Arc::new);
    let console = memsync_server::console::Settings::new(
        cfg.public_url.as_deref(),
        cfg.console_idle_timeout,
        cfg.console_max_session,
    )?;
    let mut db = Database::open_to_serve(&cfg).await?;
    if let Err(e) = db.migrate().await {
        db.close().await;
        return Err(e);
    }
    let db_health = db.supervise(cfg.db_restart_attempts);
    let revocations = Revocations::default();
    revocations.reload(&db.pool).await?;
    revocations.spawn_watcher(db.pool.clone());
    let bus = memsync_server::bus::RevisionBus::default();
    bus.spawn(db.pool.clone());
    let announcer = memsync_server::bus::announce::Announcer::default();
    announcer.spawn(db.pool.clone());
    spawn_housekeeping(db.pool.clone());
    let live = memsync_server::live::Live::new(cfg.live);
    let limiter = memsync_server::limits::Limiter::new(cfg.limits);
    let metrics = Arc::new(memsync_server::metrics::Metrics::new(
        db.pool.clone(),
        live.clone(),
        limiter.clone(),
        cfg.metrics_listen.is_none(),
    ));
    export::spawn_lag(db.pool.clone());
    let state = AppState::from(memsync_server::state::Shared {
        pool: db.pool.clone(),
        keys,
        oidc: oidc.clone(),
        revocations,
        limits: sync_limits(&cfg),
        metrics: metrics.clone(),
        max_body_bytes: cfg.max_body_bytes,
        db_health,
        bus,
        announcer: announcer.clone(),
        live,
        console,
        limiter,
    });
    if let Some(oidc) = &oidc {
        oidc.spawn_warmup();
    }
    let live = state.live.clone();
    let app = http::router(state, cfg.request_timeout);
    let listener = match http::serve::bind(cfg.listen) {
        Ok(l) => l,
        Err(e) => {
            db.close().await;
            bail!("cannot listen on {}: {e}", cfg.listen);
        }
    };
    let addr = listener.local_addr()?;
    // `--metrics-listen`: `/metrics` alone on a listener of its own, closed with the API's.
    if let Some(at) = cfg.metrics_listen {
        let metrics_listener = match http::serve::bind(at) {
            Ok(l) => l,
            Err(e) => {
                db.close().await;
                bail!("cannot listen on {at} (--metrics-listen): {e}");
            }
        };
        let metrics_addr = metrics_listener.local_addr()?;
        tracing::info!(addr = %metrics_addr, "metrics listening");
        let serving = http::serve::serve(
            metrics_listener,
            http::metrics::router(metrics),
            cfg.connections,
            live.closing(),
        );
        tokio::spawn(async move {
            if let Err(e) = serving.await {
                tracing::error!(error = %e, "serving metrics failed");
            }
        });
    }
    tracing::info!(%addr, embedded_postgres = db.embedded.is_some(), "memsync-server listening");
    // Tests and scripts read this line to learn the port when listening on port 0.
    println!("memsync-server listening on http://{addr}");
    let _ = std::io::stdout().flush();
    if let Err(e) = export::start(db.pool.clone(), cfg.export.clone(), addr) {
        db.close().await;
        return Err(e.context("starting the git export"));
    }
    // What older scanner rules checked is rescanned in the background.
    rescan::spawn(db.pool.clone(), sync_limits(&cfg));
    // On SIGTERM/SIGINT: stop accepting, let requests in flight finish, but not for ever.
    let (stopping_tx, stopping_rx) = tokio::sync::oneshot::channel::<()>();
    let serve = http::serve::serve(listener, app, cfg.connections, async move {
        shutdown_signal().await;
        tracing::info!("shutdown requested; finishing requests in flight");
        // Long-polls answer and event streams end now, rather than hold the shutdown.
        live.close();
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
    // What was committed is announced before the connections close.
    announcer.flush(std::time::Duration::from_secs(2)).await;
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
    existing_installation(&cfg)?;
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

/// `memsync-server rescan`: one rescan now (after a running one, if a server is rescanning).
async fn rescan_cmd(cfg: Config, all: bool, json: bool) -> anyhow::Result<()> {
    install_scan_rules(&cfg)?;
    existing_installation(&cfg)?;
    let db = Database::open(&cfg).await?;
    let result = async {
        if let Err(reason) = db::ready(&db.pool).await {
            bail!("{reason}; run `memsync-server migrate` first");
        }
        rescan::run(
            &db.pool,
            sync_limits(&cfg),
            all,
            Some(std::time::Duration::from_secs(600)),
        )
        .await?
        .context("the rescan lock was not taken")
    }
    .await;
    db.close().await;
    let summary = result?;
    if json {
        println!("{}", serde_json::to_string(&summary)?);
    } else {
        println!("{summary}");
    }
    Ok(())
}

/// Commands other than `serve` only talk to an installation that exists: they never create a
/// data dir, a signing key or a database cluster, which would split the server's identity in
/// two (a token signed with a new key in the wrong directory does not verify on the server).
fn existing_installation(cfg: &Config) -> anyhow::Result<()> {
    let dir = std::path::absolute(&cfg.data_dir).unwrap_or_else(|_| cfg.data_dir.clone());
    let how = "Point at the server's data dir with --data-dir or MEMSYNC_DATA_DIR (the directory `memsync-server` was started with; by default ./memsync-data in the directory it was started from), pass the server's --database-url, or manage tokens through the running server's API with `memsync-server token --server URL …` and a server-admin token in MEMSYNC_ADMIN_TOKEN";
    if cfg.database_url.is_none() && !dir.join("postgres").join("PG_VERSION").is_file() {
        if let Some(server) = db::embedded::server_lock_holder(&dir) {
            bail!(
                "the embedded PostgreSQL of memsync-server ({server}) in {} is not there: the \
                 server is restarting it (see its log); retry in a few seconds",
                dir.display()
            );
        }
        bail!(
            "no memsync installation in {}: it holds no embedded PostgreSQL (this command never creates one). {how}",
            dir.display()
        );
    }
    Ok(())
}

/// The signing key of an existing installation (never generated here).
fn existing_keys(cfg: &Config) -> anyhow::Result<Keys> {
    if cfg.jwt_secret.is_none() {
        let key = std::path::absolute(cfg.data_dir.join("jwt.key"))
            .unwrap_or_else(|_| cfg.data_dir.join("jwt.key"));
        if !key.is_file() {
            bail!(
                "no signing key at {} (this command never creates one): point --data-dir or MEMSYNC_DATA_DIR at the server's data dir, set the server's MEMSYNC_JWT_SECRET, or use `memsync-server token --server URL …` with a server-admin token in MEMSYNC_ADMIN_TOKEN",
                key.display()
            );
        }
    }
    keys(cfg)
}

async fn token(cfg: Config, cmd: TokenCommand) -> anyhow::Result<()> {
    existing_installation(&cfg)?;
    let keys = existing_keys(&cfg)?;
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
                let by = format!("cli:{operator}");
                if args.teams.is_empty() && !args.admin {
                    bail!("a token needs at least one --team TEAM (or --admin), or it can reach nothing");
                }
                let (scopes, rate) = (args.parsed_scopes()?, args.parsed_rate()?);
                let req = tokens::IssueRequest {
                    user: Text::new(args.user).context("--user")?,
                    email: args.email.map(Text::new).transpose().context("--email")?,
                    teams: memsync_core::wire::parse_team_grants(&args.teams).map_err(anyhow::Error::msg)?,
                    admin: args.admin,
                    ttl_secs: i64::try_from(args.ttl.as_secs()).unwrap_or(i64::MAX / 2),
                    scope: tokens::scope_claim(&scopes),
                    rate,
                    projects: args.projects,
                };
                let actor = tokens::Actor {
                    sub: &by,
                    name: None,
                    request_id: None,
                    idem: None,
                };
                let (token, claims) = tokens::issue(&db.pool, &keys, &actor, req)
                    .await
                    .map_err(|e| anyhow::anyhow!("{e}"))?;
                eprintln!(
                    "memsync-server: issued token {} for {} (scope: {}{}; expires {})",
                    claims.jti,
                    claims.sub,
                    claims.scope.as_deref().unwrap_or("pull push admin"),
                    if claims.projects.is_empty() {
                        String::new()
                    } else {
                        format!("; projects: {}", claims.projects.join(", "))
                    },
                    chrono::DateTime::from_timestamp(claims.exp, 0)
                        .map_or_else(|| claims.exp.to_string(), |t| t.to_rfc3339()),
                );
                println!("{token}");
            }
            TokenCommand::List { all, json } => {
                remote::print_tokens(store::tokens::list(&db.pool, all).await?, all, json)?;
            }
            TokenCommand::Revoke { jti } => {
                let jti: Uuid = jti
                    .parse()
                    .context("a token id is a UUID, as shown by `memsync-server token list`")?;
                let by = format!("cli:{operator}");
                let actor = tokens::Actor {
                    sub: &by,
                    name: None,
                    request_id: None,
                    idem: None,
                };
                match tokens::revoke(&db.pool, jti, &actor)
                    .await
                    .map_err(|e| anyhow::anyhow!("{e}"))?
                {
                    store::tokens::Revoked::Unknown => bail!("no token with id {jti}"),
                    store::tokens::Revoked::Already => {
                        eprintln!("memsync-server: token {jti} was already revoked")
                    }
                    store::tokens::Revoked::Now => eprintln!("memsync-server: revoked token {jti}"),
                }
            }
        }
        Ok(())
    }
    .await;
    db.close().await;
    result
}
