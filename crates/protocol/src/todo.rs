//! The model's todo list, as `todo_write` keeps it and front ends show it.

use serde::{Deserialize, Serialize};

/// Where a todo stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on (at most one at a time).
    InProgress,
    /// Done.
    Completed,
}

impl TodoStatus {
    /// The mark a plain-text list shows: `[x]` done, `[>]` in progress, `[ ]` pending.
    pub fn mark(self) -> &'static str {
        match self {
            TodoStatus::Completed => "[x]",
            TodoStatus::InProgress => "[>]",
            TodoStatus::Pending => "[ ]",
        }
    }
}

/// One item of the list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoItem {
    /// What to do, imperative ("Run the tests").
    pub content: String,
    /// Its status.
    pub status: TodoStatus,
    /// The same in the present continuous, shown while in progress ("Running the tests").
    pub active_form: String,
}
