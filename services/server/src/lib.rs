//! memsync's sync server as a library: the binary (`main.rs`) parses the command line and calls
//! in here, and tests can call domain functions in-process.
//!
//! Reading order: `http` (routes, extractors, middleware) calls the domains `sync` (pull and
//! push), `review` (release policy, reviewers, the review queue), `admin` (audit, memories,
//! release, projects, tokens, allowlist), `export` (the git export and its mirror) and `rescan`
//! (published memories against new scanner rules); they decide with `memsync_core::policy` and keep their data through `store`
//! (all of the SQL), on the pool that `db` opens and supervises. `state` is what every handler
//! shares; `auth` turns a request's credentials into a `Principal`.

pub mod admin;
pub mod auth;
pub mod bus;
pub mod config;
pub mod console;
pub mod db;
pub mod error;
pub mod export;
pub mod http;
pub mod idempotent;
pub mod limits;
pub mod live;
pub mod metrics;
pub mod oidc;
pub mod remote;
pub mod rescan;
pub mod review;
pub mod state;
pub mod store;
pub mod sync;
pub mod telemetry;
