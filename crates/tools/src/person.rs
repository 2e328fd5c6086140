//! Tools that involve the person: `ask_user` (questions with choices),
//! `enter_plan_mode` and `exit_plan_mode` (a plan to approve).
//!
//! They reach the person, and the session's one rule for changing modes,
//! through [`Person`], which the session implements: the tools hold the
//! definitions, check the arguments and word the results; whether anyone
//! is there, how they are asked and which modes may be entered is the
//! session's to decide.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tern_agent_loop::{RuntimeTool, Tool, ToolContext, ToolError, ToolOutput, UpdateSink};
use tern_protocol::{ExecutionMode, Mode, ToolDefinition, ToolDetails, ToolSource, UserAnswer, UserQuestion};
use tokio_util::sync::CancellationToken;

/// Questions one `ask_user` call may ask.
pub const MAX_QUESTIONS: usize = 4;
/// Choices one question may offer.
pub const MAX_OPTIONS: usize = 8;
/// The longest plan kept, in bytes.
pub const MAX_PLAN: usize = 64 * 1024;

/// What became of questions put to the person.
#[derive(Debug, Clone, PartialEq)]
pub enum Asked {
    /// Nobody can answer in this run (not interactive).
    NoOne,
    /// The person closed the question without answering.
    Dismissed,
    /// One answer per question.
    Answered(Vec<UserAnswer>),
}

/// What became of a plan put to the person.
#[derive(Debug, Clone, PartialEq)]
pub enum PlanAnswer {
    /// No run is going on to approve it in.
    NoRun,
    /// Approved, to be carried out in this mode.
    Approved(Mode),
    /// Not approved, with what they said.
    Rejected {
        /// Their words, if any.
        feedback: Option<String>,
    },
    /// Nobody can approve (a headless run): the plan ends the run as its result.
    Unanswered,
}

/// The session as these tools see it.
pub trait Person: Send + Sync {
    /// Put `questions` to the person.
    fn ask(&self, questions: Vec<UserQuestion>) -> BoxFuture<'_, Asked>;
    /// Put `plan` (the call `call_id`'s) to the person for approval.
    fn approve_plan(&self, call_id: &str, plan: &str) -> BoxFuture<'_, PlanAnswer>;
    /// The permission mode now.
    fn mode(&self) -> Mode;
    /// Enter `mode` by the session's rule; the mode in force afterwards.
    fn enter_mode(&self, mode: Mode) -> Mode;
    /// End the run with `text` as its result (a plan nobody can approve).
    fn end_run_with(&self, text: String);
}

/// The three tools, sharing `person`.
pub fn runtime_tools(person: Arc<dyn Person>) -> Vec<RuntimeTool> {
    let tool =
        |definition, implementation: Arc<dyn Tool>| RuntimeTool::new(definition, implementation, ToolSource::Builtin);
    vec![
        tool(ask_definition(), Arc::new(AskUser(person.clone()))),
        tool(enter_definition(), Arc::new(EnterPlan(person.clone()))),
        tool(exit_definition(), Arc::new(ExitPlan(person))),
    ]
}

fn ask_definition() -> ToolDefinition {
    ToolDefinition {
        name: "ask_user".into(),
        description: "Ask the person 1-4 questions when a decision is theirs, never what the code or tools can \
                      tell you. Give each 2-8 short options (they may type their own); `header`: a short label."
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
                            "header": {"type": "string"},
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

struct AskUser(Arc<dyn Person>);
struct EnterPlan(Arc<dyn Person>);
struct ExitPlan(Arc<dyn Person>);

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

const NO_ONE: &str = "No user is available to answer (this run is not interactive). Decide yourself, and say in \
                      your answer what you assumed.";

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
            let asked = tokio::select! {
                a = self.0.ask(questions) => a,
                () = cancel.cancelled() => return Err(ToolError::new("cancelled while waiting for the answer")),
            };
            let answers = match asked {
                Asked::NoOne => return Err(ToolError::new(NO_ONE)),
                Asked::Dismissed => {
                    return Err(ToolError::new(
                        "The person dismissed the question without answering. Go on with your best judgement and \
                         say what you assumed, or ask differently.",
                    ));
                }
                Asked::Answered(answers) => answers,
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
            if self.0.mode() == Mode::Plan {
                return Err(ToolError::new("already in plan mode: present the plan with exit_plan_mode"));
            }
            if self.0.enter_mode(Mode::Plan) != Mode::Plan {
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
            if self.0.mode() != Mode::Plan {
                return Err(ToolError::new("not in plan mode: go ahead with the work"));
            }
            let answer = tokio::select! {
                a = self.0.approve_plan(&ctx.call_id, &plan) => a,
                () = cancel.cancelled() => return Err(ToolError::new("cancelled while waiting for approval")),
            };
            match answer {
                PlanAnswer::NoRun => Err(ToolError::new("no one can approve the plan in this run")),
                PlanAnswer::Approved(mode) => {
                    let mode = self.0.enter_mode(mode);
                    Ok(ToolOutput::text(format!(
                        "The person approved the plan. Permission mode is now {mode}: carry the plan out."
                    ))
                    .with_details(plan_details(Some(mode), Some(true), false)))
                }
                PlanAnswer::Rejected { feedback } => Err(ToolError {
                    message: match feedback.filter(|f| !f.trim().is_empty()) {
                        Some(f) => format!(
                            "The person did not approve the plan. They said: {f}. Stay in plan mode, revise the plan and present it again."
                        ),
                        None => "The person did not approve the plan. Stay in plan mode and ask what to change.".into(),
                    },
                    details: Some(Box::new(plan_details(None, Some(false), false))),
                }),
                // Nobody to approve (headless `--permission-mode plan`): the plan is the run's result.
                PlanAnswer::Unanswered => {
                    self.0.end_run_with(plan);
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A person who answers as scripted and remembers what they were told.
    struct Scripted {
        mode: Mutex<Mode>,
        asked: Asked,
        plan: PlanAnswer,
        /// The modes that may be entered.
        allowed: Vec<Mode>,
        ended: Mutex<Option<String>>,
    }

    impl Person for Scripted {
        fn ask(&self, _questions: Vec<UserQuestion>) -> BoxFuture<'_, Asked> {
            Box::pin(async move { self.asked.clone() })
        }
        fn approve_plan(&self, _call_id: &str, _plan: &str) -> BoxFuture<'_, PlanAnswer> {
            Box::pin(async move { self.plan.clone() })
        }
        fn mode(&self) -> Mode {
            *self.mode.lock().unwrap()
        }
        fn enter_mode(&self, mode: Mode) -> Mode {
            let entered = if self.allowed.contains(&mode) { mode } else { Mode::Default };
            *self.mode.lock().unwrap() = entered;
            entered
        }
        fn end_run_with(&self, text: String) {
            *self.ended.lock().unwrap() = Some(text);
        }
    }

    fn person(mode: Mode, asked: Asked, plan: PlanAnswer, allowed: &[Mode]) -> Arc<Scripted> {
        Arc::new(Scripted { mode: Mutex::new(mode), asked, plan, allowed: allowed.to_vec(), ended: Mutex::new(None) })
    }

    async fn call(p: Arc<Scripted>, name: &str, input: Value) -> Result<ToolOutput, ToolError> {
        let tools = runtime_tools(p);
        let tool = tools.iter().find(|t| t.name() == name).unwrap();
        let ctx = ToolContext { call_id: "c1".into(), tool_name: name.into(), confinement: None, judged: None };
        tool.implementation.execute(ctx, input, CancellationToken::new(), Arc::new(|_| {})).await
    }

    fn joined(out: &ToolOutput) -> String {
        tern_protocol::ToolResultContent::joined_text(&out.content)
    }

    #[tokio::test]
    async fn questions_are_checked_and_each_outcome_is_worded() {
        let q = json!({"questions": [{"question": "Which?", "options": [{"label": "A"}]}]});
        let none = person(Mode::Default, Asked::NoOne, PlanAnswer::NoRun, &[]);
        let e = call(none, "ask_user", q.clone()).await.unwrap_err();
        assert!(e.message.contains("not interactive"), "{}", e.message);
        let dismissed = person(Mode::Default, Asked::Dismissed, PlanAnswer::NoRun, &[]);
        assert!(call(dismissed, "ask_user", q.clone()).await.unwrap_err().message.contains("dismissed"));
        let answer = UserAnswer { question: "Which?".into(), answers: vec!["A".into()] };
        let answered = person(Mode::Default, Asked::Answered(vec![answer]), PlanAnswer::NoRun, &[]);
        let out = call(answered.clone(), "ask_user", q).await.unwrap();
        assert!(joined(&out).contains("- Which? → A"), "{}", joined(&out));
        let five = json!({"questions": (0..5).map(|i| json!({"question": format!("q{i}")})).collect::<Vec<_>>()});
        assert!(call(answered, "ask_user", five).await.unwrap_err().message.contains("ask 1 to 4"));
    }

    #[tokio::test]
    async fn a_plan_is_approved_rejected_or_ends_the_run_by_the_sessions_rule() {
        // Entering plan mode goes through the session's rule.
        let refused = person(Mode::Default, Asked::NoOne, PlanAnswer::NoRun, &[]);
        assert!(call(refused, "enter_plan_mode", json!({})).await.unwrap_err().message.contains("could not"));
        let p = person(Mode::Default, Asked::NoOne, PlanAnswer::Approved(Mode::Bypass), &[Mode::Plan]);
        call(p.clone(), "enter_plan_mode", json!({})).await.unwrap();
        assert_eq!(p.mode(), Mode::Plan);
        // Approved "in bypass", but bypass is not the session's to give: default.
        let out = call(p.clone(), "exit_plan_mode", json!({"plan": "1. do it"})).await.unwrap();
        assert!(joined(&out).contains("now default"), "{}", joined(&out));
        assert_eq!(p.mode(), Mode::Default);
        assert!(call(p, "exit_plan_mode", json!({"plan": "x"})).await.unwrap_err().message.contains("not in plan"));
        let rejected = person(Mode::Plan, Asked::NoOne, PlanAnswer::Rejected { feedback: Some("smaller".into()) }, &[]);
        let e = call(rejected, "exit_plan_mode", json!({"plan": "x"})).await.unwrap_err();
        assert!(e.message.contains("They said: smaller"), "{}", e.message);
        let headless = person(Mode::Plan, Asked::NoOne, PlanAnswer::Unanswered, &[]);
        call(headless.clone(), "exit_plan_mode", json!({"plan": " the plan "})).await.unwrap();
        assert_eq!(headless.ended.lock().unwrap().as_deref(), Some("the plan"));
        let empty = person(Mode::Plan, Asked::NoOne, PlanAnswer::NoRun, &[]);
        assert!(call(empty, "exit_plan_mode", json!({"plan": "  "})).await.unwrap_err().message.contains("empty"));
    }
}
