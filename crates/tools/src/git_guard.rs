//! Defusing git for commands tern runs: a directory laid out as a git
//! repository (committed to a cloned repo, or written by the model) can name
//! programs in its config — `core.fsmonitor` runs on `git status` — and
//! `git -C thatdir status` looks read-only. Settings passed through
//! `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n` outrank every
//! config file, so each command starts with:
//!
//! - `core.fsmonitor=false`: no monitor program runs;
//! - `safe.bareRepository=explicit`: a bare repository is used only when
//!   named with `--git-dir`/`GIT_DIR`, never found by walking up;
//! - for commands the policy allowed as read-only, also
//!   `core.hooksPath=/dev/null`: no hook runs; and `diff.ignoreSubmodules=all`,
//!   `submodule.recurse=false`, `status.submoduleSummary=false`: `git status`
//!   and `git diff` do not look inside submodules, where git would run the
//!   nested repository's own filters and drivers (its config is not the
//!   one tern checked).
//!
//! Settings the person already passes this way are kept (ours come after).

use std::ffi::OsStr;

/// The variables to add to a command's environment; `existing` is the
/// `GIT_CONFIG_COUNT` it would otherwise inherit.
pub fn git_guard_env(existing: Option<&OsStr>, read_only: bool) -> Vec<(String, String)> {
    let start = existing.and_then(OsStr::to_str).and_then(|c| c.trim().parse::<usize>().ok()).unwrap_or(0);
    let mut pairs = vec![("core.fsmonitor", "false"), ("safe.bareRepository", "explicit")];
    if read_only {
        pairs.extend([
            ("core.hooksPath", "/dev/null"),
            ("diff.ignoreSubmodules", "all"),
            ("submodule.recurse", "false"),
            ("status.submoduleSummary", "false"),
        ]);
    }
    let mut env = Vec::with_capacity(pairs.len() * 2 + 1);
    for (i, (key, value)) in pairs.iter().enumerate() {
        env.push((format!("GIT_CONFIG_KEY_{}", start + i), (*key).to_string()));
        env.push((format!("GIT_CONFIG_VALUE_{}", start + i), (*value).to_string()));
    }
    env.push(("GIT_CONFIG_COUNT".to_string(), (start + pairs.len()).to_string()));
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_follow_the_ones_already_passed() {
        let env = git_guard_env(Some(OsStr::new("2")), true);
        assert!(env.contains(&("GIT_CONFIG_KEY_2".into(), "core.fsmonitor".into())));
        assert!(env.contains(&("GIT_CONFIG_KEY_4".into(), "core.hooksPath".into())));
        assert_eq!(env.last(), Some(&("GIT_CONFIG_COUNT".into(), "8".into())));
        let approved = git_guard_env(None, false);
        assert_eq!(approved.last(), Some(&("GIT_CONFIG_COUNT".into(), "2".into())));
        assert!(!approved.iter().any(|(_, v)| v == "core.hooksPath"));
    }
}
