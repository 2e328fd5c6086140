//! Compaction: when a conversation nears the model's context window, old
//! tool results become receipts and the rest is replaced by a structured
//! summary the model writes, with the todo list and the last turns kept
//! verbatim.

use tern_protocol::Message;

pub use tern_protocol::COMPACTION_SUMMARY_PREFIX as SUMMARY_PREFIX;

/// The assistant's side of the exchange, so turns keep alternating.
const SUMMARY_ACK: &str = "Understood: I have the summary and will continue from it.";

/// The exchange that stands for the compacted part of a conversation: the
/// summary as a user message and a short assistant acknowledgement, so the
/// next message (a prompt) alternates as every provider expects.
pub fn summary_messages(summary: &str) -> [Message; 2] {
    [Message::user_text(format!("{SUMMARY_PREFIX}\n\n{summary}")), Message::assistant_text(SUMMARY_ACK)]
}
