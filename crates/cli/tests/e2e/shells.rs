//! Shells and CI: completion for every shell (scripts that ask tern at each
//! Tab: nested subcommands, value lists, agents and sessions), `--help` with
//! examples and the environment it reads, and the man page the build
//! renders into assets/man.

use std::path::Path;
use std::process::Command;

use crate::common::{self, Harness, Wire};

fn tern(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tern")).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// What zsh's script asks tern at a Tab after `words` (`tern` first, the
/// word being completed last), run in `dir` with `home` as TERN_HOME: the
/// candidates' values, in order.
fn complete(words: &[&str], dir: &Path, home: &Path) -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_tern"))
        .arg("--")
        .args(words)
        .env("TERN_COMPLETE", "zsh")
        .env("_CLAP_COMPLETE_INDEX", (words.len() - 1).to_string())
        .env("TERN_HOME", home)
        .env_remove("ANTHROPIC_API_KEY")
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{words:?}: {}", String::from_utf8_lossy(&out.stderr));
    // `value:help`, a `:` in the value escaped.
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.replace("\\:", "\u{0}").split(':').next().unwrap_or_default().replace('\u{0}', ":"))
        .collect()
}

fn words(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).filter(|w| !w.starts_with('-')).collect()
}

#[test]
fn completion_scripts_for_every_shell_ask_tern() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let (code, script, err) = tern(&["completions", shell]);
        assert_eq!(code, 0, "{shell}: {err}");
        assert!(script.contains("TERN_COMPLETE") && script.contains("tern"), "{shell}: {script}");
    }
    // The bash script parses.
    let (_, script, _) = tern(&["completions", "bash"]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tern.bash");
    std::fs::write(&file, script).unwrap();
    let status = Command::new("bash").arg("-n").arg(&file).status().unwrap();
    assert!(status.success());
    // Installed as `_tern` in $fpath, zsh's script completes on the first Tab.
    let (_, script, _) = tern(&["completions", "zsh"]);
    assert!(script.starts_with("#compdef tern"), "{script}");
    assert!(script.trim_end().ends_with("[[ ${funcstack[1]} = _tern ]] && _clap_dynamic_completer_tern \"$@\""));
    let (code, _, err) = tern(&["completions", "tcsh"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn bash_completes_through_the_script() {
    let dir = tempfile::tempdir().unwrap();
    let (_, script, _) = tern(&["completions", "bash"]);
    std::fs::write(dir.path().join("tern.bash"), script).unwrap();
    // The script runs `tern` from PATH, as an installed one would.
    let bin = Path::new(env!("CARGO_BIN_EXE_tern")).parent().unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let reply = |line: &str| {
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!(
                "source ./tern.bash; COMP_WORDS=({line} ''); COMP_CWORD=${{#COMP_WORDS[@]}}; ((COMP_CWORD--)); \
                 _clap_complete_tern tern '' x; printf '%s\\n' \"${{COMPREPLY[@]}}\""
            ))
            .env("PATH", &path)
            .env("TERN_HOME", dir.path())
            .current_dir(dir.path())
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect::<Vec<_>>()
    };
    assert_eq!(words(&reply("tern mcp")), ["list", "help"]);
    assert_eq!(reply("tern --sandbox"), ["workspace-write", "read-only", "off"]);
}

#[test]
fn subcommands_nest_and_closed_sets_offer_their_values_not_file_names() {
    let dir = tempfile::tempdir().unwrap();
    let (ws, home) = (dir.path().join("ws"), dir.path().join("home"));
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(ws.join("notes.txt"), "a file the values must not be mixed with\n").unwrap();
    let c = |w: &[&str]| complete(w, &ws, &home);

    // The second level: its own subcommands, not the top level again.
    assert_eq!(words(&c(&["tern", "mcp", ""])), ["list", "help"]);
    assert_eq!(words(&c(&["tern", "permissions", ""])), ["check", "list", "help"]);
    assert_eq!(words(&c(&["tern", "sessions", ""])), ["list", "show", "export", "help"]);
    assert_eq!(words(&c(&["tern", "--model", "m", "media-cli", ""])), ["install", "status", "remove", "help"]);
    assert!(c(&["tern", "mcp", "list", "--"]).contains(&"--json".to_string()));
    // The top level still has both its subcommands and its flags.
    let top = c(&["tern", ""]);
    assert!(top.contains(&"doctor".into()) && top.contains(&"--permission-mode".into()), "{top:?}");

    assert_eq!(c(&["tern", "--permission-mode", ""]), ["default", "accept-edits", "plan", "dont-ask", "bypass"]);
    assert_eq!(c(&["tern", "--permission-mode", "b"]), ["bypass"]);
    assert_eq!(c(&["tern", "mcp", "list", "--sandbox", ""]), ["workspace-write", "read-only", "off"]);
    assert_eq!(c(&["tern", "--effort", ""]), ["low", "medium", "high", "xhigh", "max"]);
    assert_eq!(c(&["tern", "--thinking", ""]), ["adaptive", "enabled", "disabled"]);
    assert_eq!(c(&["tern", "--provider", ""]), ["anthropic", "openai", "openai-responses"]);
    assert_eq!(c(&["tern", "tools", "--role", ""]), ["explore", "worker", "verifier"]);
    assert_eq!(c(&["tern", "--output-format", ""]), ["text", "json", "stream-json", "tern-events"]);
    for free_text in ["--agent", "--model", "--system-prompt", "--session-id"] {
        assert_eq!(c(&["tern", free_text, ""]), Vec::<String>::new(), "{free_text}");
    }
    // A path flag still completes paths.
    assert_eq!(c(&["tern", "--add-dir", "no"]), ["notes.txt"]);

    // The lists suggest; every spelling tern takes still parses (Claude Code's among them).
    for (flag, value) in [
        ("--permission-mode", "acceptEdits"),
        ("--permission-mode", "bypassPermissions"),
        ("--permission-mode", "dontAsk"),
        ("--permission-mode", "auto"),
        ("--sandbox", "danger-full-access"),
        ("--effort", "HIGH"),
    ] {
        let (code, _, err) = tern(&["completions", "bash", flag, value]);
        assert_eq!(code, 0, "{flag} {value}: {err}");
    }
}

#[tokio::test]
async fn agents_and_sessions_complete_from_this_folder() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"ok"}]}"#).await;
    common::write(
        &h.home.path().join("agents/rev.md"),
        "---\nname: reviewer\ndescription: Reviews code for bugs\n---\nReview.\n",
    );
    common::write(&h.path(".claude/agents/helper.md"), "---\nname: project-helper\ndescription: Helps\n---\nHelp.\n");
    let c = |w: &[&str]| complete(w, h.workspace.path(), h.home.path());

    // An untrusted folder's profiles cannot be used, so they are not offered.
    assert_eq!(c(&["tern", "--agent", ""]), ["reviewer"]);
    assert_eq!(c(&["tern", "tools", "--agent", "r"]), ["reviewer"]);
    assert_eq!(c(&["tern", "--agent", "x"]), Vec::<String>::new());
    let out = h.run(&["trust"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(c(&["tern", "--agent", ""]), ["project-helper", "reviewer"]);

    // This folder's sessions, newest first.
    assert!(words(&c(&["tern", "--resume", ""])).iter().all(|w| !w.starts_with("20")), "no session yet");
    for _ in 0..2 {
        let out = h.run(&["-p", "hi"]).await;
        assert_eq!(out.code, Some(0), "{}", out.stderr);
    }
    let listed: serde_json::Value = serde_json::from_str(&h.run(&["sessions", "list", "--json"]).await.stdout).unwrap();
    let ids: Vec<String> = listed.as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap().to_string()).collect();
    assert_eq!(ids.len(), 2, "{listed}");
    let offered = c(&["tern", "--resume", ""]);
    assert_eq!(offered[..2], ids[..], "{offered:?}");
    assert_eq!(c(&["tern", "-r", &ids[1][..ids[1].len() - 1]]), [ids[1].clone()]);
    assert_eq!(words(&c(&["tern", "sessions", "show", ""])), ids);
    assert_eq!(words(&c(&["tern", "sessions", "export", "--format", "json", ""])), ids);
    assert_eq!(c(&["tern", "context", "--resume", ""]), ids);
}

#[test]
fn help_has_examples_environment_and_exit_codes() {
    let (code, help, _) = tern(&["--help"]);
    assert_eq!(code, 0);
    for part in ["Examples:", "tern -p", "Environment:", "ANTHROPIC_API_KEY", "TERN_HOME", "Exit codes"] {
        assert!(help.contains(part), "--help lacks {part}");
    }
}

#[test]
fn the_man_page_in_the_tree_matches_the_binary() {
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../assets/man/tern.1")).unwrap();
    assert!(page.contains(".TH tern 1"), "a roff page");
    let (code, built, _) = tern(&["man"]);
    assert_eq!(code, 0);
    assert!(built == page, "assets/man/tern.1 is out of date: run `cargo xtask man`");
    // Rendered from the same definition as this binary: every subcommand is in it.
    let (_, help, _) = tern(&["--help"]);
    for sub in ["acp", "completions", "doctor", "sessions", "permissions"] {
        assert!(help.contains(sub) && page.contains(sub), "{sub}");
    }
    assert!(page.contains("include\\-partial\\-messages"), "the newest flags are in it");
}
