//! Shell completion. `tern completions SHELL` prints a short script that,
//! at each Tab, asks tern itself for the candidates
//! (`TERN_COMPLETE=SHELL tern -- WORDS…`, clap_complete's dynamic
//! completion). clap parses the words as a run would, so subcommands nest
//! (`tern mcp <Tab>` offers `list`, not the top level again); flags with a
//! closed set of values offer those values; `--agent` offers the agent
//! profiles found here and `--resume` and session ids this folder's
//! sessions. Free text completes nothing rather than file names.
//!
//! Completing only reads names (profiles a trusted folder or the user
//! keeps, the user's own session files): nothing from a repository runs.

use std::io::Write;

use clap::CommandFactory;
use clap_complete::engine::{ArgValueCandidates, CompletionCandidate};

use crate::cli::Cli;

/// The variable the scripts set to ask for candidates.
pub const VAR: &str = "TERN_COMPLETE";

/// When a completion script asked (`TERN_COMPLETE` set), print the
/// candidates (or the script) and exit; otherwise return at once.
pub fn answer_if_asked() {
    clap_complete::CompleteEnv::with_factory(command).var(VAR).bin("tern").completer("tern").complete();
}

/// The script for `shell`, calling `tern` on PATH at each Tab.
pub fn script(shell: clap_complete::Shell) -> std::io::Result<Vec<u8>> {
    let name = shell.to_string();
    let shells = clap_complete::env::Shells::builtins();
    let Some(completer) = shells.completer(&name) else {
        return Err(std::io::Error::other(format!(
            "no completion for {name}; use one of {}",
            shells.names().collect::<Vec<_>>().join(", ")
        )));
    };
    let mut script = Vec::new();
    completer.write_registration(VAR, "tern", "tern", "tern", &mut script)?;
    if shell == clap_complete::Shell::Zsh {
        // Installed as `_tern` in $fpath, zsh runs the file as the completion
        // function on the first Tab: complete right away, not from the second Tab on.
        // Sourced, the file is not `_tern` and this does nothing.
        writeln!(script, "[[ ${{funcstack[1]}} = _tern ]] && _clap_dynamic_completer_tern \"$@\"")?;
    }
    Ok(script)
}

/// The command line with the completers that need tern's own knowledge
/// (`cli.rs` holds clap's definitions only; the man page is built from it).
fn command() -> clap::Command {
    Cli::command()
        .mut_arg("agent", |a| a.add(ArgValueCandidates::new(agents)))
        .mut_arg("resume", |a| a.add(ArgValueCandidates::new(sessions)))
        .mut_subcommand("tools", |c| c.mut_arg("agent", |a| a.add(ArgValueCandidates::new(agents))))
        .mut_subcommand("context", |c| c.mut_arg("resume", |a| a.add(ArgValueCandidates::new(sessions))))
        .mut_subcommand("sessions", |c| {
            c.mut_subcommand("show", |c| c.mut_arg("id", |a| a.add(ArgValueCandidates::new(sessions))))
                .mut_subcommand("export", |c| c.mut_arg("id", |a| a.add(ArgValueCandidates::new(sessions))))
        })
}

/// The config of a run in the current folder, or none when it does not load.
fn here() -> Option<tern_runtime::RuntimeBuilder> {
    tern_runtime::RuntimeBuilder::new(tern_runtime::Overrides::default()).ok()
}

/// The agent profiles `--agent` can name here, with their descriptions.
fn agents() -> Vec<CompletionCandidate> {
    let Some(builder) = here() else { return Vec::new() };
    builder
        .agents()
        .into_iter()
        .map(|(name, about)| CompletionCandidate::new(name).help(about.map(|a| one_line(&a).into())))
        .collect()
}

/// This folder's sessions that can be resumed, newest first, each with its
/// title or first prompt.
fn sessions() -> Vec<CompletionCandidate> {
    let Some(builder) = here() else { return Vec::new() };
    builder
        .sessions()
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            let about = s.title.as_deref().or(s.first_prompt.as_deref()).map(one_line);
            CompletionCandidate::new(s.id).help(about.map(Into::into)).display_order(Some(i))
        })
        .collect()
}

/// `text` on one line, cleaned of control characters (it comes from files).
fn one_line(text: &str) -> String {
    let clean = tern_tui::sanitize::clean(text);
    clean.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value lists in cli.rs (clap only) say what tern's own types accept.
    #[test]
    fn the_suggested_values_are_the_ones_tern_accepts() {
        let cmd = command();
        let values = |arg: &str| -> Vec<String> {
            let arg = cmd.get_arguments().find(|a| a.get_id() == arg).unwrap();
            arg.get_possible_values().iter().map(|v| v.get_name().to_string()).collect()
        };
        let modes: Vec<String> = tern_protocol::MODES.iter().map(|m| m.as_str().to_string()).collect();
        let mut listed = values("permission_mode");
        listed.sort();
        let mut expected = modes.clone();
        expected.sort();
        assert_eq!(listed, expected);
        for level in values("sandbox") {
            assert!(level.parse::<tern_protocol::SandboxLevel>().is_ok(), "{level}");
        }
        assert_eq!(values("sandbox").len(), 3);
        for effort in values("effort") {
            assert!(tern_runtime::effort_budget(&effort).is_ok(), "{effort}");
        }
        let tools = cmd.find_subcommand("tools").unwrap();
        let role = tools.get_arguments().find(|a| a.get_id() == "role").unwrap();
        for r in role.get_possible_values() {
            assert!(r.get_name().parse::<tern_catalog::SubagentRole>().is_ok(), "{}", r.get_name());
        }
    }
}
