//! Hook commands: external programs the user configures to check, rewrite
//! or annotate what the agent does.
//!
//! A hook is a shell command attached to an event ([`HookEvent`]). When the
//! event happens, every matching hook runs in config order with `sh -c` in
//! the workspace, in its own process group, with the event's JSON payload
//! (plus `"hook_event_name"`) on stdin and `TERN_PROJECT_DIR` /
//! `TERN_HOOK_EVENT` in its environment. It answers through its exit code
//! and stdout:
//!
//! - exit 0, nothing on stdout: no opinion;
//! - exit 0 and a JSON object: `decision` (`allow`|`deny`|`ask`, also
//!   `approve`/`block`), `reason`, `updated_input` (pre_tool_use only) and
//!   `additional_context` — or Claude Code's shape (`continue`,
//!   `stopReason`, `systemMessage`, `hookSpecificOutput` with
//!   `permissionDecision`, `permissionDecisionReason`, `updatedInput`,
//!   `additionalContext`), so hooks written for it work unchanged. When both
//!   give a decision the stricter wins; `continue: false` denies. An unknown
//!   key is a failure (a hook in a schema tern does not know must not pass
//!   for "no opinion"), and so, for pre_tool_use, is an object that says
//!   nothing (`{}`) or an empty decision (`"decision": null`);
//! - exit 2: block, with stderr as the reason.
//!
//! Anything else (another exit code, a signal, a timeout, output that is not
//! a JSON object) is a failure. `pre_tool_use` hooks **fail closed**: a broken
//! policy hook blocks the call instead of silently allowing everything. Other
//! events fail open, with a warning.
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use tern_policy::hooks::{HookEvent, HookRunner, HooksConfig};
//! let config: HooksConfig = serde_json::from_value(serde_json::json!({
//!     "pre_tool_use": [{"matcher": "bash|edit", "command": "python3 .tern/hooks/check.py"}]
//! }))?;
//! let runner = HookRunner::new(config, "/path/to/workspace".into())?;
//! let payload = serde_json::json!({"tool_name": "bash", "tool_input": {"command": "ls"}});
//! let cancel = tokio_util::sync::CancellationToken::new();
//! let outcome = runner.run(HookEvent::PreToolUse, Some("bash"), payload, &cancel).await;
//! if let Some(reason) = outcome.blocked {
//!     println!("refused: {reason}");
//! }
//! # Ok(()) }
//! ```

mod config;
mod outcome;
mod process;
mod reply;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use config::{DEFAULT_TIMEOUT, HookProblem, HookSpec, HooksConfig, HooksError, MatcherError};
pub use outcome::{HookOutcome, HookRun};
pub(crate) use reply::short_command;

use config::ToolMatcher;
use outcome::{Combiner, Flow};
use process::{HookCommand, Termination};

/// The moments a hook can run at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HookEvent {
    /// Before a tool call runs.
    PreToolUse,
    /// After a tool call ran.
    PostToolUse,
    /// When the user submits a prompt.
    UserPromptSubmit,
    /// When the agent is about to end its turn.
    Stop,
    /// When a session starts.
    SessionStart,
}

impl HookEvent {
    /// Every event, in config order.
    pub const ALL: [HookEvent; 5] = [
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::UserPromptSubmit,
        HookEvent::Stop,
        HookEvent::SessionStart,
    ];

    /// The snake_case name used in config, payloads and `TERN_HOOK_EVENT`.
    pub fn name(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "pre_tool_use",
            HookEvent::PostToolUse => "post_tool_use",
            HookEvent::UserPromptSubmit => "user_prompt_submit",
            HookEvent::Stop => "stop",
            HookEvent::SessionStart => "session_start",
        }
    }

    /// Whether hooks of this event are selected by tool name.
    pub fn is_tool_event(self) -> bool {
        matches!(self, HookEvent::PreToolUse | HookEvent::PostToolUse)
    }

    /// Whether a failing hook blocks (true) or only warns (false).
    fn fails_closed(self) -> bool {
        self == HookEvent::PreToolUse
    }

    /// Whether a block stops the remaining hooks. It does where blocking
    /// cancels the action (the call, the prompt, the stop), so hooks that
    /// expect the action do not see it; after a tool ran or a session
    /// started every hook still runs.
    fn block_ends_the_run(self) -> bool {
        matches!(self, HookEvent::PreToolUse | HookEvent::UserPromptSubmit | HookEvent::Stop)
    }
}

/// A hook's verdict on a tool call or prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookDecision {
    /// Go ahead (`"allow"`, or `"approve"`).
    #[serde(alias = "approve")]
    Allow,
    /// Refuse (`"deny"`, or `"block"`).
    #[serde(alias = "block")]
    Deny,
    /// Ask the user.
    Ask,
}

/// One configured hook with its matcher compiled.
#[derive(Debug, Clone)]
struct Hook {
    spec: HookSpec,
    matcher: ToolMatcher,
}

/// Runs the configured hooks of an event and combines what they say.
#[derive(Debug, Clone)]
pub struct HookRunner {
    hooks: Vec<(HookEvent, Vec<Hook>)>,
    workspace: PathBuf,
    env: Option<tern_protocol::ChildEnv>,
}

impl HookRunner {
    /// Check `config` and compile its matchers; the error lists every bad
    /// entry (see [`HooksConfig::validate`]). Hooks run in `workspace`.
    pub fn new(config: HooksConfig, workspace: PathBuf) -> Result<HookRunner, HooksError> {
        config.validate()?;
        let mut hooks = Vec::new();
        for event in HookEvent::ALL {
            let compiled = config
                .list(event)
                .iter()
                .enumerate()
                .map(|(index, spec)| {
                    let matcher = ToolMatcher::compile(spec.matcher.as_deref()).map_err(|matcher| HooksError {
                        problems: vec![HookProblem::Matcher { event, index, matcher }],
                    })?;
                    Ok(Hook { matcher, spec: spec.clone() })
                })
                .collect::<Result<Vec<Hook>, HooksError>>()?;
            hooks.push((event, compiled));
        }
        Ok(HookRunner { hooks, workspace, env: None })
    }

    /// Start hooks from `env` (secrets removed) instead of tern's own environment.
    pub fn with_env(mut self, env: tern_protocol::ChildEnv) -> Self {
        self.env = Some(env);
        self
    }

    /// Whether any hook would run for `event` (and `tool_name`, for tool events).
    pub fn has(&self, event: HookEvent, tool_name: Option<&str>) -> bool {
        self.matching(event, tool_name).next().is_some()
    }

    fn matching<'a>(&'a self, event: HookEvent, tool_name: Option<&'a str>) -> impl Iterator<Item = &'a Hook> + 'a {
        self.hooks
            .iter()
            .filter(move |(e, _)| *e == event)
            .flat_map(|(_, hooks)| hooks)
            .filter(move |hook| !event.is_tool_event() || hook.matcher.matches(tool_name))
    }

    /// Run every hook of `event` whose matcher matches `tool_name` (None for
    /// non-tool events), sequentially in config order, feeding each the JSON
    /// `payload` on stdin with `"hook_event_name"` added. For pre_tool_use, a
    /// hook's `updated_input` replaces `"tool_input"` in what later hooks see.
    /// Never panics, never hangs past the timeouts, and on `cancel` kills the
    /// running hook's process group.
    pub async fn run(
        &self,
        event: HookEvent,
        tool_name: Option<&str>,
        payload: Value,
        cancel: &CancellationToken,
    ) -> HookOutcome {
        let mut payload = with_event_name(payload, event);
        let mut combiner = Combiner::new(event);
        for hook in self.matching(event, tool_name) {
            let command = hook.spec.command.as_str();
            if cancel.is_cancelled() {
                let hook_name = reply::short_command(command);
                combiner.add(command, Err(format!("hook `{hook_name}` was cancelled before it started")));
                break;
            }
            // Serialising a Value cannot fail; an empty stdin would only make the hook fail visibly.
            let mut stdin = serde_json::to_vec(&payload).unwrap_or_default();
            stdin.push(b'\n');
            let run = HookCommand {
                command,
                workspace: &self.workspace,
                env: self.env.as_ref(),
                event,
                stdin: &stdin,
                timeout: hook.spec.timeout(),
            };
            let finished = process::run_command(&run, cancel).await;
            combiner.ran(HookRun {
                command: command.to_string(),
                exit_code: match finished.termination {
                    Termination::Code(code) => Some(code),
                    _ => None,
                },
                duration_ms: u64::try_from(finished.duration.as_millis()).unwrap_or(u64::MAX),
                timed_out: matches!(finished.termination, Termination::TimedOut(_)),
            });
            let result = reply::interpret(event, command, &finished);
            if let (Ok(reply), Value::Object(fields)) = (&result, &mut payload)
                && let Some(input) = &reply.updated_input
            {
                fields.insert("tool_input".to_string(), input.clone());
            }
            let cancelled = finished.termination == Termination::Cancelled;
            if combiner.add(command, result) == Flow::Stop || cancelled {
                break;
            }
        }
        combiner.finish()
    }
}

/// The payload with `"hook_event_name"` set. A payload that is not an
/// object (a caller's mistake) is passed under `"payload"`.
fn with_event_name(payload: Value, event: HookEvent) -> Value {
    let mut fields = match payload {
        Value::Object(fields) => fields,
        Value::Null => serde_json::Map::new(),
        other => serde_json::Map::from_iter([("payload".to_string(), other)]),
    };
    fields.insert("hook_event_name".to_string(), Value::String(event.name().to_string()));
    Value::Object(fields)
}
