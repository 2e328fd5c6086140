//! Commands running in the background (`bash` with `run_in_background`), as
//! the tools report them and front ends list them.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// How a background task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum TaskStatus {
    /// Still running.
    Running,
    /// It exited (its code; 128 + the signal when a signal ended it).
    Exited {
        /// Its exit code.
        exit_code: Option<i32>,
    },
    /// `task_stop` (or tern's exit) ended it.
    Stopped,
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TaskStatus::Running => f.write_str("running"),
            TaskStatus::Exited { exit_code: Some(c) } => write!(f, "exited with code {c}"),
            TaskStatus::Exited { exit_code: None } => f.write_str("exited"),
            TaskStatus::Stopped => f.write_str("stopped"),
        }
    }
}

/// A background task as lists show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskSummary {
    /// `bg-N`.
    pub id: String,
    /// The command.
    pub command: String,
    /// Running, exited or stopped.
    #[serde(flatten)]
    pub status: TaskStatus,
    /// Time since it started, in ms.
    pub elapsed_ms: u64,
    /// Bytes it printed.
    pub output_bytes: u64,
    /// Its log file.
    pub log: PathBuf,
    /// A background subagent's progress (none for a command).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent: Option<crate::SubagentReport>,
}
