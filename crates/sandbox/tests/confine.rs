//! Confined commands against the real kernel. Each test prints why it is
//! skipped where Landlock is missing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::path::Path;
use std::process::Command;

use tern_sandbox::{AccessPlan, HostPaths, Prepared, SandboxLevel, SandboxPolicy, confine};

mod common;

use common::{Fixture, fixture, landlock_missing};

fn policy(f: &Fixture, level: SandboxLevel, workspace: &Path) -> SandboxPolicy {
    SandboxPolicy::new(level, workspace, &f.tmp).home(Some(f.home.clone()))
}

/// Run `script` under `policy`; return (success, combined output).
fn run(policy: &SandboxPolicy, script: &str) -> (bool, String) {
    let plan = AccessPlan::build(policy, &HostPaths::from_env());
    let prepared = Prepared::new(&plan).unwrap();
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(script).current_dir(&policy.workspace).env("TMPDIR", &policy.temp_dir);
    confine(&mut cmd, prepared);
    let out = cmd.output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

#[test]
fn read_only_reads_the_workspace_and_system_but_writes_only_tmpdir() {
    if landlock_missing() {
        return;
    }
    let f = fixture();
    let p = policy(&f, SandboxLevel::ReadOnly, &f.workspace);
    let script = "cat notes.txt && ls /usr/bin >/dev/null && echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\" \
        && head -c 4 /dev/urandom | wc -c && cat <(echo substituted) && echo to-stderr > /dev/stderr";
    let (ok, out) = run(&p, script);
    assert!(ok, "{out}");
    assert_eq!(out, "workspace notes\nt\n4\nsubstituted\nto-stderr\n");
    // Raw devices stay out of reach, even for root.
    let (ok, out) = run(&p, "ls /dev");
    assert!(!ok, "{out}");
    for target in [f.workspace.join("new"), f.home.join("y"), f.sibling.join("z")] {
        let (ok, out) = run(&p, &format!("echo x > '{}'", target.display()));
        assert!(!ok && out.contains("Permission denied"), "{}: {out}", target.display());
        assert!(!target.exists());
    }
    let (ok, out) = run(&p, &format!("cat '{}'", f.home.join(".ssh/id_rsa").display()));
    assert!(!ok && !out.contains("SECRET"), "{out}");
}

#[test]
fn a_workspace_that_is_home_still_hides_its_secrets() {
    if landlock_missing() {
        return;
    }
    let f = fixture();
    for level in [SandboxLevel::ReadOnly, SandboxLevel::WorkspaceWrite] {
        let p = policy(&f, level, &f.home);
        let (ok, out) = run(&p, "cat project/notes.txt");
        assert!(ok, "{out}");
        let (ok, out) = run(&p, "cat .ssh/id_rsa");
        assert!(!ok && !out.contains("SECRET"), "{level}: {out}");
        let (ok, _) = run(&p, "echo evil >> .ssh/authorized_keys");
        assert!(!ok && !f.home.join(".ssh/authorized_keys").exists(), "{level}");
    }
}

#[test]
fn read_only_is_offline() {
    if landlock_missing() {
        return;
    }
    let f = fixture();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    // Network asked for, but read-only is always offline.
    let p = policy(&f, SandboxLevel::ReadOnly, &f.workspace).network(true);
    let (ok, out) = run(&p, &format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"));
    assert!(!ok && !out.contains("connected"), "{out}");
    assert_eq!(listener.accept().map(|_| ()).unwrap_err().kind(), std::io::ErrorKind::WouldBlock);
}

#[test]
fn workspace_write_writes_the_workspace_only_and_may_connect() {
    if landlock_missing() {
        return;
    }
    let f = fixture();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let p = policy(&f, SandboxLevel::WorkspaceWrite, &f.workspace).network(true);
    let (ok, out) = run(&p, &format!("echo hi > made.txt && exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"));
    assert!(ok && out.contains("connected"), "{out}");
    assert!(listener.accept().is_ok());
    assert_eq!(std::fs::read_to_string(f.workspace.join("made.txt")).unwrap(), "hi\n");
    let (ok, out) = run(&p, &format!("echo x > '{}'", f.sibling.join("z").display()));
    assert!(!ok && out.contains("Permission denied"), "{out}");
    let offline = policy(&f, SandboxLevel::WorkspaceWrite, &f.workspace);
    let (ok, _) = run(&offline, &format!("exec 3<>/dev/tcp/127.0.0.1/{port}"));
    assert!(!ok);
}

#[test]
fn off_is_unconfined() {
    let f = fixture();
    let p = policy(&f, SandboxLevel::Off, &f.workspace);
    let target = f.sibling.join("z");
    let (ok, out) =
        run(&p, &format!("echo x > '{}' && cat '{}'", target.display(), f.home.join(".ssh/id_rsa").display()));
    assert!(ok && out.contains("SECRET"), "{out}");
}

#[test]
fn a_confined_command_cannot_signal_processes_outside_its_sandbox() {
    if landlock_missing() {
        return;
    }
    let f = fixture();
    let p = policy(&f, SandboxLevel::WorkspaceWrite, &f.workspace);
    let mut outsider = Command::new("sleep").arg("30").spawn().unwrap();
    let (ok, out) = run(&p, &format!("kill -TERM {}", outsider.id()));
    assert!(!ok, "{out}");
    assert!(outsider.try_wait().unwrap().is_none(), "the signal reached a process outside the sandbox");
    outsider.kill().unwrap();
    outsider.wait().unwrap();
}
