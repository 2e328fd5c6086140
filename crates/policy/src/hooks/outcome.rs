//! Combining the replies of every hook of one event into a [`HookOutcome`].
//! Pure: the runner feeds it one result per hook, in config order.

use serde::Serialize;

use super::reply::HookReply;
use super::{HookDecision, HookEvent};

/// What all matching hooks of one event decided, combined.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HookOutcome {
    /// Combined decision: any Deny wins, then Ask, then Allow; None when no hook decided.
    pub decision: Option<HookDecision>,
    /// Why the action is blocked (exit 2, decision deny, or, for pre_tool_use, any failure).
    /// For `stop` this means "do not stop yet": the runtime gives the reason to the model.
    pub blocked: Option<String>,
    /// The reason given by the hook whose decision is [`HookOutcome::decision`].
    pub reason: Option<String>,
    /// pre_tool_use only: the replacement tool input (the last hook that gave one wins).
    pub updated_input: Option<serde_json::Value>,
    /// Texts to add to the model's context, in hook order.
    pub additional_context: Vec<String>,
    /// Non-blocking problems (for events that fail open), each naming the hook command.
    pub warnings: Vec<String>,
    /// Every hook that was started, in order.
    pub ran: Vec<HookRun>,
}

/// One hook command that was started, for logs and `explain`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HookRun {
    /// The command as configured.
    pub command: String,
    /// Exit code; None when killed by a signal, timed out, cancelled or never started.
    pub exit_code: Option<i32>,
    /// Wall time from spawn to end.
    pub duration_ms: u64,
    /// Whether it ran past its timeout and was killed.
    pub timed_out: bool,
}

/// Whether the runner should start the next hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    Continue,
    Stop,
}

/// Accumulates hook results into a [`HookOutcome`].
#[derive(Debug)]
pub(crate) struct Combiner {
    event: HookEvent,
    outcome: HookOutcome,
    blocks: Vec<String>,
}

impl Combiner {
    pub(crate) fn new(event: HookEvent) -> Combiner {
        Combiner { event, outcome: HookOutcome::default(), blocks: Vec::new() }
    }

    /// Record that a hook was started.
    pub(crate) fn ran(&mut self, run: HookRun) {
        self.outcome.ran.push(run);
    }

    /// A failure that only warns (a callback whose matcher said `continue`).
    pub(crate) fn warn(&mut self, failure: String) {
        self.outcome.warnings.push(failure);
    }

    /// Add what the hook `command` said, or how it failed.
    pub(crate) fn add(&mut self, command: &str, result: Result<HookReply, String>) -> Flow {
        let reply = match result {
            Ok(reply) => reply,
            Err(failure) if self.event.fails_closed() => {
                self.decide(HookDecision::Deny, Some(failure.clone()));
                self.blocks.push(failure);
                return Flow::Stop;
            }
            Err(failure) => {
                self.outcome.warnings.push(failure);
                return Flow::Continue;
            }
        };
        self.outcome.warnings.extend(reply.notes);
        self.outcome.additional_context.extend(reply.additional_context.filter(|c| !c.trim().is_empty()));
        if reply.updated_input.is_some() {
            self.outcome.updated_input = reply.updated_input;
        }
        let Some(decision) = reply.decision else { return Flow::Continue };
        self.decide(decision, reply.reason.clone());
        if decision != HookDecision::Deny {
            return Flow::Continue;
        }
        let short = super::reply::short_command(command);
        self.blocks.push(reply.reason.unwrap_or_else(|| format!("blocked by hook `{short}`")));
        if self.event.block_ends_the_run() { Flow::Stop } else { Flow::Continue }
    }

    fn decide(&mut self, decision: HookDecision, reason: Option<String>) {
        if self.outcome.decision.is_none_or(|current| decision.strength() > current.strength()) {
            self.outcome.decision = Some(decision);
            self.outcome.reason = reason;
        }
    }

    pub(crate) fn finish(mut self) -> HookOutcome {
        if !self.blocks.is_empty() {
            self.outcome.blocked = Some(self.blocks.join("\n"));
        }
        self.outcome
    }
}

impl HookDecision {
    fn strength(self) -> u8 {
        match self {
            HookDecision::Allow => 1,
            HookDecision::Ask => 2,
            HookDecision::Deny => 3,
        }
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    fn decided(decision: HookDecision, reason: &str) -> Result<HookReply, String> {
        Ok(HookReply { decision: Some(decision), reason: Some(reason.to_string()), ..HookReply::default() })
    }

    #[test]
    fn deny_beats_ask_beats_allow_and_keeps_its_reason() {
        let mut combiner = Combiner::new(HookEvent::PostToolUse);
        assert_eq!(combiner.add("a", decided(HookDecision::Allow, "fine")), Flow::Continue);
        assert_eq!(combiner.add("b", decided(HookDecision::Ask, "unsure")), Flow::Continue);
        assert_eq!(combiner.add("c", decided(HookDecision::Allow, "fine again")), Flow::Continue);
        let outcome = combiner.finish();
        assert_eq!((outcome.decision, outcome.reason.as_deref()), (Some(HookDecision::Ask), Some("unsure")));
        assert_eq!(outcome.blocked, None);
    }

    #[test]
    fn pre_tool_use_fails_closed_and_stops() {
        let mut combiner = Combiner::new(HookEvent::PreToolUse);
        assert_eq!(combiner.add("a", Err("hook `a` exited 1".into())), Flow::Stop);
        let outcome = combiner.finish();
        assert_eq!(
            outcome,
            HookOutcome {
                decision: Some(HookDecision::Deny),
                blocked: Some("hook `a` exited 1".into()),
                reason: Some("hook `a` exited 1".into()),
                ..HookOutcome::default()
            }
        );
    }

    #[test]
    fn post_tool_use_fails_open_and_collects_every_block() {
        let mut combiner = Combiner::new(HookEvent::PostToolUse);
        assert_eq!(combiner.add("a", Err("hook `a` exited 1".into())), Flow::Continue);
        assert_eq!(combiner.add("lint", decided(HookDecision::Deny, "lint failed")), Flow::Continue);
        let silent = Ok(HookReply { decision: Some(HookDecision::Deny), ..HookReply::default() });
        assert_eq!(combiner.add("fmt", silent), Flow::Continue);
        let outcome = combiner.finish();
        assert_eq!(outcome.warnings, ["hook `a` exited 1"]);
        assert_eq!(outcome.blocked.as_deref(), Some("lint failed\nblocked by hook `fmt`"));
        assert_eq!(outcome.reason.as_deref(), Some("lint failed"));
    }

    #[test]
    fn stop_block_ends_the_run() {
        let mut combiner = Combiner::new(HookEvent::Stop);
        assert_eq!(combiner.add("tests", decided(HookDecision::Deny, "tests fail")), Flow::Stop);
        assert_eq!(combiner.finish().blocked.as_deref(), Some("tests fail"));
    }

    #[test]
    fn last_updated_input_wins_and_context_accumulates() {
        let mut combiner = Combiner::new(HookEvent::PreToolUse);
        let rewrite = |input, context: &str| {
            Ok(HookReply {
                updated_input: Some(input),
                additional_context: Some(context.to_string()),
                ..HookReply::default()
            })
        };
        combiner.add("a", rewrite(json!({"n": 1}), "one"));
        combiner.add("b", rewrite(json!({"n": 2}), " "));
        let outcome = combiner.finish();
        assert_eq!(outcome.updated_input, Some(json!({"n": 2})));
        assert_eq!(outcome.additional_context, ["one"]);
    }
}
