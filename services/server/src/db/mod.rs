//! Connecting to PostgreSQL (external by URL, or the embedded cluster) and migrating it.

pub mod embedded;
pub mod supervisor;

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, PgPool};

use crate::config::Config;
pub use embedded::{EmbeddedPostgres, Purpose};
use supervisor::Supervisor;
pub use supervisor::{DbHealth, Phase};

pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations");

/// An open pool, plus the embedded cluster behind it when there is one.
pub struct Database {
    pub pool: PgPool,
    pub embedded: Option<Arc<EmbeddedPostgres>>,
    supervisor: Option<Supervisor>,
}

impl Database {
    /// Opens the database for a command (`migrate`, `token …`, `export rebuild`): an embedded
    /// cluster a live server owns is borrowed.
    pub async fn open(cfg: &Config) -> anyhow::Result<Database> {
        Database::open_for(cfg, Purpose::Command).await
    }

    /// Opens the database for `serve`: refuses an embedded cluster another live server owns.
    pub async fn open_to_serve(cfg: &Config) -> anyhow::Result<Database> {
        Database::open_for(cfg, Purpose::Serve).await
    }

    async fn open_for(cfg: &Config, purpose: Purpose) -> anyhow::Result<Database> {
        let (options, embedded) = match &cfg.database_url {
            Some(url) => {
                let opts = PgConnectOptions::from_str(url.expose())
                    .context("the database URL is not a valid postgres:// URL")?;
                (opts, None)
            }
            None => {
                let data_dir = cfg.data_dir.clone();
                let pg = tokio::task::spawn_blocking(move || {
                    EmbeddedPostgres::start(&data_dir, purpose)
                })
                .await??;
                if let Err(e) = ensure_database(&pg).await {
                    pg.stop();
                    return Err(e);
                }
                (pg.connect_options(embedded::DATABASE), Some(Arc::new(pg)))
            }
        };
        let options = options
            .application_name("memsync-server")
            .log_statements(log::LevelFilter::Trace)
            .log_slow_statements(log::LevelFilter::Warn, Duration::from_secs(1));
        let pool = PgPoolOptions::new()
            .max_connections(cfg.db_pool_size)
            .min_connections(1)
            .acquire_timeout(Duration::from_secs(5))
            // Every acquire's time, as an event for `/metrics` (`metrics::AcquireTimes`).
            .acquire_time_level(log::LevelFilter::Trace)
            .connect_with(options)
            .await;
        match pool {
            Ok(pool) => Ok(Database {
                pool,
                embedded,
                supervisor: None,
            }),
            Err(e) => {
                if let Some(pg) = &embedded {
                    pg.stop();
                }
                Err(anyhow::Error::new(e).context("connecting to PostgreSQL"))
            }
        }
    }

    pub async fn migrate(&self) -> anyhow::Result<()> {
        MIGRATOR
            .run(&self.pool)
            .await
            .context("applying database migrations")
    }

    /// Starts supervising the database (see `supervisor`): the returned handle reports its
    /// state to `/readyz` and `/healthz`.
    pub fn supervise(&mut self, restart_attempts: u32) -> DbHealth {
        let s = self.supervisor.get_or_insert_with(|| {
            Supervisor::spawn(self.pool.clone(), self.embedded.clone(), restart_attempts)
        });
        s.health()
    }

    /// Stops the supervisor, closes the pool, then stops the embedded cluster if this process
    /// started it.
    pub async fn close(self) {
        if let Some(s) = self.supervisor {
            s.shutdown().await;
        }
        self.pool.close().await;
        if let Some(pg) = self.embedded {
            let _ = tokio::task::spawn_blocking(move || pg.stop()).await;
        }
    }
}

async fn ensure_database(pg: &EmbeddedPostgres) -> anyhow::Result<()> {
    let mut conn = pg
        .connect_options("postgres")
        .connect()
        .await
        .context("connecting to the embedded PostgreSQL")?;
    let exists: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
            .bind(embedded::DATABASE)
            .fetch_one(&mut conn)
            .await?;
    if !exists {
        let create = format!("CREATE DATABASE {}", embedded::DATABASE);
        if let Err(e) = sqlx::raw_sql(sqlx::AssertSqlSafe(create))
            .execute(&mut conn)
            .await
        {
            // Another process may have created it at the same moment.
            let code = e
                .as_database_error()
                .and_then(|d| d.code())
                .map(|c| c.into_owned());
            if code.as_deref() != Some("42P04") {
                return Err(e.into());
            }
        }
    }
    Ok(())
}

/// True when the database answers and every migration this binary knows is applied.
pub async fn ready(pool: &PgPool) -> Result<(), String> {
    let applied: Vec<i64> =
        sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success")
            .fetch_all(pool)
            .await
            .map_err(|e| format!("database unreachable or not migrated: {e}"))?;
    let missing: Vec<i64> = MIGRATOR
        .iter()
        .map(|m| m.version)
        .filter(|v| !applied.contains(v))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("migrations not applied: {missing:?}"))
    }
}

/// True when the database has no memsync schema at all yet.
pub async fn is_fresh(pool: &PgPool) -> sqlx::Result<bool> {
    let exists: bool = sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL")
        .fetch_one(pool)
        .await?;
    Ok(!exists)
}
