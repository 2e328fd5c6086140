//! Running one hook command: `sh -c` in its own process group, the payload
//! on stdin, stdout and stderr captured up to a cap, and a deadline. On
//! timeout or cancel the whole group is killed and the shell reaped, so a
//! hook can neither hang tern nor leave processes behind.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{ChildStdin, Command};
use tokio_util::sync::CancellationToken;

use super::HookEvent;

/// How much of each of stdout and stderr is kept; the rest is read and dropped.
pub(crate) const OUTPUT_CAP: usize = 64 * 1024;

/// After the shell exits, how long to keep reading output still in the
/// pipes. A background job that inherited stdout keeps the pipe open
/// forever; what the hook itself printed is already buffered by then.
const DRAIN_GRACE: Duration = Duration::from_millis(100);

/// How long to wait for a SIGKILLed shell to be reaped.
const REAP_LIMIT: Duration = Duration::from_secs(2);

/// One hook command to run.
pub(crate) struct HookCommand<'a> {
    /// The shell command.
    pub command: &'a str,
    /// Working directory, also passed as `TERN_PROJECT_DIR`.
    pub workspace: &'a Path,
    /// The environment to start from (tern's own when `None`).
    pub env: Option<&'a tern_protocol::ChildEnv>,
    /// Passed as `TERN_HOOK_EVENT`.
    pub event: HookEvent,
    /// Written to the command's stdin, then EOF.
    pub stdin: &'a [u8],
    /// When the whole group is killed.
    pub timeout: Duration,
}

/// How a hook command ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Termination {
    /// Exited with this code.
    Code(i32),
    /// Killed by this signal (not by us).
    Signal(i32),
    /// Ran past its timeout; the group was killed.
    TimedOut(Duration),
    /// The cancel token fired; the group was killed.
    Cancelled,
    /// `sh` could not be started.
    SpawnFailed(String),
    /// Waiting for the shell failed; the group was killed.
    WaitFailed(String),
}

/// Everything a finished hook command left.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Finished {
    pub termination: Termination,
    pub stdout: Captured,
    pub stderr: Captured,
    pub duration: Duration,
}

/// Output kept from one pipe, at most [`OUTPUT_CAP`] bytes.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Captured {
    pub bytes: Vec<u8>,
    /// Whether more was written than kept.
    pub truncated: bool,
}

impl Captured {
    fn push(&mut self, chunk: &[u8]) {
        let room = OUTPUT_CAP.saturating_sub(self.bytes.len());
        self.bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
        self.truncated |= chunk.len() > room;
    }

    /// The kept output as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

/// Run `hook` to completion, timeout or cancellation. Never fails: every
/// problem is a [`Termination`].
pub(crate) async fn run_command(hook: &HookCommand<'_>, cancel: &CancellationToken) -> Finished {
    let started = Instant::now();
    let mut stdout = Captured::default();
    let mut stderr = Captured::default();
    let termination = run_captured(hook, cancel, &mut stdout, &mut stderr).await;
    Finished { termination, stdout, stderr, duration: started.elapsed() }
}

async fn run_captured(
    hook: &HookCommand<'_>,
    cancel: &CancellationToken,
    out: &mut Captured,
    err: &mut Captured,
) -> Termination {
    let mut command = Command::new("sh");
    if let Some(env) = hook.env {
        command.env_clear().envs(env.iter());
    }
    command
        .arg("-c")
        .arg(hook.command)
        .current_dir(hook.workspace)
        .env("TERN_PROJECT_DIR", hook.workspace)
        // What hooks written for Claude Code read.
        .env("CLAUDE_PROJECT_DIR", hook.workspace)
        .env("TERN_HOOK_EVENT", hook.event.name())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        // A safety net for the shell itself; the guard below handles the group.
        .kill_on_drop(true);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return Termination::SpawnFailed(format!("{e} (in {})", hook.workspace.display())),
    };
    // Armed until the shell is reaped: if this future is dropped midway, the group dies with it.
    let mut group = tern_process::GroupGuard::new(child.id());

    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let io = async { tokio::join!(feed(stdin, hook.stdin), drain(stdout, out), drain(stderr, err)) };
    tokio::pin!(io);
    let deadline = tokio::time::sleep(hook.timeout);
    tokio::pin!(deadline);

    let mut io_done = false;
    let waited = loop {
        // Biased so the deadline is checked before a flood of output can use up the task's budget.
        tokio::select! {
            biased;
            () = cancel.cancelled() => break Err(Termination::Cancelled),
            () = &mut deadline => break Err(Termination::TimedOut(hook.timeout)),
            status = child.wait() => break status.map_err(|e| Termination::WaitFailed(e.to_string())),
            _ = &mut io, if !io_done => io_done = true,
        }
    };

    match waited {
        Ok(status) => {
            // Reaped: the pgid may now be reused, and background jobs the hook
            // started on purpose are its own business.
            group.disarm();
            if !io_done {
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => {}
                    () = &mut deadline => {}
                    () = tokio::time::sleep(DRAIN_GRACE) => {}
                    _ = &mut io => {}
                }
            }
            exit_termination(status)
        }
        Err(termination) => {
            group.kill();
            let _ = tokio::time::timeout(REAP_LIMIT, child.wait()).await;
            termination
        }
    }
}

fn exit_termination(status: ExitStatus) -> Termination {
    match (status.code(), status.signal()) {
        (Some(code), _) => Termination::Code(code),
        (None, Some(signal)) => Termination::Signal(signal),
        (None, None) => Termination::WaitFailed(format!("unexpected exit status {status}")),
    }
}

/// Write the payload and close stdin. A hook that does not read its stdin
/// may exit first: the broken pipe is not an error.
async fn feed(stdin: Option<ChildStdin>, payload: &[u8]) {
    if let Some(mut stdin) = stdin {
        let _ = stdin.write_all(payload).await;
        let _ = stdin.shutdown().await;
    }
}

/// Read `pipe` to EOF, keeping up to the cap; reading on past the cap keeps
/// a chatty hook from blocking on a full pipe.
async fn drain(pipe: Option<impl AsyncRead + Unpin>, into: &mut Captured) {
    let Some(mut pipe) = pipe else { return };
    let mut chunk = [0u8; 8192];
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => into.push(&chunk[..n]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captured_keeps_the_head_and_notes_the_cut() {
        let mut captured = Captured::default();
        captured.push(&vec![b'a'; OUTPUT_CAP - 1]);
        assert!(!captured.truncated);
        captured.push(b"bc");
        assert_eq!(captured.bytes.len(), OUTPUT_CAP);
        assert!(captured.truncated);
        captured.push(b"more");
        assert_eq!(captured.bytes.len(), OUTPUT_CAP);
        assert_eq!(captured.bytes.last(), Some(&b'b'));
    }
}
