//! The memsync client library: configuration, the HTTP API client, the local state and the
//! pull/push engine behind the `memsync` command.

pub mod agent;
pub mod api;
pub mod atomic;
pub mod check;
pub mod config;
pub mod feedback;
pub mod fsops;
pub mod hook;
pub mod judge;
pub mod model;
pub mod paths;
pub mod provenance;
pub mod sse;
pub mod sso;
pub mod stale;
pub mod state;
pub mod sync;
pub mod tracecontext;
pub mod watch;
