//! Test harness: starts the real memsync-server against a fresh database.
