//! The MCP servers an agent brings ([`AgentProfile::inline_servers`]):
//! started when a subagent of that profile starts, seen only by it, and
//! stopped (their process groups killed) when it ends, is cancelled, or
//! tern exits.
//!
//! They start under the rules of the session's own servers: a project's
//! agent file is read only in a trusted folder (so an untrusted one starts
//! nothing) and may neither expand nor name a secret; `[mcp]
//! allowed_servers` / `denied_servers` and `--no-mcp` apply; each server's
//! `startup_timeout_sec` bounds its start. A server with the name of a
//! configured one is not started: the person's rules for that name must
//! not reach a server an agent file defined. A server that cannot start
//! fails the agent when it is `required`, and is named in a notice
//! otherwise.

use std::path::PathBuf;
use std::sync::Arc;

use tern_mcp::{McpManager, ServerConfig, ServerState};

use crate::agents::AgentProfile;

/// What an agent's servers start with: the session's settings for its own.
#[derive(Clone)]
pub(crate) struct ServerKit {
    /// The workspace (relative paths start there; the first root).
    pub workspace: PathBuf,
    /// More roots answered to `roots/list` (`--add-dir`).
    pub extra_roots: Vec<PathBuf>,
    /// The environment they start from (secrets removed).
    pub child_env: tern_protocol::ChildEnv,
    /// Where their stderr goes (the session's MCP log).
    pub log_file: PathBuf,
    /// Who fills the forms they ask for.
    pub elicitor: Option<tern_mcp::ElicitHost>,
    /// `--no-mcp`: none start.
    pub no_mcp: bool,
    /// `[mcp] allowed_servers` / `denied_servers`.
    pub rules: tern_config::config::McpSection,
    /// The session's configured servers' names (an agent's may not reuse one).
    pub configured: Vec<String>,
}

/// An agent's servers, running: stop them with [`AgentServers::stop`]
/// (dropping them kills their processes too).
pub(crate) struct AgentServers {
    /// Their manager (`None`: none started).
    pub manager: Option<Arc<McpManager>>,
}

impl AgentServers {
    /// Stop every server (process groups killed and waited for).
    pub(crate) async fn stop(&self) {
        if let Some(m) = &self.manager {
            m.shutdown().await;
        }
    }
}

/// Start `profile`'s own servers, all at once, each within its start
/// timeout. A required one that cannot start fails the agent (the others
/// are stopped); what did not start otherwise is said through `notice`.
/// `cancel` (the `task` call's) or tern being asked to end stops the wait
/// at once: every server is stopped and the agent does not start.
pub(crate) async fn start(
    profile: &AgentProfile,
    kit: &ServerKit,
    notice: &(dyn Fn(String) + Send + Sync),
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<AgentServers, String> {
    let agent = &profile.name;
    let mut configs: Vec<(ServerConfig, bool)> = Vec::new();
    for server in &profile.inline_servers {
        let refused =
            settings(profile, server, kit.no_mcp, &kit.rules, &kit.configured, &kit.workspace, &kit.child_env);
        match refused {
            Ok(config) => {
                let config =
                    crate::startup::with_session(config, &kit.extra_roots, kit.elicitor.as_ref(), &kit.child_env);
                configs.push((config, server.required));
            }
            Err(why) if server.required => return Err(required_failed(agent, &server.name, &why)),
            Err(why) => notice(without(agent, &server.name, &why)),
        }
    }
    if configs.is_empty() {
        return Ok(AgentServers { manager: None });
    }
    let required: Vec<(String, bool)> = configs.iter().map(|(c, r)| (c.name.clone(), *r)).collect();
    let configs = configs.into_iter().map(|(c, _)| c).collect();
    let manager = crate::startup::start_logged(configs, &kit.log_file).await;
    let servers = AgentServers { manager: Some(manager.clone()) };
    // Every first start, each bounded by its own startup timeout; a cancel does not wait for them.
    let cancelled = tokio::select! {
        () = manager.ready() => false,
        () = cancel.cancelled() => true,
        () = crate::ending::requested() => true,
    };
    if cancelled {
        servers.stop().await;
        return Err(format!("agent `{agent}`: cancelled while its MCP servers started"));
    }
    for status in manager.statuses() {
        let ServerState::Failed(why) = &status.state else { continue };
        if required.iter().any(|(name, r)| *r && *name == status.name) {
            servers.stop().await;
            return Err(required_failed(agent, &status.name, why));
        }
        notice(without(agent, &status.name, why));
    }
    Ok(servers)
}

/// The start settings of `profile`'s server `server`, or why it may not start.
fn settings(
    profile: &AgentProfile,
    server: &tern_config::agents::AgentServer,
    no_mcp: bool,
    rules: &tern_config::config::McpSection,
    configured: &[String],
    workspace: &std::path::Path,
    child_env: &tern_protocol::ChildEnv,
) -> Result<ServerConfig, String> {
    if no_mcp {
        return Err("MCP servers are off for this run (--no-mcp)".to_string());
    }
    if let Some(why) = tern_config::mcp_config::denied_by(rules, &server.name) {
        return Err(format!("it is {why}"));
    }
    if configured.iter().any(|c| c == &server.name) {
        return Err("a configured MCP server has this name; rename the agent's server".to_string());
    }
    tern_config::mcp_config::agent_server_config(
        &server.name,
        &server.section,
        &profile.path,
        &profile.origin,
        workspace,
        child_env,
    )
    .map_err(|e| e.problem.to_string())
}

/// The `--agent` profile's own servers join the session's (`servers`): the
/// session is that agent, so they start and stop with it. One that may not
/// start is listed failed with the reason, as a configured one would be.
pub(crate) fn add_to_session(
    profile: &AgentProfile,
    servers: &mut Vec<tern_config::mcp_config::ConfiguredServer>,
    no_mcp: bool,
    rules: &tern_config::config::McpSection,
    workspace: &std::path::Path,
    child_env: &tern_protocol::ChildEnv,
) {
    let configured: Vec<String> = servers.iter().map(|s| s.name.clone()).collect();
    for server in &profile.inline_servers {
        let origin = profile.path.display().to_string();
        let config = settings(profile, server, no_mcp, rules, &configured, workspace, child_env).map_err(|why| {
            tern_config::mcp_config::McpServerError {
                origin: origin.clone(),
                server: server.name.clone(),
                problem: tern_config::mcp_config::ServerProblem::Invalid { why },
            }
        });
        servers.push(tern_config::mcp_config::ConfiguredServer {
            name: server.name.clone(),
            origin,
            config,
            denied: None,
        });
    }
}

/// The session cannot run as `profile` when one of its required servers
/// did not start: waits for those still starting (not for the session's
/// other servers, and not once tern is asked to end), then names the first
/// that failed and why.
pub(crate) async fn check_required(
    profile: &AgentProfile,
    servers: &[tern_config::mcp_config::ConfiguredServer],
    mcp: Option<&McpManager>,
) -> Result<(), String> {
    let required: Vec<&str> = profile.inline_servers.iter().filter(|s| s.required).map(|s| s.name.as_str()).collect();
    if required.is_empty() {
        return Ok(());
    }
    for name in &required {
        if let Some(Err(e)) = servers.iter().find(|s| s.name == *name).map(|s| &s.config) {
            return Err(required_failed(&profile.name, name, &e.problem.to_string()));
        }
    }
    let Some(mcp) = mcp else {
        return Err(required_failed(&profile.name, required[0], "MCP servers are off for this run (--no-mcp)"));
    };
    loop {
        // Read before the states, so that a change after them is not missed.
        let seen = mcp.generation();
        let starting =
            mcp.statuses().into_iter().any(|s| required.contains(&s.name.as_str()) && s.state == ServerState::Starting);
        if !starting {
            break;
        }
        // A first start that ends bumps the generation; the tick covers one that does not (disabled).
        tokio::select! {
            _ = mcp.generation_changed(seen) => {}
            () = tokio::time::sleep(std::time::Duration::from_millis(100)) => {}
            // The run ends before its first request: the front end says why.
            () = crate::ending::requested() => return Ok(()),
        }
    }
    for status in mcp.statuses().into_iter().filter(|s| required.contains(&s.name.as_str())) {
        match &status.state {
            ServerState::Failed(why) => return Err(required_failed(&profile.name, &status.name, why)),
            ServerState::Disabled => return Err(required_failed(&profile.name, &status.name, "it is disabled")),
            _ => {}
        }
    }
    Ok(())
}

fn required_failed(agent: &str, server: &str, why: &str) -> String {
    format!("agent `{agent}` cannot start: its required MCP server `{server}` did not start: {why}")
}

fn without(agent: &str, server: &str, why: &str) -> String {
    format!("agent `{agent}`: its MCP server `{server}` did not start ({why}); the agent runs without it")
}

impl crate::Runtime {
    /// What an agent's own servers start with: the settings the session's
    /// servers started with.
    pub(crate) fn agent_server_kit(&self) -> Arc<ServerKit> {
        // Made once, on the first run that lends it (every part is fixed for the session).
        self.server_kit
            .get_or_init(|| {
                let elicitor = self.overrides.elicitor.clone().unwrap_or_else(|| {
                    tern_mcp::Host(Arc::new(crate::elicitation::SessionElicitor {
                        interaction: self.interaction.clone(),
                    }))
                });
                Arc::new(ServerKit {
                    workspace: self.workspace.clone(),
                    extra_roots: crate::startup::added_dirs(&self.overrides).unwrap_or_default(),
                    child_env: self.child_env.clone(),
                    log_file: self.paths.log_file(),
                    elicitor: Some(elicitor),
                    no_mcp: self.overrides.no_mcp,
                    rules: self.config.mcp.clone(),
                    configured: self.servers.iter().map(|s| s.name.clone()).collect(),
                })
            })
            .clone()
    }
}
