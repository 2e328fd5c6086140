//! Hook callbacks (the Agent SDK's `initialize.hooks`): a scripted program
//! answers; its answers are read as a hook's stdout is, in Claude Code's
//! dialect, and its failures follow the matcher's `onFailure`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tern_policy::hooks::{
    CallbackFuture, CallbackHook, HookCallbacks, HookDecision, HookEvent, HookRunner, HooksConfig, OnFailure,
};
use tokio_util::sync::CancellationToken;

/// A program that answers each callback from a script, and keeps what it was asked.
#[derive(Default)]
struct Program {
    answers: Mutex<Vec<(String, Result<Value, String>)>>,
    asked: Mutex<Vec<(String, Value, Option<String>)>>,
    /// Never answers these.
    silent: Vec<String>,
}

impl HookCallbacks for Program {
    fn call(&self, id: &str, input: Value, tool_use_id: Option<String>) -> CallbackFuture<'_> {
        self.asked.lock().unwrap().push((id.to_string(), input, tool_use_id));
        let id = id.to_string();
        Box::pin(async move {
            if self.silent.contains(&id) {
                return std::future::pending().await;
            }
            let answers = self.answers.lock().unwrap();
            answers.iter().find(|(i, _)| *i == id).map(|(_, a)| a.clone()).unwrap_or(Ok(json!({})))
        })
    }
}

fn hook(event: HookEvent, matcher: Option<&str>, id: &str) -> CallbackHook {
    CallbackHook { event, matcher: matcher.map(str::to_string), id: id.into(), timeout: None, on_failure: None }
}

fn runner(hooks: Vec<CallbackHook>, program: Arc<Program>) -> HookRunner {
    HookRunner::new(HooksConfig::default(), std::env::temp_dir()).unwrap().with_callbacks(hooks, program).unwrap()
}

fn bash_call() -> Value {
    json!({"tool_name": "Bash", "tern_tool_name": "bash", "tool_input": {"command": "rm -rf build"},
           "tool_use_id": "call-1", "permission_mode": "accept-edits", "session_id": "s"})
}

async fn pre(runner: &HookRunner) -> tern_policy::hooks::HookOutcome {
    let cancel = CancellationToken::new();
    runner.run(HookEvent::PreToolUse, Some("bash"), bash_call(), &cancel).await
}

#[tokio::test]
async fn a_deny_answer_blocks_and_the_input_is_claudes() {
    let program = Arc::new(Program::default());
    program.answers.lock().unwrap().push((
        "hook_0".into(),
        Ok(json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                   "permissionDecisionReason": "no rm"}})),
    ));
    let r = runner(vec![hook(HookEvent::PreToolUse, Some("Bash"), "hook_0")], program.clone());
    let outcome = pre(&r).await;
    assert_eq!(outcome.decision, Some(HookDecision::Deny));
    assert_eq!(outcome.blocked.as_deref(), Some("no rm"));
    let asked = program.asked.lock().unwrap();
    let (id, input, call) = &asked[0];
    assert_eq!((id.as_str(), call.as_deref()), ("hook_0", Some("call-1")));
    // Claude Code's event name and permission mode, as SDK hook code compares them.
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["permission_mode"], "acceptEdits");
    assert_eq!(input["tool_input"]["command"], "rm -rf build");
}

#[tokio::test]
async fn an_empty_answer_is_no_opinion_and_matchers_select() {
    let program = Arc::new(Program::default());
    let r = runner(
        vec![hook(HookEvent::PreToolUse, None, "hook_0"), hook(HookEvent::PreToolUse, Some("Write|Edit"), "hook_1")],
        program.clone(),
    );
    let outcome = pre(&r).await;
    // `{}` is how the SDKs say "nothing to add"; a command hook printing it would block.
    assert_eq!((outcome.decision, outcome.blocked), (None, None));
    let asked: Vec<String> = program.asked.lock().unwrap().iter().map(|(id, _, _)| id.clone()).collect();
    assert_eq!(asked, ["hook_0"]);
}

#[tokio::test]
async fn a_failing_callback_follows_its_on_failure() {
    let failing = || {
        let program = Program::default();
        program.answers.lock().unwrap().push(("hook_0".into(), Err("callback raised".into())));
        Arc::new(program)
    };
    // tern's rule when the matcher says nothing: a failing pre_tool_use guard blocks.
    let outcome = pre(&runner(vec![hook(HookEvent::PreToolUse, None, "hook_0")], failing())).await;
    assert!(outcome.blocked.as_deref().is_some_and(|b| b.contains("callback raised")), "{outcome:?}");
    // `continue`: a warning, the call goes on.
    let mut lenient = hook(HookEvent::PreToolUse, None, "hook_0");
    lenient.on_failure = Some(OnFailure::Continue);
    let outcome = pre(&runner(vec![lenient], failing())).await;
    assert_eq!(outcome.blocked, None);
    assert!(outcome.warnings[0].contains("callback raised"), "{outcome:?}");
    // `block` on an event that fails open: it blocks.
    let mut strict = hook(HookEvent::UserPromptSubmit, None, "hook_0");
    strict.on_failure = Some(OnFailure::Block);
    let cancel = CancellationToken::new();
    let outcome =
        runner(vec![strict], failing()).run(HookEvent::UserPromptSubmit, None, json!({"prompt": "hi"}), &cancel).await;
    assert!(outcome.blocked.is_some(), "{outcome:?}");
}

#[tokio::test]
async fn a_silent_program_times_out_and_blocks() {
    let program = Arc::new(Program { silent: vec!["hook_0".into()], ..Program::default() });
    let mut slow = hook(HookEvent::PreToolUse, None, "hook_0");
    slow.timeout = Some(Duration::from_millis(50));
    let outcome = pre(&runner(vec![slow], program)).await;
    assert!(outcome.blocked.as_deref().is_some_and(|b| b.contains("did not answer within")), "{outcome:?}");
}

#[tokio::test]
async fn an_updated_input_and_an_async_answer() {
    let program = Arc::new(Program::default());
    program.answers.lock().unwrap().push((
        "hook_0".into(),
        Ok(json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                   "updatedInput": {"command": "rm -rf build/tmp"}}})),
    ));
    program.answers.lock().unwrap().push(("hook_1".into(), Ok(json!({"async": true, "asyncTimeout": 1000}))));
    let r = runner(
        vec![hook(HookEvent::PreToolUse, None, "hook_0"), hook(HookEvent::PreToolUse, None, "hook_1")],
        program.clone(),
    );
    let outcome = pre(&r).await;
    assert_eq!(outcome.decision, Some(HookDecision::Allow));
    assert_eq!(outcome.updated_input, Some(json!({"command": "rm -rf build/tmp"})));
    // The second callback sees the first one's rewrite.
    assert_eq!(program.asked.lock().unwrap()[1].1["tool_input"]["command"], "rm -rf build/tmp");
    assert!(outcome.warnings.iter().any(|w| w.contains("async")), "{outcome:?}");
}

#[tokio::test]
async fn a_bad_matcher_is_named() {
    let err = HookRunner::new(HooksConfig::default(), std::env::temp_dir())
        .unwrap()
        .with_callbacks(vec![hook(HookEvent::PreToolUse, Some("("), "hook_0")], Arc::new(Program::default()))
        .unwrap_err();
    assert!(err.to_string().contains('('), "{err}");
}

#[tokio::test]
async fn unknown_keys_in_an_answer_are_notes_as_claude_code_reads_them() {
    let program = Arc::new(Program::default());
    program.answers.lock().unwrap().push((
        "hook_0".into(),
        Ok(json!({"someNewKey": 1, "hookSpecificOutput": {"permissionDecision": "deny", "newer": true}})),
    ));
    let outcome = pre(&runner(vec![hook(HookEvent::PreToolUse, None, "hook_0")], program)).await;
    assert_eq!(outcome.decision, Some(HookDecision::Deny));
    assert!(outcome.warnings.iter().any(|w| w.contains("someNewKey")), "{outcome:?}");
    assert!(outcome.warnings.iter().any(|w| w.contains("hookSpecificOutput.newer")), "{outcome:?}");
}
