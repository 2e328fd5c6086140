//! tern's MCP client: starts the configured Model Context Protocol servers
//! (stdio child processes or streamable-HTTP endpoints) all at once, lists
//! their tools as [`RuntimeTool`](tern_agent_loop::RuntimeTool)s named
//! `mcp__<server>__<tool>`, and runs `tools/call` with per-server timeouts,
//! cancellation, and bounded restarts of servers that crash.
//!
//! It never writes to tern's own stderr or screen (server stderr goes to a log
//! file), never decides permissions or which tools the model sees (the
//! runtime and catalog do), and never fails as a whole because one server
//! did: a broken server is a [`ServerState::Failed`] line in
//! [`McpManager::statuses`].
//!
//! ```no_run
//! # async fn demo() {
//! use tern_mcp::{McpManager, ServerConfig};
//! let fs = ServerConfig::stdio("fs", "mcp-server-filesystem", ["/tmp"]);
//! let manager = McpManager::start(vec![fs], Some("/tmp/tern-mcp.log".into()), None).await;
//! for status in manager.statuses() {
//!     println!("{}: {:?} ({} tools)", status.name, status.state, status.tool_count);
//! }
//! let tools: Vec<_> = manager.tools().into_iter().map(|t| t.tool).collect();
//! # let _ = tools;
//! manager.shutdown().await;
//! # }
//! ```
//!
//! Unix only: servers run in their own process group so that stopping one
//! stops everything it started.

#![deny(clippy::print_stdout, clippy::print_stderr)]
mod config;
mod connection;
mod content;
mod elicit;
mod host;
mod manager;
pub mod naming;
mod resources;
mod sdk_transport;
mod server;
mod server_log;
mod server_process;
pub mod testing;
mod tool;

pub use config::{ServerConfig, Transport};
pub use elicit::{ElicitHost, Elicitation, Elicitor};
pub use host::Host;
pub use manager::{McpManager, McpPrompt, ServerState, ServerStatus};
pub use sdk_transport::{SdkHost, SdkRelay, SdkTransportError};
pub use server::MAX_RESTARTS;
pub use tool::McpTool;
