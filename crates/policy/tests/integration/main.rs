//! tern-policy's tests: decisions, hooks, the bash classifier, hostile repositories, fuzz regressions.
//!
//! One test binary for the crate (one link, one process start per test
//! under nextest), a module per area.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod bash_classifier;
mod decisions;
mod fuzz_regressions;
mod hook_callbacks;
mod hooks;
mod hostile_repository;
