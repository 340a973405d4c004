//! SQL, one module per aggregate. Nothing outside `store` writes SQL.

pub mod allowlist;
pub mod audit;
pub mod history;
pub mod idempotency;
pub mod memories;
pub mod tokens;
