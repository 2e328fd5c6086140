//! tern-tools' tests: each tool called as the loop calls it, on real files and processes.
//!
//! One test binary for the crate (one link, one process start per test
//! under nextest), a module per area.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../support/processes.rs"]
mod processes;
#[path = "../support/xattrs.rs"]
mod xattrs;

mod bash_sandbox;
mod bash_tool;
mod change_tools;
mod keep_identity;
mod move_to_background;
mod near_misses;
mod read_images;
mod read_memory;
mod read_tool;
mod search_tools;
