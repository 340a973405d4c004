//! The memsync client library: the HTTP API client shared by the CLI and the tests.

pub mod api;
