//! The `[hooks]` configuration: which commands run on which event, and the
//! tool-name matchers that select them.

use std::time::Duration;

use regex::Regex;
use serde::Deserialize;

use super::HookEvent;

/// How long a hook may run when its spec gives no `timeout_sec`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest `timeout_sec` accepted (one day); longer is a typo, not a plan.
const MAX_TIMEOUT_SEC: f64 = 86_400.0;

/// Everything wrong with a `[hooks]` configuration: one problem a line,
/// each naming the entry (`hooks.pre_tool_use[0].matcher: ...`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
pub struct HooksError {
    /// The problems, in config order (never empty).
    pub problems: Vec<HookProblem>,
}

/// One thing wrong with one hook entry, which it names by event and index.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HookProblem {
    /// `command` is empty.
    #[error("hooks.{}[{index}].command: empty; give the shell command to run", event.name())]
    EmptyCommand {
        /// The event the entry is under.
        event: HookEvent,
        /// Its place in that event's list (0-based).
        index: usize,
    },
    /// `timeout_sec` is not a usable number of seconds.
    #[error("hooks.{}[{index}].timeout_sec: {secs} is not between 0 and {MAX_TIMEOUT_SEC} seconds", event.name())]
    Timeout {
        /// The event the entry is under.
        event: HookEvent,
        /// Its place in that event's list (0-based).
        index: usize,
        /// The value given.
        secs: f64,
    },
    /// `matcher` is not a regex.
    #[error("hooks.{}[{index}].matcher: {matcher}", event.name())]
    Matcher {
        /// The event the entry is under.
        event: HookEvent,
        /// Its place in that event's list (0-based).
        index: usize,
        /// The pattern and what is wrong with it.
        matcher: MatcherError,
    },
}

/// A hook `matcher` that is not a regex.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid regex `{pattern}`: {why}")]
pub struct MatcherError {
    /// The pattern as written (trimmed).
    pub pattern: String,
    /// The regex crate's complaint, on one line.
    pub why: String,
}

/// The hook commands of every event, as written under `[hooks]` in config.toml.
///
/// ```toml
/// [[hooks.pre_tool_use]]
/// matcher = "bash|edit"   # regex on the tool name, anchored; absent or "*" = every tool
/// command = "python3 .tern/hooks/check.py"
/// timeout_sec = 30        # default 30
/// ```
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HooksConfig {
    /// Before a tool call runs; may allow, ask, deny or rewrite its input.
    #[serde(default)]
    pub pre_tool_use: Vec<HookSpec>,
    /// After a tool call ran; may add context or flag a problem to the model.
    #[serde(default)]
    pub post_tool_use: Vec<HookSpec>,
    /// When the user submits a prompt; may block it or add context.
    #[serde(default)]
    pub user_prompt_submit: Vec<HookSpec>,
    /// When the agent is about to end its turn; blocking means "keep going".
    #[serde(default)]
    pub stop: Vec<HookSpec>,
    /// When a session starts; may add context.
    #[serde(default)]
    pub session_start: Vec<HookSpec>,
}

/// One hook command and the tools it applies to.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookSpec {
    /// Regex on the tool name, anchored at both ends; absent, "" or "*" matches every tool.
    /// Ignored for events that are not about a tool.
    pub matcher: Option<String>,
    /// Shell command, run with `sh -c` in the workspace.
    pub command: String,
    /// Seconds the command may run before it is killed (default 30).
    pub timeout_sec: Option<f64>,
    /// Written in Claude Code's settings: its input names the event as
    /// Claude Code does (`PreToolUse`) and the mode by Claude's names.
    #[serde(skip)]
    pub claude: bool,
}

impl HookSpec {
    /// The timeout this spec asks for. Assumes [`HooksConfig::validate`] passed;
    /// anything unrepresentable falls back to the default.
    pub fn timeout(&self) -> Duration {
        self.timeout_sec.and_then(|s| Duration::try_from_secs_f64(s).ok()).unwrap_or(DEFAULT_TIMEOUT)
    }
}

impl HooksConfig {
    /// Both sets of hooks, `self`'s (the user's) first, then `other`'s (the project's).
    pub fn merge(mut self, mut other: HooksConfig) -> HooksConfig {
        for event in HookEvent::ALL {
            let theirs = std::mem::take(other.list_mut(event));
            self.list_mut(event).extend(theirs);
        }
        self
    }

    /// Every problem in the configuration, one per line, each naming the
    /// offending entry (`hooks.pre_tool_use[0].matcher: ...`).
    pub fn validate(&self) -> Result<(), HooksError> {
        let problems: Vec<HookProblem> = HookEvent::ALL
            .into_iter()
            .flat_map(|event| self.list(event).iter().enumerate().map(move |(i, spec)| (event, i, spec)))
            .flat_map(|(event, i, spec)| check_spec(event, i, spec))
            .collect();
        if problems.is_empty() { Ok(()) } else { Err(HooksError { problems }) }
    }

    /// Add `spec` to the hooks of `event`.
    pub fn add(&mut self, event: HookEvent, spec: HookSpec) {
        self.list_mut(event).push(spec);
    }

    /// Whether no hook is configured at all.
    pub fn is_empty(&self) -> bool {
        HookEvent::ALL.into_iter().all(|event| self.list(event).is_empty())
    }

    /// The hooks of one event, in config order.
    pub fn list(&self, event: HookEvent) -> &[HookSpec] {
        match event {
            HookEvent::PreToolUse => &self.pre_tool_use,
            HookEvent::PostToolUse => &self.post_tool_use,
            HookEvent::UserPromptSubmit => &self.user_prompt_submit,
            HookEvent::Stop => &self.stop,
            HookEvent::SessionStart => &self.session_start,
        }
    }

    fn list_mut(&mut self, event: HookEvent) -> &mut Vec<HookSpec> {
        match event {
            HookEvent::PreToolUse => &mut self.pre_tool_use,
            HookEvent::PostToolUse => &mut self.post_tool_use,
            HookEvent::UserPromptSubmit => &mut self.user_prompt_submit,
            HookEvent::Stop => &mut self.stop,
            HookEvent::SessionStart => &mut self.session_start,
        }
    }
}

fn check_spec(event: HookEvent, index: usize, spec: &HookSpec) -> Vec<HookProblem> {
    let mut problems = Vec::new();
    if spec.command.trim().is_empty() {
        problems.push(HookProblem::EmptyCommand { event, index });
    }
    if let Some(secs) = spec.timeout_sec
        && !(secs > 0.0 && secs <= MAX_TIMEOUT_SEC)
    {
        problems.push(HookProblem::Timeout { event, index, secs });
    }
    if let Err(matcher) = ToolMatcher::compile(spec.matcher.as_deref()) {
        problems.push(HookProblem::Matcher { event, index, matcher });
    }
    problems
}

/// A compiled `matcher`: every tool, or an anchored regex on the tool name.
#[derive(Debug, Clone)]
pub(crate) enum ToolMatcher {
    /// Absent, "" or "*".
    Any,
    /// `^(?:matcher)$`.
    Pattern(Regex),
}

impl ToolMatcher {
    /// Compile `matcher`; the error names the pattern and what is wrong with it.
    pub(crate) fn compile(matcher: Option<&str>) -> Result<ToolMatcher, MatcherError> {
        match matcher.map(str::trim) {
            None | Some("" | "*") => Ok(ToolMatcher::Any),
            // Case-insensitive: a matcher written for Claude Code (`Bash`) fires on `bash`.
            Some(pattern) => Regex::new(&format!("(?i)^(?:{pattern})$"))
                .map(ToolMatcher::Pattern)
                .map_err(|e| MatcherError { pattern: pattern.to_string(), why: first_line(&e.to_string()) }),
        }
    }

    /// Whether a hook with this matcher runs for `tool_name` (tern's name):
    /// a matcher may name it as tern does or as Claude Code does (`Bash`,
    /// `WebFetch`, `MultiEdit` for an edit). A call that names no tool only
    /// runs hooks that match every tool.
    pub(crate) fn matches(&self, tool_name: Option<&str>) -> bool {
        match (self, tool_name) {
            (ToolMatcher::Any, _) => true,
            (ToolMatcher::Pattern(re), Some(name)) => {
                let claude = tern_protocol::claude::claude_tool_name(name, &serde_json::Value::Null);
                re.is_match(name) || re.is_match(&claude) || (claude == "Edit" && re.is_match("MultiEdit"))
            }
            (ToolMatcher::Pattern(_), None) => false,
        }
    }
}

/// The regex crate's errors are multi-line drawings; the last line says what is wrong.
fn first_line(message: &str) -> String {
    message.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or(message).trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matcher(m: Option<&str>) -> ToolMatcher {
        ToolMatcher::compile(m).unwrap()
    }

    #[test]
    fn matchers_are_anchored_regexes() {
        assert!(matcher(Some("bash|edit")).matches(Some("bash")));
        // Claude Code's names match tern's tools.
        assert!(matcher(Some("WebFetch")).matches(Some("web_fetch")));
        assert!(matcher(Some("Edit|MultiEdit|Write")).matches(Some("edit")));
        assert!(matcher(Some("MultiEdit")).matches(Some("edit")));
        assert!(!matcher(Some("WebFetch")).matches(Some("web_search")));
        assert!(!matcher(Some("bash|edit")).matches(Some("bash_output")));
        assert!(!matcher(Some("bash|edit")).matches(Some("read")));
        assert!(matcher(Some("mcp__.*")).matches(Some("mcp__github__list")));
        assert!(matcher(None).matches(None));
        assert!(matcher(Some("*")).matches(Some("read")));
        assert!(!matcher(Some("read")).matches(None));
    }

    #[test]
    fn invalid_regex_names_the_pattern() {
        let err = ToolMatcher::compile(Some("bash(")).unwrap_err().to_string();
        assert!(err.starts_with("invalid regex `bash(`: "), "{err}");
        assert!(!err.contains('\n'), "{err}");
    }

    #[test]
    fn validate_names_each_bad_entry() {
        let spec = |matcher: Option<&str>, command: &str, timeout_sec: Option<f64>| HookSpec {
            matcher: matcher.map(String::from),
            command: command.to_string(),
            timeout_sec,
            claude: false,
        };
        let config = HooksConfig {
            pre_tool_use: vec![spec(Some("ok"), "true", None), spec(Some("["), "true", Some(0.0))],
            stop: vec![spec(None, " ", Some(f64::NAN))],
            ..HooksConfig::default()
        };
        let err = config.validate().unwrap_err().to_string();
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 4, "{err}");
        assert!(lines[0].starts_with("hooks.pre_tool_use[1].timeout_sec: 0 "), "{err}");
        assert!(lines[1].starts_with("hooks.pre_tool_use[1].matcher: invalid regex `[`"), "{err}");
        assert!(lines[2].starts_with("hooks.stop[0].command: empty"), "{err}");
        assert!(lines[3].starts_with("hooks.stop[0].timeout_sec: NaN"), "{err}");
    }

    #[test]
    fn a_problem_names_its_event_entry_and_pattern() {
        let config = HooksConfig {
            post_tool_use: vec![
                HookSpec { matcher: None, command: "true".into(), timeout_sec: None, claude: false },
                HookSpec { matcher: Some(" edit( ".into()), command: "true".into(), timeout_sec: None, claude: false },
            ],
            ..HooksConfig::default()
        };
        let err = config.validate().unwrap_err();
        let [HookProblem::Matcher { event, index, matcher }] = err.problems.as_slice() else { panic!("{err:?}") };
        assert_eq!((*event, *index, matcher.pattern.as_str()), (HookEvent::PostToolUse, 1, "edit("));
        assert!(err.to_string().starts_with("hooks.post_tool_use[1].matcher: invalid regex `edit(`: "), "{err}");
    }

    #[test]
    fn merge_puts_user_hooks_first() {
        let one = |command: &str| HooksConfig {
            pre_tool_use: vec![HookSpec {
                matcher: None,
                command: command.to_string(),
                timeout_sec: None,
                claude: false,
            }],
            ..HooksConfig::default()
        };
        let merged = one("user").merge(one("project"));
        let commands: Vec<&str> = merged.pre_tool_use.iter().map(|s| s.command.as_str()).collect();
        assert_eq!(commands, ["user", "project"]);
        assert!(HooksConfig::default().is_empty());
        assert!(!merged.is_empty());
    }
}
