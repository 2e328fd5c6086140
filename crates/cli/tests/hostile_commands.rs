//! Safe in a hostile repository, through the real binary: bash commands that
//! read outside the workspace, reach protected paths through `cd` or touch
//! the network are refused headless — the secret never reaches the model,
//! the protected file is unchanged and no connection is made.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::{Harness, Wire, write};
use serde_json::{Value, json};

const MARKER: &str = "TERN-FAKE-PRIVATE-KEY-7f3a9c";

/// A harness in `mode` whose model runs each command in `commands` with bash, one per turn.
async fn harness(mode: Option<&'static str>, commands: &[&str]) -> Harness {
    let mut turns: Vec<Value> =
        commands.iter().map(|c| json!({"tool_calls": [{"name": "bash", "arguments": {"command": c}}]})).collect();
    turns.push(json!({"text": "done"}));
    let mut h = Harness::new(Wire::Anthropic, &json!({ "turns": turns }).to_string()).await;
    h.mode = mode;
    h
}

/// Runs headless with HOME pointing at `home`.
async fn run(h: &Harness, home: &Path) -> (Option<i32>, String) {
    let mut cmd = h.command(&["-p", "go", "--output-format", "json"]);
    cmd.env("HOME", home);
    let out = cmd.output().await.unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// A fake home with a fake private key and a shell startup file.
fn fake_home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    write(&home.path().join(".ssh/id_rsa"), &format!("-----BEGIN KEY-----\n{MARKER}\n-----END KEY-----\n"));
    write(&home.path().join(".bashrc"), "# rc\n");
    home
}

#[tokio::test]
async fn reads_outside_the_workspace_never_reach_the_model() {
    let home = fake_home();
    let commands = [
        "tac ~/.ssh/id_rsa",
        "cd ~ && cat .ssh/id_rsa",
        "sed '1r ~/.ssh/id_rsa' README.md",
        "cat $HOME/.ssh/id_rsa",
        "bash -c 'cd ~ && cat .ssh/id_rsa'",
        "for f in ~/.ssh/*; do cat \"$f\"; done",
    ];
    let h = harness(None, &commands).await;
    write(&h.path("README.md"), "readme\n");
    let (code, stderr) = run(&h, home.path()).await;
    assert_eq!(code, Some(0), "stderr: {stderr}");
    let bodies = h.bodies();
    assert_eq!(bodies.len(), commands.len() + 1, "every command was answered");
    for body in &bodies {
        assert!(!body.to_string().contains(MARKER), "the key reached the model: {body}");
    }
    let results: Vec<(String, bool)> = h.tool_results(bodies.last().unwrap());
    assert_eq!(results.len(), commands.len(), "{results:?}");
    for ((text, _), command) in results.iter().zip(commands) {
        assert!(text.contains("Permission denied"), "{command}: {text}");
    }
}

#[tokio::test]
async fn protected_files_reached_through_cd_are_refused_even_in_bypass() {
    let home = fake_home();
    let commands = ["cd ~ && echo x >> .bashrc", "echo x >> $HOME/.bashrc", "cd .git/hooks && echo x > pre-commit"];
    let h = harness(Some("bypass"), &commands).await;
    std::fs::create_dir_all(h.path(".git/hooks")).unwrap();
    let (code, stderr) = run(&h, home.path()).await;
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert_eq!(std::fs::read_to_string(home.path().join(".bashrc")).unwrap(), "# rc\n");
    assert!(!h.path(".git/hooks/pre-commit").exists());
    let results = h.tool_results(h.bodies().last().unwrap());
    for ((text, _), command) in results.iter().zip(commands) {
        assert!(text.contains("Permission denied"), "{command}: {text}");
    }
}

#[tokio::test]
async fn plan_mode_makes_no_connection_for_git_ls_remote() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let home = fake_home();
    let command = format!("git ls-remote http://127.0.0.1:{port}/x");
    let h = harness(Some("plan"), &[command.as_str()]).await;
    let (code, stderr) = run(&h, home.path()).await;
    assert_eq!(code, Some(0), "stderr: {stderr}");
    let results = h.tool_results(h.bodies().last().unwrap());
    assert!(results[0].0.contains("plan mode"), "{results:?}");
    match listener.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("git connected to the listener: {other:?}"),
    }
}
