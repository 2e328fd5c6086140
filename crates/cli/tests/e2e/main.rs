//! tern end to end: the real binary, driven as its users drive it (a terminal, pipes, stream-json, ACP, SDKs, MCP servers).
//!
//! One test binary for the crate (one link, one process start per test
//! under nextest), a module per area.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
// Shared with tern-tools' tests of what a change of a file keeps.
#[path = "../../../tools/tests/support/xattrs.rs"]
mod xattrs;

mod acp;
mod agent_servers;
mod background;
mod bash_config;
mod claude_compat;
mod compaction;
mod context;
mod credentials;
mod disk_full;
mod doc_tables;
mod doctor;
mod editing;
mod extending;
mod file_identity;
mod first_request;
mod fork;
mod headless;
mod hostile_commands;
mod hostile_repo;
mod images;
mod layout;
mod local_models;
mod mcp;
mod media_broker;
mod media_cli;
mod output_budget;
mod parity;
mod pdf;
mod permissions;
mod pipes;
mod plan_and_questions;
mod python_sdk;
mod race_free;
mod read_memory;
mod sessions;
mod shells;
mod subagents;
mod task_append;
mod ts_sdk;
mod tui;
mod tui_background;
mod web_fetch;
mod web_search;
