//! Requests tern sends the program driving it over stream-json (a
//! `control_request` line on stdout, answered by a `control_response` line
//! on stdin): permission questions (`can_use_tool`), the hook callbacks it
//! registered (`hook_callback`), and messages for its in-process MCP
//! servers (`mcp_message`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Value, json};
use tern_protocol::claude;
use tern_protocol::sync::LockExt as _;
use tern_runtime::apply::Interrupter;
use tokio::sync::oneshot;

use crate::{claude_wire, describe, print_line, say};

/// The control channel to the caller. Once stdin is closed nothing can be
/// answered: what waits, and what is asked later, fails at once.
#[derive(Clone, Default)]
pub(crate) struct Caller {
    inner: Arc<CallerState>,
}

#[derive(Default)]
struct CallerState {
    pending: Mutex<HashMap<String, oneshot::Sender<Value>>>,
    closed: AtomicBool,
    next: AtomicU64,
}

/// Why a request got no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NoAnswer {
    /// Stdin was closed (before it was asked, or while it waited).
    Closed,
}

impl Caller {
    /// Stdin closed: nobody can answer; the requests waiting fail.
    pub(crate) fn close(&self) {
        self.inner.closed.store(true, Ordering::SeqCst);
        self.inner.pending.lock_or_recover().clear();
    }

    /// A `control_response` body (`{subtype, request_id, response|error}`),
    /// handed to the request it answers.
    pub(crate) fn answer(&self, mut response: Value) {
        // Without a subtype, an answer is a success (as tern has always read it).
        if let Some(fields) = response.as_object_mut() {
            fields.entry("subtype").or_insert_with(|| json!("success"));
        }
        let Some(id) = response.get("request_id").and_then(Value::as_str).map(str::to_string) else {
            say("stdin: a control_response tern cannot read; it needs response.request_id");
            return;
        };
        let waiting = self.inner.pending.lock_or_recover().remove(&id);
        match waiting {
            Some(tx) => {
                let _ = tx.send(response);
            }
            None => say(&format!("stdin: a control_response for `{id}`, which nothing asked")),
        }
    }

    /// Ask `request`; the whole `control_response` body.
    pub(crate) async fn ask(&self, kind: &str, request: claude_wire::Outgoing) -> Result<Value, NoAnswer> {
        if self.inner.closed.load(Ordering::SeqCst) {
            return Err(NoAnswer::Closed);
        }
        let id = format!("tern-{kind}-{}", self.inner.next.fetch_add(1, Ordering::SeqCst) + 1);
        let (tx, rx) = oneshot::channel();
        self.inner.pending.lock_or_recover().insert(id.clone(), tx);
        print_line(&claude_wire::Line::ControlRequest { request_id: id, request });
        rx.await.map_err(|_| NoAnswer::Closed)
    }

    /// Ask `request` and read a success's `response`, or the error it answered.
    pub(crate) async fn call(&self, kind: &str, request: claude_wire::Outgoing) -> Result<Value, String> {
        let answer = self.ask(kind, request).await.map_err(|_| "stdin is closed, so nobody can answer".to_string())?;
        match answer.get("subtype").and_then(Value::as_str) {
            Some("success") => Ok(answer.get("response").cloned().unwrap_or(Value::Null)),
            Some("error") => Err(answer.get("error").and_then(Value::as_str).unwrap_or("an error").to_string()),
            other => Err(format!("an answer of subtype {other:?}; expected success or error")),
        }
    }
}

/// The caller's in-process MCP servers: each JSON-RPC message goes out as
/// an `mcp_message` control request; the answer's `mcp_response` comes back.
impl tern_runtime::SdkRelay for Caller {
    fn deliver(&self, server: &str, message: Value) -> futures::future::BoxFuture<'static, Result<Value, String>> {
        let (caller, server) = (self.clone(), server.to_string());
        Box::pin(async move {
            let request = claude_wire::Outgoing::McpMessage { server_name: server, message };
            let mut response = caller.call("mcp", request).await?;
            match response.get_mut("mcp_response") {
                Some(answer) => Ok(answer.take()),
                None => Err("the answer to mcp_message had no `mcp_response`".to_string()),
            }
        })
    }
}

/// MCP servers' forms go to the caller (`elicitation` control requests,
/// the SDKs' `onElicitation`); anything but an `accept` with content, or
/// no answer, declines.
impl tern_runtime::Elicitor for Caller {
    fn elicit(&self, form: tern_runtime::Elicitation) -> futures::future::BoxFuture<'static, Option<Value>> {
        let caller = self.clone();
        Box::pin(async move {
            let request = claude_wire::Outgoing::Elicitation {
                mcp_server_name: form.server,
                message: form.message,
                mode: "form",
                requested_schema: form.schema,
            };
            let answer = caller.call("elicit", request).await.ok()?;
            (answer.get("action").and_then(Value::as_str) == Some("accept"))
                .then(|| answer.get("content").cloned())
                .flatten()
                .filter(Value::is_object)
        })
    }
}

/// The hook callbacks the caller registered in `initialize`.
pub(crate) struct SdkHooks {
    pub(crate) caller: Caller,
}

impl tern_runtime::hooks::HookCallbacks for SdkHooks {
    fn call(&self, id: &str, input: Value, tool_use_id: Option<String>) -> tern_runtime::hooks::CallbackFuture<'_> {
        let request = claude_wire::Outgoing::HookCallback { callback_id: id.to_string(), input, tool_use_id };
        Box::pin(async move { self.caller.call("hook", request).await })
    }
}

/// `initialize.hooks` as tern's callback hooks; the events tern has no
/// moment for, and bad `onFailure` values, named.
pub(crate) fn callback_hooks(
    wire: std::collections::BTreeMap<String, Vec<claude_wire::HookMatcher>>,
) -> (Vec<tern_runtime::hooks::CallbackHook>, Vec<String>) {
    use tern_runtime::hooks::{CallbackHook, HookEvent, OnFailure};
    let mut hooks = Vec::new();
    let mut unsupported = Vec::new();
    for (event_name, matchers) in wire {
        let Some(event) = HookEvent::from_claude_name(&event_name) else {
            if matchers.iter().any(|m| !m.hook_callback_ids.is_empty()) {
                unsupported.push(event_name);
            }
            continue;
        };
        for m in matchers {
            // Claude Code reads an unknown value as `block`.
            let on_failure = m.on_failure.as_deref().map(|v| match v {
                "continue" => OnFailure::Continue,
                _ => OnFailure::Block,
            });
            let timeout = m.timeout.and_then(|s| std::time::Duration::try_from_secs_f64(s).ok());
            for id in m.hook_callback_ids {
                hooks.push(CallbackHook { event, matcher: m.matcher.clone(), id, timeout, on_failure });
            }
        }
    }
    (hooks, unsupported)
}

/// `initialize.agents` as agent profiles; what of them tern does not take, named.
pub(crate) fn defined_agents(
    wire: std::collections::BTreeMap<String, claude_wire::AgentDefinition>,
) -> (Vec<tern_runtime::AgentProfile>, Vec<String>) {
    let mut agents = Vec::new();
    let mut notes = Vec::new();
    for (name, a) in wire {
        let ignored: Vec<&str> = a.other.keys().map(String::as_str).collect();
        if !ignored.is_empty() {
            notes.push(format!("agent `{name}`: {} not applied by tern", ignored.join(", ")));
        }
        let mut servers = Vec::new();
        for s in a.mcp_servers.unwrap_or_default() {
            match s {
                Value::String(server) => servers.push(server),
                _ => notes.push(format!(
                    "agent `{name}`: an inline MCP server definition is not started by tern; configure it with \
                     --mcp-config and name it instead"
                )),
            }
        }
        agents.push(tern_runtime::AgentProfile {
            description: Some(a.description).filter(|d| !d.trim().is_empty()),
            tools: a.tools.unwrap_or_default(),
            disallowed_tools: a.disallowed_tools.unwrap_or_default(),
            mcp_servers: (!servers.is_empty()).then_some(servers),
            role: None,
            model: a.model.filter(|m| !m.is_empty() && m != "inherit"),
            permission_mode: None,
            body: a.prompt,
            path: std::path::PathBuf::new(),
            name,
            inline_servers: Vec::new(),
            origin: tern_runtime::AgentOrigin::default(),
        });
    }
    (agents, notes)
}

/// `--permission-prompt-tool stdio`: each question goes to the caller as a
/// `can_use_tool` control request on stdout; its `control_response` on
/// stdin answers it. Once stdin is closed, questions are refused.
#[derive(Clone)]
pub(crate) struct StdioAsker {
    pub(crate) caller: Caller,
    /// The session's interrupt (a `deny` with `interrupt: true` stops the prompt).
    current: Arc<OnceLock<Interrupter>>,
}

impl StdioAsker {
    pub(crate) fn new(caller: Caller, current: Arc<OnceLock<Interrupter>>) -> Self {
        Self { caller, current }
    }
}

impl tern_runtime::PermissionPrompt for StdioAsker {
    fn ask(
        &self,
        request: tern_runtime::PermissionRequest,
    ) -> futures::future::BoxFuture<'_, tern_runtime::PermissionAnswer> {
        use tern_runtime::PermissionAnswer;
        Box::pin(async move {
            let suggestions: Vec<claude_wire::Suggestion> = request
                .decision
                .suggestion
                .iter()
                .map(|rule| {
                    // Claude's rule shape: the tool (Claude Code's name), and what is inside its parentheses.
                    let claude_name = |tool: &str| Some(claude::claude_tool_name(tool, &Value::Null));
                    let wire = match rule.split_once('(') {
                        Some((tool, rest)) => claude_wire::RuleValue {
                            tool_name: claude_name(tool),
                            rule_content: Some(rest.strip_suffix(')').unwrap_or(rest).to_string()),
                        },
                        None => claude_wire::RuleValue { tool_name: claude_name(rule), rule_content: None },
                    };
                    claude_wire::Suggestion {
                        kind: "addRules",
                        rules: vec![wire],
                        behavior: "allow",
                        destination: "session",
                    }
                })
                .collect();
            // Claude Code's names and keys: a `canUseTool` written for it checks `Bash`.
            let question = claude_wire::Outgoing::CanUseTool(claude_wire::CanUseTool {
                tool_name: claude::claude_tool_name(&request.tool, &request.input),
                input: claude::claude_tool_input(&request.tool, &request.input),
                tool_use_id: request.call_id.clone(),
                permission_suggestions: suggestions,
                decision_reason: request.decision.reason.clone(),
            });
            let response = match self.caller.ask("perm", question).await {
                Ok(response) => response,
                Err(NoAnswer::Closed) => {
                    say(&format!("denied {} — stdin is closed, so nobody can answer", describe(&request)));
                    return PermissionAnswer::Unanswered;
                }
            };
            let id = response.get("request_id").and_then(Value::as_str).unwrap_or_default().to_string();
            let reply = serde_json::from_value::<claude_wire::PermissionReply>(response).unwrap_or_else(|e| {
                // Its question is still answered (refused, saying why), not left waiting.
                claude_wire::PermissionReply::Error {
                    request_id: id,
                    error: Some(format!("an answer tern cannot read: {e}")),
                }
            });
            let answer = permission_answer(&request, &reply);
            // `deny` with `interrupt: true`: the caller wants the whole prompt stopped.
            if matches!(&reply, claude_wire::PermissionReply::Success { response, .. } if response.interrupt)
                && let Some(interrupter) = self.current.get()
            {
                interrupter.interrupt();
            }
            answer
        })
    }
}

/// The caller's answer to `can_use_tool`.
fn permission_answer(
    request: &tern_runtime::PermissionRequest,
    reply: &claude_wire::PermissionReply,
) -> tern_runtime::PermissionAnswer {
    use tern_runtime::PermissionAnswer;
    let body = match reply {
        claude_wire::PermissionReply::Error { error, .. } => {
            let why = error.as_deref().unwrap_or("an error");
            return PermissionAnswer::Deny { feedback: Some(format!("the permission prompt failed: {why}")) };
        }
        claude_wire::PermissionReply::Success { response, .. } => response,
    };
    match body.behavior.as_deref() {
        Some("allow") => {
            // tern runs the call the model made, as it was judged: a changed input is refused.
            // The input sent back unchanged (in Claude's keys, as it was sent) is the same call.
            let changed = |u: &Value| claude::tern_tool_input(&request.tool, u.clone()) != request.input;
            if body.updated_input.as_ref().is_some_and(|u| !u.is_null() && changed(u)) {
                return PermissionAnswer::Deny {
                    feedback: Some(
                        "the permission prompt answered with a changed input, which tern does not run; make the call \
                         again with the input you want"
                            .into(),
                    ),
                };
            }
            let rule =
                body.updated_permissions.iter().filter(|p| p.behavior.as_deref() == Some("allow")).find_map(|p| {
                    let scope = match p.destination.as_deref() {
                        Some("projectSettings") | Some("localSettings") => tern_runtime::RuleScope::Project,
                        Some("userSettings") => tern_runtime::RuleScope::User,
                        _ => tern_runtime::RuleScope::Session,
                    };
                    let rule = p.rules.first()?;
                    let text = match (rule.tool_name.as_deref(), rule.rule_content.as_deref()) {
                        (Some(tool), Some(c)) if !c.starts_with(&format!("{tool}(")) => format!("{tool}({c})"),
                        (Some(tool), None) => tool.to_string(),
                        (_, Some(c)) => c.to_string(),
                        (None, None) => return None,
                    };
                    Some((text, scope))
                });
            match rule {
                Some((rule, scope)) => PermissionAnswer::AllowAlways { rule, scope },
                None => PermissionAnswer::Allow,
            }
        }
        Some("deny") => PermissionAnswer::Deny { feedback: body.message.clone().filter(|m| !m.is_empty()) },
        _ => PermissionAnswer::Deny {
            feedback: Some("the permission prompt's answer had no `behavior` (allow or deny)".into()),
        },
    }
}
