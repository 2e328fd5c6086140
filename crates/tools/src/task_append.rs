//! `task_append {id, prompt}`: more work for a background subagent, and
//! what its `task_output` reports.
//!
//! A [`SubagentLink`] is shared by the subagent's run (the runtime feeds it
//! the child's events and reads appends from it as the loop's
//! [`Inbox`]) and the background task the parent sees: `task_append`
//! queues text on it, `task_output` and `/tasks` report it.
//!
//! - An append is read before the child's next model request: once the
//!   tool results of the turn it is in are in, or when it would otherwise
//!   finish (it then goes on instead). It joins the child's conversation as
//!   one user message.
//! - A child that finished, stopped or failed takes no more: the refusal
//!   names its state. Finishing and the last look at the queue are one step
//!   ([`Inbox::take`] with `ending`), so nothing appended is lost.
//! - Bounded: at most [`MAX_QUEUED_BYTES`] of text waits per child.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tern_agent_loop::{Inbox, Tool, ToolContext, ToolError, ToolOutput, UpdateSink};
use tern_protocol::sync::LockExt as _;
use tern_protocol::{
    AgentEvent, ExecutionMode, SubagentActivity, SubagentReport, SubagentState, ToolDefinition, ToolResultContent,
    Usage, UsageTotals,
};
use tokio_util::sync::CancellationToken;

use crate::ToolEnv;

/// Text waiting for one child, at most (bytes, all appends together).
pub const MAX_QUEUED_BYTES: usize = 32 * 1024;
/// The most of an activity's arguments shown (`read src/…`).
const ACTIVITY_CHARS: usize = 80;

#[derive(Debug)]
struct Progress {
    state: SubagentState,
    turns: u32,
    usage: UsageTotals,
    cost_usd: f64,
    last: Option<(String, Instant)>,
    queued: VecDeque<String>,
    queued_bytes: usize,
    delivered: u32,
}

/// One background subagent's progress and its queue of appends.
#[derive(Debug)]
pub struct SubagentLink {
    subagent_type: String,
    priced: bool,
    progress: Mutex<Progress>,
}

impl SubagentLink {
    /// A link for a child of `subagent_type`; `priced`: its model's price is known.
    pub fn new(subagent_type: &str, priced: bool) -> Arc<Self> {
        Arc::new(Self {
            subagent_type: subagent_type.to_string(),
            priced,
            progress: Mutex::new(Progress {
                state: SubagentState::Waiting,
                turns: 0,
                usage: UsageTotals::default(),
                cost_usd: 0.0,
                last: None,
                queued: VecDeque::new(),
                queued_bytes: 0,
                delivered: 0,
            }),
        })
    }

    fn progress(&self) -> std::sync::MutexGuard<'_, Progress> {
        self.progress.lock_or_recover()
    }

    /// Follow one of the child's own events (not a wrapped one of its own children).
    pub fn observe(&self, event: &AgentEvent) {
        let mut p = self.progress();
        if !p.state.is_live() {
            return;
        }
        let now = Instant::now();
        match event {
            AgentEvent::TurnStart { turn } => {
                p.turns = p.turns.max(*turn);
                p.state = SubagentState::Waiting;
                p.last = Some(("thinking".into(), now));
            }
            AgentEvent::Retry(_) | AgentEvent::Waiting(_) => p.state = SubagentState::Waiting,
            AgentEvent::TextDelta { .. } | AgentEvent::ThinkingDelta { .. } | AgentEvent::ToolInputStart { .. } => {
                p.state = SubagentState::Running;
                p.last = Some(("thinking".into(), now));
            }
            AgentEvent::AssistantMessage { .. } => p.state = SubagentState::Running,
            AgentEvent::ToolCallStart { name, input, .. } => {
                p.state = SubagentState::Running;
                let about = tern_protocol::call_title(name, input).text();
                let short = tern_protocol::text::prefix_within(&about, ACTIVITY_CHARS);
                let more = if short.len() < about.len() { "…" } else { "" };
                let what = if short.is_empty() { name.clone() } else { format!("{name} {short}{more}") };
                p.last = Some((what, now));
            }
            _ => {}
        }
    }

    /// Count one response of the child and what it cost.
    pub fn count(&self, usage: &Usage, cost_usd: f64) {
        let mut p = self.progress();
        p.usage.add(usage);
        p.cost_usd += cost_usd;
    }

    /// Queue `text` for the child: how many appends now wait, or why not
    /// (it ended; too much waits already), worded for the model.
    pub fn append(&self, id: &str, text: &str) -> Result<usize, String> {
        let mut p = self.progress();
        if !p.state.is_live() {
            return Err(format!(
                "task {id} has {} ({}): it takes no more instructions. Read its answer with task_output, or start \
                 a new `task` for the further work.",
                p.state,
                match p.state {
                    SubagentState::Finished => "it answered",
                    SubagentState::Stopped => "task_stop ended it",
                    _ => "it ended without an answer",
                }
            ));
        }
        if p.queued_bytes + text.len() > MAX_QUEUED_BYTES {
            return Err(format!(
                "task {id} already has {} of instructions waiting, and at most {} may wait per subagent (this \
                 append is {}). Wait until it reads them (task_output shows what waits), or send less.",
                crate::output_tail::human_bytes(p.queued_bytes as u64),
                crate::output_tail::human_bytes(MAX_QUEUED_BYTES as u64),
                crate::output_tail::human_bytes(text.len() as u64),
            ));
        }
        p.queued_bytes += text.len();
        p.queued.push_back(text.to_string());
        Ok(p.queued.len())
    }

    /// The child's run ended as `state`: it takes no more. The appends it
    /// never read, oldest first.
    pub fn end(&self, state: SubagentState) -> Vec<String> {
        let mut p = self.progress();
        if p.state.is_live() {
            p.state = state;
        }
        p.queued_bytes = 0;
        p.queued.drain(..).collect()
    }

    /// How it stands now.
    pub fn report(&self) -> SubagentReport {
        let p = self.progress();
        SubagentReport {
            subagent_type: self.subagent_type.clone(),
            state: p.state,
            turns: p.turns,
            usage: p.usage,
            cost_usd: self.priced.then_some(p.cost_usd),
            last_activity: p
                .last
                .as_ref()
                .map(|(what, at)| SubagentActivity { what: what.clone(), ago_ms: at.elapsed().as_millis() as u64 }),
            queued: p.queued.iter().map(|q| tern_protocol::queued_preview(q)).collect(),
            delivered: p.delivered,
        }
    }
}

impl Inbox for SubagentLink {
    fn take(&self, ending: bool) -> Option<String> {
        let mut p = self.progress();
        if p.queued.is_empty() {
            if ending && p.state.is_live() {
                p.state = SubagentState::Finished;
            }
            return None;
        }
        let texts: Vec<String> = p.queued.drain(..).collect();
        p.queued_bytes = 0;
        p.delivered += texts.len() as u32;
        // As the task's own prompt came: the parent's words, as they are.
        Some(texts.join("\n\n"))
    }
}

/// `task_append`.
pub fn definition() -> ToolDefinition {
    ToolDefinition {
        name: "task_append".into(),
        description: "Give a background subagent (task run_in_background) more instructions while it runs. It \
                      reads them once its current turn's tool results are in (or before it would finish) and goes \
                      on with them; a subagent that finished, stopped or failed takes none (start a new task). \
                      Read its answer and progress with task_output."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "The subagent's task id, e.g. bg-1"},
                "prompt": {"type": "string", "description": "The added instructions, self-contained."}
            },
            "required": ["id", "prompt"],
            "additionalProperties": false
        }),
        snippet: Some("task_append: give a background subagent more work".into()),
        execution_mode: ExecutionMode::Sequential,
    }
}

/// The `task_append` tool.
pub struct TaskAppendTool {
    env: Arc<ToolEnv>,
}

impl TaskAppendTool {
    /// Over `env`'s background tasks.
    pub fn new(env: Arc<ToolEnv>) -> Self {
        Self { env }
    }
}

impl Tool for TaskAppendTool {
    fn execute<'a>(
        &'a self,
        _ctx: ToolContext,
        input: Value,
        _cancel: CancellationToken,
        _updates: UpdateSink,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let id = input.get("id").and_then(Value::as_str).unwrap_or_default().trim();
            let prompt = input.get("prompt").and_then(Value::as_str).unwrap_or_default();
            if prompt.trim().is_empty() {
                return Err(ToolError::new("`prompt` is empty: give the subagent the added instructions"));
            }
            let summary = self.env.background.append(id, prompt)?;
            let waiting = summary.subagent.as_ref().map_or(0, |r| r.queued.len());
            Ok(ToolOutput {
                content: vec![ToolResultContent::text(format!(
                    "Queued for {id} ({waiting} waiting): it reads them before its next model request. Its answer \
                     comes with task_output {{\"id\": \"{id}\", \"wait\": true}}."
                ))],
                details: Some(Box::new(tern_protocol::ToolDetails::BackgroundTask(summary))),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_wait_until_read_and_a_finished_child_refuses_them_naming_its_state() {
        let link = SubagentLink::new("worker", true);
        assert_eq!(link.take(false), None);
        assert_eq!(link.append("bg-1", "also count the tests"), Ok(1));
        assert_eq!(link.append("bg-1", "and the docs"), Ok(2));
        assert_eq!(link.report().queued, ["also count the tests", "and the docs"]);
        let read = link.take(false).unwrap();
        assert_eq!(read, "also count the tests\n\nand the docs");
        let r = link.report();
        assert!(r.queued.is_empty() && r.delivered == 2 && r.state.is_live());
        // The report shows a long append's first line, cut; the child reads it whole.
        let long = format!("{}\nsecond line", "x".repeat(10_000));
        assert_eq!(link.append("bg-1", &long), Ok(1));
        assert_eq!(link.report().queued, ["x".repeat(tern_protocol::QUEUED_PREVIEW_BYTES)]);
        assert_eq!(link.take(false).unwrap(), long);
        // Ending with nothing waiting closes it in the same step.
        assert_eq!(link.take(true), None);
        let refused = link.append("bg-1", "one more").unwrap_err();
        assert!(refused.starts_with("task bg-1 has finished (it answered)"), "{refused}");
        assert!(refused.contains("start a new `task`"), "{refused}");
    }

    #[test]
    fn ending_with_appends_waiting_reads_them_instead_and_the_queue_is_bounded() {
        let link = SubagentLink::new("explore", false);
        link.append("bg-2", "more").unwrap();
        assert!(link.take(true).is_some(), "what waits is read, not dropped");
        assert!(link.report().state.is_live());
        let big = "x".repeat(MAX_QUEUED_BYTES - 10);
        link.append("bg-2", &big).unwrap();
        let refused = link.append("bg-2", "eleven byte").unwrap_err();
        assert!(refused.contains("at most 32.0 KB may wait per subagent"), "{refused}");
        assert_eq!(link.end(SubagentState::Stopped), [big]);
        let refused = link.append("bg-2", "more").unwrap_err();
        assert!(refused.starts_with("task bg-2 has stopped (task_stop ended it)"), "{refused}");
        assert_eq!(link.report().cost_usd, None, "no price, no cost");
    }

    #[test]
    fn progress_follows_turns_tools_and_usage() {
        let link = SubagentLink::new("explore", true);
        link.observe(&AgentEvent::TurnStart { turn: 1 });
        assert_eq!(link.report().state, SubagentState::Waiting);
        link.observe(&AgentEvent::ToolCallStart {
            id: "c".into(),
            name: "read".into(),
            input: json!({"path": "src/main.rs"}),
        });
        link.count(&Usage { input_tokens: 100, output_tokens: 7, ..Default::default() }, 0.25);
        let r = link.report();
        assert_eq!((r.state, r.turns, r.usage.output_tokens, r.cost_usd), (SubagentState::Running, 1, 7, Some(0.25)));
        assert_eq!(r.last_activity.unwrap().what, "read src/main.rs");
        let text = link.report().describe();
        assert!(text.starts_with("subagent explore · running · 1 turns · 100 tokens in, 7 out · $0.2500"), "{text}");
    }
}
