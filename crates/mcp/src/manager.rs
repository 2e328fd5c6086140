//! [`McpManager`]: every configured server, started together, and their
//! tools as one list.

use std::{path::PathBuf, sync::Arc, time::Duration};

use tokio::sync::watch;

use crate::{
    config::ServerConfig,
    naming, resources,
    server::Server,
    server_log::ServerLog,
    tool::{self, McpTool},
};
use tern_protocol::sync::LockExt as _;

/// Where a server stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    /// Still connecting: its tools join the list once it has listed them.
    Starting,
    /// Session open; tools listed.
    Connected,
    /// Not usable, with the reason (start failure, crash, shut down).
    Failed(String),
    /// Disabled in the configuration; never started.
    Disabled,
}

/// One line of `/mcp`-style status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStatus {
    /// Configured name.
    pub name: String,
    /// Current state.
    pub state: ServerState,
    /// Tools it last listed (kept while it is down).
    pub tool_count: usize,
    /// From the configuration, for the tool catalog.
    pub always_load: bool,
    /// `stdio: cmd args` or `http: url`.
    pub transport: String,
    /// Restarts after crashes so far this session.
    pub restarts: u32,
}

/// The largest MCP prompt text tern sends as a prompt.
pub const MAX_PROMPT_BYTES: usize = 1024 * 1024;

/// A prompt an MCP server offers, as a slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpPrompt {
    /// `mcp__<server>__<prompt>` (the command, without its slash).
    pub command: String,
    /// The server.
    pub server: String,
    /// The prompt's name there.
    pub name: String,
    /// What it is for.
    pub description: String,
    /// Its arguments in order, each with whether it is required.
    pub arguments: Vec<(String, bool)>,
}

/// A tool a server's session offers: its own, or one of its resources.
enum Listed {
    Tool(rmcp::model::Tool),
    Resources(&'static str),
}

impl Listed {
    fn name(&self) -> &str {
        match self {
            Listed::Tool(t) => t.name.as_ref(),
            Listed::Resources(name) => name,
        }
    }
}

/// The MCP client side of tern: owns every server session.
pub struct McpManager {
    servers: Vec<Arc<Server>>,
    generation: Arc<watch::Sender<u64>>,
    /// The servers' first starts, to abort those still running at shutdown.
    starts: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// First starts not finished yet.
    pending: watch::Sender<usize>,
}

impl McpManager {
    /// Start every enabled server concurrently (never one after another); a
    /// server that fails to start (spawn error, initialize timeout, protocol
    /// error) is recorded as Failed with a clear message and the rest work.
    /// Never returns an error as a whole. Server stderr is appended to
    /// `stderr_log` (each line prefixed `[server-name] `) — never to tern's
    /// own stderr/screen; if None, discarded.
    ///
    /// Returns once every server finished starting, or `wait` passed
    /// (`None`: no limit but each server's own startup timeout). A server
    /// still starting then goes on in the background and its tools join the
    /// list when it is ready ([`McpManager::generation`] changes), so a slow
    /// server does not hold up the first request.
    pub async fn start(
        servers: Vec<ServerConfig>,
        stderr_log: Option<PathBuf>,
        wait: Option<Duration>,
    ) -> Arc<McpManager> {
        let log = ServerLog::open(stderr_log.as_deref());
        let generation = Arc::new(watch::Sender::new(0));
        let servers: Vec<Arc<Server>> =
            servers.into_iter().map(|config| Arc::new(Server::new(config, log.clone(), generation.clone()))).collect();
        let pending = watch::Sender::new(servers.len());
        let starts = servers
            .iter()
            .map(|server| {
                let (server, pending) = (server.clone(), pending.clone());
                tokio::spawn(async move {
                    server.start().await;
                    pending.send_modify(|n| *n = n.saturating_sub(1));
                })
            })
            .collect();
        let manager = Arc::new(McpManager { servers, generation, starts: std::sync::Mutex::new(starts), pending });
        match wait {
            Some(limit) => {
                let _ = tokio::time::timeout(limit, manager.ready()).await;
            }
            None => manager.ready().await,
        }
        manager
    }

    /// Wait until every server finished its first start (connected or failed).
    pub async fn ready(&self) {
        // The sender lives in `self`, so the channel cannot close while we wait.
        let _ = self.pending.subscribe().wait_for(|n| *n == 0).await;
    }

    /// Every configured server, in configuration order.
    pub fn statuses(&self) -> Vec<ServerStatus> {
        self.servers.iter().map(|s| s.status()).collect()
    }

    /// Current tools of all connected servers as RuntimeTools, sorted by final name.
    /// A crashed server's tools stay listed so the model can retry them (the
    /// call restarts the server). Names are `mcp__<server>__<tool>`, sanitised
    /// and made unique by [`naming::assign_names`].
    pub fn tools(&self) -> Vec<McpTool> {
        // Each server's own tools, then (when it offers resources) its two resource tools.
        let listed: Vec<(&Arc<Server>, Listed)> = self
            .servers
            .iter()
            .flat_map(|server| {
                let own = server.listed_tools().unwrap_or_default().into_iter().map(Listed::Tool);
                let resources = server
                    .offers_resources()
                    .then_some([Listed::Resources(resources::LIST), Listed::Resources(resources::READ)])
                    .into_iter()
                    .flatten();
                own.chain(resources).map(move |t| (server, t))
            })
            .collect();
        let pairs: Vec<(&str, &str)> = listed.iter().map(|(s, t)| (s.config.name.as_str(), t.name())).collect();
        let names = naming::assign_names(&pairs);
        let mut tools: Vec<McpTool> = listed
            .iter()
            .zip(names)
            .map(|((server, listed), name)| match listed {
                Listed::Tool(def) => tool::build(server, def, name),
                Listed::Resources(original) => resources::build(server, original, name),
            })
            .collect();
        tools.sort_by(|a, b| a.tool.name().cmp(b.tool.name()));
        tools
    }

    /// Reconnect the server `name` (a person asked): its state after, or
    /// `None` when no server has that name.
    pub async fn reconnect(&self, name: &str) -> Option<ServerState> {
        let server = self.servers.iter().find(|s| s.config.name == name)?;
        Some(server.reconnect().await)
    }

    /// Turn the server `name` on (a new session) or off (its tools leave
    /// the list): its state after, or `None` when no server has that name.
    pub async fn set_enabled(&self, name: &str, enabled: bool) -> Option<ServerState> {
        let server = self.servers.iter().find(|s| s.config.name == name)?;
        Some(if enabled { server.reconnect().await } else { server.turn_off().await })
    }

    /// Every connected server's prompts, as `/mcp__<server>__<prompt>`.
    pub fn prompts(&self) -> Vec<McpPrompt> {
        let mut out = Vec::new();
        for server in &self.servers {
            for p in server.prompts() {
                out.push(McpPrompt {
                    command: naming::qualified_name(&server.config.name, &p.name),
                    server: server.config.name.clone(),
                    name: p.name.clone(),
                    description: p.description.clone().unwrap_or_default(),
                    arguments: p
                        .arguments
                        .unwrap_or_default()
                        .into_iter()
                        .map(|a| (a.name, a.required.unwrap_or(false)))
                        .collect(),
                });
            }
        }
        out
    }

    /// The text of the prompt `name` of `server` with `arguments`: its
    /// messages' text, in order (images and resources named, not sent).
    pub async fn get_prompt(
        &self,
        server: &str,
        name: &str,
        arguments: std::collections::BTreeMap<String, String>,
    ) -> Result<String, String> {
        let Some(s) = self.servers.iter().find(|s| s.config.name == server) else {
            return Err(format!("no MCP server `{server}`"));
        };
        let arguments: rmcp::model::JsonObject =
            arguments.into_iter().map(|(k, v)| (k, serde_json::Value::String(v))).collect();
        let args = (!arguments.is_empty()).then_some(arguments);
        let messages =
            s.get_prompt(name, args, &tokio_util::sync::CancellationToken::new()).await.map_err(|e| e.message)?;
        let parts: Vec<String> = messages
            .into_iter()
            .map(|m| match crate::content::convert_block(m.content) {
                tern_protocol::ToolResultContent::Text { text } => text,
                tern_protocol::ToolResultContent::Image { .. } => "[an image of the prompt, not sent]".to_string(),
            })
            .collect();
        let text = parts.join("\n\n");
        // A server's answer becomes the prompt: bounded as a person's paste would be.
        if text.len() > MAX_PROMPT_BYTES {
            return Err(format!(
                "the prompt `{name}` of `{server}` is {} KiB, more than the {} KiB tern sends as a prompt",
                text.len() / 1024,
                MAX_PROMPT_BYTES / 1024
            ));
        }
        Ok(text)
    }

    /// Bumped whenever any server's tool list changed (notifications/tools/list_changed → re-list).
    pub fn generation(&self) -> u64 {
        *self.generation.borrow()
    }

    /// Wait until the generation differs from `seen`; returns the new one.
    /// Front ends use it to refresh their tool list without polling.
    pub async fn generation_changed(&self, seen: u64) -> u64 {
        let mut rx = self.generation.subscribe();
        // The sender lives in `self`, so the channel cannot close while we wait.
        rx.wait_for(|g| *g != seen).await.map(|g| *g).unwrap_or(seen)
    }

    /// Kill/close every server (stdio children are killed; also when the manager is dropped — kill_on_drop).
    pub async fn shutdown(&self) {
        // A server still starting is dropped, with the child it spawned (kill_on_drop).
        for h in self.starts.lock_or_recover().drain(..) {
            h.abort();
        }
        // An aborted start never counts itself done: nobody waits for it any more.
        self.pending.send_replace(0);
        futures::future::join_all(self.servers.iter().map(|s| s.shutdown())).await;
    }
}
