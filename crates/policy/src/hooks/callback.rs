//! Hooks a program driving tern registered for itself (the Agent SDK's
//! `initialize.hooks`): instead of a command, tern asks the program through
//! [`HookCallbacks`] and reads its answer as it reads a hook's stdout.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde_json::Value;

use super::HookEvent;

/// A boxed future, as the callback returns it.
pub type CallbackFuture<'a> = Pin<Box<dyn Future<Output = Result<Value, String>> + Send + 'a>>;

/// The program that registered hook callbacks: asked to run one.
pub trait HookCallbacks: Send + Sync {
    /// Run callback `id` with Claude Code's hook `input` (and the call's
    /// id for tool events); its JSON answer, or why it failed.
    fn call(&self, id: &str, input: Value, tool_use_id: Option<String>) -> CallbackFuture<'_>;
}

/// What a failing callback does (`onFailure` in Claude Code's matcher).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnFailure {
    /// It blocks what it guards.
    Block,
    /// It is a warning; the action goes on.
    Continue,
}

/// One registered callback and what selects it.
#[derive(Debug, Clone, PartialEq)]
pub struct CallbackHook {
    /// When it runs.
    pub event: HookEvent,
    /// Regex on the tool name (either spelling), as for command hooks.
    pub matcher: Option<String>,
    /// The program's id for it.
    pub id: String,
    /// How long the program may take (default [`CALLBACK_TIMEOUT`]).
    pub timeout: Option<Duration>,
    /// What a failure does; None: tern's rule (pre_tool_use blocks, the rest warn).
    pub on_failure: Option<OnFailure>,
}

/// How long a callback may take unless its matcher says (Claude Code's hook default).
pub const CALLBACK_TIMEOUT: Duration = Duration::from_secs(60);

/// The hook input as Claude Code writes it for a callback: its event name
/// (`PreToolUse`) and permission mode (`acceptEdits`), the rest as given.
pub(crate) fn claude_input(mut payload: Value, event: HookEvent) -> Value {
    if let Some(fields) = payload.as_object_mut() {
        fields.insert("hook_event_name".into(), Value::String(event.claude_name().into()));
        let mode =
            fields.get("permission_mode").and_then(Value::as_str).and_then(|m| m.parse::<tern_protocol::Mode>().ok());
        if let Some(mode) = mode {
            fields.insert("permission_mode".into(), Value::String(mode.claude_name().into()));
        }
    }
    payload
}
