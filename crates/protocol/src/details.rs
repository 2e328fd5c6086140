//! Structured details tools attach to their results for front ends, as
//! types both sides share (the tool writes them, the TUI and headless read
//! them back through the same struct, never key by key).

use serde::{Deserialize, Serialize};

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

impl BashDetails {
    /// The details of a result, if they are a bash command's.
    pub fn from_value(details: Option<&serde_json::Value>) -> Option<BashDetails> {
        details.and_then(|d| serde_json::from_value(d.clone()).ok())
    }
}
