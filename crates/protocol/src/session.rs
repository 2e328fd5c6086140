//! The session log's lines that are not agent events: what the runtime
//! writes and a future reader (resume, export) reads back through the same
//! types.

use serde::{Deserialize, Serialize};

use crate::Message;

/// One line of a session log, besides the [`crate::AgentEvent`]s it records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SessionRecord {
    /// The first line: who, where, with what.
    SessionStart {
        /// The session id.
        session_id: String,
        /// The workspace.
        cwd: String,
        /// The provider.
        provider: String,
        /// The model.
        model: String,
        /// tern's version.
        version: String,
    },
    /// A user message as it joined the conversation.
    UserMessage {
        /// The message.
        message: Message,
    },
    /// `/model NAME`: the following turns use this model.
    ModelChanged {
        /// The model.
        model: String,
    },
    /// `/clear`: the conversation started afresh.
    HistoryCleared,
}
