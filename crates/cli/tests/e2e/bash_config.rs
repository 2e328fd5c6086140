//! `[bash] shell` and `[bash] command_prefix` through the binary: the user
//! config's shell runs every command (confined ones too) after the prefix,
//! in the foreground and the background; a project config cannot set either;
//! a shell that is not there stops tern at the start with a clear message.

use crate::common;

use std::os::unix::fs::PermissionsExt;

use common::{Harness, Wire, write};
use serde_json::json;

/// Append `text` to the user config in the harness's TERN_HOME.
fn user_config(h: &Harness, text: &str) {
    let f = h.home.path().join("config.toml");
    let before = std::fs::read_to_string(&f).unwrap_or_default();
    write(&f, &format!("{before}\n{text}"));
}

/// A shell outside the workspace that says it ran, then is bash.
fn wrapper_shell(h: &Harness) -> String {
    let path = h.home.path().join("bin").join("my-shell");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    write(&path, "#!/bin/sh\necho \"[my-shell $1]\"\nexec bash \"$@\"\n");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

#[tokio::test]
async fn the_user_shell_and_prefix_run_every_command_foreground_and_background() {
    let script = json!({"turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo fg-$MARK"}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo bg-$MARK", "run_in_background": true}}]},
        {"tool_calls": [{"name": "task_output", "arguments": {"id": "bg-1", "wait": true}}]},
        {"text": "done"}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    let shell = wrapper_shell(&h);
    user_config(&h, &format!("[bash]\nshell = {shell:?}\ncommand_prefix = \"MARK=from-prefix\"\n"));
    let out = h.run(&["-p", "run it"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let bodies = h.bodies();
    let (fg, failed) = h.tool_results(&bodies[1]).last().cloned().unwrap();
    assert!(!failed && fg.contains("[my-shell -c]") && fg.contains("fg-from-prefix"), "{fg}");
    let (bg, _) = h.tool_results(&bodies[3]).last().cloned().unwrap();
    assert!(bg.contains("[my-shell -c]") && bg.contains("bg-from-prefix"), "{bg}");
}

#[tokio::test]
async fn a_project_config_cannot_set_the_shell_or_the_prefix() {
    let script = json!({"turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo plain-$MARK"}}]},
        {"text": "done"}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    let shell = wrapper_shell(&h);
    write(
        &h.path(".tern/config.toml"),
        &format!("[bash]\nshell = {shell:?}\ncommand_prefix = \"MARK=from-project\"\n"),
    );
    // Trusted or not: both are the person's own.
    let out = h.run(&["-p", "run it", "--trust"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stderr.contains("`[bash] shell` is ignored in a project config; set it in the user config"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("`[bash] command_prefix` is ignored in a project config"), "{}", out.stderr);
    let (text, _) = h.tool_results(&h.bodies()[1]).last().cloned().unwrap();
    assert!(text.contains("plain-") && !text.contains("from-project") && !text.contains("my-shell"), "{text}");
}

#[tokio::test]
async fn a_shell_that_is_not_there_stops_tern_with_a_clear_message() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"never"}]}"#).await;
    user_config(&h, "[bash]\nshell = \"/nonexistent/zsh\"\n");
    let out = h.run(&["-p", "hi"]).await;
    assert_ne!(out.code, Some(0));
    assert!(out.stderr.contains("`[bash] shell = \"/nonexistent/zsh\"`: No such file or directory"), "{}", out.stderr);
    assert!(h.bodies().is_empty());
}
