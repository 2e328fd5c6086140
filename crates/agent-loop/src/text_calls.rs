//! Calls a model wrote as text (models opted in with
//! `tool_call_format = "text"`): a reply without native calls whose text is
//! such a call becomes the same message a native call would have made, so
//! policy, approvals, results and the next request treat it alike.

use tern_llm::Completion;
use tern_llm::text_tool_calls::{TextCalls, call_id, parse};
use tern_protocol::{AgentEvent, ContentBlock, StopReason};

use crate::{EventSink, RuntimeTool};

/// The completion with the calls its text holds, when it has no native
/// ones and was not cut; otherwise as it came. A reply that looks like a
/// call but is not taken stays the answer, and a notice says why.
pub(crate) fn read_text_calls(mut c: Completion, tools: &[RuntimeTool], events: &EventSink) -> Completion {
    let native = c.message.content.iter().any(|b| matches!(b, ContentBlock::ToolUse { .. }));
    // A reply that finished (not one cut by the limit, refused or paused).
    let complete =
        matches!(c.stop_reason, Some(StopReason::EndTurn | StopReason::StopSequence | StopReason::ToolUse));
    if native || !c.incomplete_tool_calls.is_empty() || !complete {
        return c;
    }
    let text = c.message.text();
    let (offered, _) = crate::tool::request_tools(tools);
    match parse(&text, &offered) {
        TextCalls::Text => c,
        TextCalls::Refused(why) => {
            events(AgentEvent::Notice {
                message: format!("the reply looks like a tool call written as text, but it was not run: {why}"),
            });
            c
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
            c
        }
    }
}
