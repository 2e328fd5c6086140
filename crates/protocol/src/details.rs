//! Structured details tools attach to their results for front ends, as
//! types both sides share: the tool writes a [`ToolDetails`], and the TUI,
//! ACP and headless output read the same enum back, never key by key. On
//! the wire (`tern-events`, stream-json's `tool_use_result`, ACP's
//! `rawOutput`) a payload is its fields with a `kind` naming it.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Mode, TodoItem, UsageTotals, UserAnswer};

/// What a tool reports besides what the model reads: one payload per kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ToolDetails {
    /// A finished bash command.
    Bash(BashDetails),
    /// A command or subagent started in the background.
    Background(BackgroundDetails),
    /// A background task as it is now (`task_output`, `task_stop`).
    BackgroundTask(crate::TaskSummary),
    /// A file read (text or image).
    Read(ReadDetails),
    /// A file edited.
    Edit(EditDetails),
    /// A file written.
    Write(WriteDetails),
    /// A search (grep, glob, ls).
    Search(SearchDetails),
    /// The todo list written.
    Todo(TodoDetails),
    /// Plan mode entered or left.
    Plan(PlanDetails),
    /// The person's answers to the model's questions.
    Answers(AnswersDetails),
    /// A subagent's run.
    Task(TaskDetails),
    /// A skill loaded.
    Skill(SkillDetails),
    /// A web page fetched.
    WebFetch(WebFetchDetails),
    /// The provider's web search.
    WebSearch(WebSearchDetails),
    /// Deferred tools found.
    ToolSearch(ToolSearchDetails),
    /// An MCP server's tool.
    Mcp(McpDetails),
    /// Anything else an extension or an SDK tool attaches, as it sent it.
    #[serde(untagged)]
    Other(Value),
}

impl ToolDetails {
    /// The diff of a file change (edit or write), when the tool made one.
    pub fn file_change(&self) -> Option<&FileChange> {
        match self {
            ToolDetails::Edit(e) => Some(&e.change),
            ToolDetails::Write(w) => w.change.as_ref(),
            _ => None,
        }
    }

    /// The same, to change.
    pub fn file_change_mut(&mut self) -> Option<&mut FileChange> {
        match self {
            ToolDetails::Edit(e) => Some(&mut e.change),
            ToolDetails::Write(w) => w.change.as_mut(),
            _ => None,
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// One line of a hunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffLine {
    /// `+`, `-` or ` `.
    pub tag: char,
    /// Old line number (context and removed lines).
    pub old: Option<usize>,
    /// New line number (context and added lines).
    pub new: Option<usize>,
    /// The text, without its newline.
    pub text: String,
}

/// A group of nearby changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hunk {
    /// First old line (1-based).
    pub old_start: usize,
    /// First new line (1-based).
    pub new_start: usize,
    /// Its lines.
    pub lines: Vec<DiffLine>,
}

impl Hunk {
    /// The hunk's text before and after (context lines in both).
    pub fn texts(&self) -> (String, String) {
        let (mut old, mut new) = (String::new(), String::new());
        for l in &self.lines {
            if l.tag != '+' {
                old.push_str(&l.text);
                old.push('\n');
            }
            if l.tag != '-' {
                new.push_str(&l.text);
                new.push('\n');
            }
        }
        (old, new)
    }
}

/// What a change did to a file, as the tool made it (not read back from disk).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    /// The file, absolute, as the policy judged it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    /// Unified diff with 3 lines of context.
    #[serde(default)]
    pub diff: String,
    /// The same, as hunks of tagged lines.
    #[serde(default)]
    pub hunks: Vec<Hunk>,
    /// Lines added.
    #[serde(default)]
    pub added: usize,
    /// Lines removed.
    #[serde(default)]
    pub removed: usize,
}

/// An edit.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct EditDetails {
    /// The file as shown (workspace-relative when inside it).
    pub path: String,
    /// How many replacements were made.
    pub replacements: usize,
    /// Whether a near match (whitespace, quotes) was used.
    #[serde(default)]
    pub fallback: bool,
    /// The change.
    #[serde(flatten)]
    pub change: FileChange,
}

/// A write.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct WriteDetails {
    /// The file as shown.
    pub path: String,
    /// Whether it was created.
    pub created: bool,
    /// Lines written.
    pub lines: usize,
    /// Bytes written.
    pub bytes: usize,
    /// The change to what was there (an overwrite).
    #[serde(default, skip_serializing_if = "Option::is_none", flatten)]
    pub change: Option<FileChange>,
}

/// A read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ReadDetails {
    /// The file as shown.
    #[serde(default)]
    pub path: String,
    /// First line shown (text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u64>,
    /// Last line shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u64>,
    /// Lines in the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_lines: Option<u64>,
    /// Whether `total_lines` is an estimate (a large file).
    #[serde(default, skip_serializing_if = "is_false")]
    pub total_lines_estimated: bool,
    /// Whether more follows what was shown.
    #[serde(default)]
    pub truncated: bool,
    /// An image's facts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageDetails>,
}

/// An image read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ImageDetails {
    /// `png`, `jpeg`, ...
    pub format: String,
    /// Width in pixels.
    pub width: Option<u32>,
    /// Height in pixels.
    pub height: Option<u32>,
    /// Bytes on disk.
    pub bytes: u64,
    /// Whether it went to the model.
    pub sent: bool,
    /// What was sent: its type, size and bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// Width sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_width: Option<u32>,
    /// Height sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_height: Option<u32>,
    /// Bytes sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_bytes: Option<usize>,
}

/// A search: grep, glob or ls.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SearchDetails {
    /// Where it searched, as shown.
    pub path: String,
    /// Entries found in all (matches, files, directory entries).
    pub total: usize,
    /// Files with matches (grep).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<usize>,
    /// Entries shown.
    #[serde(default)]
    pub shown: usize,
    /// Where the page started (grep's `offset`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<usize>,
    /// Whether entries were left out.
    #[serde(default)]
    pub truncated: bool,
    /// Files that could not be read.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unreadable: usize,
}

/// Something started in the background.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct BackgroundDetails {
    /// Its task id.
    pub background_task: String,
    /// A command's sandbox level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// Why the sandbox was weaker than asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_warning: Option<String>,
    /// A subagent's type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent_type: Option<String>,
}

/// The todo list as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TodoDetails {
    /// Every item, in order.
    pub todos: Vec<TodoItem>,
}

/// Plan mode entered or left.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PlanDetails {
    /// The mode after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// Whether the person approved the plan (leaving plan mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved: Option<bool>,
    /// Whether the plan ended the run (nobody could approve it).
    #[serde(default)]
    pub ended: bool,
}

/// The person's answers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AnswersDetails {
    /// One per question.
    pub answers: Vec<UserAnswer>,
}

/// A subagent's run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskDetails {
    /// Its type.
    pub subagent_type: String,
    /// Turns it took.
    pub turns: u32,
    /// Tokens it used.
    pub usage: UsageTotals,
    /// What they cost.
    pub cost_usd: f64,
    /// Wall time.
    pub duration_ms: u64,
    /// Why it stopped.
    pub stop_reason: crate::AgentStopReason,
}

/// How a background subagent stands (`task_output`, `/tasks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubagentState {
    /// Working: its model is answering or its tools run.
    Running,
    /// Its request is out and nothing has come back yet (the model reads
    /// the prompt, or the provider is retried).
    Waiting,
    /// It answered.
    Finished,
    /// `task_stop` (or tern's exit) ended it.
    Stopped,
    /// It ended without an answer (an error, the turn limit).
    Failed,
}

impl SubagentState {
    /// Whether it still takes more work (`task_append`).
    pub fn is_live(self) -> bool {
        matches!(self, SubagentState::Running | SubagentState::Waiting)
    }
}

impl std::fmt::Display for SubagentState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SubagentState::Running => "running",
            SubagentState::Waiting => "waiting",
            SubagentState::Finished => "finished",
            SubagentState::Stopped => "stopped",
            SubagentState::Failed => "failed",
        })
    }
}

/// What a background subagent did last.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubagentActivity {
    /// A tool's name and a short form of its arguments (`read src/main.rs`),
    /// or `thinking` while its model answers.
    pub what: String,
    /// How long ago, in ms.
    pub ago_ms: u64,
}

/// A background subagent as `task_output` and `/tasks` report it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubagentReport {
    /// Its type or agent name.
    pub subagent_type: String,
    /// How it stands.
    pub state: SubagentState,
    /// Model requests it made.
    pub turns: u32,
    /// Tokens it used.
    pub usage: UsageTotals,
    /// What they cost, when the model's price is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// What it did last, and when.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_activity: Option<SubagentActivity>,
    /// Instructions `task_append` queued that it has not read yet, oldest
    /// first: each one's first line, at most [`QUEUED_PREVIEW_BYTES`] bytes
    /// (the report goes into every task result's details).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queued: Vec<String>,
    /// Instructions it read (appends delivered).
    #[serde(default)]
    pub delivered: u32,
}

/// How much of each waiting append a [`SubagentReport`] shows.
pub const QUEUED_PREVIEW_BYTES: usize = 120;

/// An append as a [`SubagentReport`] shows it: its first line, cut.
pub fn queued_preview(text: &str) -> String {
    crate::text::prefix_within(crate::first_line(text).0.as_str(), QUEUED_PREVIEW_BYTES).to_string()
}

impl SubagentReport {
    /// The report as a person and a model read it: a line of state, turns
    /// and usage, then what it did last and the appends it has or has not read.
    pub fn describe(&self) -> String {
        let u = &self.usage;
        let input = u.input_tokens + u.cache_read_tokens + u.cache_write_tokens;
        let mut out = format!(
            "subagent {} · {} · {} turns · {input} tokens in, {} out",
            self.subagent_type, self.state, self.turns, u.output_tokens
        );
        if let Some(cost) = self.cost_usd {
            out.push_str(&format!(" · ${cost:.4}"));
        }
        if let Some(a) = &self.last_activity {
            out.push_str(&format!("\nlast activity: {} ({} s ago)", a.what, a.ago_ms / 1000));
        }
        if self.delivered > 0 {
            out.push_str(&format!("\nappends read: {}", self.delivered));
        }
        // Only a live subagent has appends waiting: its end takes them.
        if !self.queued.is_empty() {
            out.push_str(&format!("\nappends waiting to be read: {}", self.queued.len()));
            for q in &self.queued {
                out.push_str(&format!("\n  - {q}"));
            }
        }
        out
    }
}

/// A skill loaded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SkillDetails {
    /// Its name.
    pub skill: String,
    /// Where it was found (`project`, `user`, ...).
    pub source: String,
    /// Its file (none for a bundled skill).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// The rules it allows while the prompt runs.
    #[serde(default)]
    pub allowed_tools: Vec<String>,
}

/// A web page fetched.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct WebFetchDetails {
    /// The URL after redirects.
    pub url: String,
    /// The redirects followed, in order.
    pub redirects: Vec<String>,
    /// Bytes of text.
    pub bytes: usize,
    /// Whether the text was cut.
    pub truncated: bool,
}

/// The provider's web search.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct WebSearchDetails {
    /// Results it found.
    pub results: usize,
}

/// Deferred tools found by `tool_search`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolSearchDetails {
    /// The tools that matched.
    pub matches: Vec<String>,
    /// Those made available by this call.
    pub activated: Vec<String>,
}

/// An MCP server's tool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct McpDetails {
    /// The server.
    pub server: String,
    /// The tool's own name there.
    pub tool: String,
    /// The structured result it sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
}

/// What a finished bash command reports besides its output.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BashDetails {
    /// The exit code; `None` when killed, timed out or interrupted.
    pub exit_code: Option<i32>,
    /// Wall time.
    #[serde(default)]
    pub duration_ms: u64,
    /// Lines of output in all.
    #[serde(default)]
    pub total_lines: u64,
    /// Bytes of output in all.
    #[serde(default)]
    pub total_bytes: u64,
    /// Whether the result shows only the tail.
    #[serde(default)]
    pub truncated: bool,
    /// Where the whole output was saved, when it was cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_output: Option<String>,
    /// Killed at its timeout.
    #[serde(default)]
    pub timed_out: bool,
    /// Killed because the person interrupted.
    #[serde(default)]
    pub interrupted: bool,
    /// The sandbox level it ran at: `read-only`, `workspace-write` or `off`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// Why the sandbox was weaker than asked (first call only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_warning: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_is_its_fields_with_a_kind_and_reads_back() {
        let d = ToolDetails::Edit(EditDetails {
            path: "a.rs".into(),
            replacements: 1,
            fallback: false,
            change: FileChange { added: 1, removed: 2, ..FileChange::default() },
        });
        let v = serde_json::to_value(&d).unwrap();
        assert_eq!(v["kind"], "edit");
        assert_eq!(v["added"], 1);
        assert_eq!(serde_json::from_value::<ToolDetails>(v).unwrap(), d);
        // What an extension sends stays as it sent it.
        let other = serde_json::json!({"anything": [1, 2]});
        assert_eq!(serde_json::from_value::<ToolDetails>(other.clone()).unwrap(), ToolDetails::Other(other));
    }

    #[test]
    fn a_hunk_gives_its_text_before_and_after() {
        let line = |tag, text: &str| DiffLine { tag, old: None, new: None, text: text.into() };
        let h = Hunk { old_start: 1, new_start: 1, lines: vec![line(' ', "a"), line('-', "b"), line('+', "B")] };
        assert_eq!(h.texts(), ("a\nb\n".to_string(), "a\nB\n".to_string()));
    }
}
