//! Safe in a hostile repository, through the real binary: bash commands that
//! read outside the workspace, reach protected paths through `cd` or touch
//! the network are refused headless — the secret never reaches the model,
//! the protected file is unchanged and no connection is made.

use crate::common;

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

/// Runs headless with extra flags and HOME pointing at `home`; the stderr.
async fn run_with(h: &Harness, home: &Path, flags: &[&str]) -> String {
    let mut args = vec!["-p", "go", "--output-format", "json"];
    args.extend_from_slice(flags);
    let mut cmd = h.command(&args);
    cmd.env("HOME", home);
    let out = cmd.output().await.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test]
async fn more_reads_outside_the_workspace_are_refused() {
    let home = fake_home();
    write(&home.path().join("notes.txt"), &format!("{MARKER}\n"));
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    write(&secret, &format!("{MARKER}\n"));
    let s = secret.display().to_string();
    let commands = [
        "zcat -f ~/.ssh/id_rsa".to_string(),
        "rev ~/.ssh/id_rsa".to_string(),
        "paste ~/.ssh/id_rsa".to_string(),
        "fold ~/.ssh/id_rsa".to_string(),
        "nl ~/.ssh/id_rsa".to_string(),
        "cat < ~/notes.txt".to_string(),
        "pushd ~ && cat notes.txt".to_string(),
        "(cd ~; cat notes.txt)".to_string(),
        format!("env -C {} cat secret.txt", outside.path().display()),
        format!("grep -f {s} README.md"),
        format!("diff --from-file={s} README.md"),
        format!("awk 'BEGIN {{ while ((getline l < \"{s}\") > 0) print l }}'"),
        format!("xargs -a {s} echo"),
        format!("git diff --no-index {s} /dev/null"),
        "printenv | grep -i key".to_string(),
    ];
    let refs: Vec<&str> = commands.iter().map(String::as_str).collect();
    let h = harness(None, &refs).await;
    write(&h.path("README.md"), "readme\n");
    run_with(&h, home.path(), &[]).await;
    let bodies = h.bodies();
    for body in &bodies {
        assert!(!body.to_string().contains(MARKER), "a secret reached the model: {body}");
        assert!(!body.to_string().contains("test-key"), "the API key reached the model: {body}");
    }
    let results = h.tool_results(bodies.last().unwrap());
    assert_eq!(results.len(), commands.len(), "{results:?}");
    for ((text, _), command) in results.iter().zip(&commands) {
        assert!(text.contains("Permission denied"), "{command}: {text}");
    }
}

#[tokio::test]
async fn build_tools_do_not_run_repository_configuration_unasked() {
    let home = fake_home();
    let marker = home.path().join("wrapper-ran");
    let h = harness(None, &["cargo tree", "cargo metadata --format-version 1"]).await;
    let wrapper = h.path("evil.sh");
    write(&wrapper, &format!("#!/bin/sh\ntouch {}\nexec \"$@\"\n", marker.display()));
    std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    write(&h.path(".cargo/config.toml"), &format!("[build]\nrustc-wrapper = \"{}\"\n", wrapper.display()));
    write(&h.path("Cargo.toml"), "[package]\nname = \"x\"\nversion = \"0.1.0\"\nedition = \"2021\"\n");
    write(&h.path("src/lib.rs"), "");
    run_with(&h, home.path(), &[]).await;
    assert!(!marker.exists(), "a repository's rustc-wrapper ran");
    let results = h.tool_results(h.bodies().last().unwrap());
    assert!(results.iter().all(|(t, _)| t.contains("Permission denied")), "{results:?}");
}

#[tokio::test]
async fn a_prefix_rule_does_not_cover_what_changes_the_program() {
    let home = fake_home();
    let marker = home.path().join("script-shell-ran");
    let commands = [
        "npm_config_script_shell=./evil.sh npm run test",
        "NODE_OPTIONS=--require=./evil.js npm run test",
        "npm run test --script-shell=./evil.sh",
        "npm run test --userconfig=./evil.npmrc",
        "npm run test --prefix=../elsewhere",
    ];
    let h = harness(None, &commands).await;
    write(&h.path("package.json"), r#"{"name": "x", "version": "1.0.0", "scripts": {"test": "echo ok"}}"#);
    write(&h.path("evil.sh"), &format!("#!/bin/sh\ntouch {}\n", marker.display()));
    write(&h.path("evil.js"), &format!("require('fs').writeFileSync('{}', '')\n", marker.display()));
    run_with(&h, home.path(), &["--allowed-tools", "bash(npm run test:*)"]).await;
    assert!(!marker.exists(), "a hostile npm setting ran");
    let results = h.tool_results(h.bodies().last().unwrap());
    for ((text, _), command) in results.iter().zip(commands) {
        assert!(text.contains("Permission denied"), "{command}: {text}");
    }
}

#[tokio::test]
async fn plan_mode_refuses_an_allowed_mcp_tool_that_is_not_read_only() {
    let home = fake_home();
    let server = std::path::PathBuf::from(env!("CARGO_BIN_EXE_tern")).with_file_name("tern-test-mcp");
    assert!(server.exists(), "{} is missing: run `cargo build -p tern-test-mcp` first", server.display());
    let turns = json!([
        {"tool_calls": [{"name": "mcp__t__tool_0", "arguments": {"value": "changed"}},
                        {"name": "mcp__t__echo", "arguments": {"text": "looked"}}]},
        {"text": "done"}
    ]);
    let mut h = Harness::new(Wire::Anthropic, &json!({ "turns": turns }).to_string()).await;
    h.mode = Some("plan");
    let config = std::fs::read_to_string(h.home.path().join("config.toml")).unwrap();
    write(
        &h.home.path().join("config.toml"),
        &format!(
            "{config}\n[mcp_servers.t]\ncommand = {:?}\nargs = [\"--tools\", \"1\"]\n",
            server.display().to_string()
        ),
    );
    run_with(&h, home.path(), &["--allowed-tools", "mcp__t__*"]).await;
    let results = h.tool_results(h.bodies().last().unwrap());
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(results[0].1, "the non-read-only tool ran in plan mode: {results:?}");
    assert!(!results[1].1 && results[1].0.contains("looked"), "the read-only tool is allowed: {results:?}");
}
