//! The bash tool under the sandbox: the level a call runs at comes from its
//! `ToolContext` (capped by the settings), and the kernel enforces it even
//! for commands the classifier would never have allowed. Skipped, with the
//! reason on stderr, where Landlock is missing.

use std::sync::Arc;

use serde_json::{Value, json};
use tern_agent_loop::{Tool, ToolContext, ToolError, ToolOutput};
use tern_protocol::{Confinement, SandboxLevel, ToolResultContent};
use tern_tools::bash::BashTool;
use tern_tools::{SandboxSettings, ToolEnv};
use tokio_util::sync::CancellationToken;

#[path = "../../../sandbox/tests/common/mod.rs"]
mod common;

use common::{Fixture, fixture, landlock_missing};

use crate::processes;

fn tool(f: &Fixture, settings: SandboxSettings) -> BashTool {
    let mut env = ToolEnv::new(&f.workspace, f.tmp.join("outputs"));
    env.sandbox = SandboxSettings { temp_dir: Some(f.tmp.join("private")), home: Some(f.home.clone()), ..settings };
    BashTool::new(Arc::new(env))
}

async fn call(tool: &BashTool, confinement: Option<Confinement>, command: &str) -> Result<ToolOutput, ToolError> {
    let ctx = ToolContext { call_id: "c1".into(), tool_name: "bash".into(), confinement, judged: None };
    tool.execute(ctx, json!({ "command": command }), CancellationToken::new(), Arc::new(|_| {})).await
}

fn text(r: &Result<ToolOutput, ToolError>) -> String {
    match r {
        Ok(out) => match out.content.as_slice() {
            [ToolResultContent::Text { text }] => text.clone(),
            other => panic!("expected one text block, got {other:?}"),
        },
        Err(e) => e.message.clone(),
    }
}

fn details(r: &Result<ToolOutput, ToolError>) -> Value {
    match r {
        Ok(out) => serde_json::to_value(out.details.clone().unwrap()).unwrap(),
        Err(e) => serde_json::to_value(e.details.clone().unwrap()).unwrap(),
    }
}

#[tokio::test]
async fn read_only_blocks_writes_even_when_the_classifier_is_bypassed() {
    if landlock_missing() {
        return;
    }
    let f = fixture();
    let bash = tool(&f, SandboxSettings::default());
    // No classifier would auto-allow this; the policy is bypassed and only
    // the confinement stands between it and the disk.
    let evil = format!("touch x; echo hi > '{}'", f.home.join("y").display());
    let r = call(&bash, Some(Confinement::READ_ONLY), &evil).await;
    let t = text(&r);
    assert!(r.is_err(), "{t}");
    assert!(!f.workspace.join("x").exists() && !f.home.join("y").exists());
    assert!(t.contains("[The sandbox may have blocked this: the command ran read-only and offline"), "{t}");
    assert_eq!(details(&r)["sandbox"], "read-only");
}

#[tokio::test]
async fn read_only_reads_the_workspace_writes_tmpdir_and_hides_secrets() {
    if landlock_missing() {
        return;
    }
    let f = fixture();
    let bash = tool(&f, SandboxSettings::default());
    let r = call(&bash, Some(Confinement::READ_ONLY), "cat notes.txt; ls /usr/bin > /dev/null; echo t > \"$TMPDIR/t\"; cat \"$TMPDIR/t\"; [ \"$TMP\" = \"$TMPDIR\" ] && echo same").await;
    assert_eq!(text(&r), "workspace notes\nt\nsame\n[Exit code: 0]");
    let secret = format!("cat '{}'", f.home.join(".ssh/id_rsa").display());
    let r = call(&bash, Some(Confinement::READ_ONLY), &secret).await;
    assert!(r.is_err() && !text(&r).contains("SECRET"), "{}", text(&r));
}

#[tokio::test]
async fn read_only_cannot_reach_a_local_listener() {
    if landlock_missing() {
        return;
    }
    let f = fixture();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let bash = tool(&f, SandboxSettings::default());
    let r = call(&bash, Some(Confinement::READ_ONLY), &format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"))
        .await;
    assert!(r.is_err() && !text(&r).contains("connected"), "{}", text(&r));
    assert_eq!(listener.accept().map(|_| ()).unwrap_err().kind(), std::io::ErrorKind::WouldBlock);
}

#[tokio::test]
async fn approved_calls_write_the_workspace_only_and_may_connect() {
    if landlock_missing() {
        return;
    }
    let f = fixture();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let bash = tool(&f, SandboxSettings::default());
    let cmd = format!("echo hi > made.txt && exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let r = call(&bash, None, &cmd).await;
    assert!(text(&r).contains("connected"), "{}", text(&r));
    assert_eq!(details(&r)["sandbox"], "workspace-write");
    assert!(listener.accept().is_ok());
    assert_eq!(std::fs::read_to_string(f.workspace.join("made.txt")).unwrap(), "hi\n");
    let outside = f.sibling.join("z");
    let r = call(&bash, None, &format!("echo x > '{}'", outside.display())).await;
    assert!(r.is_err() && !outside.exists());
    assert!(text(&r).contains("the command ran workspace-write (writes only in the workspace"), "{}", text(&r));
}

#[tokio::test]
async fn the_cap_wins_over_a_looser_call_and_off_turns_the_sandbox_off() {
    if landlock_missing() {
        return;
    }
    let f = fixture();
    let capped = tool(&f, SandboxSettings { mode: SandboxLevel::ReadOnly, ..SandboxSettings::default() });
    let r = call(&capped, Some(Confinement::OFF), "touch x").await;
    assert!(r.is_err() && !f.workspace.join("x").exists());
    assert_eq!(details(&r)["sandbox"], "read-only");

    let off = tool(&f, SandboxSettings { mode: SandboxLevel::Off, ..SandboxSettings::default() });
    let outside = f.sibling.join("z");
    let r = call(&off, Some(Confinement::READ_ONLY), &format!("echo x > '{}'", outside.display())).await;
    assert!(r.is_ok() && outside.exists(), "{}", text(&r));
    assert_eq!(details(&r)["sandbox"], "off");
}

#[tokio::test]
async fn a_confined_command_runs_in_its_own_pid_namespace_and_takes_its_tree_along() {
    if landlock_missing() {
        return;
    }
    let f = fixture();
    let bash = tool(&f, SandboxSettings::default());
    // Where this machine can make PID namespaces (util-linux `unshare` tells),
    // the shell is PID 2 under a reaper.
    let missing = tern_sandbox::require::pidns_missing();
    let available = missing.is_none();
    let r = call(&bash, None, "echo pid=$$").await;
    assert_eq!(text(&r).contains("pid=2\n"), available, "namespaces available: {available}; {}", text(&r));
    if available {
        // Exit codes and signals come through as the command ended.
        let r = call(&bash, None, "exit 7").await;
        assert!(text(&r).contains("[Exit code: 7]"), "{}", text(&r));
        let r = call(&bash, None, "kill -9 $$").await;
        assert!(text(&r).contains("[Killed by signal 9]"), "{}", text(&r));
        // A daemon in a session of its own (out of the process group) dies with the command.
        let marker = format!("91.{}", std::process::id());
        let r = call(&bash, None, &format!("setsid sleep {marker} > /dev/null 2>&1 < /dev/null & echo started")).await;
        assert!(text(&r).contains("started"), "{}", text(&r));
        // The setsid daemon (out of the process group) died with its command.
        processes::assert_no_process_left(&[&marker]).await;
    } else if let Err(why) = tern_sandbox::require::skip("pidns", missing.as_deref()) {
        panic!("{why}");
    }
}
