//! Claude Code's settings files (`~/.claude/settings.json`, a project's
//! `.claude/settings.json` and `.claude/settings.local.json`, and the SDKs'
//! `--settings`), read as tern config: [`as_config`] turns their
//! `permissions` (`allow`, `ask`, `deny`, `defaultMode`) and `hooks`
//! (Claude Code's events and nesting) into a [`FileConfig`], which then
//! goes through the same trust rules as a `.tern/config.toml` of the same
//! folder. What does not map (`env`, `model`, …) is named, never dropped
//! without a word.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::FileConfig;

/// The largest settings file read.
pub const MAX_SETTINGS: u64 = 1024 * 1024;

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

/// Where a settings file's `/path` rules start (Claude Code: relative to the settings file's project).
#[derive(Debug, Clone, Copy)]
pub enum Base<'a> {
    /// A project's file: `/src/**` is the project folder's `src/**`.
    Project,
    /// The user's file (or `--settings`): `/x` is under this folder (`~/.claude`).
    Folder(&'a Path),
}

/// The file tools whose rules name paths.
const PATH_TOOLS: [&str; 7] = ["read", "edit", "write", "multiedit", "notebookedit", "glob", "grep"];

/// Claude Code's events that tern has, with its own name for each.
const EVENTS: [(&str, tern_policy::hooks::HookEvent); 5] = [
    ("PreToolUse", tern_policy::hooks::HookEvent::PreToolUse),
    ("PostToolUse", tern_policy::hooks::HookEvent::PostToolUse),
    ("UserPromptSubmit", tern_policy::hooks::HookEvent::UserPromptSubmit),
    ("Stop", tern_policy::hooks::HookEvent::Stop),
    ("SessionStart", tern_policy::hooks::HookEvent::SessionStart),
];

/// Claude Code's default hook timeout, in seconds.
const CLAUDE_HOOK_TIMEOUT: f64 = 60.0;

/// Settings `text` from `origin` as tern config, and one note naming what
/// of it tern does not apply (none when everything maps). `Err`: not JSON.
pub fn as_config(origin: &str, text: &str, base: Base<'_>) -> Result<(FileConfig, Option<String>), String> {
    let v: Value = serde_json::from_str(text)
        .map_err(|e| format!("{origin} (Claude Code's settings) is not JSON ({e}); tern does not read it"))?;
    let mut config = FileConfig::default();
    let mut unmapped: Vec<String> = Vec::new();
    let Some(top) = v.as_object() else {
        return Err(format!("{origin} (Claude Code's settings) is not a JSON object; tern does not read it"));
    };
    for (key, value) in top {
        match key.as_str() {
            "permissions" => read_permissions(value, base, &mut config, &mut unmapped),
            "hooks" => read_hooks(value, &mut config, &mut unmapped),
            "$schema" => {}
            other => unmapped.push(other.to_string()),
        }
    }
    let note = (!unmapped.is_empty()).then(|| {
        format!(
            "{origin} (Claude Code's settings): tern applies its permissions and hooks; NOT applied: {} (tern's \
             own config has [env], model, … ; see docs/headless.md#migrating-from-claude-code)",
            unmapped.join(", ")
        )
    });
    Ok((config, note))
}

fn strings(value: &Value) -> Vec<String> {
    value.as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect()
}

fn read_permissions(value: &Value, base: Base<'_>, config: &mut FileConfig, unmapped: &mut Vec<String>) {
    let Some(p) = value.as_object() else { return };
    for (key, v) in p {
        let rules = || strings(v).into_iter().map(|r| rule_paths(&r, base)).collect::<Vec<_>>();
        match key.as_str() {
            "allow" => config.permissions.allow = rules(),
            "ask" => config.permissions.ask = rules(),
            "deny" => config.permissions.deny = rules(),
            "defaultMode" => config.permissions.mode = v.as_str().map(str::to_string),
            other => unmapped.push(format!("permissions.{other}")),
        }
    }
}

/// A rule with Claude Code's path forms made tern's: `//abs` is `/abs`, and
/// `/rel` starts at the project folder (or under `base`'s folder).
fn rule_paths(rule: &str, base: Base<'_>) -> String {
    let Some((tool, rest)) = rule.split_once('(') else { return rule.to_string() };
    let Some(spec) = rest.strip_suffix(')') else { return rule.to_string() };
    if !PATH_TOOLS.contains(&tool.trim().to_ascii_lowercase().as_str()) {
        return rule.to_string();
    }
    let spec = if let Some(abs) = spec.strip_prefix("//") {
        format!("/{abs}")
    } else if let Some(rel) = spec.strip_prefix('/') {
        match base {
            Base::Project => rel.to_string(),
            Base::Folder(dir) => dir.join(rel).display().to_string(),
        }
    } else {
        spec.to_string()
    };
    format!("{tool}({spec})")
}

fn read_hooks(value: &Value, config: &mut FileConfig, unmapped: &mut Vec<String>) {
    let Some(events) = value.as_object() else { return };
    for (name, matchers) in events {
        let Some((_, event)) = EVENTS.iter().find(|(n, _)| n == name) else {
            unmapped.push(format!("hooks.{name} (tern has no such moment)"));
            continue;
        };
        for m in matchers.as_array().into_iter().flatten() {
            let matcher = m.get("matcher").and_then(Value::as_str).map(str::to_string);
            for h in m.get("hooks").and_then(Value::as_array).into_iter().flatten() {
                let kind = h.get("type").and_then(Value::as_str).unwrap_or("command");
                let command = h.get("command").and_then(Value::as_str);
                let (true, Some(command)) = (kind == "command", command) else {
                    unmapped.push(format!("hooks.{name}: a `{kind}` hook (tern runs command hooks)"));
                    continue;
                };
                let spec = tern_policy::hooks::HookSpec {
                    matcher: matcher.clone(),
                    command: command.to_string(),
                    timeout_sec: Some(h.get("timeout").and_then(Value::as_f64).unwrap_or(CLAUDE_HOOK_TIMEOUT)),
                    claude: true,
                };
                config.hooks.add(*event, spec);
            }
        }
    }
}

/// One line for each of `files` (read bounded, inside `top` when given)
/// that holds something tern does not apply, or cannot be read.
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

/// The line for settings `text` from `origin` (a file, or `--settings`)
/// naming what tern does not apply of it, if anything.
pub fn notice_of(origin: &str, text: &str) -> Option<String> {
    match as_config(origin, text, Base::Project) {
        Ok((_, note)) => note,
        Err(why) => Some(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_become_tern_config_and_what_does_not_map_is_named() {
        let text = r#"{"$schema": "x", "permissions": {"allow": ["Bash(npm test:*)", "Read(//etc/hosts)"],
            "deny": ["Read(./.env)", "Edit(/src/gen/**)"], "defaultMode": "acceptEdits", "additionalDirectories": ["../x"]},
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "check.sh", "timeout": 5}]}],
                      "Notification": [{"hooks": [{"type": "command", "command": "notify"}]}]},
            "env": {"A": "1"}, "model": "opus"}"#;
        let (c, note) = as_config("s.json", text, Base::Project).unwrap();
        assert_eq!(c.permissions.allow, ["Bash(npm test:*)", "Read(/etc/hosts)"]);
        assert_eq!(c.permissions.deny, ["Read(./.env)", "Edit(src/gen/**)"]);
        assert_eq!(c.permissions.mode.as_deref(), Some("acceptEdits"));
        let hook = &c.hooks.pre_tool_use[0];
        assert_eq!(
            (hook.matcher.as_deref(), hook.command.as_str(), hook.timeout_sec),
            (Some("Bash"), "check.sh", Some(5.0))
        );
        assert!(hook.claude);
        let note = note.unwrap();
        for unmapped in ["permissions.additionalDirectories", "hooks.Notification", "env", "model"] {
            assert!(note.contains(unmapped), "{unmapped}: {note}");
        }
        // The user's own file: `/x` is under its folder.
        let (c, _) = as_config(
            "u.json",
            r#"{"permissions": {"deny": ["Read(/secrets/**)"]}}"#,
            Base::Folder(Path::new("/h/.claude")),
        )
        .unwrap();
        assert_eq!(c.permissions.deny, ["Read(/h/.claude/secrets/**)"]);
        assert!(as_config("bad.json", "{", Base::Project).unwrap_err().contains("not JSON"));
        assert_eq!(notice_of("ok.json", r#"{"permissions": {"allow": ["Read"]}}"#), None);
    }
}
