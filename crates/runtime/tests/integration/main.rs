//! tern-runtime's tests: the session core against the mock model over real HTTP, in process.
//!
//! One test binary for the crate (one link, one process start per test
//! under nextest), a module per area.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod allow_always;
mod commands;
mod conversation;
mod embedding;
mod move_to_background;
mod sessions;
mod skill_rules;
mod subagents;
