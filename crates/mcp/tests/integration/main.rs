//! tern-mcp's tests: the client against the test server and the reference servers, over stdio and HTTP.
//!
//! One test binary for the crate (one link, one process start per test
//! under nextest), a module per area.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod http_transport;
mod reference_servers;
mod test_server;
