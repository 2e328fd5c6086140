//! Calls a model wrote as text (models opted in with
//! `tool_call_format = "text"`): a reply without native calls whose text is
//! such a call becomes the same message a native call would have made, so
//! policy, approvals, results and the next request treat it alike.

use tern_llm::Completion;
use tern_llm::text_tool_calls::{TextCalls, call_id, may_start_call, parse};
use tern_protocol::{AgentEvent, ContentBlock, StopReason};

use crate::{EventSink, RuntimeTool};

/// The text of a streaming reply, held back while it may still be a call
/// (so a call is not shown as text first, in any front end), then let
/// through as it comes.
#[derive(Debug, Default)]
pub(crate) struct TextGate {
    held: String,
    passing: bool,
}

impl TextGate {
    /// The text to show now for a delta (`None` while it is held).
    pub(crate) fn admit(&mut self, text: &str) -> Option<String> {
        if self.passing {
            return Some(text.to_string());
        }
        self.held.push_str(text);
        if may_start_call(&self.held) {
            return None;
        }
        self.passing = true;
        Some(std::mem::take(&mut self.held))
    }

    /// Start over (a retried attempt streams again from the beginning).
    pub(crate) fn reset(&mut self) {
        *self = Self::default();
    }

    /// The text still held at the end of the reply.
    pub(crate) fn take_held(&mut self) -> String {
        std::mem::take(&mut self.held)
    }
}

/// The completion with the calls its text holds, when it has no native
/// ones and was not cut; otherwise as it came. A reply that looks like a
/// call but is not taken stays the answer, and a notice says why. The bool
/// says whether calls were read.
pub(crate) fn read_text_calls(mut c: Completion, tools: &[RuntimeTool], events: &EventSink) -> (Completion, bool) {
    let native = c.message.content.iter().any(|b| matches!(b, ContentBlock::ToolUse { .. }));
    // A reply that finished (not one cut by the limit, refused or paused).
    let complete = matches!(c.stop_reason, Some(StopReason::EndTurn | StopReason::StopSequence | StopReason::ToolUse));
    if native || !c.incomplete_tool_calls.is_empty() || !complete {
        return (c, false);
    }
    let text = c.message.text();
    let (offered, _) = crate::tool::request_tools(tools);
    match parse(&text, &offered) {
        TextCalls::Text => (c, false),
        TextCalls::Refused(why) => {
            events(AgentEvent::Notice {
                message: format!("the reply looks like a tool call written as text, but it was not run: {why}"),
            });
            (c, false)
        }
        TextCalls::Calls { calls, prose } => {
            // The text becomes the calls (and the prose around them); reasoning stays.
            c.message.content.retain(|b| !matches!(b, ContentBlock::Text { .. }));
            if let Some(text) = prose {
                c.message.content.push(ContentBlock::Text { text });
            }
            for call in calls {
                c.message.content.push(ContentBlock::ToolUse { id: call_id(), name: call.name, input: call.input });
            }
            c.stop_reason = Some(StopReason::ToolUse);
            (c, true)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_holds_what_may_be_a_call_and_lets_prose_through() {
        let mut gate = TextGate::default();
        assert_eq!(gate.admit("``"), None);
        assert_eq!(gate.admit("`json\n{\"name\""), None);
        assert_eq!(gate.take_held(), "```json\n{\"name\"");
        gate.reset();
        assert_eq!(gate.admit("  "), None);
        assert_eq!(gate.admit("The answer"), Some("  The answer".to_string()));
        assert_eq!(gate.admit(" is {"), Some(" is {".to_string()));
        assert_eq!(gate.take_held(), "");
    }
}
