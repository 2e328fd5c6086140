//! Folding the agent's event stream into cells.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use tern_protocol::{AgentEvent, ContentBlock, Message, RetryInfo, ToolResultContent, ToolRun};

use super::Transcript;
use super::cell::{CellKind, FinishedTool, NoticeLevel, ToolCell};
use super::tool_view::bash_output_from_result;

/// What a reply that broke off says at its end.
pub const DISCARDED: &str = "\n\n*(this reply broke off and is not part of the conversation)*";

/// The cells the response being received streams into. A response may
/// interleave reasoning and text, so each kind can have several cells.
#[derive(Debug, Default)]
pub(super) struct Stream {
    text: Vec<usize>,
    thinking: Vec<usize>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Streamed {
    Text,
    Thinking,
}

impl Transcript {
    /// What the finished tool cells know of their calls (time, details), by
    /// call id: a conversation shown again (after `/rewind`) keeps them.
    pub fn tool_runs(&self) -> HashMap<String, ToolRun> {
        (0..self.len())
            .filter_map(|i| match self.cell(i) {
                Some(CellKind::Tool(t)) => t.finished.as_ref().and_then(|f| {
                    let run =
                        ToolRun { tool_use_id: t.id.clone(), duration_ms: f.duration_ms?, details: f.details.clone() };
                    Some((t.id.clone(), run))
                }),
                _ => None,
            })
            .collect()
    }

    /// Show a conversation without its tool calls' figures (see [`Transcript::replay_with`]).
    pub fn replay(&mut self, messages: &[Message]) {
        self.replay_with(messages, &HashMap::new());
    }

    /// Show a conversation brought back by `--continue` / `--resume`, as the
    /// cells its events made when it ran: prompts, replies, tool calls with
    /// their results, and with the time and details the session kept of
    /// each call in `runs` (a call without them shows no time, and what its
    /// result text says). The summary of a compaction shows as a compaction
    /// cell (Ctrl+O expands it).
    pub fn replay_with(&mut self, messages: &[Message], runs: &HashMap<String, ToolRun>) {
        let mut names = HashMap::new();
        for m in messages {
            match m.role {
                tern_protocol::Role::User => {
                    for block in &m.content {
                        match block {
                            ContentBlock::Text { text } => {
                                match text.strip_prefix(tern_protocol::COMPACTION_SUMMARY_PREFIX) {
                                    Some(summary) => self.compaction_cell("earlier", summary, None),
                                    None => {
                                        self.push(CellKind::user(text.clone()));
                                    }
                                }
                            }
                            ContentBlock::ToolResult { tool_use_id, content, is_error } => {
                                let run = runs.get(tool_use_id);
                                self.apply(&AgentEvent::ToolExecutionEnd {
                                    id: tool_use_id.clone(),
                                    name: names.get(tool_use_id).cloned().unwrap_or_default(),
                                    content: content.clone(),
                                    is_error: *is_error,
                                    details: run.and_then(|r| r.details.clone()),
                                    duration_ms: run.map_or(0, |r| r.duration_ms),
                                });
                                if run.is_none()
                                    && let Some(&i) = self.tools.get(tool_use_id)
                                    && let Some(CellKind::Tool(t)) = self.cell_mut(i)
                                    && let Some(f) = t.finished.as_mut()
                                {
                                    f.duration_ms = None;
                                }
                            }
                            _ => {}
                        }
                    }
                }
                tern_protocol::Role::Assistant => {
                    self.apply(&AgentEvent::AssistantMessage {
                        message: m.clone(),
                        stop_reason: None,
                        usage: Default::default(),
                        model: String::new(),
                    });
                    for block in &m.content {
                        if let ContentBlock::ToolUse { id, name, input } = block {
                            names.insert(id.clone(), name.clone());
                            self.apply(&AgentEvent::ToolCallStart {
                                id: id.clone(),
                                name: name.clone(),
                                input: input.clone(),
                            });
                        }
                    }
                }
            }
        }
        self.end_stream();
    }

    /// Fold one agent event in: text and reasoning deltas grow the streaming
    /// Assistant / Thinking cell (creating it), the complete message ends the
    /// streaming (its text replaces the streamed text if they differ), tool
    /// events create, feed and finish Tool cells, notices and errors add
    /// Notice cells, a retry drops the abandoned attempt's text. Todo updates
    /// and the rest are for the app.
    pub fn apply(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::TextDelta { text } => self.delta(Streamed::Text, text),
            AgentEvent::ThinkingDelta { text } => self.delta(Streamed::Thinking, text),
            AgentEvent::Retry(info) => self.retry(info),
            AgentEvent::AssistantMessage { message, .. } => self.finish_message(message),
            AgentEvent::ToolCallStart { id, name, input } => {
                let i =
                    self.push(CellKind::Tool(ToolCell::new(id.clone(), name.clone(), input.clone(), Instant::now())));
                self.tools.insert(id.clone(), i);
            }
            AgentEvent::ToolExecutionUpdate { id, text } => {
                if let Some(&i) = self.tools.get(id)
                    && let Some(CellKind::Tool(t)) = self.cell_mut(i)
                {
                    t.tail.push(text);
                }
            }
            AgentEvent::ToolExecutionEnd { id, name, content, is_error, details, duration_ms } => {
                let text = result_text(content);
                let i = match self.tools.get(id) {
                    Some(&i) => i,
                    None => {
                        let now = Instant::now();
                        let started = now.checked_sub(Duration::from_millis(*duration_ms)).unwrap_or(now);
                        let cell = ToolCell::new(id.clone(), name.clone(), serde_json::Value::Null, started);
                        let i = self.push(CellKind::Tool(cell));
                        self.tools.insert(id.clone(), i);
                        i
                    }
                };
                if let Some(CellKind::Tool(t)) = self.cell_mut(i) {
                    if t.name == "bash" && t.tail.is_empty() {
                        t.tail.push(&bash_output_from_result(&text));
                    }
                    t.finished = Some(FinishedTool {
                        is_error: *is_error,
                        text,
                        details: details.clone(),
                        duration_ms: Some(*duration_ms),
                    });
                }
            }
            AgentEvent::Notice { message } => {
                self.push(CellKind::Notice { text: message.clone(), level: NoticeLevel::Info });
            }
            AgentEvent::Error { message } => {
                // A reply that broke off is not in the conversation the model sees next: say so on it.
                for i in self.stream.text.clone() {
                    if let Some(CellKind::Assistant { markdown, .. }) = self.cell_mut(i)
                        && !markdown.trim().is_empty()
                    {
                        markdown.push_str(DISCARDED);
                    }
                }
                self.end_stream();
                self.push(CellKind::Notice { text: message.clone(), level: NoticeLevel::Error });
            }
            AgentEvent::TurnStart { .. } | AgentEvent::TurnEnd { .. } | AgentEvent::AgentEnd { .. } => {
                self.end_stream()
            }
            AgentEvent::Compaction { reason, summary, tokens_before, tokens_after } => {
                self.end_stream();
                self.compaction_cell(reason.as_str(), summary, Some((*tokens_before, *tokens_after)));
            }
            // Only a subagent reads appends (shown in its cell, below).
            AgentEvent::TodoUpdate { .. } | AgentEvent::BackgroundTask { .. } | AgentEvent::InputAppended { .. } => {}
            AgentEvent::Subagent { parent_tool_use_id, event } => self.subagent(parent_tool_use_id, event),
            // A `/NAME` command ran as its expansion: the prompt's cell shows that, folded under what was typed.
            AgentEvent::PromptStarted { text, command: Some(typed) } => {
                let last = self.entries.iter().rposition(|e| matches!(e.kind, CellKind::User { .. }));
                if let Some(CellKind::User { text: shown, folded, .. }) = last.and_then(|i| self.cell_mut(i)) {
                    *folded = Some(folded.take().unwrap_or_else(|| typed.clone()));
                    *shown = text.clone();
                }
            }
            // What the status line shows: the app keeps it.
            AgentEvent::PromptStarted { .. }
            | AgentEvent::ModeChanged { .. }
            | AgentEvent::ModelChanged { .. }
            | AgentEvent::UsageUpdated { .. }
            | AgentEvent::Waiting(_)
            | AgentEvent::SessionSwitched { .. } => {}
            // The call's cell opens when the whole call arrives (its arguments complete).
            AgentEvent::ToolInputStart { .. } | AgentEvent::ToolInputDelta { .. } => {}
        }
    }

    /// A subagent's event: its calls and turns show, live, in its `task` cell.
    fn subagent(&mut self, parent: &str, event: &AgentEvent) {
        let line = match event {
            AgentEvent::ToolCallStart { name, input, .. } => {
                let arg = ["path", "pattern", "command", "url", "query"]
                    .iter()
                    .find_map(|k| input.get(*k).and_then(serde_json::Value::as_str))
                    .map(|a| a.lines().next().unwrap_or_default().chars().take(80).collect::<String>())
                    .unwrap_or_default();
                format!("↳ {name} {arg}\n")
            }
            AgentEvent::ToolExecutionEnd { name, is_error: true, .. } => format!("  ✗ {name} failed\n"),
            AgentEvent::AssistantMessage { usage, .. } => {
                format!("  · {} tokens in, {} out\n", usage.prompt_tokens(), usage.output_tokens)
            }
            AgentEvent::Error { message } => format!("  ✗ {message}\n"),
            AgentEvent::InputAppended { text } => {
                let said = text.lines().find(|l| !l.trim().is_empty());
                format!("  ← appended: {}\n", said.unwrap_or_default().chars().take(80).collect::<String>())
            }
            _ => return,
        };
        if let Some(&i) = self.tools.get(parent)
            && let Some(CellKind::Tool(t)) = self.cell_mut(i)
        {
            t.tail.push(&line);
        }
    }

    /// A compaction as a cell that shows its head and expands (Ctrl+O) to the whole summary.
    fn compaction_cell(&mut self, reason: &str, summary: &str, tokens: Option<(u64, u64)>) {
        let now = Instant::now();
        let mut input = serde_json::json!({"reason": reason});
        if let Some((before, after)) = tokens {
            input["tokens"] = format!("~{before} → ~{after}").into();
        }
        let mut cell = ToolCell::new(format!("compaction-{}", self.len()), "compaction".to_string(), input, now);
        cell.finished =
            Some(FinishedTool { is_error: false, text: summary.trim().to_string(), details: None, duration_ms: None });
        self.push(CellKind::Tool(cell));
    }

    fn delta(&mut self, kind: Streamed, text: &str) {
        let cells = match kind {
            Streamed::Text => &self.stream.text,
            Streamed::Thinking => &self.stream.thinking,
        };
        // Only the last cell of the transcript grows; anything after it (a
        // tool call, a notice) starts a new one.
        let last = self.entries.len().checked_sub(1);
        if let Some(i) = cells.last().copied().filter(|&i| Some(i) == last) {
            match self.cell_mut(i) {
                Some(CellKind::Assistant { markdown, .. }) => markdown.push_str(text),
                Some(CellKind::Thinking { text: t, .. }) => t.push_str(text),
                _ => {}
            }
            return;
        }
        self.stop_streaming();
        let (cell, list) = match kind {
            Streamed::Text => (CellKind::Assistant { markdown: text.to_string(), streaming: true }, Streamed::Text),
            Streamed::Thinking => (CellKind::Thinking { text: text.to_string(), streaming: true }, Streamed::Thinking),
        };
        let i = self.push(cell);
        match list {
            Streamed::Text => self.stream.text.push(i),
            Streamed::Thinking => self.stream.thinking.push(i),
        }
    }

    /// A retry: what the abandoned attempt streamed is dropped when the
    /// event says so (the next attempt streams the answer again). The retry
    /// itself shows in the status line, not as a cell.
    fn retry(&mut self, info: &RetryInfo) {
        if info.discard_partial {
            // What streamed will be sent again: drop it.
            for i in self.stream.text.iter().chain(&self.stream.thinking).copied().collect::<Vec<_>>() {
                match self.cell_mut(i) {
                    Some(CellKind::Assistant { markdown, streaming }) => {
                        markdown.clear();
                        *streaming = false;
                    }
                    Some(CellKind::Thinking { text, streaming }) => {
                        text.clear();
                        *streaming = false;
                    }
                    _ => {}
                }
            }
            self.stream = Stream::default();
        } else {
            self.end_stream();
        }
    }

    fn finish_message(&mut self, message: &Message) {
        let text = message.text();
        let thinking: Vec<&str> = message
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Thinking { thinking, .. } => Some(thinking.as_str()),
                _ => None,
            })
            .collect();
        let thinking = thinking.join("\n\n");
        if self.stream.text.is_empty() && self.stream.thinking.is_empty() && !thinking.trim().is_empty() {
            self.push(CellKind::Thinking { text: thinking, streaming: false });
        }
        match self.stream.text.as_slice() {
            [] if !text.trim().is_empty() => {
                self.push(CellKind::Assistant { markdown: text, streaming: false });
            }
            &[i] if !text.trim().is_empty() => {
                let same = matches!(self.cell(i), Some(CellKind::Assistant { markdown, .. }) if *markdown == text);
                if !same && let Some(CellKind::Assistant { markdown, .. }) = self.cell_mut(i) {
                    *markdown = text;
                }
            }
            _ => {}
        }
        self.server_tool_cells(message);
        self.end_stream();
    }

    /// What the provider ran itself (web searches): a finished tool cell for
    /// each, listing the pages found, then the pages the answer cites.
    fn server_tool_cells(&mut self, message: &Message) {
        let mut cited: Vec<&tern_protocol::WebSource> = Vec::new();
        for block in &message.content {
            match block {
                ContentBlock::ServerToolUse { id, name, input, .. } => {
                    let result = message.content.iter().find_map(|b| match b {
                        ContentBlock::ServerToolResult { tool_use_id, sources, error, .. } if tool_use_id == id => {
                            Some((sources, error))
                        }
                        _ => None,
                    });
                    let mut cell = ToolCell::new(id.clone(), name.clone(), input.clone(), Instant::now());
                    let (text, is_error, found) = match result {
                        Some((_, Some(code))) => (format!("the search failed: {code}"), true, 0),
                        Some((sources, None)) => (source_lines(sources), false, sources.len()),
                        None => (String::new(), false, 0),
                    };
                    cell.finished = Some(FinishedTool {
                        is_error,
                        text,
                        details: Some(Box::new(tern_protocol::ToolDetails::WebSearch(
                            tern_protocol::WebSearchDetails { results: found },
                        ))),
                        duration_ms: None,
                    });
                    self.push(CellKind::Tool(cell));
                }
                ContentBlock::Citations { sources } => {
                    for s in sources {
                        if !cited.iter().any(|c| c.url == s.url) {
                            cited.push(s);
                        }
                    }
                }
                _ => {}
            }
        }
        if !cited.is_empty() {
            let cited: Vec<tern_protocol::WebSource> = cited.into_iter().cloned().collect();
            self.push(CellKind::Notice {
                text: format!("Sources\n{}", source_lines(&cited)),
                level: NoticeLevel::Info,
            });
        }
    }

    /// The response is complete: its cells stop streaming.
    fn end_stream(&mut self) {
        self.stop_streaming();
        self.stream = Stream::default();
    }

    /// Mark the cells streamed so far as complete (the response may go on
    /// in new cells).
    fn stop_streaming(&mut self) {
        let cells: Vec<usize> = self.stream.text.iter().chain(&self.stream.thinking).copied().collect();
        for i in cells {
            let streaming = match self.cell(i) {
                Some(CellKind::Assistant { streaming, .. } | CellKind::Thinking { streaming, .. }) => *streaming,
                _ => false,
            };
            if streaming
                && let Some(CellKind::Assistant { streaming, .. } | CellKind::Thinking { streaming, .. }) =
                    self.cell_mut(i)
            {
                *streaming = false;
            }
        }
    }
}

/// The text of a tool result, capped at [`FinishedTool::MAX_TEXT`] bytes.
fn result_text(content: &[ToolResultContent]) -> String {
    let parts: Vec<&str> = content
        .iter()
        .map(|c| match c {
            ToolResultContent::Text { text } => text.as_str(),
            ToolResultContent::Image { .. } => "[image]",
        })
        .collect();
    let mut text = parts.join("\n");
    if text.len() > FinishedTool::MAX_TEXT {
        text.truncate(tern_protocol::text::floor_char_boundary(&text, FinishedTool::MAX_TEXT));
        text.push('…');
    }
    text
}

/// The most pages a search cell or a Sources list shows.
const MAX_SOURCES: usize = 20;

/// One `title — url` line per page (a title or address cannot add lines),
/// at most [`MAX_SOURCES`] and how many more.
fn source_lines(sources: &[tern_protocol::WebSource]) -> String {
    let one_line = tern_protocol::text::squash_whitespace;
    let mut lines: Vec<String> = sources
        .iter()
        .take(MAX_SOURCES)
        .map(|s| {
            let url = one_line(&s.url);
            if s.title.trim().is_empty() { url } else { format!("{} — {url}", one_line(&s.title)) }
        })
        .collect();
    if sources.len() > MAX_SOURCES {
        lines.push(format!("… {} more", sources.len() - MAX_SOURCES));
    }
    lines.join("\n")
}
