//! What every request handler shares: the pool, the signing keys and revocation set, the sync
//! limits, metrics, the database's health, and the console's settings. Built once in `serve`;
//! every layer and handler of every request clones it, so it is one `Arc` (a clone of a dozen
//! `Arc`s and their drops were 6 % of a no-change pull's CPU).

use std::sync::Arc;

use sqlx::PgPool;

use crate::auth::{Keys, Revocations};
use crate::db::DbHealth;
use crate::metrics::Metrics;
use crate::sync::SyncLimits;

#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl From<Shared> for AppState {
    fn from(shared: Shared) -> AppState {
        AppState(Arc::new(shared))
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

pub struct Shared {
    pub pool: PgPool,
    pub keys: Arc<Keys>,
    /// The trusted identity providers, if any (`crate::oidc`).
    pub oidc: Option<Arc<crate::oidc::Oidc>>,
    pub revocations: Revocations,
    pub limits: SyncLimits,
    pub metrics: Arc<Metrics>,
    pub max_body_bytes: usize,
    /// The database's state as the supervisor sees it, for `/readyz` and `/healthz`.
    pub db_health: DbHealth,
    /// Every project's current revision, kept current by LISTEN/NOTIFY (`crate::bus`).
    pub bus: crate::bus::RevisionBus,
    /// Announces client pushes' revisions after they commit (`crate::bus::announce`).
    pub announcer: crate::bus::announce::Announcer,
    /// Long-polls' and event streams' limits, open counts and shutdown signal.
    pub live: crate::live::Live,
    /// The admin console's session settings and origin.
    pub console: Arc<crate::console::Settings>,
    /// Rate limits per token and per team, and the quotas' settings (`crate::limits`).
    pub limiter: crate::limits::Limiter,
}
