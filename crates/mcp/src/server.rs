//! One configured server while tern runs: its session, the tools it last
//! listed, and the policy for crashes (restart on next use, at most
//! [`MAX_RESTARTS`] times) and for `notifications/tools/list_changed`
//! (re-list in the background, bump the manager's generation).

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use rmcp::{
    Peer, ServiceError,
    model::{
        CallToolRequestParams, GetPromptRequestParams, JsonObject, PaginatedRequestParams, Prompt, PromptMessage,
        ReadResourceRequestParams, Resource, ResourceContents, Tool as McpToolDef,
    },
    service::RoleClient,
};
use tern_agent_loop::{ToolError, ToolOutput};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::{
    config::ServerConfig,
    connection::{self, Connection, ListChanged},
    content,
    manager::{ServerState, ServerStatus},
    server_log::ServerLog,
    server_process,
};

/// The most resources one `resources/list` answer is read for.
pub const MAX_RESOURCES: usize = 1000;

/// Restarts allowed per server per session.
pub const MAX_RESTARTS: u32 = 3;

/// One server; shared by the manager and (weakly) by its tools.
pub struct Server {
    pub config: ServerConfig,
    log: ServerLog,
    /// The manager's tool-list generation.
    generation: Arc<watch::Sender<u64>>,
    /// Serialises starting, restarting and closing.
    link: tokio::sync::Mutex<Link>,
    /// What `statuses()` and `tools()` read without waiting.
    view: Mutex<View>,
    /// Numbers sessions, so late events of an old session are ignored.
    epochs: AtomicU64,
    /// One re-list at a time, so results land in order.
    relisting: tokio::sync::Mutex<()>,
    /// The running calls' progress tokens and where their progress goes.
    progress: connection::ProgressRoutes,
    /// Numbers progress tokens.
    next_token: AtomicU64,
}

enum Link {
    /// Disabled, or not started yet.
    Idle,
    /// Failed to start; its tools were never listed, so nothing calls it.
    Failed,
    Up {
        conn: Connection,
        epoch: u64,
    },
    /// Crashed or disconnected; restarted on next use.
    Down {
        reason: String,
    },
    /// Shut down by tern.
    Closed,
}

struct View {
    state: ServerState,
    /// `None` until the first successful `tools/list`.
    tools: Option<Vec<McpToolDef>>,
    restarts: u32,
    /// Whether the session offers resources (`resources/list`, `resources/read`).
    resources: bool,
    /// The prompts it offers (`prompts/list` at connect).
    prompts: Vec<Prompt>,
}

/// A session just opened, with what it offers.
struct Opened {
    conn: Connection,
    tools: Vec<McpToolDef>,
    resources: bool,
    prompts: Vec<Prompt>,
    epoch: u64,
}

impl Server {
    pub fn new(config: ServerConfig, log: ServerLog, generation: Arc<watch::Sender<u64>>) -> Self {
        Self {
            config,
            log,
            generation,
            link: tokio::sync::Mutex::new(Link::Idle),
            view: Mutex::new(View {
                state: ServerState::Starting,
                tools: None,
                restarts: 0,
                resources: false,
                prompts: Vec::new(),
            }),
            epochs: AtomicU64::new(0),
            relisting: tokio::sync::Mutex::new(()),
            progress: Arc::default(),
            next_token: AtomicU64::new(0),
        }
    }

    fn name(&self) -> &str {
        &self.config.name
    }

    fn with_view<R>(&self, f: impl FnOnce(&mut View) -> R) -> R {
        let mut view = self.view.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&mut view)
    }

    pub fn status(&self) -> ServerStatus {
        self.with_view(|v| ServerStatus {
            name: self.config.name.clone(),
            state: v.state.clone(),
            tool_count: v.tools.as_ref().map_or(0, Vec::len),
            always_load: self.config.always_load,
            transport: self.config.transport.describe(),
            restarts: v.restarts,
        })
    }

    /// Whether its session offers resources.
    pub fn offers_resources(&self) -> bool {
        self.with_view(|v| v.resources && v.tools.is_some())
    }

    /// The prompts its session offers.
    pub fn prompts(&self) -> Vec<Prompt> {
        self.with_view(|v| if v.tools.is_some() { v.prompts.clone() } else { Vec::new() })
    }

    /// The last listed tools; `None` if the server never connected.
    pub fn listed_tools(&self) -> Option<Vec<McpToolDef>> {
        self.with_view(|v| v.tools.clone())
    }

    /// First start. Never fails as a whole: failure is recorded in the status.
    pub async fn start(self: &Arc<Self>) {
        if !self.config.enabled {
            self.with_view(|v| v.state = ServerState::Disabled);
            return;
        }
        let mut link = self.link.lock().await;
        self.open_into(&mut link).await;
        drop(link);
        // Its tools (or its failure) are news to whoever lists them.
        self.generation.send_modify(|g| *g += 1);
    }

    /// Open a session into `link` (held by the caller), recording how it went.
    async fn open_into(self: &Arc<Self>, link: &mut Link) {
        match self.open().await {
            Ok(Opened { conn, tools, resources, prompts, epoch }) => {
                self.with_view(|v| {
                    v.state = ServerState::Connected;
                    v.tools = Some(tools);
                    v.resources = resources;
                    v.prompts = prompts;
                });
                *link = Link::Up { conn, epoch };
            }
            Err(message) => {
                self.with_view(|v| v.state = ServerState::Failed(message));
                *link = Link::Failed;
            }
        }
    }

    /// Connect and list tools within the startup timeout. The caller holds `link`.
    async fn open(self: &Arc<Self>) -> Result<Opened, String> {
        let epoch = self.epochs.fetch_add(1, Ordering::Relaxed) + 1;
        let weak = Arc::downgrade(self);
        let on_changed: ListChanged = Arc::new(move || {
            if let Some(server) = weak.upgrade() {
                tokio::spawn(async move { server.relist(epoch).await });
            }
        });
        self.log.note(self.name(), &format!("starting ({})", self.config.transport.describe()));
        let started = Instant::now();
        let attempt = async {
            let client = connection::ClientSide {
                on_tools_changed: on_changed,
                roots: &self.config.roots,
                elicitor: self.config.elicitor.as_ref(),
                progress: self.progress.clone(),
            };
            let conn = connection::connect(
                self.name(),
                &self.config.transport,
                self.config.child_env.as_ref(),
                &self.log,
                client,
            )
            .await
            .map_err(|e| e.to_string())?;
            let tools =
                conn.client.peer().list_all_tools().await.map_err(|e| format!("the first `tools/list` failed: {e}"))?;
            // What else it offers: resources (read on demand) and prompts (listed now, for `/` commands).
            let info = conn.client.peer().peer_info();
            let resources = info.as_ref().is_some_and(|i| i.capabilities.resources.is_some());
            let prompts = match info.as_ref().is_some_and(|i| i.capabilities.prompts.is_some()) {
                true => conn.client.peer().list_all_prompts().await.unwrap_or_else(|e| {
                    self.log.note(self.name(), &format!("`prompts/list` failed: {e}"));
                    Vec::new()
                }),
                false => Vec::new(),
            };
            Ok::<_, String>((conn, tools, resources, prompts))
        };
        let result = match tokio::time::timeout(self.config.startup_timeout, attempt).await {
            Ok(result) => result,
            Err(_) => Err(format!(
                "did not finish `initialize` and `tools/list` within {} (startup_timeout){}; check that `{}` starts \
                 an MCP server, or raise startup_timeout for it",
                human(self.config.startup_timeout),
                self.log.hint(),
                self.config.transport.describe()
            )),
        };
        match result {
            Ok((conn, tools, resources, prompts)) => {
                let took = started.elapsed().as_millis();
                self.log.note(self.name(), &format!("connected in {took} ms with {} tools", tools.len()));
                if let Some(process) = &conn.process {
                    let exited = process.exited_future();
                    let weak = Arc::downgrade(self);
                    tokio::spawn(async move {
                        let status = exited.await;
                        if let Some(server) = weak.upgrade() {
                            server.mark_down(epoch, format!("the server process {status}")).await;
                        }
                    });
                }
                Ok(Opened { conn, tools, resources, prompts, epoch })
            }
            Err(message) => {
                self.log.note(self.name(), &format!("failed to start: {message}"));
                Err(message)
            }
        }
    }

    /// Record that session `epoch` ended, unless a newer one replaced it.
    async fn mark_down(&self, epoch: u64, reason: String) {
        let mut link = self.link.lock().await;
        if matches!(&*link, Link::Up { epoch: current, .. } if *current == epoch) {
            self.log.note(self.name(), &format!("disconnected: {reason}"));
            let restarts = self.with_view(|v| v.restarts);
            let state = if restarts < MAX_RESTARTS {
                format!("disconnected ({reason}); restarts on next use")
            } else {
                format!("disconnected ({reason}); given up after {MAX_RESTARTS} restarts")
            };
            self.with_view(|v| v.state = ServerState::Failed(state));
            // Dropping the connection kills whatever is left of the process group.
            *link = Link::Down { reason };
        }
    }

    /// Why session `epoch` broke, as well as can be told right now.
    async fn disconnect_reason(&self, epoch: u64) -> String {
        let link = self.link.lock().await;
        match &*link {
            Link::Up { conn, epoch: current } if *current == epoch => match &conn.process {
                Some(process) => match process.exit_status_within(server_process::EXIT_STATUS_WAIT).await {
                    Some(status) => format!("the server process {status}"),
                    None => "the server closed its connection".to_string(),
                },
                None => "the HTTP connection was lost".to_string(),
            },
            Link::Down { reason } => reason.clone(),
            _ => "the connection closed".to_string(),
        }
    }

    /// A session to send a call on, restarting a crashed server if allowed.
    async fn session(self: &Arc<Self>) -> Result<(Peer<RoleClient>, u64), ToolError> {
        let mut link = self.link.lock().await;
        let reason = match &*link {
            Link::Up { conn, epoch } => return Ok((conn.client.peer().clone(), *epoch)),
            Link::Closed => {
                return Err(ToolError::new(format!(
                    "MCP server `{}` has been shut down; its tools are unavailable for the rest of this session.",
                    self.name()
                )));
            }
            Link::Idle | Link::Failed => {
                let state = self.with_view(|v| v.state.clone());
                return Err(ToolError::new(format!("MCP server `{}` is not running ({state:?}).", self.name())));
            }
            Link::Down { reason } => reason.clone(),
        };
        let restarts = self.with_view(|v| v.restarts);
        if restarts >= MAX_RESTARTS {
            return Err(ToolError::new(format!(
                "MCP server `{}` keeps crashing ({reason}); tern has given up on it after {MAX_RESTARTS} restarts this \
                 session. Its tools will not work until tern is restarted: continue without them and tell the user{}.",
                self.name(),
                self.log.hint()
            )));
        }
        let attempt = restarts + 1;
        self.with_view(|v| v.restarts = attempt);
        self.log.note(self.name(), &format!("restarting ({attempt} of {MAX_RESTARTS}) after: {reason}"));
        match self.open().await {
            Ok(Opened { conn, tools, resources, prompts, epoch }) => {
                let peer = conn.client.peer().clone();
                self.with_view(|v| {
                    v.state = ServerState::Connected;
                    v.resources = resources;
                    v.prompts = prompts;
                });
                self.set_tools(tools);
                *link = Link::Up { conn, epoch };
                Ok((peer, epoch))
            }
            Err(message) => {
                self.with_view(|v| v.state = ServerState::Failed(format!("restart failed: {message}")));
                *link = Link::Down { reason: message.clone() };
                Err(ToolError::new(format!(
                    "MCP server `{}` had crashed ({reason}) and restarting it failed: {message}. {}",
                    self.name(),
                    self.restart_outlook(attempt)
                )))
            }
        }
    }

    fn restart_outlook(&self, used: u32) -> String {
        if used < MAX_RESTARTS {
            format!("tern will try again on the next call ({}).", restarts_left(used))
        } else {
            format!(
                "That was the last of {MAX_RESTARTS} restarts: tern has given up on this server for the session; \
                 continue without its tools and tell the user."
            )
        }
    }

    /// `tools/call` with the server's timeout, honouring `cancel`.
    pub async fn call(
        self: &Arc<Self>,
        tool: &str,
        arguments: Option<JsonObject>,
        cancel: &CancellationToken,
        updates: Option<tern_agent_loop::UpdateSink>,
    ) -> Result<ToolOutput, ToolError> {
        let mut params = CallToolRequestParams::new(tool.to_string());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        // Progress the server sends while this call runs shows as the call's output (rmcp puts a
        // progress token of its own on every request, so the running calls are what tells).
        let token = updates.map(|sink| {
            let token = format!("call-{}", self.next_token.fetch_add(1, Ordering::Relaxed) + 1);
            self.progress.lock().unwrap_or_else(|p| p.into_inner()).insert(token.clone(), sink);
            token
        });
        let result = self.request(tool, cancel, move |peer| async move { peer.call_tool(params).await }).await;
        if let Some(token) = token {
            self.progress.lock().unwrap_or_else(|p| p.into_inner()).remove(&token);
        }
        content::convert_result(self.name(), tool, result?)
    }

    /// `resources/list` (every page, at most [`MAX_RESOURCES`]).
    pub async fn list_resources(self: &Arc<Self>, cancel: &CancellationToken) -> Result<Vec<Resource>, ToolError> {
        self.request("resources/list", cancel, |peer| async move {
            let mut all = Vec::new();
            let mut cursor = None;
            loop {
                let page = peer.list_resources(Some(PaginatedRequestParams::default().with_cursor(cursor))).await?;
                all.extend(page.resources);
                cursor = page.next_cursor;
                if cursor.is_none() || all.len() >= MAX_RESOURCES {
                    all.truncate(MAX_RESOURCES);
                    return Ok(all);
                }
            }
        })
        .await
    }

    /// `resources/read` of `uri`.
    pub async fn read_resource(
        self: &Arc<Self>,
        uri: &str,
        cancel: &CancellationToken,
    ) -> Result<Vec<ResourceContents>, ToolError> {
        let params = ReadResourceRequestParams::new(uri.to_string());
        let what = format!("resources/read {uri}");
        self.request(&what, cancel, move |peer| async move { peer.read_resource(params).await.map(|r| r.contents) })
            .await
    }

    /// `prompts/get` of `name` with `arguments`: its messages.
    pub async fn get_prompt(
        self: &Arc<Self>,
        name: &str,
        arguments: Option<JsonObject>,
        cancel: &CancellationToken,
    ) -> Result<Vec<PromptMessage>, ToolError> {
        let mut params = GetPromptRequestParams::new(name.to_string());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let what = format!("prompts/get {name}");
        self.request(&what, cancel, move |peer| async move { peer.get_prompt(params).await.map(|r| r.messages) }).await
    }

    /// One request on the session (started or restarted as needed) within the
    /// server's tool timeout, honouring `cancel`; a failure worded for the model.
    async fn request<T, F, Fut>(
        self: &Arc<Self>,
        what: &str,
        cancel: &CancellationToken,
        make: F,
    ) -> Result<T, ToolError>
    where
        F: FnOnce(Peer<RoleClient>) -> Fut,
        Fut: std::future::Future<Output = Result<T, ServiceError>>,
    {
        let tool = what;
        let cancelled =
            || ToolError::new(format!("The call to `{tool}` on MCP server `{}` was cancelled.", self.name()));
        // A restart can take up to startup_timeout; let the user interrupt it too.
        let (peer, epoch) = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(cancelled()),
            session = self.session() => session?,
        };
        let limit = self.config.tool_timeout;
        // Dropping the request future (timeout or cancel) sends notifications/cancelled.
        let outcome = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(cancelled()),
            outcome = tokio::time::timeout(limit, make(peer)) => outcome,
        };
        match outcome {
            Ok(Ok(result)) => Ok(result),
            Err(_) => {
                self.log.note(self.name(), &format!("`{tool}` timed out after {}", human(limit)));
                Err(ToolError::new(format!(
                    "`{tool}` on MCP server `{}` did not answer within {} (the server's tool_timeout), so tern \
                     cancelled it. The server may be stuck or the request too slow: retry with a smaller request, \
                     try another way, or ask the user to raise tool_timeout for `{}`.",
                    self.name(),
                    human(limit),
                    self.name()
                )))
            }
            Ok(Err(e)) if connection::is_disconnect(&e) => {
                let reason = self.disconnect_reason(epoch).await;
                self.mark_down(epoch, reason.clone()).await;
                let restarts = self.with_view(|v| v.restarts);
                let next = if restarts < MAX_RESTARTS {
                    format!(
                        "tern will restart it when one of its tools is called next ({}); call the tool again if \
                         repeating it is safe.",
                        restarts_left(restarts)
                    )
                } else {
                    format!(
                        "tern has given up on it after {MAX_RESTARTS} restarts this session: continue without its \
                         tools and tell the user."
                    )
                };
                Err(ToolError::new(format!(
                    "MCP server `{}` crashed or disconnected while running `{tool}` ({reason}){}. {next}",
                    self.name(),
                    self.log.hint()
                )))
            }
            Ok(Err(ServiceError::McpError(error))) => Err(ToolError::new(format!(
                "MCP server `{}` rejected the call to `{tool}`: {} (JSON-RPC error {}). Check the arguments against \
                 the tool's schema.",
                self.name(),
                error.message,
                error.code.0
            ))),
            Ok(Err(e)) => {
                Err(ToolError::new(format!("The call to `{tool}` on MCP server `{}` failed: {e}.", self.name())))
            }
        }
    }

    /// Re-list tools after `notifications/tools/list_changed` on session `epoch`.
    async fn relist(self: Arc<Self>, epoch: u64) {
        let _one_at_a_time = self.relisting.lock().await;
        let peer = {
            let link = self.link.lock().await;
            match &*link {
                Link::Up { conn, epoch: current } if *current == epoch => conn.client.peer().clone(),
                _ => return,
            }
        };
        match tokio::time::timeout(self.config.startup_timeout, peer.list_all_tools()).await {
            Ok(Ok(tools)) => {
                self.log.note(self.name(), &format!("tool list changed; now {} tools", tools.len()));
                self.set_tools(tools);
            }
            Ok(Err(e)) => self.log.note(self.name(), &format!("re-listing tools after list_changed failed: {e}")),
            Err(_) => self.log.note(self.name(), "re-listing tools after list_changed timed out"),
        }
    }

    /// Store a new tool list; bump the generation if it differs.
    fn set_tools(&self, tools: Vec<McpToolDef>) {
        let changed = self.with_view(|v| {
            if v.tools.as_ref() == Some(&tools) {
                false
            } else {
                v.tools = Some(tools);
                true
            }
        });
        if changed {
            self.generation.send_modify(|g| *g += 1);
        }
    }

    /// Close the session and stop the process; later calls fail.
    pub async fn shutdown(&self) {
        let mut link = self.link.lock().await;
        self.close(&mut link, Link::Closed, "shutting down").await;
        if self.config.enabled {
            self.with_view(|v| v.state = ServerState::Failed("shut down".into()));
        }
    }

    /// End the session in `link` (if one is up), leaving `next` there.
    async fn close(&self, link: &mut Link, next: Link, why: &str) {
        let previous = std::mem::replace(link, next);
        if let Link::Up { conn, .. } = previous {
            self.log.note(self.name(), why);
            let Connection { client, process } = conn;
            // Cancelling closes stdin, which is how the MCP spec asks a stdio server to exit.
            let _ = tokio::time::timeout(Duration::from_secs(1), client.cancel()).await;
            if let Some(process) = process {
                process.terminate().await;
            }
        }
    }

    /// A person asked: end the session (if any) and start a new one, with
    /// the restarts counted from zero again (a server disabled in its
    /// config starts too). Its state after.
    pub async fn reconnect(self: &Arc<Self>) -> ServerState {
        let mut link = self.link.lock().await;
        if matches!(*link, Link::Closed) {
            return self.status().state;
        }
        self.close(&mut link, Link::Idle, "reconnecting, as asked").await;
        self.with_view(|v| {
            v.state = ServerState::Starting;
            v.tools = None;
            v.restarts = 0;
        });
        self.open_into(&mut link).await;
        drop(link);
        self.generation.send_modify(|g| *g += 1);
        self.status().state
    }

    /// A person turned it off: the session ends and its tools leave the list
    /// until [`Server::reconnect`]. Its state after.
    pub async fn turn_off(&self) -> ServerState {
        let mut link = self.link.lock().await;
        if matches!(*link, Link::Closed) {
            return self.status().state;
        }
        self.close(&mut link, Link::Idle, "turned off, as asked").await;
        self.with_view(|v| {
            v.state = ServerState::Disabled;
            v.tools = None;
        });
        drop(link);
        self.generation.send_modify(|g| *g += 1);
        self.status().state
    }
}

/// `2 restarts left this session`.
fn restarts_left(used: u32) -> String {
    match MAX_RESTARTS.saturating_sub(used) {
        1 => "1 restart left this session".to_string(),
        n => format!("{n} restarts left this session"),
    }
}

/// `500 ms`, `30 s`, `1.5 s`.
pub fn human(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(human(Duration::from_millis(500)), "500 ms");
        assert_eq!(human(Duration::from_secs(30)), "30 s");
        assert_eq!(human(Duration::from_millis(1500)), "1.5 s");
    }
}
