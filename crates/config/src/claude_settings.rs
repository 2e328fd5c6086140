//! Claude Code's settings files (`~/.claude/settings.json`, a project's
//! `.claude/settings.json` and `.claude/settings.local.json`). tern does not
//! apply them yet; what they would change — permission rules above all, a
//! deny rule among them — must not be dropped without a word. [`notices`]
//! names each file whose permissions, hooks or environment are not applied,
//! and where tern's own equivalents go.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The largest settings file read.
const MAX_SETTINGS: u64 = 1024 * 1024;

/// The Claude Code settings files that apply to `workspace` (`chain`: its
/// project folders, nearest first; `home`: where `~/.claude` is).
pub fn files(chain: &[PathBuf], home: Option<&Path>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = home.map(|h| h.join(".claude").join("settings.json")).into_iter().collect();
    for dir in chain {
        out.push(dir.join(".claude").join("settings.json"));
        out.push(dir.join(".claude").join("settings.local.json"));
    }
    out
}

/// One line for each of `files` (read bounded, inside `top` when given)
/// that has permissions, hooks or env tern does not apply.
pub fn notices(files: &[PathBuf], top: Option<&Path>) -> Vec<String> {
    files.iter().filter_map(|f| notice(f, top)).collect()
}

fn notice(file: &Path, top: Option<&Path>) -> Option<String> {
    let inside = top.filter(|t| file.starts_with(t));
    let text = match tern_sandbox::small_file::read_bounded(file, MAX_SETTINGS, inside) {
        Ok(text) => text,
        Err(tern_sandbox::small_file::Refused::Missing) => return None,
        Err(tern_sandbox::small_file::Refused::Unreadable(why)) => {
            return Some(format!("{} (Claude Code's settings) was not read: {why}", file.display()));
        }
    };
    notice_of(&file.display().to_string(), &text)
}

/// The line for settings `text` from `origin` (a file, or `--settings`), if
/// it has permissions, hooks or env tern does not apply.
pub fn notice_of(origin: &str, text: &str) -> Option<String> {
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return Some(format!("{origin} (Claude Code's settings) is not JSON; tern does not read it"));
    };
    let count = |ptr: &str| v.pointer(ptr).and_then(Value::as_array).map_or(0, Vec::len);
    let mut parts = Vec::new();
    let rules: Vec<String> =
        [("allow", "/permissions/allow"), ("ask", "/permissions/ask"), ("deny", "/permissions/deny")]
            .iter()
            .filter(|(_, p)| count(p) > 0)
            .map(|(k, p)| format!("{} {k}", count(p)))
            .collect();
    if !rules.is_empty() {
        parts.push(format!("permission rules ({})", rules.join(", ")));
    }
    if v.pointer("/permissions/defaultMode").is_some() {
        parts.push("permissions.defaultMode".to_string());
    }
    if let Some(hooks) = v.get("hooks").and_then(Value::as_object).filter(|h| !h.is_empty()) {
        let events: Vec<&str> = hooks.keys().map(String::as_str).collect();
        parts.push(format!("hooks ({})", events.join(", ")));
    }
    if v.get("env").and_then(Value::as_object).is_some_and(|e| !e.is_empty()) {
        parts.push("env".to_string());
    }
    if parts.is_empty() {
        return None;
    }
    Some(format!(
        "{origin} (Claude Code's settings): its {} are NOT applied by tern; put them in tern's config \
         ([permissions] allow/ask/deny, [[hooks.pre_tool_use]] …, [env]; see docs/permissions.md)",
        parts.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_settings_file_with_rules_hooks_or_env_is_named_with_what_is_not_applied() {
        let dir = tempfile::tempdir().unwrap();
        let (home, ws) = (dir.path().join("home"), dir.path().join("ws"));
        std::fs::create_dir_all(home.join(".claude")).unwrap();
        std::fs::create_dir_all(ws.join(".claude")).unwrap();
        std::fs::write(
            ws.join(".claude/settings.json"),
            r#"{"permissions": {"allow": ["Bash(npm test:*)"], "deny": ["Read(./.env)", "Bash(curl:*)"]},
                "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x"}]}]}}"#,
        )
        .unwrap();
        std::fs::write(ws.join(".claude/settings.local.json"), r#"{"env": {"A": "1"}}"#).unwrap();
        std::fs::write(home.join(".claude/settings.json"), r#"{"theme": "dark"}"#).unwrap();
        let found = notices(&files(std::slice::from_ref(&ws), Some(&home)), Some(&ws));
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].contains("settings.json") && found[0].contains("1 allow, 2 deny"), "{}", found[0]);
        assert!(found[0].contains("hooks (PreToolUse)") && found[0].contains("NOT applied"), "{}", found[0]);
        assert!(found[1].contains("settings.local.json") && found[1].contains("env"), "{}", found[1]);
    }
}
