//! `bash {command, timeout?, description?}`: run a command in the workspace,
//! stream its output, keep the tail, and never leave a process behind.

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use tern_agent_loop::{Tool, ToolContext, ToolError, ToolOutput, UpdateSink};
use tern_protocol::{BackgroundDetails, ExecutionMode, ToolDefinition, ToolDetails, ToolResultContent};
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::ToolEnv;
use crate::bash_sandbox::{Applied, CallSandbox};
use crate::output_tail::{OutputTail, human_bytes};
use tern_process::{LiveTail, reap_leftovers, terminate_group};

/// Default timeout (2 minutes).
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// Largest timeout a call may ask for (10 minutes).
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// Lines of output kept for the model.
pub const MAX_LINES: usize = 2000;
/// Bytes of output kept for the model.
pub const MAX_BYTES: usize = 50 * 1024;
/// After the command exits, how long we keep reading pipes held open by
/// background children before we stop waiting.
const DRAIN_BOUND: Duration = Duration::from_millis(300);

/// The longest command bash can be given: Linux's limit for one argument
/// string (`MAX_ARG_STRLEN`, 32 pages).
const MAX_COMMAND_BYTES: usize = 128 * 1024;

/// The tool's definition.
pub fn definition() -> ToolDefinition {
    ToolDefinition {
        name: "bash".into(),
        description: format!(
            "Run a command with `bash -c` in the workspace root; returns stdout+stderr and the exit code.\n\
             - A fresh shell each call (no `cd` or variables kept); chain steps with `&&`. stdin is empty.\n\
             - Output keeps the last {MAX_LINES} lines or {} KB; the full output is then saved to a file named in the result.\n\
             - `timeout` ms: default {DEFAULT_TIMEOUT_MS}, max {MAX_TIMEOUT_MS}.\n\
             - `cmd &` dies with the call; for servers, watchers and long builds use `run_in_background` (returns a task id for task_output/task_stop).\n\
             - Use read, not cat/head/tail, for files.",
            MAX_BYTES / 1024
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "command": {"type": "string"},
                "timeout": {"type": "integer", "minimum": 1},
                "description": {"type": "string", "description": "What it does, in 5-10 words, for the person watching."},
                "run_in_background": {"type": "boolean"}
            },
            "required": ["command"],
            "additionalProperties": false
        }),
        snippet: Some("bash: run a shell command in the workspace (output tail kept, timeout, exit code)".into()),
        execution_mode: ExecutionMode::Sequential,
    }
}

#[derive(Debug, Deserialize)]
struct Args {
    command: String,
    timeout: Option<u64>,
    #[serde(default)]
    run_in_background: bool,
}

/// The bash tool.
pub struct BashTool {
    env: Arc<ToolEnv>,
}

impl BashTool {
    /// A bash tool running in `env.workspace`.
    pub fn new(env: Arc<ToolEnv>) -> Self {
        Self { env }
    }
}

enum Ending {
    Exited(Option<i32>, Option<i32>),
    TimedOut,
    Cancelled,
}

/// How following a foreground command stopped.
enum Collected {
    /// The command ended (and nothing of its group is left).
    Ended(Ending),
    /// It was moved to the background (Ctrl+B) as this task and goes on;
    /// its pipe is still open when `open`.
    Moved { task: Arc<crate::background::Task>, open: bool },
}

impl Tool for BashTool {
    fn execute<'a>(
        &'a self,
        ctx: ToolContext,
        input: Value,
        cancel: CancellationToken,
        updates: UpdateSink,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args: Args = crate::tool_args::parse("bash", input)?;
            if args.command.trim().is_empty() {
                return Err(ToolError::new("bash: `command` is empty; pass the command to run."));
            }
            // The kernel refuses one argument longer than this (MAX_ARG_STRLEN): say so plainly.
            let prefix_len = self.env.command_prefix.as_ref().map_or(0, |p| p.len() + 1);
            if args.command.len() + prefix_len >= MAX_COMMAND_BYTES {
                return Err(ToolError::new(format!(
                    "bash: this command is {}; one command can be at most {} KB (the kernel's limit for one \
                     argument). Write the script to a file with `write`, then run that file with bash.",
                    crate::human_bytes(args.command.len() as u64),
                    MAX_COMMAND_BYTES / 1024
                )));
            }
            let requested = args.timeout.unwrap_or(DEFAULT_TIMEOUT_MS);
            let timeout_ms = requested.clamp(1, MAX_TIMEOUT_MS);
            let spill = self.env.output_dir.join(format!("bash-{}.log", sanitize(&ctx.call_id)));
            let sandbox = CallSandbox::prepare(&self.env, ctx.confinement)?;
            if args.run_in_background {
                let (id, applied) = self.env.background.start(&self.env, &args.command, sandbox)?;
                let mut text = format!(
                    "Started in the background as {id}. Read its output with task_output {{\"id\": \"{id}\"}}; \
                         stop it with task_stop. It is stopped when tern exits."
                );
                push_notice(&mut text, &applied);
                return Ok(ToolOutput::text(text).with_details(ToolDetails::Background(BackgroundDetails {
                    background_task: id,
                    sandbox: Some(applied.label().to_string()),
                    sandbox_warning: applied.warning,
                    subagent_type: None,
                })));
            }
            let timeout = Duration::from_millis(timeout_ms);
            let call = Call { command: &args.command, timeout, spill };
            run(&self.env, call, sandbox, &cancel, &updates).await.map(|mut out| {
                if requested > MAX_TIMEOUT_MS
                    && let Some(ToolResultContent::Text { text }) = out.content.first_mut()
                {
                    text.push_str(&format!("\n[timeout capped at {} s]", MAX_TIMEOUT_MS / 1000));
                }
                out
            })
        })
    }
}

fn sanitize(id: &str) -> String {
    let s: String =
        id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    if s.is_empty() { format!("{}", std::process::id()) } else { s }
}

/// One foreground call: the command, its timeout, where its full output goes.
struct Call<'a> {
    command: &'a str,
    timeout: Duration,
    spill: std::path::PathBuf,
}

async fn run(
    env: &Arc<ToolEnv>,
    call: Call<'_>,
    sandbox: CallSandbox,
    cancel: &CancellationToken,
    updates: &UpdateSink,
) -> Result<ToolOutput, ToolError> {
    let started = Instant::now();
    let (mut child, pgid, reader, sandbox) = spawn(env, call.command, sandbox)?;
    // Listed until reaped: an exit that cannot wait (a second Ctrl-C) kills it first.
    let tracked = tern_process::track(pgid);
    // From now on the call may be moved to the background: it runs, so it was allowed.
    let mut slot = env.background.enter_foreground();
    let mut tail = OutputTail::new(MAX_LINES, MAX_BYTES, call.spill).with_full_output_cap(env.full_output_cap);
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(16);
    tokio::spawn(pump(reader, tx));
    let adopt = || env.background.adopt(&env.output_dir, call.command, started);
    let output = Output { rx: &mut rx, tail: &mut tail, updates };
    match collect(&mut child, pgid, output, call.timeout, cancel, (&mut slot.requests, &adopt)).await? {
        Collected::Ended(ending) => report(tail.finish(), &ending, call.timeout, &sandbox, started.elapsed()),
        Collected::Moved { task, open } => {
            let id = task.id.clone();
            // The task's stop (and tern's exit, which stops every task) ends the group now.
            drop(tracked);
            crate::background::BackgroundTasks::hand_over(task, child, pgid, rx, open);
            Ok(moved_report(tail.finish(), &id, &sandbox, started.elapsed()))
        }
    }
}

/// Where a running command's output goes: off its pipe, into the tail kept
/// for the model, and to the front ends as it comes.
struct Output<'a> {
    rx: &'a mut mpsc::Receiver<Vec<u8>>,
    tail: &'a mut OutputTail,
    updates: &'a UpdateSink,
}

/// Requests to move the call to the background, and what makes its task.
type Moves<'a> = (
    &'a mut mpsc::Receiver<tokio::sync::oneshot::Sender<Result<String, String>>>,
    &'a (dyn Fn() -> Result<Arc<crate::background::Task>, ToolError> + Sync),
);

/// Start `command` with `bash -c` (or `[bash] shell`, after `[bash] command_prefix`) in the workspace, in its own process group,
/// confined as the call's sandbox says, stdout and stderr on one pipe.
pub(crate) fn spawn(
    env: &ToolEnv,
    command: &str,
    sandbox: CallSandbox,
) -> Result<(tokio::process::Child, u32, tokio::net::unix::pipe::Receiver, Applied), ToolError> {
    // One pipe for both stdout and stderr, as `2>&1` would do: the output
    // keeps the order it was written in, and it is one byte stream, so a
    // character split across reads is never cut by the other stream's bytes.
    let (reader, writer) =
        std::io::pipe().map_err(|e| ToolError::new(format!("bash: could not create the output pipe: {e}")))?;
    widen_pipe(&reader);
    let writer_err =
        writer.try_clone().map_err(|e| ToolError::new(format!("bash: could not create the output pipe: {e}")))?;
    let reader = tokio::net::unix::pipe::Receiver::from_owned_fd(reader.into())
        .map_err(|e| ToolError::new(format!("bash: could not read the output pipe: {e}")))?;
    let mut cmd = tokio::process::Command::new(env.shell.as_deref().unwrap_or(std::path::Path::new("bash")));
    let inherited_git_count = match &env.child_env {
        Some(child_env) => {
            cmd.env_clear().envs(child_env.iter());
            child_env.get(std::ffi::OsStr::new("GIT_CONFIG_COUNT")).cloned()
        }
        None => std::env::var_os("GIT_CONFIG_COUNT"),
    };
    cmd.envs(crate::git_guard::git_guard_env(inherited_git_count.as_deref(), sandbox.read_only()));
    // `[bash] command_prefix` runs first, on its own line, in the same shell.
    let script = match &env.command_prefix {
        Some(prefix) => std::borrow::Cow::Owned(format!("{prefix}\n{command}")),
        None => std::borrow::Cow::Borrowed(command),
    };
    cmd.arg("-c")
        .arg(script.as_ref())
        .current_dir(&env.workspace)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(writer_err)
        .process_group(0)
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat")
        .env("TERN", "1")
        // The permission policy follows `cd DIR` to DIR; with CDPATH, bash could go elsewhere.
        .env_remove("CDPATH");
    if let Some(path) = &env.path_prepend {
        cmd.env("PATH", path);
    }
    // Without its lazy variables (none of them: no stale or real value
    // either) when they cannot be made; said once per session, not per command.
    let mut notice = None;
    if let Some(lazy) = &env.lazy_env {
        match lazy.vars() {
            Ok(vars) => {
                cmd.envs(vars);
            }
            Err(e) => {
                for name in lazy.names() {
                    cmd.env_remove(name);
                }
                if !env.lazy_env_noted.swap(true, std::sync::atomic::Ordering::Relaxed) {
                    notice = Some(e);
                }
            }
        }
    }
    // Killed if tern dies (kill -9): the shell, or the command it runs in its place.
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(PR_SET_PDEATHSIG) in the child between fork and exec only sets a flag of that process.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            tern_process::cloexec_inherited_fds();
            Ok(())
        });
    }
    let mut sandbox = sandbox.apply(&mut cmd);
    sandbox.notice = notice;
    let child = cmd.spawn().map_err(|e| match &env.shell {
        Some(shell) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied) => {
            ToolError::new(format!(
                "bash: could not start the shell {} (`[bash] shell` in the user config): {e}. Ask the user to fix \
                 or remove that setting.",
                shell.display()
            ))
        }
        _ => sandbox.spawn_error(e),
    })?;
    // The command holds our copies of the write end; close them, or the pipe
    // never reaches end-of-file.
    drop(cmd);
    let Some(pgid) = child.id() else {
        return Err(ToolError::new("bash: the process exited before it could be tracked"));
    };
    Ok((child, pgid, reader, sandbox))
}

/// After a command exited: what is still buffered in its pipe, until the
/// pipe closes or [`DRAIN_BOUND`] passes (a child it left in the background
/// may hold the pipe open forever).
pub(crate) async fn drain_after_exit(rx: &mut mpsc::Receiver<Vec<u8>>, mut each: impl FnMut(Vec<u8>)) {
    let deadline = tokio::time::Instant::now() + DRAIN_BOUND;
    loop {
        tokio::select! {
            chunk = rx.recv() => match chunk {
                Some(c) => each(c),
                None => return,
            },
            () = tokio::time::sleep_until(deadline) => return,
        }
    }
}

/// Stream the command's output into `tail` (and `updates`) until it exits,
/// times out, is cancelled or is moved to the background; then (unless
/// moved) leave no process of its group behind. Also whether its pipe is
/// still open.
async fn collect(
    child: &mut tokio::process::Child,
    pgid: u32,
    output: Output<'_>,
    timeout: Duration,
    cancel: &CancellationToken,
    (moves, adopt): Moves<'_>,
) -> Result<Collected, ToolError> {
    let Output { rx, tail, updates } = output;
    let mut live = Live::default();
    let deadline = tokio::time::Instant::now() + timeout;
    let mut pipes_open = true;
    let ending = loop {
        tokio::select! {
            chunk = rx.recv(), if pipes_open => match chunk {
                Some(c) => {
                    live.push(&c, updates);
                    tail.push_owned(c);
                }
                None => pipes_open = false,
            },
            () = tokio::time::sleep_until(live.due()), if !live.tail.is_empty() => live.flush(updates),
            status = child.wait() => {
                let status = status.map_err(|e| ToolError::new(format!("bash: waiting for the command failed: {e}")))?;
                use std::os::unix::process::ExitStatusExt;
                break Ending::Exited(status.code(), status.signal());
            }
            () = tokio::time::sleep_until(deadline) => break Ending::TimedOut,
            () = cancel.cancelled() => break Ending::Cancelled,
            Some(reply) = moves.recv() => match adopt() {
                Ok(task) => {
                    let _ = reply.send(Ok(task.id.clone()));
                    live.flush(updates);
                    return Ok(Collected::Moved { task, open: pipes_open });
                }
                // No room for another task: it goes on here, and the asker hears why.
                Err(e) => {
                    let _ = reply.send(Err(e.message));
                }
            },
        }
    };
    match ending {
        Ending::Exited(..) => {
            if pipes_open {
                drain_after_exit(rx, |c| {
                    live.push(&c, updates);
                    tail.push_owned(c);
                })
                .await;
            }
            live.flush(updates);
            reap_leftovers(pgid).await;
        }
        Ending::TimedOut | Ending::Cancelled => {
            terminate_group(child, pgid).await;
            while let Ok(c) = rx.try_recv() {
                tail.push_owned(c);
            }
        }
    }
    Ok(Collected::Ended(ending))
}

/// Live output for the front ends: at most one update every
/// [`LIVE_EVERY`] (the first at once), so a front end receives at most
/// [`LIVE_BYTES`] × 2 twenty times a second however fast the command
/// prints; output faster than that skips to its newest part (the model's
/// result keeps its own tail and the full-output file).
struct Live {
    tail: LiveTail,
    sent: tokio::time::Instant,
}

/// The shortest time between two updates of a command's live output.
const LIVE_EVERY: Duration = Duration::from_millis(50);
/// The most output waiting to be sent to the front ends (about).
const LIVE_BYTES: usize = 64 * 1024;

impl Default for Live {
    fn default() -> Self {
        let now = tokio::time::Instant::now();
        Self { tail: LiveTail::new(LIVE_BYTES), sent: now.checked_sub(LIVE_EVERY).unwrap_or(now) }
    }
}

impl Live {
    /// Add `chunk`; send what waits if the last update is old enough.
    fn push(&mut self, chunk: &[u8], updates: &UpdateSink) {
        self.tail.push(chunk);
        if self.sent.elapsed() >= LIVE_EVERY {
            self.flush(updates);
        }
    }

    /// When what waits is sent.
    fn due(&self) -> tokio::time::Instant {
        self.sent + LIVE_EVERY
    }

    fn flush(&mut self, updates: &UpdateSink) {
        if self.tail.is_empty() {
            return;
        }
        let text = self.tail.take();
        self.sent = tokio::time::Instant::now();
        if !text.is_empty() {
            updates(text);
        }
    }
}

/// The result the model sees: the tail (with where the rest went), how the
/// command ended, the sandbox's note when it blocked something, and details.
fn report(
    view: crate::output_tail::TailView,
    ending: &Ending,
    timeout: Duration,
    sandbox: &Applied,
    elapsed: Duration,
) -> Result<ToolOutput, ToolError> {
    let mut text = truncation_note(&view);
    if view.text.is_empty() {
        text.push_str("(no output)");
    } else {
        text.push_str(&view.text);
    }
    let (status_line, exit_code, is_error) = match *ending {
        Ending::Exited(Some(code), _) => (format!("[Exit code: {code}]"), Some(code), code != 0),
        Ending::Exited(None, sig) => (format!("[Killed by signal {}]", sig.unwrap_or(0)), None, true),
        Ending::TimedOut => (
            format!(
                "[Timed out after {}; the command and its child processes were killed. Pass a larger `timeout` (max {} s) or run less at once.]",
                fmt_duration(timeout),
                MAX_TIMEOUT_MS / 1000
            ),
            None,
            true,
        ),
        Ending::Cancelled => {
            ("[Interrupted by the user; the command and its child processes were killed.]".to_string(), None, true)
        }
    };
    text.push('\n');
    text.push_str(&status_line);
    if let Some(note) = is_error.then(|| sandbox.denial_note(&view.text)).flatten() {
        text.push('\n');
        text.push_str(&note);
    }
    push_notice(&mut text, sandbox);
    let details = tern_protocol::BashDetails {
        exit_code,
        duration_ms: elapsed.as_millis() as u64,
        total_lines: view.total_lines,
        total_bytes: view.total_bytes,
        truncated: view.truncated,
        full_output: view.full_output.as_ref().map(|p| p.display().to_string()),
        timed_out: matches!(ending, Ending::TimedOut),
        interrupted: matches!(ending, Ending::Cancelled),
        sandbox: Some(sandbox.label().to_string()),
        sandbox_warning: sandbox.warning.clone(),
    };
    let details = ToolDetails::Bash(details);
    if is_error {
        Err(ToolError { message: text, details: Some(Box::new(details)) })
    } else {
        Ok(ToolOutput::text(text).with_details(details))
    }
}

/// The one-time note about the command's environment, on a line of its own.
fn push_notice(text: &mut String, sandbox: &Applied) {
    if let Some(notice) = &sandbox.notice {
        text.push_str(&format!("\n[{notice}]"));
    }
}

/// The first line of a result whose output was cut: how much is shown, and
/// where the whole output went (or why it could not be saved); empty when
/// nothing was cut.
fn truncation_note(view: &crate::output_tail::TailView) -> String {
    let mut text = String::new();
    if !view.truncated {
        return text;
    }
    text.push_str(&format!(
        "[Output truncated: showing the last {} of {} lines ({} of {}).",
        view.shown_lines,
        view.total_lines,
        human_bytes(view.text.len() as u64),
        human_bytes(view.total_bytes)
    ));
    match (&view.full_output, &view.spill_error, view.full_output_cut) {
        (Some(p), _, Some(cut)) => text.push_str(&format!(
            " Full output: {} (its first {} and last {} of {} kept; `[bash] full_output_mb` sets the cap)]\n",
            p.display(),
            human_bytes(cut.head),
            human_bytes(view.total_bytes - cut.head - cut.left_out),
            human_bytes(view.total_bytes)
        )),
        (Some(p), _, None) => text.push_str(&format!(" Full output: {}]\n", p.display())),
        (None, Some(e), _) => text.push_str(&format!(" The full output could not be saved: {e}]\n")),
        (None, None, _) => text.push_str("]\n"),
    }
    text
}

/// The result of a call moved to the background: what it printed so far
/// (its tail, as a finished call's), and how to follow it from now on.
fn moved_report(view: crate::output_tail::TailView, id: &str, sandbox: &Applied, elapsed: Duration) -> ToolOutput {
    let mut text = truncation_note(&view);
    text.push_str(if view.text.is_empty() { "(no output yet)" } else { &view.text });
    text.push_str(&format!(
        "\n[The person moved this command to the background after {:.1} s; it keeps running as {id} (its timeout \
         no longer applies). Read what it prints from now on with task_output {{\"id\": \"{id}\"}} (`wait: true` \
         waits for it to end); stop it with task_stop. It is stopped when tern exits.]",
        elapsed.as_secs_f64()
    ));
    push_notice(&mut text, sandbox);
    ToolOutput::text(text).with_details(ToolDetails::Background(BackgroundDetails {
        background_task: id.to_string(),
        sandbox: Some(sandbox.label().to_string()),
        sandbox_warning: sandbox.warning.clone(),
        subagent_type: None,
    }))
}

fn fmt_duration(d: Duration) -> String {
    if d.as_millis().is_multiple_of(1000) { format!("{} s", d.as_secs()) } else { format!("{} ms", d.as_millis()) }
}

/// How much of a command's output one read takes.
const READ_CHUNK: usize = 128 * 1024;

/// Forward what `r` yields, a read at a time, until end-of-file or the receiver goes.
pub(crate) async fn pump<R: tokio::io::AsyncRead + Unpin>(mut r: R, tx: mpsc::Sender<Vec<u8>>) {
    loop {
        // Read into a fresh buffer and hand it over whole: no copy, no zeroing.
        let mut buf = Vec::with_capacity(READ_CHUNK);
        match r.read_buf(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                if tx.send(buf).await.is_err() {
                    break;
                }
            }
        }
    }
}

/// Let a fast command write up to 1 MiB before it waits for us (the default
/// pipe holds 64 KiB: a wake-up per 64 KiB costs more than the copy). Best
/// effort: a smaller limit (`/proc/sys/fs/pipe-max-size`) keeps the default.
fn widen_pipe(fd: &impl std::os::fd::AsRawFd) {
    #[cfg(target_os = "linux")]
    // SAFETY: F_SETPIPE_SZ on a pipe we own only changes its capacity.
    unsafe {
        libc::fcntl(fd.as_raw_fd(), libc::F_SETPIPE_SZ, 1 << 20);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = fd;
}
