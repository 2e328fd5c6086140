//! All child-process cleanup in one place. Every program tern starts — a
//! bash command, a `!cmd` in the TUI, a hook, an MCP server — runs as the
//! leader of its own process group, and stopping it means signalling the
//! whole group: SIGTERM, a grace period, then SIGKILL, so nothing it started
//! is left behind. Waiting ignores zombies, which a container without an
//! init never reaps. [`Utf8Carry`] decodes a child's byte stream without
//! splitting a character across reads; [`LiveTail`] keeps the newest part of
//! one for a live view.
//!
//! It must never signal tern's own group (0) or init's (1).
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! let mut child = tokio::process::Command::new("sh").args(["-c", "sleep 60 & sleep 60"]).process_group(0).spawn()?;
//! let pgid = child.id().unwrap_or_default();
//! tern_process::terminate_group(&mut child, pgid).await; // both sleeps are gone
//! # Ok(()) }
//! ```

#![deny(clippy::print_stdout, clippy::print_stderr)]
mod bounded;
mod fds;
mod group;
mod utf8;

pub use bounded::{BoundedOutput, run_bounded, run_bounded_with_stdin};
pub use fds::cloexec_inherited_fds;
pub use group::{
    GroupGuard, KILL_GRACE, Tracked, group_alive, kill_tracked, reap_leftovers, reap_leftovers_blocking, signal_group,
    terminate_group, track,
};
pub use utf8::{LiveTail, Utf8Carry};
