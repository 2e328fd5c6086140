//! Subagents: the `task` tool ([`tern_tools::task`]) runs, through
//! [`SessionDelegate`], a child agent loop with a fresh
//! conversation and a capped catalog, and returns its final answer as the
//! tool's result. A `fork` instead goes on from the parent's conversation
//! with the parent's tool array ([`crate::fork`]).
//!
//! - Roles: `explore` and `verifier` (the same read-only tools, bash
//!   included; they differ in policy, below), `worker`, and any agent
//!   profile ([`crate::agents`]) by name.
//!   The read-only roles are capped by the policy too, not only by their
//!   tool list (`RoleCap`): `explore` runs nothing that could change
//!   anything, in the read-only sandbox; `verifier` runs such a command only
//!   when a person approves it.
//! - A child never gets `task`, `todo_write` or `ask_user` (the catalog's
//!   profile caps; a fork is offered them but refused at execution), so
//!   there is no nesting beyond one level.
//! - Several `task` calls in one batch run at once (the tool is parallel),
//!   at most [`MAX_CONCURRENT`] at a time.
//! - The child's calls go through the same policy, hooks, sandbox and
//!   permission prompt as the parent's; its messages are not written to the
//!   session's conversation (its answer is, as the tool result).
//! - Cancelling the parent cancels the child: its loop stops and its tools
//!   are killed.
//! - An agent that brings MCP servers ([`crate::agent_servers`]) has them
//!   started before its first request and stopped when it ends; a
//!   required one that cannot start fails the `task` call at once.
//! - Every event of the child reaches the parent's event stream wrapped in
//!   [`AgentEvent::Subagent`] with the parent's call id; its usage and cost
//!   count in the run's and the session's totals.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::future::BoxFuture;
use tern_agent_loop::{AgentLoop, EventSink, LoopConfig, RuntimeTool, ToolError};
use tern_catalog::{AgentKind, Registry, SubagentRole, TurnFacts};
use tern_protocol::{AgentEvent, AgentStopReason, Message, SubagentState, TaskDetails, ToolSource, Usage};
use tern_tools::task::{Delegate, Delegated, TaskRequest};
use tern_tools::task_append::SubagentLink;
use tokio_util::sync::CancellationToken;

use crate::agents::AgentProfile;
use crate::permissions::PolicyHooks;
use crate::turn_catalog::TurnCatalog;
use tern_protocol::sync::LockExt as _;

/// Children running at once, at most.
pub const MAX_CONCURRENT: usize = 4;
/// Model requests one child may make.
const MAX_CHILD_TURNS: u32 = 60;

/// Builds a system prompt for a tool list.
pub(crate) type SystemFor = Arc<dyn Fn(&tern_catalog::Assembly) -> String + Send + Sync>;

/// What one run lends its children: set when a prompt starts, cleared when it ends.
pub(crate) struct Kit {
    /// The provider client.
    pub client: Arc<dyn tern_llm::Provider>,
    /// The session's tools before MCP, with what the catalog knows of them
    /// (the catalog caps them per child).
    pub tools: Vec<tern_catalog::Entry>,
    /// MCP servers.
    pub mcp: Option<Arc<tern_mcp::McpManager>>,
    /// The policy.
    pub policy: Arc<tern_policy::engine::Policy>,
    /// The session's catalog facts.
    pub facts: TurnFacts,
    /// The parent's loop settings (model, output limit).
    pub config: LoopConfig,
    /// The system prompt for a tool list.
    pub system: SystemFor,
    /// The hooks a child's calls go through (the run's, recording nothing).
    pub hooks: Arc<PolicyHooks>,
    /// The run's event stream.
    pub events: EventSink,
    /// Prices of the session's model, for the child's cost.
    pub model_info: tern_llm::ModelInfo,
    /// The wire format the session speaks (an agent's `model: sonnet` is a
    /// Claude model only there).
    pub api: tern_llm::Api,
    /// Prices of another model (a custom agent's `model:`).
    pub price_of: Arc<dyn Fn(&str) -> tern_llm::ModelInfo + Send + Sync>,
    /// Where agent profiles are found: the project's folders (nearest
    /// first, with their trust) and the user's config dir.
    pub agents: (Vec<(std::path::PathBuf, bool)>, std::path::PathBuf),
    /// Agents the driving program defined (found first).
    pub defined_agents: Vec<AgentProfile>,
    /// Background tasks (a subagent run with `run_in_background` is one).
    pub background: Arc<tern_tools::background::BackgroundTasks>,
    /// Where their logs go.
    pub output_dir: std::path::PathBuf,
    /// The run's own catalog: a fork calls deferred tools through it.
    pub catalog: Arc<dyn tern_agent_loop::TurnTools>,
    /// What the MCP servers an agent brings start with.
    pub servers: Arc<crate::agent_servers::ServerKit>,
}

/// The usage of every child of a run, and its cost.
#[derive(Debug, Default)]
pub(crate) struct ChildUsage {
    /// Each response.
    pub responses: Vec<Usage>,
    /// Their cost.
    pub cost_usd: f64,
}

/// State the runtime and its `task` tool share.
pub(crate) struct Subagents {
    kit: Mutex<Option<Arc<Kit>>>,
    usage: Mutex<ChildUsage>,
    slots: Arc<tokio::sync::Semaphore>,
    /// The main loop's last request and reply, for a fork.
    pub(crate) fork_point: Arc<crate::fork::ForkPoint>,
}

impl Subagents {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            kit: Mutex::new(None),
            usage: Mutex::new(ChildUsage::default()),
            slots: Arc::new(tokio::sync::Semaphore::new(MAX_CONCURRENT)),
            fork_point: Default::default(),
        })
    }

    /// A run starts: its children use `kit`.
    pub(crate) fn begin(&self, kit: Kit) {
        *self.kit.lock_or_recover() = Some(Arc::new(kit));
    }

    /// Count `responses` of a child priced by `model_info`; their cost.
    fn count(&self, responses: &[Usage], model_info: &tern_llm::ModelInfo) -> f64 {
        let cost = tern_protocol::sum_usd(responses.iter().map(|u| model_info.cost_usd(u)));
        let mut usage = self.usage.lock_or_recover();
        usage.responses.extend(responses.iter().cloned());
        usage.cost_usd += cost;
        cost
    }

    /// What the run's children cost so far.
    pub(crate) fn cost_so_far(&self) -> f64 {
        self.usage.lock_or_recover().cost_usd
    }

    /// The run ended: what its children used.
    pub(crate) fn end(&self) -> ChildUsage {
        *self.kit.lock_or_recover() = None;
        self.fork_point.clear();
        std::mem::take(&mut *self.usage.lock_or_recover())
    }
}

/// The session's side of the `task` tool ([`tern_tools::task`]): it runs
/// the children.
pub(crate) struct SessionDelegate {
    shared: Arc<Subagents>,
}

impl SessionDelegate {
    /// The `task` tool over `shared`.
    pub(crate) fn runtime_tool(shared: Arc<Subagents>) -> RuntimeTool {
        tern_tools::task::runtime_tool(Arc::new(SessionDelegate { shared }))
    }
}

/// The session's tools for a child: built-ins as built-ins, an embedder's
/// and extensions' tools as such (their facts kept: a tool that writes stays
/// out of a read-only role).
fn child_registry(entries: &[tern_catalog::Entry]) -> Result<Registry, ToolError> {
    let (builtin, other): (Vec<_>, Vec<_>) =
        entries.iter().cloned().partition(|e| e.tool.source == ToolSource::Builtin);
    let mut registry = Registry::new(builtin.into_iter().map(|e| e.tool).collect())
        .map_err(|e| ToolError::new(format!("tool registry: {e}")))?;
    for e in other {
        match e.tool.source {
            ToolSource::Extension { .. } => {
                registry.add_extension_tool(e.tool, e.meta);
            }
            _ => registry.add_sdk_tool(e.tool, e.meta),
        }
    }
    Ok(registry)
}

/// What a child runs as.
struct Child {
    role: Option<SubagentRole>,
    profile: Option<AgentProfile>,
    name: String,
}

fn child_of(kind: &str, kit: &Kit) -> Result<Child, String> {
    let kind = kind.trim();
    let role = |r: &str| r.parse::<SubagentRole>().ok();
    if kind.is_empty() {
        return Ok(Child { role: Some(SubagentRole::Explore), profile: None, name: "explore".into() });
    }
    if kind == crate::fork::FORK {
        return Ok(Child { role: None, profile: None, name: kind.into() });
    }
    if let Some(r) = role(kind) {
        return Ok(Child { role: Some(r), profile: None, name: kind.to_ascii_lowercase() });
    }
    let (folders, config_dir) = &kit.agents;
    let defined = kit.defined_agents.iter().find(|a| a.name == kind).cloned();
    let profile = match defined {
        Some(profile) => Ok(profile),
        None => crate::agents::load_agent(kind, folders, config_dir, kit.policy.context().home.as_deref()),
    }
    .map_err(|e| format!("{e}. Built-in subagent types: explore, worker, verifier, fork"))?;
    let role = match profile.role.as_deref() {
        None => None,
        Some(r) => Some(role(r).ok_or_else(|| format!("agent `{kind}`: unknown role `{r}`"))?),
    };
    Ok(Child { role, name: profile.name.clone(), profile: Some(profile) })
}

/// A child with a fresh conversation: its capped catalog, its system
/// prompt, its model (and that model's prices).
fn fresh_child(
    kit: &Kit,
    child: &Child,
    request: &TaskRequest,
    own_servers: Option<Arc<tern_mcp::McpManager>>,
) -> Result<(AgentLoop, tern_llm::ModelInfo), ToolError> {
    let mut facts = kit.facts.clone();
    facts.agent.kind = AgentKind::Subagent;
    facts.agent.role = child.role;
    facts.agent.name = Some(child.name.clone());
    facts.agent.tools = child.profile.as_ref().map(|p| p.tools.clone()).unwrap_or_default();
    facts.agent.disallowed_tools = child.profile.as_ref().map(|p| p.disallowed_tools.clone()).unwrap_or_default();
    if let Some(servers) = child.profile.as_ref().and_then(|p| p.mcp_servers.clone()) {
        facts.config.mcp_allow = Some(servers);
    }
    let registry = child_registry(&kit.tools)?;
    let catalog = TurnCatalog::new(registry, facts, kit.mcp.clone(), kit.policy.clone()).with_own_servers(own_servers);
    let catalog = Arc::new(catalog);
    let mut system = (kit.system)(&catalog.assemble());
    system.push_str(&format!(
        "\n# Subagent\nYou are a subagent ({}) started by another agent for one task. {} Work on your own: \
         nobody answers questions. Your final message is returned to that agent as your whole answer, \
         so make it complete and self-contained.\n",
        child.name,
        role_brief(child.role)
    ));
    if let Some(body) = child.profile.as_ref().map(|p| p.body.trim()).filter(|b| !b.is_empty()) {
        system.push_str(&format!("\n# Agent: {}\n{body}\n", child.name));
    }
    let mut config = kit.config.clone();
    config.system = system;
    config.max_turns = Some(MAX_CHILD_TURNS);
    config.context_limit = None;
    config.cache_key = config.cache_key.map(|k| format!("{k}/{}", request.call_id));
    // A custom agent's own model runs it, and prices it. Claude Code's aliases
    // (`sonnet`) are Claude models on the Anthropic API; elsewhere the session's runs it.
    let asked = child.profile.as_ref().and_then(|p| p.model.clone());
    let asked = match asked {
        Some(m) if tern_llm::is_claude_alias(&m) => match tern_llm::claude_alias(&m, kit.api) {
            Some(model) => Some(model.to_string()),
            None => {
                (kit.events)(AgentEvent::Notice {
                    message: format!(
                        "agent `{}` asks for `{m}`, a Claude model; it runs on the session's model",
                        child.name
                    ),
                });
                None
            }
        },
        other => other,
    };
    let model_info = match asked {
        Some(model) => {
            let info = (kit.price_of)(&model);
            config.model = model;
            config.tool_call_format = info.tool_call_format;
            info
        }
        None => kit.model_info.clone(),
    };
    // Its calls go through the run's policy and hooks, capped by its role.
    let hooks = Arc::new(kit.hooks.for_role(child.role).priced(&model_info));
    Ok((AgentLoop::with_turn_tools(kit.client.clone(), catalog, hooks, config), model_info))
}

/// A fork ([`crate::fork`]): the parent's request as it was, the parent's
/// rights (no role cap), stopping where the parent would compact.
fn fork_child(kit: &Kit, fork: crate::fork::Fork) -> (AgentLoop, Vec<Message>, tern_llm::ModelInfo) {
    let request = &fork.request;
    let mut config = kit.config.clone();
    config.model = request.model.clone();
    config.system = request.system.clone();
    config.max_tokens = request.max_tokens;
    config.thinking_budget = request.thinking_budget;
    config.cache_key = request.cache_key.clone();
    // The parent's wire form too: a parent gone over to prompt form (its server refuses `tools`) is not
    // asked again in the form the server refused.
    config.tool_call_format = request.tool_call_format;
    config.max_turns = Some(MAX_CHILD_TURNS);
    // Past the parent's threshold the fork stops (a subagent does not compact).
    config.context_limit = Some(fork_limit(kit));
    let model_info =
        if request.model == kit.config.model { kit.model_info.clone() } else { (kit.price_of)(&request.model) };
    let tools = fork.turn_tools(kit.catalog.clone());
    let hooks = Arc::new(kit.hooks.for_role(None).priced(&model_info));
    let agent = AgentLoop::with_turn_tools(kit.client.clone(), tools, hooks, config);
    (agent, fork.history, model_info)
}

/// The most tokens a fork's conversation may hold: where the parent
/// compacts, or the model's window when it does not.
fn fork_limit(kit: &Kit) -> u64 {
    kit.config.context_limit.unwrap_or(kit.model_info.context_window)
}

/// What a role is told.
fn role_brief(role: Option<SubagentRole>) -> &'static str {
    match role {
        Some(SubagentRole::Explore) => {
            "You explore: read, search and list to answer the task. You cannot change anything. Report what you \
             found with file paths and line numbers."
        }
        Some(SubagentRole::Verifier) => {
            "You verify: read the code and run tests or checks with bash to confirm whether the work is right. \
             Do not change files. Report what you ran and what passed or failed."
        }
        Some(SubagentRole::Worker) | None => {
            "You do the task: make the changes it asks for, check them, and report what you changed."
        }
    }
}

impl Delegate for SessionDelegate {
    fn delegate(&self, request: TaskRequest, cancel: CancellationToken) -> BoxFuture<'_, Result<Delegated, ToolError>> {
        Box::pin(async move {
            let Some(kit) = self.shared.kit.lock_or_recover().clone() else {
                return Err(ToolError::new("subagents are not available in this run"));
            };
            let child = child_of(&request.subagent_type, &kit).map_err(ToolError::new)?;
            // Wait for a free slot (cancellable).
            let _slot = tokio::select! {
                slot = self.shared.slots.clone().acquire_owned() => slot.map_err(|_| ToolError::new("subagents are shutting down"))?,
                () = cancel.cancelled() => return Err(ToolError::new("cancelled before the subagent started")),
            };
            // A fork starts from the conversation as it stands at this call (the parent waits in this
            // batch, so it stands still). Copied only once a slot is free: a reply of many forks holds
            // at most as many copies as run at once.
            let fork = if child.name == crate::fork::FORK {
                Some(self.shared.fork_point.fork(&request.call_id, &request.prompt).map_err(ToolError::new)?)
            } else {
                None
            };
            if let Some(why) = fork.as_ref().and_then(|f| f.too_large(fork_limit(&kit))) {
                return Err(ToolError::new(why));
            }
            let started = Instant::now();
            // The servers a fresh child brings start now (a required one that cannot fails it here); a fork
            // keeps the parent's tools, so it brings none of its own.
            let own = match child.profile.as_ref().filter(|p| fork.is_none() && !p.inline_servers.is_empty()) {
                None => None,
                Some(profile) => {
                    let events = kit.events.clone();
                    let notice = move |message: String| events(AgentEvent::Notice { message });
                    Some(
                        crate::agent_servers::start(profile, &kit.servers, &notice, &cancel)
                            .await
                            .map_err(ToolError::new)?,
                    )
                }
            };
            let (agent, mut history, model_info) = match fork {
                Some(fork) => fork_child(&kit, fork),
                None => {
                    let own_servers = own.as_ref().and_then(|s| s.manager.clone());
                    let (agent, model_info) = fresh_child(&kit, &child, &request, own_servers)?;
                    (agent, vec![Message::user_text(request.prompt.clone())], model_info)
                }
            };
            let parent_events = kit.events.clone();
            let parent_id = request.call_id.clone();
            let events: EventSink = Arc::new(move |e| {
                parent_events(AgentEvent::Subagent { parent_tool_use_id: parent_id.clone(), event: Box::new(e) });
            });
            if request.run_in_background {
                // Its progress for task_output, and the appends task_append queues for it.
                let link = SubagentLink::new(&child.name, model_info.input_per_mtok > 0.0);
                let label = format!("subagent {}: {}", child.name, request.description);
                let handle = kit.background.start_subagent(&kit.output_dir, &label, link.clone())?;
                let agent = agent.with_inbox(link.clone());
                let id = handle.id().to_string();
                // Its events reach the run that started it while that run lasts; its answer stays for task_output.
                let (shared, this_run) = (self.shared.clone(), kit.clone());
                let forward = events.clone();
                let (observed, announced, price) = (link.clone(), handle.clone(), model_info.clone());
                let events: EventSink = Arc::new(move |e| {
                    observed.observe(&e);
                    match &e {
                        AgentEvent::AssistantMessage { usage, .. } => observed.count(usage, price.cost_usd(usage)),
                        AgentEvent::InputAppended { .. } => announced.announce(),
                        _ => {}
                    }
                    let current = shared.kit.lock_or_recover().clone();
                    if current.is_some_and(|k| Arc::ptr_eq(&k, &this_run)) {
                        forward(e);
                    }
                });
                let shared = self.shared.clone();
                // A background child does not hold a slot: four of them would
                // block every later `task` for as long as they run. The
                // background task limit bounds them.
                drop(_slot);
                tokio::spawn(async move {
                    let outcome = agent.run(&mut history, &events, &handle.stopped()).await;
                    if let Some(own) = &own {
                        own.stop().await;
                    }
                    shared.count(&outcome.responses, &model_info);
                    let answer = outcome.final_text.trim();
                    let (mut text, status, state) = match outcome.stop_reason {
                        AgentStopReason::Completed => (
                            answer.to_string(),
                            tern_protocol::TaskStatus::Exited { exit_code: Some(0) },
                            SubagentState::Finished,
                        ),
                        AgentStopReason::Aborted => {
                            ("(stopped)".to_string(), tern_protocol::TaskStatus::Stopped, SubagentState::Stopped)
                        }
                        _ => (
                            format!("the subagent stopped: {}", outcome.error.as_deref().unwrap_or("no answer")),
                            tern_protocol::TaskStatus::Exited { exit_code: Some(1) },
                            SubagentState::Failed,
                        ),
                    };
                    let unread = link.end(state);
                    if !unread.is_empty() {
                        text.push_str(&format!(
                            "\n({} task_append instructions were never read: it {state})",
                            unread.len()
                        ));
                    }
                    handle.push(&format!("{text}\n"));
                    handle.finish(status);
                });
                return Ok(Delegated::Started { id, agent: child.name });
            }
            let child_cancel = cancel.child_token();
            let outcome = agent.run(&mut history, &events, &child_cancel).await;
            // Its servers end with it, cancelled or not (dropped unawaited, they are killed too).
            if let Some(own) = &own {
                own.stop().await;
            }
            let cost_usd = self.shared.count(&outcome.responses, &model_info);
            Ok(Delegated::Finished {
                answer: outcome.final_text.trim().to_string(),
                error: outcome.error,
                details: TaskDetails {
                    subagent_type: child.name,
                    turns: outcome.turns,
                    usage: outcome.usage,
                    cost_usd,
                    duration_ms: started.elapsed().as_millis() as u64,
                    stop_reason: outcome.stop_reason,
                },
            })
        })
    }
}
