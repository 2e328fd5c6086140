//! tern-runtime's tests: the session core against the mock model over real HTTP, in process.
//!
//! One test binary for the crate (one link, one process start per test
//! under nextest), a module per area.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use tern_runtime::Overrides;

/// A runtime's overrides for the mock `server` (Anthropic's wire, model
/// `mock`), working in `work`, with tern's home in `home`.
pub(crate) fn mock_overrides(
    server: &tern_mock_llm::MockServer,
    work: &tempfile::TempDir,
    home: &tempfile::TempDir,
) -> Overrides {
    Overrides {
        provider: Some("anthropic".into()),
        base_url: Some(server.url()),
        model: Some("mock".into()),
        cwd: Some(work.path().to_path_buf()),
        tern_home: Some(home.path().to_path_buf()),
        ..Default::default()
    }
}

mod allow_always;
mod commands;
mod conversation;
mod embedding;
mod move_to_background;
mod sessions;
mod skill_rules;
mod subagents;
