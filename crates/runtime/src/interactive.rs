//! The session's side of the tools that involve the person (`ask_user`,
//! `enter_plan_mode`, `exit_plan_mode`; they live in
//! [`tern_tools::person`]).
//!
//! They reach the person through the front end's [`PermissionPrompt`]:
//! the TUI shows a card; headless mode has nobody, so `ask_user` says so
//! (and is not offered there at all), and `exit_plan_mode` ends the run with
//! the plan as its result.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::json;
use tern_agent_loop::RuntimeTool;
use tern_policy::engine::{DecidedBy, Decision, Mode, Policy, Verdict};
use tern_protocol::UserQuestion;
use tern_tools::person::{Asked, Person, PlanAnswer};

use crate::permissions::{PermissionAnswer, PermissionPrompt, PermissionRequest};
use tern_protocol::sync::LockExt as _;

/// The front end's prompt and the session of the running prompt.
type RunParts = (Arc<dyn PermissionPrompt>, Arc<crate::Session>, tern_agent_loop::EventSink);

/// What the run lends these tools: the front end's prompt, the session, and
/// the answer that ends the run (a plan nobody can approve).
#[derive(Default)]
pub(crate) struct Interaction {
    run: Mutex<Option<RunParts>>,
    end_with: Mutex<Option<String>>,
}

impl Interaction {
    /// A run starts.
    pub(crate) fn begin(
        &self,
        prompt: Arc<dyn PermissionPrompt>,
        session: Arc<crate::Session>,
        events: tern_agent_loop::EventSink,
    ) {
        *self.run.lock_or_recover() = Some((prompt, session, events));
        self.end_with.lock_or_recover().take();
    }

    /// The run ended.
    pub(crate) fn end(&self) {
        self.run.lock_or_recover().take();
    }

    /// End the run after this batch of calls, with `answer` as its final text.
    pub(crate) fn finish(&self, answer: String) {
        *self.end_with.lock_or_recover() = Some(answer);
    }

    /// The final answer a tool ended the run with, taken.
    pub(crate) fn take_end(&self) -> Option<String> {
        self.end_with.lock_or_recover().take()
    }

    /// The running prompt's front end, when a prompt runs.
    pub(crate) fn prompt(&self) -> Option<Arc<dyn PermissionPrompt>> {
        self.current().map(|(prompt, ..)| prompt)
    }

    fn current(&self) -> Option<RunParts> {
        self.run.lock_or_recover().clone()
    }
}

/// The tools' view of the session ([`tern_tools::person::Person`]): the
/// front end's prompt of the running prompt, and the one mode rule.
pub(crate) struct SessionPerson {
    interaction: Arc<Interaction>,
    policy: Arc<Policy>,
}

/// The three tools (`ask_user`, `enter_plan_mode`, `exit_plan_mode`) over this session.
pub(crate) fn tools(interaction: &Arc<Interaction>, policy: &Arc<Policy>) -> Vec<RuntimeTool> {
    tern_tools::person::runtime_tools(Arc::new(SessionPerson {
        interaction: interaction.clone(),
        policy: policy.clone(),
    }))
}

impl Person for SessionPerson {
    fn ask(&self, questions: Vec<UserQuestion>) -> BoxFuture<'_, Asked> {
        Box::pin(async move {
            let Some((prompt, ..)) = self.interaction.current() else { return Asked::NoOne };
            match prompt.ask_user(questions).await {
                Some(answers) => Asked::Answered(answers),
                None if prompt.interactive() => Asked::Dismissed,
                None => Asked::NoOne,
            }
        })
    }

    fn approve_plan(&self, call_id: &str, plan: &str) -> BoxFuture<'_, PlanAnswer> {
        let request = PermissionRequest {
            call_id: call_id.to_string(),
            tool: "exit_plan_mode".into(),
            input: json!({"plan": plan}),
            decision: Decision::new(
                Verdict::Ask,
                "approve the plan to leave plan mode and start changing things",
                DecidedBy::Mode { mode: Mode::Plan },
            ),
            diff: None,
        };
        Box::pin(async move {
            let Some((prompt, ..)) = self.interaction.current() else { return PlanAnswer::NoRun };
            match prompt.ask(request).await {
                PermissionAnswer::AllowInMode(mode) => PlanAnswer::Approved(mode),
                PermissionAnswer::Allow | PermissionAnswer::AllowAlways { .. } => PlanAnswer::Approved(Mode::Default),
                PermissionAnswer::Deny { feedback } => PlanAnswer::Rejected { feedback },
                PermissionAnswer::Unanswered => PlanAnswer::Unanswered,
            }
        })
    }

    fn mode(&self) -> Mode {
        self.policy.mode()
    }

    /// Enter `mode` by the session's one rule; `default` when `mode` may
    /// not be entered now (and a notice says why).
    fn enter_mode(&self, mode: Mode) -> Mode {
        let Some((_, session, events)) = self.interaction.current() else {
            return self.policy.mode();
        };
        match crate::apply::enter_mode(&self.policy, &session, Some(&events), mode) {
            Ok(_) => mode,
            Err(refused) => {
                events(tern_protocol::AgentEvent::Notice { message: format!("{refused}; going on in default") });
                let _ = crate::apply::enter_mode(&self.policy, &session, Some(&events), Mode::Default);
                Mode::Default
            }
        }
    }

    fn end_run_with(&self, text: String) {
        self.interaction.finish(text);
    }
}
