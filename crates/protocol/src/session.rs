//! The session file: a header line, then one entry per line, append-only.
//! The runtime writes it and every reader (resume, `tern sessions show`,
//! export, the list) reads it back through these types.
//!
//! Entries carry an id and their parent's id, so a file holds a tree: the
//! conversation to resume is the path from the last entry back to the root.
//! Appending after an earlier entry makes a branch; nothing is rewritten.

use serde::{Deserialize, Serialize};

use crate::{Message, TodoItem, ToolDetails, UsageTotals};

/// The format this tern writes. A file with a higher version is refused
/// (a newer tern wrote it); version 0 is the event log tern wrote before.
pub const SESSION_FORMAT_VERSION: u32 = 1;

/// The first words of the message that stands for a compacted part of a
/// conversation (front ends show it as a summary, not as a prompt).
pub const COMPACTION_SUMMARY_PREFIX: &str = "[Summary of the conversation so far, written when it was compacted]";

/// What the model answers to a compaction's summary.
const COMPACTION_SUMMARY_ACK: &str = "Understood: I have the summary and will continue from it.";

/// The two messages a compacted conversation starts with: the summary, as
/// the person's, and the model's acknowledgement.
pub fn compaction_summary_messages(summary: &str) -> [crate::Message; 2] {
    [
        crate::Message::user_text(format!("{COMPACTION_SUMMARY_PREFIX}\n\n{summary}")),
        crate::Message::assistant_text(COMPACTION_SUMMARY_ACK),
    ]
}

/// The header's `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HeaderTag {
    /// The only value: `"session"`.
    Session,
}

/// Where a forked session came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForkedFrom {
    /// The original session's id.
    pub session: String,
    /// The entry the fork continues from.
    pub entry: Option<String>,
}

/// The first line of a session file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionHeader {
    /// Always `"session"`.
    #[serde(rename = "type")]
    pub tag: HeaderTag,
    /// [`SESSION_FORMAT_VERSION`] when written.
    pub version: u32,
    /// The session id (also the file's name).
    pub id: String,
    /// The workspace.
    pub cwd: String,
    /// The provider.
    pub provider: String,
    /// The model it started with.
    pub model: String,
    /// tern's version.
    pub tern_version: String,
    /// When it started (RFC 3339, UTC).
    pub started_at: String,
    /// The git branch at the start, when in a repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_branch: Option<String>,
    /// Set when this session was forked from another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkedFrom>,
}

/// One line after the header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionEntry {
    /// Unique within the file.
    pub id: String,
    /// The entry this one follows (`None`: a root).
    #[serde(default)]
    pub parent: Option<String>,
    /// What happened.
    #[serde(flatten)]
    pub record: SessionRecord,
}

/// What an entry records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SessionRecord {
    /// A message as it joined the conversation: a prompt, an assistant reply
    /// (text, thinking with its signature, tool calls), tool results.
    Message {
        /// The message, exactly as it is sent to the provider.
        message: Message,
    },
    /// `/model NAME`: the following turns use this model.
    ModelChanged {
        /// The model.
        model: String,
    },
    /// The permission mode changed.
    ModeChanged {
        /// The mode's name.
        mode: String,
    },
    /// The todo list after a change.
    Todos {
        /// The whole list.
        todos: Vec<TodoItem>,
    },
    /// The conversation so far, but for its last `kept` messages, was
    /// replaced by a summary.
    Compaction {
        /// The summary the model wrote (with the todo list).
        summary: String,
        /// How many of the latest messages stay verbatim after the summary.
        kept: usize,
        /// Estimated tokens of the conversation before.
        tokens_before: u64,
        /// Estimated tokens after.
        tokens_after: u64,
    },
    /// `/clear`: the conversation started afresh.
    HistoryCleared,
    /// `/rename`: the session's title.
    Renamed {
        /// The title.
        title: String,
    },
    /// Tokens and estimated cost at the end of a prompt's run: that run's,
    /// and the session's so far (so a reader needs only the last one).
    Usage {
        /// This run's tokens.
        run: UsageTotals,
        /// This run's estimated cost in USD.
        run_cost_usd: f64,
        /// The session's tokens so far.
        session: UsageTotals,
        /// The session's estimated cost so far.
        session_cost_usd: f64,
    },
    /// `/rewind`: the conversation went back to before prompt `prompt` (this
    /// entry's parent is where it goes on from; what came after is a branch
    /// left in the file).
    Rewound {
        /// The prompt's number in the session (1 = the first).
        prompt: usize,
    },
    /// The session was resumed here (by `--continue`, `--resume`, `/resume`).
    Resumed {
        /// When (RFC 3339, UTC).
        at: String,
    },
    /// What a tool call reported besides its result, for front ends that
    /// show a resumed session: written beside the chain (no entry names it
    /// as parent), so a reader that does not know it loses nothing.
    ToolRun(ToolRun),
}

/// A finished tool call's figures, as a session keeps them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolRun {
    /// The call's id.
    pub tool_use_id: String,
    /// The tool's own time (waiting for a permission answer not counted).
    pub duration_ms: u64,
    /// Its details (exit code, line counts, the diff), when they were small
    /// enough to keep (see [`ToolRun::MAX_DETAILS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Box<ToolDetails>>,
}

impl ToolRun {
    /// The most bytes of details kept (as JSON). Larger ones lose their
    /// unified diff text (the hunks say the same), then their hunks (the
    /// counts stay); if still too large, they are not kept.
    pub const MAX_DETAILS: usize = 64 * 1024;

    /// The figures of a call, with its details cut to [`ToolRun::MAX_DETAILS`].
    pub fn bounded(tool_use_id: &str, duration_ms: u64, details: Option<&ToolDetails>) -> Self {
        let fits = |d: &ToolDetails| serde_json::to_string(d).is_ok_and(|j| j.len() <= Self::MAX_DETAILS);
        let details = details.cloned().and_then(|mut d| {
            if fits(&d) {
                return Some(d);
            }
            d.file_change_mut()?.diff.clear();
            if fits(&d) {
                return Some(d);
            }
            d.file_change_mut()?.hunks.clear();
            fits(&d).then_some(d)
        });
        Self { tool_use_id: tool_use_id.to_string(), duration_ms, details: details.map(Box::new) }
    }
}
