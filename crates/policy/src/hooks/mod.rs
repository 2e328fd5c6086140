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

mod callback;
mod config;
mod outcome;
mod process;
mod reply;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use callback::{CALLBACK_TIMEOUT, CallbackFuture, CallbackHook, HookCallbacks, OnFailure};
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

    /// Claude Code's name for it (`PreToolUse`), as its hook input says.
    pub fn claude_name(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::Stop => "Stop",
            HookEvent::SessionStart => "SessionStart",
        }
    }

    /// The event Claude Code calls `name`, when tern has it.
    pub fn from_claude_name(name: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.claude_name() == name || e.name() == name)
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
    target: Target,
    matcher: ToolMatcher,
}

/// What runs for a hook.
#[derive(Debug, Clone)]
enum Target {
    /// A command from the configuration.
    Command(HookSpec),
    /// A callback of the program driving tern.
    Callback { id: String, timeout: std::time::Duration, on_failure: Option<OnFailure> },
}

impl Target {
    /// The hook as messages name it.
    fn name(&self) -> String {
        match self {
            Target::Command(spec) => spec.command.clone(),
            Target::Callback { id, .. } => format!("SDK callback {id}"),
        }
    }
}

/// Runs the configured hooks of an event and combines what they say.
#[derive(Clone)]
pub struct HookRunner {
    hooks: Vec<(HookEvent, Vec<Hook>)>,
    workspace: PathBuf,
    env: Option<tern_protocol::ChildEnv>,
    callbacks: Option<std::sync::Arc<dyn HookCallbacks>>,
}

impl std::fmt::Debug for HookRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookRunner")
            .field("hooks", &self.hooks)
            .field("workspace", &self.workspace)
            .field("callbacks", &self.callbacks.is_some())
            .finish_non_exhaustive()
    }
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
                    Ok(Hook { matcher, target: Target::Command(spec.clone()) })
                })
                .collect::<Result<Vec<Hook>, HooksError>>()?;
            hooks.push((event, compiled));
        }
        Ok(HookRunner { hooks, workspace, env: None, callbacks: None })
    }

    /// These hooks, then `hooks` answered by `program` (the Agent SDK's
    /// callbacks; it replaces any program added before). A matcher that is
    /// not a regex is an error naming it.
    pub fn with_callbacks(
        mut self,
        hooks: Vec<CallbackHook>,
        program: std::sync::Arc<dyn HookCallbacks>,
    ) -> Result<HookRunner, HooksError> {
        let mut problems = Vec::new();
        for (index, hook) in hooks.into_iter().enumerate() {
            let matcher = match ToolMatcher::compile(hook.matcher.as_deref()) {
                Ok(m) => m,
                Err(matcher) => {
                    problems.push(HookProblem::Matcher { event: hook.event, index, matcher });
                    continue;
                }
            };
            let target = Target::Callback {
                id: hook.id,
                timeout: hook.timeout.unwrap_or(CALLBACK_TIMEOUT),
                on_failure: hook.on_failure,
            };
            if let Some((_, list)) = self.hooks.iter_mut().find(|(e, _)| *e == hook.event) {
                list.push(Hook { target, matcher });
            }
        }
        if !problems.is_empty() {
            return Err(HooksError { problems });
        }
        self.callbacks = Some(program);
        Ok(self)
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
            let name = hook.target.name();
            if cancel.is_cancelled() {
                let hook_name = reply::short_command(&name);
                combiner.add(&name, Err(format!("hook `{hook_name}` was cancelled before it started")));
                break;
            }
            let (result, cancelled) = match &hook.target {
                Target::Command(spec) => self.run_command(event, spec, &payload, &mut combiner, cancel).await,
                Target::Callback { id, timeout, on_failure } => {
                    let result = self.run_callback(event, id, *timeout, &payload, cancel).await;
                    match (result, on_failure) {
                        // The matcher's own rule for a failure, where it gave one.
                        (Err(failure), Some(OnFailure::Continue)) if event.fails_closed() => {
                            combiner.warn(failure);
                            continue;
                        }
                        (Err(failure), Some(OnFailure::Block)) if !event.fails_closed() => {
                            let decided = reply::HookReply {
                                decision: Some(HookDecision::Deny),
                                reason: Some(failure),
                                ..reply::HookReply::default()
                            };
                            (Ok(decided), cancel.is_cancelled())
                        }
                        (result, _) => (result, cancel.is_cancelled()),
                    }
                }
            };
            if let (Ok(reply), Value::Object(fields)) = (&result, &mut payload)
                && let Some(input) = &reply.updated_input
            {
                fields.insert("tool_input".to_string(), input.clone());
            }
            if combiner.add(&name, result) == Flow::Stop || cancelled {
                break;
            }
        }
        combiner.finish()
    }

    /// One hook command: what it said, and whether it was cancelled.
    async fn run_command(
        &self,
        event: HookEvent,
        spec: &HookSpec,
        payload: &Value,
        combiner: &mut Combiner,
        cancel: &CancellationToken,
    ) -> (Result<reply::HookReply, String>, bool) {
        let command = spec.command.as_str();
        // A hook from Claude Code's settings reads the event and mode by Claude's names.
        let claude;
        let payload = if spec.claude {
            claude = callback::claude_input(payload.clone(), event);
            &claude
        } else {
            payload
        };
        // Serialising a Value cannot fail; an empty stdin would only make the hook fail visibly.
        let mut stdin = serde_json::to_vec(payload).unwrap_or_default();
        stdin.push(b'\n');
        let run = HookCommand {
            command,
            workspace: &self.workspace,
            env: self.env.as_ref(),
            event,
            stdin: &stdin,
            timeout: spec.timeout(),
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
        (reply::interpret(event, command, &finished), finished.termination == Termination::Cancelled)
    }

    /// One callback: asked of the program, within its timeout, cancellable.
    async fn run_callback(
        &self,
        event: HookEvent,
        id: &str,
        timeout: std::time::Duration,
        payload: &Value,
        cancel: &CancellationToken,
    ) -> Result<reply::HookReply, String> {
        let hook = format!("SDK hook callback `{id}`");
        let Some(program) = &self.callbacks else {
            return Err(format!("{hook} has no program to answer it"));
        };
        let tool_use_id = payload.get("tool_use_id").and_then(Value::as_str).map(str::to_string);
        let input = callback::claude_input(payload.clone(), event);
        let answer = tokio::select! {
            answer = tokio::time::timeout(timeout, program.call(id, input, tool_use_id)) => answer,
            () = cancel.cancelled() => return Err(format!("{hook} was cancelled")),
        };
        match answer {
            Err(_) => Err(format!("{hook} did not answer within {} s", timeout.as_secs_f64())),
            Ok(Err(why)) => Err(format!("{hook} failed: {why}")),
            Ok(Ok(value)) => reply::interpret_callback(event, &hook, value),
        }
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
