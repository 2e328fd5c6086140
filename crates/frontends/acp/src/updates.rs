//! What a session does, as `session/update` notifications: the run's
//! events (text, thinking, tool calls with their diffs, plans, usage, mode
//! and model changes), a loaded session's replayed conversation, and the
//! slash commands it offers.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema as acp;
use serde_json::Value;
use tern_protocol::{AgentEvent, ContentBlock, ToolDetails, ToolKind, ToolResultContent};
use tern_runtime::{EventSink, Runtime};

use crate::pickers::Pickers;
use crate::say;
use tern_protocol::sync::LockExt as _;

/// The most text one call's diff updates carry (a new file's, or its hunks' in all).
const MAX_DIFF_FILE: usize = 1024 * 1024;

/// The most bytes of a call's details sent as its `rawOutput`.
const MAX_RAW_OUTPUT: usize = 64 * 1024;

/// Responses streamed by this process, numbered for the message ids of their chunks.
static RESPONSES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A session's events as `session/update` notifications; a mode or model
/// change also updates the session's pickers and sends them whole.
pub(crate) fn sink(cx: ConnectionTo<Client>, session: String, runtime: &Runtime, pickers: Arc<Pickers>) -> EventSink {
    use std::sync::atomic::{AtomicU64, Ordering};
    let workspace = runtime.workspace().to_path_buf();
    // The context the last response filled, of the model's window.
    let window = AtomicU64::new(runtime.model_info().context_window);
    let last_used = AtomicU64::new(0);
    let session_tag = session.clone();
    let calls: Mutex<HashMap<String, Call>> = Mutex::default();
    // The streamed response's number: its chunks carry it as their message id. A retry
    // that abandons what streamed starts a new one, so the editor sees the retried
    // answer as a message of its own instead of glued to the broken one (ACP cannot
    // take chunks back).
    let response = AtomicU64::new(RESPONSES.fetch_add(1, Ordering::SeqCst));
    let message_id = move |n: u64, kind: &str| acp::MessageId::new(format!("{session_tag}-{n}-{kind}"));
    Arc::new(move |e: AgentEvent| {
        let update = match e {
            AgentEvent::TurnStart { .. } => {
                response.store(RESPONSES.fetch_add(1, Ordering::SeqCst), Ordering::SeqCst);
                return;
            }
            AgentEvent::Retry(r) => {
                if r.discard_partial {
                    response.store(RESPONSES.fetch_add(1, Ordering::SeqCst), Ordering::SeqCst);
                }
                return;
            }
            AgentEvent::TextDelta { text } => acp::SessionUpdate::AgentMessageChunk(
                acp::ContentChunk::new(text_block(&text))
                    .message_id(message_id(response.load(Ordering::SeqCst), "text")),
            ),
            AgentEvent::ThinkingDelta { text } => acp::SessionUpdate::AgentThoughtChunk(
                acp::ContentChunk::new(text_block(&text))
                    .message_id(message_id(response.load(Ordering::SeqCst), "thought")),
            ),
            AgentEvent::ToolCallStart { id, name, input } => {
                // A new file's text is the call's own; nothing is read from the disk for a diff.
                // Kept only when it could be shown (a model-sized string is not copied for nothing).
                let content = (tern_protocol::canonical_tool_name(&name) == "write")
                    .then(|| tern_protocol::CallArgs::of(&input).content)
                    .flatten()
                    .filter(|t| t.len() <= MAX_DIFF_FILE)
                    .map(str::to_string);
                let call = tool_call(&id, &name, &input, &workspace);
                let running = Call { content, progressed: false };
                calls.lock_or_recover().insert(id, running);
                acp::SessionUpdate::ToolCall(call)
            }
            AgentEvent::ToolExecutionUpdate { id, .. } => {
                let mut calls = calls.lock_or_recover();
                match calls.get_mut(&id) {
                    Some(c) if !c.progressed => {
                        c.progressed = true;
                        acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate::new(
                            id,
                            acp::ToolCallUpdateFields::new().status(acp::ToolCallStatus::InProgress),
                        ))
                    }
                    _ => return,
                }
            }
            AgentEvent::ToolExecutionEnd { id, content, is_error, details, .. } => {
                let started = calls.lock_or_recover().remove(&id);
                // An edit or write that went through: what it changed, from the tool's own diff.
                let mut parts = if is_error { Vec::new() } else { diffs(details.as_deref(), started.as_ref()) };
                parts.extend(result_content(&content));
                let status = if is_error { acp::ToolCallStatus::Failed } else { acp::ToolCallStatus::Completed };
                let mut fields = acp::ToolCallUpdateFields::new().status(status).content(parts);
                if let Some(d) = details.and_then(|d| raw_output(*d)) {
                    fields = fields.raw_output(d);
                }
                acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate::new(id, fields))
            }
            AgentEvent::TodoUpdate { todos } => acp::SessionUpdate::Plan(acp::Plan::new(
                todos
                    .iter()
                    .map(|t| {
                        let status = match t.status {
                            tern_protocol::TodoStatus::Pending => acp::PlanEntryStatus::Pending,
                            tern_protocol::TodoStatus::InProgress => acp::PlanEntryStatus::InProgress,
                            tern_protocol::TodoStatus::Completed => acp::PlanEntryStatus::Completed,
                        };
                        acp::PlanEntry::new(t.content.clone(), acp::PlanEntryPriority::Medium, status)
                    })
                    .collect(),
            )),
            AgentEvent::AssistantMessage { usage, .. } => {
                let used = usage.prompt_tokens() + usage.output_tokens;
                last_used.store(used, Ordering::SeqCst);
                acp::SessionUpdate::UsageUpdate(acp::UsageUpdate::new(used, window.load(Ordering::SeqCst)))
            }
            // What the session cost so far (after each prompt, and after a resume).
            AgentEvent::UsageUpdated { cost_usd, .. } => {
                let usage = acp::UsageUpdate::new(last_used.load(Ordering::SeqCst), window.load(Ordering::SeqCst));
                acp::SessionUpdate::UsageUpdate(usage.cost(acp::Cost::new(cost_usd, "USD")))
            }
            AgentEvent::ModelChanged { model, context_window, .. } => {
                window.store(context_window, Ordering::SeqCst);
                pickers.model_changed(&model);
                acp::SessionUpdate::ConfigOptionUpdate(acp::ConfigOptionUpdate::new(pickers.options()))
            }
            AgentEvent::ModeChanged { mode, .. } => {
                pickers.mode_changed(mode);
                let modes = acp::CurrentModeUpdate::new(mode.as_str());
                notify(&cx, &session, acp::SessionUpdate::CurrentModeUpdate(modes));
                acp::SessionUpdate::ConfigOptionUpdate(acp::ConfigOptionUpdate::new(pickers.options()))
            }
            AgentEvent::Notice { message } => {
                say(&message);
                return;
            }
            _ => return,
        };
        notify(&cx, &session, update);
    })
}

/// A running call of a prompt, by id.
struct Call {
    /// A new file's text, as the call sent it (write).
    content: Option<String>,
    /// Whether it was said to be in progress.
    progressed: bool,
}

fn tool_call(id: &str, name: &str, input: &Value, workspace: &Path) -> acp::ToolCall {
    let call = acp::ToolCall::new(id.to_string(), title_of(name, input))
        .kind(kind_of(name))
        .status(acp::ToolCallStatus::Pending)
        .raw_input(input.clone());
    match path_of(name, input, workspace) {
        Some(p) => call.locations(vec![acp::ToolCallLocation::new(p)]),
        None => call,
    }
}

/// The ACP kind of a tool.
pub(crate) fn kind_of(name: &str) -> acp::ToolKind {
    match tern_protocol::canonical_tool_name(name).as_str() {
        "grep" | "glob" | "tool_search" => acp::ToolKind::Search,
        "enter_plan_mode" | "exit_plan_mode" => acp::ToolKind::SwitchMode,
        _ => match ToolKind::of(name) {
            ToolKind::Read => acp::ToolKind::Read,
            ToolKind::Edit => acp::ToolKind::Edit,
            ToolKind::Execute => acp::ToolKind::Execute,
            ToolKind::Fetch => acp::ToolKind::Fetch,
            ToolKind::Meta => acp::ToolKind::Think,
            _ => acp::ToolKind::Other,
        },
    }
}

/// A title for a call: the tool and what it works on, as every front end titles it.
pub(crate) fn title_of(name: &str, input: &Value) -> String {
    let about = tern_protocol::call_title(name, input).text();
    if about.is_empty() {
        return name.to_string();
    }
    let short = tern_protocol::text::prefix_within(&about, 120);
    let more = if short.len() < about.len() { "…" } else { "" };
    format!("{name} {short}{more}")
}

/// The absolute path a file tool's call works on.
fn path_of(name: &str, input: &Value, workspace: &Path) -> Option<PathBuf> {
    if !matches!(ToolKind::of(name), ToolKind::Read | ToolKind::Edit) {
        return None;
    }
    let p = tern_protocol::CallArgs::of(input).path?;
    Some(tern_protocol::paths::resolve(p, workspace, tern_protocol::paths::home().as_deref()))
}

fn result_content(content: &[ToolResultContent]) -> Vec<acp::ToolCallContent> {
    content
        .iter()
        .map(|c| match c {
            ToolResultContent::Text { text } => acp::ToolCallContent::from(text_block(text)),
            ToolResultContent::Image { source } => acp::ToolCallContent::from(acp::ContentBlock::Image(
                acp::ImageContent::new(source.data.clone(), source.media_type.clone()),
            )),
        })
        .collect()
}

/// What a file tool did, as diffs: one per hunk of the change it made (what
/// the tool wrote, not the disk read again), or a new file's whole text.
fn diffs(details: Option<&ToolDetails>, call: Option<&Call>) -> Vec<acp::ToolCallContent> {
    let Some(change) = details.and_then(ToolDetails::file_change) else { return Vec::new() };
    let Some(file) = &change.file else { return Vec::new() };
    if let Some(ToolDetails::Write(w)) = details
        && w.created
    {
        let text = call.and_then(|c| c.content.clone());
        return text.map(|t| acp::ToolCallContent::from(acp::Diff::new(file.clone(), t))).into_iter().collect();
    }
    // Hunks in order while they fit; a change larger than that shows its start (the result says the rest).
    let mut budget = MAX_DIFF_FILE;
    let mut out = Vec::new();
    for h in &change.hunks {
        let (old, new) = h.texts();
        let Some(left) = budget.checked_sub(old.len() + new.len()) else { break };
        budget = left;
        out.push(acp::ToolCallContent::from(acp::Diff::new(file.clone(), new).old_text(old)));
    }
    out
}

/// A call's details as its `rawOutput`, bounded: a change too large to
/// send whole keeps its counts and leaves its text to the diff content
/// (bounded on its own); anything else too large is left out.
fn raw_output(mut details: tern_protocol::ToolDetails) -> Option<Value> {
    let fits = |v: &Value| v.to_string().len() <= MAX_RAW_OUTPUT;
    let whole = serde_json::to_value(&details).ok()?;
    if fits(&whole) {
        return Some(whole);
    }
    let change = details.file_change_mut()?;
    change.diff.clear();
    change.hunks.clear();
    serde_json::to_value(&details).ok().filter(fits)
}

/// A resumed session's conversation, sent as updates before `session/load` answers.
pub(crate) async fn replay(runtime: &Runtime, cx: &ConnectionTo<Client>, session: &str) {
    let workspace = runtime.workspace().to_path_buf();
    // Straight from the runtime's history: a long conversation is not copied to be sent.
    runtime.with_conversation(|messages| replay_messages(messages, &workspace, cx, session)).await;
}

fn replay_messages(messages: &[tern_protocol::Message], workspace: &Path, cx: &ConnectionTo<Client>, session: &str) {
    for message in messages {
        for block in &message.content {
            let update = match (message.role, block) {
                (tern_protocol::Role::User, ContentBlock::Text { text }) => {
                    acp::SessionUpdate::UserMessageChunk(acp::ContentChunk::new(text_block(text)))
                }
                (tern_protocol::Role::Assistant, ContentBlock::Text { text }) => {
                    acp::SessionUpdate::AgentMessageChunk(acp::ContentChunk::new(text_block(text)))
                }
                (_, ContentBlock::Thinking { thinking, .. }) => {
                    acp::SessionUpdate::AgentThoughtChunk(acp::ContentChunk::new(text_block(thinking)))
                }
                (_, ContentBlock::ToolUse { id, name, input }) => {
                    acp::SessionUpdate::ToolCall(tool_call(id, name, input, workspace))
                }
                (_, ContentBlock::ToolResult { tool_use_id, content, is_error }) => {
                    let status = if *is_error { acp::ToolCallStatus::Failed } else { acp::ToolCallStatus::Completed };
                    acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate::new(
                        tool_use_id.clone(),
                        acp::ToolCallUpdateFields::new().status(status).content(result_content(content)),
                    ))
                }
                _ => continue,
            };
            notify(cx, session, update);
        }
    }
}

/// The custom commands, skills and MCP prompts, as the client's slash commands.
pub(crate) fn announce_commands(runtime: &Runtime, cx: &ConnectionTo<Client>, session: &str) {
    let list: Vec<acp::AvailableCommand> = runtime
        .slash_commands()
        .into_iter()
        .map(|c| {
            let cmd = acp::AvailableCommand::new(c.name, c.description);
            match c.argument_hint {
                Some(hint) => {
                    cmd.input(acp::AvailableCommandInput::Unstructured(acp::UnstructuredCommandInput::new(hint)))
                }
                None => cmd,
            }
        })
        .collect();
    notify(cx, session, acp::SessionUpdate::AvailableCommandsUpdate(acp::AvailableCommandsUpdate::new(list)));
}

fn notify(cx: &ConnectionTo<Client>, session: &str, update: acp::SessionUpdate) {
    let _ = cx.send_notification(acp::SessionNotification::new(session.to_string(), update));
}

pub(crate) fn text_block(text: &str) -> acp::ContentBlock {
    acp::ContentBlock::Text(acp::TextContent::new(text.to_string()))
}
