//! SQL, one module per aggregate. Nothing outside `store` writes SQL about memsync's data;
//! `db/` alone speaks to PostgreSQL itself (creating the database, migrations, the health probe).

pub mod allowlist;
pub mod audit;
pub mod history;
pub mod idempotency;
pub mod memories;
pub mod outbox;
pub mod proposals;
pub mod reviewers;
pub mod sessions;
pub mod settings;
pub mod tokens;
