//! tern-llm's tests: the providers' recorded streams, image results, and
//! how a stream ends and is waited for against the mock server.
//!
//! One test binary for the crate (one link, one process start per test
//! under nextest), a module per area.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod image_results;
mod stream_timing;
mod text_calls;
mod tools_in_prompt;
mod wire_fixtures;
