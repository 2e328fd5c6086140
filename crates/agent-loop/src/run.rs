//! The turn loop.

use std::sync::{Arc, Mutex};

use tern_llm::{Completion, LlmError, ModelRequest, Provider, StreamDelta, ToolCallFormat};
use tern_protocol::{
    AgentEvent, AgentStopReason, ContentBlock, Message, Role, StopReason, ToolCall, Usage, UsageTotals,
};
use tokio_util::sync::CancellationToken;

use crate::{Hooks, RuntimeTool, ToolCallResult, execute_batch};
use tern_protocol::sync::LockExt as _;

/// Receives every event of a run.
pub type EventSink = Arc<dyn Fn(AgentEvent) + Send + Sync>;

/// Per-run settings.
#[derive(Debug, Clone)]
pub struct LoopConfig {
    /// Model name.
    pub model: String,
    /// System prompt.
    pub system: String,
    /// Output-token limit per response.
    pub max_tokens: u64,
    /// Most model requests in one run (`None` = no limit).
    pub max_turns: Option<u32>,
    /// Extended-thinking budget, if enabled.
    pub thinking_budget: Option<u64>,
    /// A stable key for the provider's prompt cache (the session id).
    pub cache_key: Option<String>,
    /// Stop between turns, before the tool results go back, once the last
    /// response's tokens plus those results (4 bytes a token) reach this:
    /// the caller compacts and runs again (`None`: never).
    pub context_limit: Option<u64>,
    /// The model to go on with when this one stays overloaded (`--fallback-model`).
    pub fallback_model: Option<String>,
    /// Whether calls the model wrote as text are read too
    /// (`tool_call_format = "text"` in the model table; native only by default),
    /// and whether the tools go in the system prompt instead of the request (`"prompt"`).
    pub tool_call_format: ToolCallFormat,
    /// Estimates a request's input tokens from its system prompt, tools and
    /// messages (the provider sizes its first-byte wait and reports it);
    /// `None`: the provider counts the request's bytes.
    pub estimate_input_tokens: Option<InputTokenEstimate>,
    /// The models whose server refused `tools` this session, shared by its
    /// runs and their subagents: a model on `text` starts in prompt form
    /// there, instead of being refused again on every prompt.
    pub refused_tools: Arc<Mutex<std::collections::BTreeSet<String>>>,
}

/// See [`LoopConfig::estimate_input_tokens`].
pub type InputTokenEstimate = fn(&str, &[tern_protocol::ToolDefinition], &[Message]) -> u64;

impl LoopConfig {
    /// Defaults: 8192 output tokens, no turn limit, no thinking.
    pub fn new(model: impl Into<String>, system: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            system: system.into(),
            max_tokens: 8192,
            max_turns: None,
            thinking_budget: None,
            cache_key: None,
            context_limit: None,
            fallback_model: None,
            tool_call_format: ToolCallFormat::Native,
            estimate_input_tokens: None,
            refused_tools: Arc::default(),
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    /// Why it stopped.
    pub stop_reason: AgentStopReason,
    /// Model requests made.
    pub turns: u32,
    /// Usage summed over responses.
    pub usage: UsageTotals,
    /// Usage of each response, in order (for pricing).
    pub responses: Vec<Usage>,
    /// The text of the last assistant message.
    pub final_text: String,
    /// The fatal error, if any.
    pub error: Option<String>,
    /// The request failed because the conversation no longer fits the
    /// model's context window (the caller may compact and run again).
    pub context_overflow: bool,
}

/// Supplies the tools of each request. The runtime's catalog implements it
/// so the list can change between turns (tools activated by a search, an MCP
/// server's list changing); a fixed `Vec<RuntimeTool>` is the simple case.
pub trait TurnTools: Send + Sync {
    /// The tools for the next request, in order. The calls of that request's
    /// reply are resolved against the same list.
    fn tools_for_turn(&self) -> Vec<RuntimeTool>;

    /// Tools that are not offered but may still be called by exact name in
    /// this turn (e.g. deferred MCP tools the model learnt the name of).
    /// Their calls are validated and hooked like any other.
    fn callable_unlisted(&self) -> Vec<RuntimeTool> {
        Vec::new()
    }
}

impl TurnTools for Vec<RuntimeTool> {
    fn tools_for_turn(&self) -> Vec<RuntimeTool> {
        self.clone()
    }
}

/// Instructions given to a run while it runs (a parent's `task_append` to a
/// background subagent). The loop reads them before each request, so they
/// join the conversation once the last turn's tool results are in, and
/// again when it would end: a run never ends with input unread.
pub trait Inbox: Send + Sync {
    /// What waits, as one user message's text (`None`: nothing). `ending`:
    /// the run ends unless something waits, so an inbox with nothing takes
    /// no more input from now on (atomically, so nothing given is lost).
    fn take(&self, ending: bool) -> Option<String>;
}

/// The loop with its provider, tools and hooks.
pub struct AgentLoop {
    provider: Arc<dyn Provider>,
    tools: Arc<dyn TurnTools>,
    hooks: Arc<dyn Hooks>,
    config: LoopConfig,
    inbox: Option<Arc<dyn Inbox>>,
}

impl AgentLoop {
    /// Assemble a loop.
    pub fn new(
        provider: Arc<dyn Provider>,
        tools: Vec<RuntimeTool>,
        hooks: Arc<dyn Hooks>,
        config: LoopConfig,
    ) -> Self {
        Self { provider, tools: Arc::new(tools), hooks, config, inbox: None }
    }

    /// Assemble a loop whose tool list is asked for before every request.
    pub fn with_turn_tools(
        provider: Arc<dyn Provider>,
        tools: Arc<dyn TurnTools>,
        hooks: Arc<dyn Hooks>,
        config: LoopConfig,
    ) -> Self {
        Self { provider, tools, hooks, config, inbox: None }
    }

    /// Read instructions given while it runs from `inbox`.
    pub fn with_inbox(mut self, inbox: Arc<dyn Inbox>) -> Self {
        self.inbox = Some(inbox);
        self
    }

    /// What `inbox` holds joins the history as a user message; whether anything did.
    fn read_inbox(&self, history: &mut Vec<Message>, events: &EventSink, ending: bool) -> bool {
        let Some(text) = self.inbox.as_ref().and_then(|i| i.take(ending)) else { return false };
        events(AgentEvent::InputAppended { text: text.clone() });
        self.append(history, Message::user_text(text));
        true
    }

    /// The tools the next request would carry, in order.
    pub fn tools(&self) -> Vec<RuntimeTool> {
        self.tools.tools_for_turn()
    }

    /// Run until the model answers without tools, the turn limit, an error or
    /// cancellation. `history` ends with the user's message and grows with
    /// every assistant message and tool result, so it is always resumable.
    pub async fn run(&self, history: &mut Vec<Message>, events: &EventSink, cancel: &CancellationToken) -> RunOutcome {
        let mut outcome = RunOutcome {
            stop_reason: AgentStopReason::Completed,
            turns: 0,
            usage: UsageTotals::default(),
            responses: Vec::new(),
            final_text: String::new(),
            error: None,
            context_overflow: false,
        };
        let mut pauses = 0;
        let mut model = self.config.model.clone();
        // `text` turns to `prompt` when the server refuses `tools`: for the rest of the session.
        let mut format = self.config.tool_call_format;
        if format == ToolCallFormat::Text && self.config.refused_tools.lock_or_recover().contains(&model) {
            format = ToolCallFormat::Prompt;
        }
        loop {
            if cancel.is_cancelled() {
                return self.end(outcome, AgentStopReason::Aborted, events);
            }
            if self.config.max_turns.is_some_and(|max| outcome.turns >= max) {
                let msg =
                    format!("stopped after {} turns (--max-turns); the model still wanted to continue", outcome.turns);
                outcome.error = Some(msg.clone());
                events(AgentEvent::Error { message: msg });
                return self.end(outcome, AgentStopReason::MaxTurns, events);
            }
            if outcome.turns > 0
                && let Some(why) = self.hooks.spending_limit(&outcome.responses)
            {
                outcome.error = Some(why.clone());
                events(AgentEvent::Error { message: why });
                return self.end(outcome, AgentStopReason::MaxBudget, events);
            }
            self.read_inbox(history, events, false);
            outcome.turns += 1;
            let turn = outcome.turns;
            events(AgentEvent::TurnStart { turn });
            let tools = self.tools.tools_for_turn();
            let partial = Arc::new(std::sync::Mutex::new(String::new()));
            let gate = (format != ToolCallFormat::Native)
                .then(|| Arc::new(std::sync::Mutex::new(crate::text_calls::TextGate::default())));
            let answered = loop {
                match self.request(history, &tools, events, cancel, (&partial, gate.as_ref()), (&model, format)).await {
                    // Overloaded after the retries: the fallback model answers, from here on.
                    Err(e) if e.is_overloaded() && self.config.fallback_model.as_ref().is_some_and(|f| *f != model) => {
                        let fallback = self.config.fallback_model.clone().unwrap_or_default();
                        events(AgentEvent::Notice {
                            message: format!(
                                "`{model}` stayed overloaded; going on with `{fallback}` (--fallback-model)"
                            ),
                        });
                        partial.lock_or_recover().clear();
                        if let Some(gate) = &gate {
                            gate.lock_or_recover().reset();
                        }
                        model = fallback;
                    }
                    // A server that takes no `tools` (llama.cpp without Jinja, many shims): the
                    // model already writes its calls as text, so describe the tools in the prompt.
                    Err(e) if format == ToolCallFormat::Text && !tools.is_empty() && e.refuses_tools() => {
                        let why = match &e {
                            LlmError::Http { status, message, .. } => format!("HTTP {status}: {message}"),
                            other => other.to_string(),
                        };
                        events(AgentEvent::Notice {
                            message: format!(
                                "the server refused the tools in the request ({why}); going on \
                                 with them described in the system prompt for the rest of this session. Set \
                                 `tool_call_format = \"prompt\"` under [models.\"{model}\"] in config to skip \
                                 the refusal"
                            ),
                        });
                        partial.lock_or_recover().clear();
                        if let Some(gate) = &gate {
                            gate.lock_or_recover().reset();
                        }
                        format = ToolCallFormat::Prompt;
                        self.config.refused_tools.lock_or_recover().insert(model.clone());
                    }
                    other => break other,
                }
            };
            let completion = match answered {
                Ok(c) if let Some(gate) = &gate => {
                    let held = gate.lock_or_recover().take_held();
                    let (c, calls) = crate::text_calls::read_text_calls(c, &tools, events);
                    // Text held back as a possible call that was not one is shown now.
                    if !calls && !held.is_empty() {
                        events(AgentEvent::TextDelta { text: held });
                    }
                    c
                }
                Ok(c) => c,
                Err(LlmError::Cancelled) => {
                    // Keep what the person already saw: the next prompt
                    // continues from it instead of the model repeating itself.
                    let seen = std::mem::take(&mut *partial.lock_or_recover());
                    if !seen.trim().is_empty() {
                        self.append(history, Message::assistant_text(format!("{seen}\n\n[interrupted by the user]")));
                    }
                    events(AgentEvent::TurnEnd { turn });
                    return self.end(outcome, AgentStopReason::Aborted, events);
                }
                Err(e) => {
                    let msg = e.to_string();
                    outcome.context_overflow = e.is_context_overflow();
                    outcome.error = Some(msg.clone());
                    events(AgentEvent::Error { message: msg });
                    events(AgentEvent::TurnEnd { turn });
                    return self.end(outcome, AgentStopReason::Error, events);
                }
            };
            let used = completion.usage.prompt_tokens() + completion.usage.output_tokens;
            let paused = completion.stop_reason == Some(StopReason::PauseTurn);
            outcome.usage.add(&completion.usage);
            outcome.responses.push(completion.usage);
            let notice = cut_reply_notice(&completion);
            let (message, calls, failed) =
                split_calls(completion.message, completion.stop_reason.as_ref(), &completion.incomplete_tool_calls);
            outcome.final_text = message.text();
            events(AgentEvent::AssistantMessage {
                message: message.clone(),
                stop_reason: completion.stop_reason.clone(),
                usage: completion.usage,
                model: completion.model.clone(),
            });
            self.append(history, message);
            if let Some(notice) = notice {
                events(AgentEvent::Notice { message: notice.clone() });
                self.append(history, Message::user_text(notice));
                events(AgentEvent::TurnEnd { turn });
                continue;
            }
            if calls.is_empty() && failed.is_empty() {
                events(AgentEvent::TurnEnd { turn });
                // The provider paused a long turn of its own tools (searches):
                // sending the conversation back as it is lets it go on.
                if paused && pauses < MAX_PAUSES {
                    pauses += 1;
                    continue;
                }
                // Instructions that came while it answered: it goes on with them.
                if self.read_inbox(history, events, true) {
                    continue;
                }
                return self.end(outcome, AgentStopReason::Completed, events);
            }
            pauses = 0;
            let mut callable = tools;
            let offered: std::collections::HashSet<String> = callable.iter().map(|t| t.name().to_string()).collect();
            let unlisted = self.tools.callable_unlisted();
            if calls.iter().any(|c| !offered.contains(&c.name)) {
                callable.extend(unlisted.into_iter().filter(|t| !offered.contains(t.name())));
            }
            let mut results = execute_batch(&callable, &calls, self.hooks.as_ref(), events, cancel).await;
            let mut ids: Vec<String> = calls.iter().map(|c| c.id.clone()).collect();
            // Calls that could not run still start and end, for front ends and the session log.
            for f in failed {
                events(AgentEvent::ToolCallStart { id: f.id.clone(), name: f.name.clone(), input: f.input });
                events(AgentEvent::ToolExecutionEnd {
                    id: f.id.clone(),
                    name: f.name,
                    content: f.result.content.clone(),
                    is_error: true,
                    details: None,
                    duration_ms: 0,
                });
                ids.push(f.id);
                results.push(f.result);
            }
            let content = ids
                .into_iter()
                .zip(results)
                .map(|(tool_use_id, r)| ContentBlock::ToolResult {
                    tool_use_id,
                    content: r.content,
                    is_error: r.is_error,
                })
                .collect();
            let results = Message { role: Role::User, content };
            let results_tokens = (serde_json::to_string(&results).map_or(0, |t| t.len()) / 4) as u64;
            self.append(history, results);
            events(AgentEvent::TurnEnd { turn });
            if let Some(answer) = self.hooks.end_run() {
                outcome.final_text = answer;
                return self.end(outcome, AgentStopReason::Completed, events);
            }
            if self.config.context_limit.is_some_and(|limit| used + results_tokens >= limit) {
                return self.end(outcome, AgentStopReason::ContextFull, events);
            }
        }
    }

    async fn request(
        &self,
        history: &[Message],
        tools: &[RuntimeTool],
        events: &EventSink,
        cancel: &CancellationToken,
        (partial, gate): (&Arc<std::sync::Mutex<String>>, Option<&Arc<std::sync::Mutex<crate::text_calls::TextGate>>>),
        (model, tool_call_format): (&str, ToolCallFormat),
    ) -> Result<Completion, LlmError> {
        let mut messages = history.to_vec();
        self.hooks.transform_context(&mut messages).await;
        let (definitions, server_tools) = crate::tool::request_tools(tools);
        let input_tokens = self.config.estimate_input_tokens.map(|f| f(&self.config.system, &definitions, &messages));
        let req = Arc::new(ModelRequest {
            model: model.to_string(),
            system: self.config.system.clone(),
            messages,
            tools: definitions,
            server_tools,
            max_tokens: self.config.max_tokens,
            thinking_budget: self.config.thinking_budget,
            cache_key: self.config.cache_key.clone(),
            input_tokens,
            tool_call_format,
        });
        self.hooks.on_request(&req, tools);
        let sink_events = events.clone();
        let partial = partial.clone();
        let gate = gate.cloned();
        let sink = move |d: StreamDelta| match d {
            StreamDelta::Text(text) => {
                let shown = match &gate {
                    Some(gate) => gate.lock_or_recover().admit(&text),
                    None => Some(text),
                };
                if let Some(text) = shown.filter(|t| !t.is_empty()) {
                    partial.lock_or_recover().push_str(&text);
                    sink_events(AgentEvent::TextDelta { text })
                }
            }
            StreamDelta::Thinking(text) => sink_events(AgentEvent::ThinkingDelta { text }),
            StreamDelta::Retry(info) => {
                // A retried attempt streams again from the start.
                partial.lock_or_recover().clear();
                if let Some(gate) = &gate {
                    gate.lock_or_recover().reset();
                }
                sink_events(AgentEvent::Retry(info))
            }
            StreamDelta::Waiting(info) => sink_events(AgentEvent::Waiting(info)),
            StreamDelta::ToolCallStart { id, name } => sink_events(AgentEvent::ToolInputStart { id, name }),
            StreamDelta::ToolInputDelta { id, json } => sink_events(AgentEvent::ToolInputDelta { id, json }),
        };
        self.provider.stream(&req, &sink, cancel).await
    }

    /// Every message the loop adds goes through here, so the hooks see each.
    fn append(&self, history: &mut Vec<Message>, message: Message) {
        self.hooks.on_message(&message);
        history.push(message);
    }

    fn end(&self, mut outcome: RunOutcome, reason: AgentStopReason, events: &EventSink) -> RunOutcome {
        outcome.stop_reason = reason;
        events(AgentEvent::AgentEnd { stop_reason: reason });
        outcome
    }
}

/// Most `pause_turn` replies in a row the loop resumes: a provider that
/// only ever pauses cannot keep a run going.
const MAX_PAUSES: u32 = 8;

/// A call whose arguments were not JSON: it stays in the message with what
/// was received (as `{"invalid_arguments": "…"}`) and gets an error result
/// instead of running.
struct FailedCall {
    id: String,
    name: String,
    input: serde_json::Value,
    result: ToolCallResult,
}

/// The most of a call's invalid arguments kept (in the message, the events
/// and the session log).
const MAX_INVALID_ARGUMENTS: usize = 2000;

/// Decide which calls run. A reply that stopped on the output limit or
/// without a stop reason runs none (its arguments may be cut); its calls are
/// removed from the message and a notice follows. In a complete reply, a
/// call whose arguments were not JSON gets an error result instead of running.
fn split_calls(
    mut message: Message,
    stop: Option<&StopReason>,
    incomplete: &[tern_llm::IncompleteToolCall],
) -> (Message, Vec<ToolCall>, Vec<FailedCall>) {
    if !stop.is_some_and(StopReason::allows_tool_execution) {
        message.content.retain(|b| !matches!(b, ContentBlock::ToolUse { .. }));
        if message.content.is_empty() {
            message.content.push(ContentBlock::Text { text: "[reply cut off before any content]".into() });
        }
        return (message, Vec::new(), Vec::new());
    }
    // Only the complete calls run; the failed ones join the message after
    // (every tool_use needs its result) and answer with an error.
    let calls = message.tool_calls();
    let mut failed = Vec::new();
    for c in incomplete {
        let kept = tern_protocol::text::prefix_within(&c.raw_arguments, MAX_INVALID_ARGUMENTS);
        let input = serde_json::json!({"invalid_arguments": kept});
        message.content.push(ContentBlock::ToolUse { id: c.id.clone(), name: c.name.clone(), input: input.clone() });
        let preview = tern_protocol::text::prefix_within(&c.raw_arguments, 300);
        let result = ToolCallResult::error(format!(
            "The arguments of this `{}` call were not valid JSON, so nothing was run. Received: {preview}\nCall the tool again with a single JSON object that matches its schema.",
            c.name
        ));
        failed.push(FailedCall { id: c.id.clone(), name: c.name.clone(), input, result });
    }
    (message, calls, failed)
}

/// The message for the model when its reply was cut, if it was.
fn cut_reply_notice(c: &Completion) -> Option<String> {
    let allowed = c.stop_reason.as_ref().is_some_and(StopReason::allows_tool_execution);
    if allowed {
        return None;
    }
    let mut names: Vec<String> = c.message.tool_calls().iter().map(|t| format!("`{}`", t.name)).collect();
    names.extend(c.incomplete_tool_calls.iter().map(|t| format!("`{}` (arguments incomplete)", t.name)));
    let why = match &c.stop_reason {
        Some(StopReason::MaxTokens) => "it reached the output-token limit",
        _ => "the response ended without a stop reason",
    };
    if names.is_empty() {
        // Text only: nothing to re-run. A cut answer still ends the run
        // unless it hit the limit, where the model is asked to go on.
        return matches!(c.stop_reason, Some(StopReason::MaxTokens))
            .then(|| format!("[tern] Your previous reply was cut off because {why}. Continue where you stopped."));
    }
    Some(format!(
        "[tern] Your previous reply was cut off because {why}, so its tool calls were not run: {}. Issue them again; keep each call's arguments small (for a large file, write it in parts).",
        names.join(", ")
    ))
}
