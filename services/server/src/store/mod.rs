//! SQL, one module per aggregate. Nothing outside `store` writes SQL.

pub mod audit;
pub mod idempotency;
pub mod memories;
pub mod tokens;
