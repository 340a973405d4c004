//! HTTP client for the memsync API (grows with the client issue).
