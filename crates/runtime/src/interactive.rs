//! Tools that involve the person: `ask_user` (questions with choices),
//! `enter_plan_mode` and `exit_plan_mode` (a plan to approve).
//!
//! They reach the person through the front end's [`PermissionPrompt`]:
//! the TUI shows a card; headless mode has nobody, so `ask_user` says so
//! (and is not offered there at all), and `exit_plan_mode` ends the run with
//! the plan as its result.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tern_agent_loop::{RuntimeTool, Tool, ToolContext, ToolError, ToolOutput, UpdateSink};
use tern_policy::engine::{DecidedBy, Decision, Mode, Policy, Verdict};
use tern_protocol::{ExecutionMode, ToolDefinition, ToolDetails, ToolSource, UserQuestion};
use tokio_util::sync::CancellationToken;

use crate::permissions::{PermissionAnswer, PermissionPrompt, PermissionRequest};
use tern_protocol::sync::LockExt as _;

/// Questions one `ask_user` call may ask.
const MAX_QUESTIONS: usize = 4;
/// Choices one question may offer.
const MAX_OPTIONS: usize = 8;
/// The longest plan kept, in bytes.
const MAX_PLAN: usize = 64 * 1024;

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

    /// The final answer a tool ended the run with, taken.
    pub(crate) fn take_end(&self) -> Option<String> {
        self.end_with.lock_or_recover().take()
    }

    fn current(&self) -> Option<RunParts> {
        self.run.lock_or_recover().clone()
    }
}

/// The three tools, sharing `interaction` and `policy`.
pub(crate) fn tools(interaction: &Arc<Interaction>, policy: &Arc<Policy>) -> Vec<RuntimeTool> {
    let tool =
        |definition, implementation: Arc<dyn Tool>| RuntimeTool::new(definition, implementation, ToolSource::Builtin);
    let shared = || Shared { interaction: interaction.clone(), policy: policy.clone() };
    vec![
        tool(ask_definition(), Arc::new(AskUser(shared()))),
        tool(enter_definition(), Arc::new(EnterPlan(shared()))),
        tool(exit_definition(), Arc::new(ExitPlan(shared()))),
    ]
}

struct Shared {
    interaction: Arc<Interaction>,
    policy: Arc<Policy>,
}

impl Shared {
    /// Enter `mode` by the session's one rule; the mode entered (`default`
    /// when `mode` may not be entered now).
    fn set_mode(&self, mode: Mode) -> Mode {
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
}

fn ask_definition() -> ToolDefinition {
    ToolDefinition {
        name: "ask_user".into(),
        description: "Ask the person one to four questions when a decision is theirs (which approach, which \
                      option, what they meant) and you cannot find the answer yourself. Give each question 2-8 \
                      short choices; they may also type their own answer. Do not ask what the code or the tools \
                      can tell you."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "questions": {
                    "type": "array", "minItems": 1, "maxItems": MAX_QUESTIONS,
                    "items": {
                        "type": "object",
                        "properties": {
                            "question": {"type": "string"},
                            "header": {"type": "string", "description": "A short label (a few words)."},
                            "options": {
                                "type": "array", "maxItems": MAX_OPTIONS,
                                "items": {
                                    "type": "object",
                                    "properties": {"label": {"type": "string"}, "description": {"type": "string"}},
                                    "required": ["label"]
                                }
                            },
                            "multi_select": {"type": "boolean"}
                        },
                        "required": ["question"]
                    }
                }
            },
            "required": ["questions"],
            "additionalProperties": false
        }),
        execution_mode: ExecutionMode::Sequential,
        snippet: Some("ask_user: ask the person a question with choices when a decision is theirs".into()),
    }
}

fn enter_definition() -> ToolDefinition {
    ToolDefinition {
        name: "enter_plan_mode".into(),
        description: "Switch to plan mode before a large or risky change: nothing can be changed (edits and \
                      non-read-only commands are refused) while you explore and work out a plan; then present it \
                      with exit_plan_mode for the person to approve."
            .into(),
        input_schema: json!({"type": "object", "properties": {}, "additionalProperties": false}),
        execution_mode: ExecutionMode::Sequential,
        snippet: Some("enter_plan_mode: switch to read-only planning before a large change".into()),
    }
}

fn exit_definition() -> ToolDefinition {
    ToolDefinition {
        name: "exit_plan_mode".into(),
        description: "Present your plan (Markdown: the steps, the files to change, how you will check the work) \
                      for the person to approve. Approved, plan mode ends and you carry it out; rejected, you get \
                      their feedback and stay in plan mode."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {"plan": {"type": "string", "description": "The plan, in Markdown."}},
            "required": ["plan"],
            "additionalProperties": false
        }),
        execution_mode: ExecutionMode::Sequential,
        snippet: Some("exit_plan_mode: present the plan for approval (plan mode only)".into()),
    }
}

struct AskUser(Shared);
struct EnterPlan(Shared);
struct ExitPlan(Shared);

/// The questions of an `ask_user` call, checked.
fn questions_of(input: &Value) -> Result<Vec<UserQuestion>, ToolError> {
    let questions: Vec<UserQuestion> =
        serde_json::from_value(input.get("questions").cloned().unwrap_or(Value::Null))
            .map_err(|e| ToolError::new(format!("`questions` is not a list of questions: {e}")))?;
    if questions.is_empty() || questions.len() > MAX_QUESTIONS {
        return Err(ToolError::new(format!("ask 1 to {MAX_QUESTIONS} questions")));
    }
    if let Some(q) = questions.iter().find(|q| q.options.len() > MAX_OPTIONS || q.question.trim().is_empty()) {
        return Err(ToolError::new(format!(
            "question `{}`: give it a text and at most {MAX_OPTIONS} choices",
            q.question
        )));
    }
    Ok(questions)
}

impl Tool for AskUser {
    fn execute<'a>(
        &'a self,
        _ctx: ToolContext,
        input: Value,
        cancel: CancellationToken,
        _updates: UpdateSink,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let questions = questions_of(&input)?;
            let no_one = "No user is available to answer (this run is not interactive). Decide yourself, and say \
                          in your answer what you assumed.";
            let Some((prompt, ..)) = self.0.interaction.current() else { return Err(ToolError::new(no_one)) };
            let answers = tokio::select! {
                a = prompt.ask_user(questions.clone()) => a,
                () = cancel.cancelled() => return Err(ToolError::new("cancelled while waiting for the answer")),
            };
            let Some(answers) = answers else {
                return Err(ToolError::new(if prompt.interactive() {
                    "The person dismissed the question without answering. Go on with your best judgement and say \
                     what you assumed, or ask differently."
                } else {
                    no_one
                }));
            };
            let mut text = String::from("The person answered:\n");
            for a in &answers {
                text.push_str(&format!("- {} → {}\n", a.question, a.answers.join(", ")));
            }
            Ok(ToolOutput::text(text).with_details(ToolDetails::Answers(tern_protocol::AnswersDetails { answers })))
        })
    }
}

impl Tool for EnterPlan {
    fn execute<'a>(
        &'a self,
        _ctx: ToolContext,
        _input: Value,
        _cancel: CancellationToken,
        _updates: UpdateSink,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            if self.0.policy.mode() == Mode::Plan {
                return Err(ToolError::new("already in plan mode: present the plan with exit_plan_mode"));
            }
            if self.0.set_mode(Mode::Plan) != Mode::Plan {
                return Err(ToolError::new("plan mode could not be entered"));
            }
            Ok(ToolOutput::text(
                "Plan mode is on: nothing can be changed now. Explore and read what you need, then present \
                     your plan with exit_plan_mode.",
            )
            .with_details(plan_details(Some(Mode::Plan), None, false)))
        })
    }
}

impl Tool for ExitPlan {
    fn execute<'a>(
        &'a self,
        ctx: ToolContext,
        input: Value,
        cancel: CancellationToken,
        _updates: UpdateSink,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let plan = input.get("plan").and_then(Value::as_str).unwrap_or_default().trim();
            if plan.is_empty() {
                return Err(ToolError::new("`plan` is empty: write the plan to approve"));
            }
            let plan = tern_protocol::text::prefix_within(plan, MAX_PLAN).to_string();
            if self.0.policy.mode() != Mode::Plan {
                return Err(ToolError::new("not in plan mode: go ahead with the work"));
            }
            let Some((prompt, ..)) = self.0.interaction.current() else {
                return Err(ToolError::new("no one can approve the plan in this run"));
            };
            let request = PermissionRequest {
                call_id: ctx.call_id.clone(),
                tool: "exit_plan_mode".into(),
                input: json!({"plan": plan}),
                decision: Decision::new(
                    Verdict::Ask,
                    "approve the plan to leave plan mode and start changing things",
                    DecidedBy::Mode { mode: Mode::Plan },
                ),
                diff: None,
            };
            let answer = tokio::select! {
                a = prompt.ask(request) => a,
                () = cancel.cancelled() => return Err(ToolError::new("cancelled while waiting for approval")),
            };
            let approved = |mode: Mode| {
                let mode = self.0.set_mode(mode);
                Ok(ToolOutput::text(format!(
                    "The person approved the plan. Permission mode is now {mode}: carry the plan out."
                ))
                .with_details(plan_details(Some(mode), Some(true), false)))
            };
            match answer {
                PermissionAnswer::AllowInMode(mode) => approved(mode),
                PermissionAnswer::Allow | PermissionAnswer::AllowAlways { .. } => approved(Mode::Default),
                PermissionAnswer::Deny { feedback } => Err(ToolError {
                    message: match feedback.filter(|f| !f.trim().is_empty()) {
                        Some(f) => format!(
                            "The person did not approve the plan. They said: {f}. Stay in plan mode, revise the plan and present it again."
                        ),
                        None => "The person did not approve the plan. Stay in plan mode and ask what to change.".into(),
                    },
                    details: Some(Box::new(plan_details(None, Some(false), false))),
                }),
                // Nobody to approve (headless `--permission-mode plan`): the plan is the run's result.
                PermissionAnswer::Unanswered => {
                    *self.0.interaction.end_with.lock_or_recover() = Some(plan.clone());
                    Ok(ToolOutput::text("No one can approve the plan in this run; it is the run's result. Stop here.")
                        .with_details(plan_details(None, Some(false), true)))
                }
            }
        })
    }
}

/// What the plan-mode tools report.
fn plan_details(mode: Option<Mode>, approved: Option<bool>, ended: bool) -> ToolDetails {
    ToolDetails::Plan(tern_protocol::PlanDetails { mode, approved, ended })
}
