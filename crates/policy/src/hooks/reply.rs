//! What one finished hook said: its exit code and stdout read as a
//! [`HookReply`], or a failure message naming the hook. Pure: no I/O.

use serde::Deserialize;
use serde_json::Value;

use super::process::{Finished, Termination};
use super::{HookDecision, HookEvent};

/// How much of a hook's stderr or stdout is quoted in a failure message.
const QUOTE_CHARS: usize = 400;

/// What one hook asked for.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct HookReply {
    pub decision: Option<HookDecision>,
    pub reason: Option<String>,
    /// Replacement tool input (pre_tool_use only; always an object).
    pub updated_input: Option<Value>,
    pub additional_context: Option<String>,
    /// Parts of the reply that were ignored, as warnings naming the hook.
    pub notes: Vec<String>,
}

/// The JSON a hook prints on stdout: tern's shape (`decision`, `reason`,
/// `updated_input`, `additional_context`) or Claude Code's (`continue`,
/// `stopReason`, `systemMessage`, `suppressOutput`, `decision`/`reason`,
/// `hookSpecificOutput` with `permissionDecision`, `updatedInput`,
/// `additionalContext`). An unknown key is an error: a hook written for
/// another schema must not be read as "no opinion" and silently allow.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReply {
    decision: Option<String>,
    reason: Option<String>,
    updated_input: Option<Value>,
    additional_context: Option<String>,
    #[serde(rename = "continue")]
    keep_going: Option<bool>,
    #[serde(rename = "stopReason")]
    stop_reason: Option<String>,
    #[serde(rename = "systemMessage")]
    system_message: Option<String>,
    #[serde(rename = "suppressOutput")]
    _suppress_output: Option<bool>,
    #[serde(rename = "terminalSequence")]
    _terminal_sequence: Option<Value>,
    #[serde(rename = "hookSpecificOutput")]
    specific: Option<SpecificOutput>,
}

/// Claude Code's `hookSpecificOutput`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecificOutput {
    #[serde(rename = "hookEventName")]
    _event_name: Option<String>,
    #[serde(rename = "permissionDecision")]
    permission_decision: Option<String>,
    #[serde(rename = "permissionDecisionReason")]
    permission_decision_reason: Option<String>,
    #[serde(rename = "updatedInput")]
    updated_input: Option<Value>,
    #[serde(rename = "additionalContext")]
    additional_context: Option<String>,
    #[serde(rename = "updatedToolOutput")]
    updated_tool_output: Option<Value>,
}

/// Read a finished hook of `event`. `Err` is a failure message that names
/// the hook (`hook `x` exited 1: ...`); whether it blocks is the caller's call.
pub(crate) fn interpret(event: HookEvent, command: &str, finished: &Finished) -> Result<HookReply, String> {
    let hook = format!("hook `{}`", short_command(command));
    match &finished.termination {
        Termination::Code(0) => parse_stdout(event, &hook, finished),
        Termination::Code(2) => {
            let stderr = finished.stderr.text();
            let reason = match stderr.trim() {
                "" => "hook exited 2".to_string(),
                text => text.to_string(),
            };
            Ok(HookReply { decision: Some(HookDecision::Deny), reason: Some(reason), ..HookReply::default() })
        }
        Termination::Code(code) => Err(match quote(&finished.stderr.text()) {
            Some(head) => format!("{hook} exited {code}: {head}"),
            None => format!("{hook} exited {code}"),
        }),
        Termination::Signal(signal) => Err(format!("{hook} was killed by signal {signal}")),
        Termination::TimedOut(after) => Err(format!("{hook} timed out after {} s", after.as_secs_f64())),
        Termination::Cancelled => Err(format!("{hook} was cancelled")),
        Termination::SpawnFailed(e) => Err(format!("{hook} could not start: {e}")),
        Termination::WaitFailed(e) => Err(format!("{hook} failed: {e}")),
    }
}

fn parse_stdout(event: HookEvent, hook: &str, finished: &Finished) -> Result<HookReply, String> {
    let stdout = finished.stdout.text();
    let text = stdout.trim();
    if text.is_empty() {
        return Ok(HookReply::default());
    }
    let cut = if finished.stdout.truncated { " (output cut at 64 KiB)" } else { "" };
    let invalid = |what: &str| {
        format!(
            "{hook} printed {what}{cut}: {}; print nothing, or one JSON object such as {{\"decision\": \"deny\", \"reason\": \"...\"}}",
            quote(text).unwrap_or_default()
        )
    };
    let value: Value = serde_json::from_str(text).map_err(|_| invalid("invalid JSON"))?;
    if !value.is_object() {
        return Err(invalid("JSON that is not an object"));
    }
    // `{}` or `{"decision": null}` from a pre_tool_use hook is a hook that meant to decide
    // and did not (a bug, or a template left unfilled): block rather than read it as
    // "no opinion", the way every other malformed reply blocks. A hook with nothing to
    // say prints nothing.
    if event == HookEvent::PreToolUse && (!says_something(&value) || null_decision(&value)) {
        return Err(format!(
            "{hook} printed a reply with no decision{cut}: {}; print nothing for no opinion, or a decision such as \
             {{\"decision\": \"allow\"}} (\"deny\", \"ask\") or {{\"hookSpecificOutput\": {{\"permissionDecision\": \
             \"deny\"}}}}",
            quote(text).unwrap_or_default()
        ));
    }
    read_reply(event, hook, value)
}

/// What a program that registered a hook callback (the Agent SDK) answered.
/// Its idiom for "no opinion" is `{}`, and `async: true` means it will not
/// wait for the hook's work: both are no decision. Otherwise read as a
/// command hook's stdout.
pub(crate) fn interpret_callback(event: HookEvent, hook: &str, mut value: Value) -> Result<HookReply, String> {
    let Some(fields) = value.as_object_mut() else {
        return Err(format!("{hook} answered with JSON that is not an object"));
    };
    fields.remove("asyncTimeout");
    if fields.remove("async") == Some(Value::Bool(true)) {
        return Ok(HookReply {
            notes: vec![format!("{hook} answered `async`; tern goes on without waiting for it")],
            ..HookReply::default()
        });
    }
    // As Claude Code reads a callback's answer: a key it does not know is not a failure.
    let mut notes = Vec::new();
    if let Some(fields) = value.as_object_mut() {
        let unknown: Vec<String> = fields.keys().filter(|k| !TOP_KEYS.contains(&k.as_str())).cloned().collect();
        for key in unknown {
            fields.remove(&key);
            notes.push(format!("{hook}: `{key}` is not read by tern; ignored"));
        }
        if let Some(Value::Object(specific)) = fields.get_mut("hookSpecificOutput") {
            let unknown: Vec<String> =
                specific.keys().filter(|k| !SPECIFIC_KEYS.contains(&k.as_str())).cloned().collect();
            for key in unknown {
                specific.remove(&key);
                notes.push(format!("{hook}: `hookSpecificOutput.{key}` is not read by tern; ignored"));
            }
        }
    }
    let mut reply = read_reply(event, hook, value)?;
    reply.notes.extend(notes);
    Ok(reply)
}

/// The keys of [`RawReply`].
const TOP_KEYS: [&str; 10] = [
    "decision",
    "reason",
    "updated_input",
    "additional_context",
    "continue",
    "stopReason",
    "systemMessage",
    "suppressOutput",
    "terminalSequence",
    "hookSpecificOutput",
];

/// The keys of [`SpecificOutput`].
const SPECIFIC_KEYS: [&str; 6] = [
    "hookEventName",
    "permissionDecision",
    "permissionDecisionReason",
    "updatedInput",
    "additionalContext",
    "updatedToolOutput",
];

/// A hook's JSON object, in tern's keys or Claude Code's.
fn read_reply(event: HookEvent, hook: &str, value: Value) -> Result<HookReply, String> {
    let raw: RawReply = serde_json::from_value(value).map_err(|e| {
        format!(
            "{hook} answered with a reply tern cannot read: {e}; use tern's keys (decision, reason, updated_input, \
             additional_context) or Claude Code's (continue, stopReason, systemMessage, decision, reason, \
             hookSpecificOutput)"
        )
    })?;
    let specific = raw.specific;
    let (specific_decision, specific_reason, specific_input, specific_context, tool_output) = match specific {
        Some(s) => (
            s.permission_decision,
            s.permission_decision_reason,
            s.updated_input,
            s.additional_context,
            s.updated_tool_output,
        ),
        None => (None, None, None, None, None),
    };
    let mut reply = HookReply::default();
    let parse = |word: &str| {
        parse_decision(word)
            .ok_or_else(|| format!("{hook} printed unknown decision `{word}`; use \"allow\", \"deny\" or \"ask\""))
    };
    let top = raw.decision.as_deref().map(parse).transpose()?;
    let specific = specific_decision.as_deref().map(parse).transpose()?;
    // The most restrictive of the two wins (deny, then ask, then allow).
    reply.decision = match (top, specific) {
        (Some(a), Some(b)) => Some(stricter(a, b)),
        (a, b) => a.or(b),
    };
    reply.reason = specific_reason.or(raw.reason);
    if raw.keep_going == Some(false) {
        // Claude Code's "stop everything": never weaker than a refusal.
        let why = raw.stop_reason.unwrap_or_else(|| "the hook asked to stop".to_string());
        reply.decision = Some(HookDecision::Deny);
        reply.reason = Some(why);
    }
    let contexts: Vec<String> = [raw.additional_context, specific_context].into_iter().flatten().collect();
    if !contexts.is_empty() {
        reply.additional_context = Some(contexts.join("\n"));
    }
    if let Some(message) = raw.system_message {
        reply.notes.push(format!("{hook}: {message}"));
    }
    if tool_output.is_some() {
        reply.notes.push(format!("{hook}: updatedToolOutput is not supported by tern; ignored"));
    }
    match raw.updated_input.or(specific_input) {
        None => {}
        Some(_) if event != HookEvent::PreToolUse => {
            reply.notes.push(format!("{hook}: updated_input is only used by pre_tool_use hooks; ignored"));
        }
        Some(input) if input.is_object() => reply.updated_input = Some(input),
        Some(_) => return Err(format!("{hook} answered with an updated_input that is not a JSON object")),
    }
    Ok(reply)
}

/// Whether a reply object holds any field with a value (`hookSpecificOutput` counts
/// when something inside it does). Unknown keys are refused later, when the reply is read.
fn says_something(value: &Value) -> bool {
    let Some(object) = value.as_object() else { return false };
    object.iter().any(|(key, v)| match (key.as_str(), v) {
        (_, Value::Null) => false,
        ("hookSpecificOutput", Value::Object(inner)) => inner.values().any(|v| !v.is_null()),
        _ => true,
    })
}

/// `"decision": null` or `"permissionDecision": null`: a decision left empty.
fn null_decision(value: &Value) -> bool {
    value.get("decision").is_some_and(Value::is_null)
        || value.pointer("/hookSpecificOutput/permissionDecision").is_some_and(Value::is_null)
}

/// The more restrictive of two decisions.
fn stricter(a: HookDecision, b: HookDecision) -> HookDecision {
    let rank = |d: HookDecision| match d {
        HookDecision::Deny => 2,
        HookDecision::Ask => 1,
        HookDecision::Allow => 0,
    };
    if rank(a) >= rank(b) { a } else { b }
}

fn parse_decision(word: &str) -> Option<HookDecision> {
    match word {
        "allow" | "approve" => Some(HookDecision::Allow),
        "deny" | "block" => Some(HookDecision::Deny),
        // Claude Code's "defer" hands the call to an outside UI: here, ask.
        "ask" | "defer" => Some(HookDecision::Ask),
        _ => None,
    }
}

/// The command as named in messages: its first line, at most 80 characters.
pub(crate) fn short_command(command: &str) -> String {
    let line = command.trim().lines().next().unwrap_or_default();
    let short: String = line.chars().take(80).collect();
    if short.len() < command.trim().len() { format!("{short}…") } else { short }
}

/// The head of `text` for a message, or None when it is blank.
fn quote(text: &str) -> Option<String> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let head: String = text.chars().take(QUOTE_CHARS).collect();
    Some(if head.len() < text.len() { format!("{head}…") } else { head })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::process::Captured;
    use super::*;

    fn finished(termination: Termination, stdout: &str, stderr: &str) -> Finished {
        let captured = |s: &str| Captured { bytes: s.as_bytes().to_vec(), truncated: false };
        Finished { termination, stdout: captured(stdout), stderr: captured(stderr), duration: Duration::ZERO }
    }

    fn pre(termination: Termination, stdout: &str, stderr: &str) -> Result<HookReply, String> {
        interpret(HookEvent::PreToolUse, "check", &finished(termination, stdout, stderr))
    }

    #[test]
    fn blank_stdout_is_no_decision() {
        assert_eq!(pre(Termination::Code(0), " \n", "noise"), Ok(HookReply::default()));
    }

    #[test]
    fn decisions_and_their_aliases() {
        for (word, decision) in [
            ("allow", HookDecision::Allow),
            ("approve", HookDecision::Allow),
            ("deny", HookDecision::Deny),
            ("block", HookDecision::Deny),
            ("ask", HookDecision::Ask),
        ] {
            let reply = pre(Termination::Code(0), &format!(r#"{{"decision":"{word}"}}"#), "").unwrap();
            assert_eq!(reply.decision, Some(decision), "{word}");
        }
        let err = pre(Termination::Code(0), r#"{"decision":"maybe"}"#, "").unwrap_err();
        assert_eq!(err, r#"hook `check` printed unknown decision `maybe`; use "allow", "deny" or "ask""#);
    }

    #[test]
    fn exit_two_denies_with_stderr() {
        let reply = pre(Termination::Code(2), r#"{"decision":"allow"}"#, " no way \n").unwrap();
        assert_eq!(reply.decision, Some(HookDecision::Deny));
        assert_eq!(reply.reason.as_deref(), Some("no way"));
        assert_eq!(pre(Termination::Code(2), "", "").unwrap().reason.as_deref(), Some("hook exited 2"));
    }

    #[test]
    fn failures_name_the_hook() {
        assert_eq!(pre(Termination::Code(1), "", "boom\n"), Err("hook `check` exited 1: boom".to_string()));
        assert_eq!(pre(Termination::Code(3), "", ""), Err("hook `check` exited 3".to_string()));
        assert_eq!(
            pre(Termination::TimedOut(Duration::from_secs(30)), "", ""),
            Err("hook `check` timed out after 30 s".to_string())
        );
        let garbage = pre(Termination::Code(0), "hello", "").unwrap_err();
        assert!(garbage.starts_with("hook `check` printed invalid JSON: hello;"), "{garbage}");
        let array = pre(Termination::Code(0), "[1]", "").unwrap_err();
        assert!(array.starts_with("hook `check` printed JSON that is not an object: [1]"), "{array}");
        let typed = pre(Termination::Code(0), r#"{"reason": 3}"#, "").unwrap_err();
        assert!(typed.starts_with("hook `check` answered with a reply tern cannot read: "), "{typed}");
    }

    #[test]
    fn updated_input_must_be_an_object_and_is_for_pre_tool_use_only() {
        let stdout = r#"{"updated_input":{"command":"ls"}}"#;
        let reply = pre(Termination::Code(0), stdout, "").unwrap();
        assert_eq!(reply.updated_input, Some(serde_json::json!({"command": "ls"})));
        assert!(pre(Termination::Code(0), r#"{"updated_input":"ls"}"#, "").is_err());
        let post = interpret(HookEvent::PostToolUse, "fmt", &finished(Termination::Code(0), stdout, "")).unwrap();
        assert_eq!(post.updated_input, None);
        assert_eq!(post.notes, ["hook `fmt`: updated_input is only used by pre_tool_use hooks; ignored"]);
    }

    #[test]
    fn claude_code_replies_are_understood() {
        let out = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no rm"}}"#;
        let reply = pre(Termination::Code(0), out, "").unwrap();
        assert_eq!((reply.decision, reply.reason.as_deref()), (Some(HookDecision::Deny), Some("no rm")));
        let out = r#"{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"command":"ls"}},"systemMessage":"hi"}"#;
        let reply = pre(Termination::Code(0), out, "").unwrap();
        assert_eq!(reply.decision, Some(HookDecision::Allow));
        assert_eq!(reply.updated_input, Some(serde_json::json!({"command": "ls"})));
        assert_eq!(reply.notes, ["hook `check`: hi"]);
        let stop = pre(Termination::Code(0), r#"{"continue":false,"stopReason":"halt"}"#, "").unwrap();
        assert_eq!((stop.decision, stop.reason.as_deref()), (Some(HookDecision::Deny), Some("halt")));
        let both = pre(
            Termination::Code(0),
            r#"{"decision":"approve","hookSpecificOutput":{"permissionDecision":"ask"}}"#,
            "",
        );
        assert_eq!(both.unwrap().decision, Some(HookDecision::Ask), "the stricter decision wins");
        let defer = pre(Termination::Code(0), r#"{"hookSpecificOutput":{"permissionDecision":"defer"}}"#, "");
        assert_eq!(defer.unwrap().decision, Some(HookDecision::Ask));
    }

    #[test]
    fn unknown_keys_and_bad_decision_blocks_are_errors() {
        for out in [
            r#"{"verdict":"deny"}"#,
            r#"{"hookSpecificOutput":{"permission":"deny"}}"#,
            r#"{"hookSpecificOutput":"deny"}"#,
            r#"{"hookSpecificOutput":{"permissionDecision":"nope"}}"#,
        ] {
            assert!(pre(Termination::Code(0), out, "").is_err(), "{out} must fail (closed for pre_tool_use)");
        }
    }

    #[test]
    fn empty_replies_and_null_decisions_block_pre_tool_use() {
        for out in [
            "{}",
            r#"{"decision": null}"#,
            r#"{"decision": null, "reason": "looked at it"}"#,
            r#"{"reason": null}"#,
            r#"{"hookSpecificOutput": {}}"#,
            r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": null}}"#,
        ] {
            let err = pre(Termination::Code(0), out, "").unwrap_err();
            assert!(err.starts_with("hook `check` printed a reply with no decision"), "{out}: {err}");
            assert!(err.contains("print nothing"), "{out}: {err}");
        }
        // A reply carrying a field tern or Claude Code knows keeps its meaning.
        for out in [
            r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "on branch main"}}"#,
            r#"{"suppressOutput": true}"#,
            r#"{"continue": true}"#,
            r#"{"reason": "fine"}"#,
            r#"{"systemMessage": "checked"}"#,
        ] {
            assert_eq!(pre(Termination::Code(0), out, "").map(|r| r.decision), Ok(None), "{out}");
        }
        // Other events have no decision to make: an empty object is still nothing.
        let post = interpret(HookEvent::PostToolUse, "fmt", &finished(Termination::Code(0), "{}", ""));
        assert_eq!(post, Ok(HookReply::default()));
    }

    #[test]
    fn long_commands_are_shortened() {
        assert_eq!(short_command("  a\nb"), "a…");
        assert_eq!(short_command(&"x".repeat(100)), format!("{}…", "x".repeat(80)));
        assert_eq!(short_command("ok"), "ok");
    }
}
