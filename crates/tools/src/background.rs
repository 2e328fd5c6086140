//! Background commands: `bash {run_in_background: true}` starts a command
//! (a dev server, a watcher, a long build) and returns at once with a task
//! id; `task_output {id, filter?}` reads what it printed since the last
//! read; `task_stop {id}` ends its process group. Every task still running
//! is stopped when tern exits.
//!
//! A bash call running in the foreground can be moved here too
//! ([`BackgroundTasks::move_foreground`], Ctrl+B in the TUI): the call's
//! process group, pipe and sandbox go on unchanged as a new task, and the
//! call returns at once. Only a call that is running can be moved, so only
//! one the permission policy already let run.
//!
//! Bounds: at most [`MAX_RUNNING`] at once; output not yet read is kept up
//! to [`PENDING_CAP`] bytes (older bytes are dropped and counted); the whole
//! log goes to a file in the session's outputs, up to [`LOG_CAP`] bytes.

use std::collections::VecDeque;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::future::BoxFuture;
use grep_matcher::Matcher;
use serde_json::{Value, json};
use tern_agent_loop::{Tool, ToolContext, ToolError, ToolOutput, UpdateSink};
use tern_protocol::{ExecutionMode, ToolDefinition, ToolResultContent};
pub use tern_protocol::{TaskStatus, TaskSummary};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::ToolEnv;
use crate::bash_sandbox::CallSandbox;
use tern_process::{Utf8Carry, reap_leftovers, signal_group, terminate_group};
use tern_protocol::sync::LockExt as _;

/// Background commands running at once, at most.
pub const MAX_RUNNING: usize = 16;
/// Unread output kept per task, in bytes.
pub const PENDING_CAP: usize = 1024 * 1024;
/// The largest log file per task.
pub const LOG_CAP: u64 = 64 * 1024 * 1024;
/// Tasks kept in the list at most; past it the oldest finished one is forgotten.
pub const MAX_KEPT: usize = 64;
/// The most a `task_output` result shows, in bytes (the rest is in the log).
const SHOWN_CAP: usize = crate::bash::MAX_BYTES;

struct State {
    pending: VecDeque<u8>,
    dropped: u64,
    total: u64,
    status: TaskStatus,
    log: Option<std::fs::File>,
    log_bytes: u64,
    decoder: Utf8Carry,
}

/// What is told when a task starts or ends.
type Listener = Arc<dyn Fn(TaskSummary) + Send + Sync>;
/// The one listener of a session's tasks, shared with each task.
type ListenerSlot = Arc<Mutex<Option<Listener>>>;

/// The answer to a request to move a foreground call: the task's id, or why not.
type MoveReply = tokio::sync::oneshot::Sender<Result<String, String>>;

pub(crate) struct Task {
    pub(crate) id: String,
    command: String,
    /// The command's process group (None for a task the runtime runs, e.g. a subagent).
    /// Its process group, once started (none for a detached task).
    pgid: std::sync::OnceLock<u32>,
    started: Instant,
    log_path: PathBuf,
    stop: CancellationToken,
    /// Told when the task has ended.
    ended: tokio::sync::Notify,
    state: Mutex<State>,
    listener: ListenerSlot,
    /// A background subagent's progress and appends (none for a command).
    subagent: Option<Arc<crate::task_append::SubagentLink>>,
}

impl Task {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock_or_recover()
    }

    fn push(&self, chunk: &[u8]) {
        let mut s = self.state();
        s.total += chunk.len() as u64;
        s.pending.extend(chunk);
        let over = s.pending.len().saturating_sub(PENDING_CAP);
        if over > 0 {
            s.pending.drain(..over);
            s.dropped += over as u64;
        }
        let room = LOG_CAP.saturating_sub(s.log_bytes) as usize;
        let part = &chunk[..chunk.len().min(room)];
        if !part.is_empty()
            && let Some(f) = s.log.as_mut()
            && f.write_all(part).is_ok()
        {
            s.log_bytes += part.len() as u64;
        }
    }

    /// It ended: `status` says how; the listener hears of it.
    fn finish(&self, status: TaskStatus) {
        self.state().status = status;
        self.ended.notify_waiters();
        self.announce();
    }

    /// Tell the listener how the task stands.
    fn announce(&self) {
        let listener = self.listener.lock_or_recover().clone();
        if let Some(listener) = listener {
            listener(self.summary());
        }
    }

    fn summary(&self) -> TaskSummary {
        let s = self.state();
        TaskSummary {
            id: self.id.clone(),
            command: self.command.clone(),
            status: s.status,
            elapsed_ms: self.started.elapsed().as_millis() as u64,
            output_bytes: s.total,
            log: self.log_path.clone(),
            subagent: self.subagent.as_ref().map(|l| l.report()),
        }
    }
}

/// The background tasks of one session.
#[derive(Default)]
pub struct BackgroundTasks {
    tasks: Mutex<Vec<Arc<Task>>>,
    next: AtomicU64,
    listener: ListenerSlot,
    /// The bash calls running in the foreground now, each with where to ask it to move.
    foreground: Mutex<Vec<(u64, tokio::sync::mpsc::Sender<MoveReply>)>>,
    next_foreground: AtomicU64,
}

/// A bash call's place among the calls running in the foreground, given up
/// when dropped; [`ForegroundSlot::requests`] brings the requests to move it.
pub(crate) struct ForegroundSlot {
    tasks: Arc<BackgroundTasks>,
    key: u64,
    /// Requests to move the call to the background.
    pub(crate) requests: tokio::sync::mpsc::Receiver<MoveReply>,
}

impl Drop for ForegroundSlot {
    fn drop(&mut self) {
        self.tasks.foreground.lock_or_recover().retain(|(key, _)| *key != self.key);
    }
}

/// How long a request to move a foreground call waits for its answer.
const MOVE_ANSWER_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

impl std::fmt::Debug for BackgroundTasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackgroundTasks").field("tasks", &self.list().len()).finish()
    }
}

impl BackgroundTasks {
    fn tasks(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Task>>> {
        self.tasks.lock_or_recover()
    }

    fn get(&self, id: &str) -> Result<Arc<Task>, ToolError> {
        let id = id.trim();
        let tasks = self.tasks();
        if let Some(task) = tasks.iter().find(|t| t.id == id) {
            return Ok(task.clone());
        }
        let ids: Vec<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
        Err(ToolError::new(format!(
            "no background task `{id}`; tasks: {}",
            if ids.is_empty() { "none".to_string() } else { ids.join(", ") }
        )))
    }

    /// Every task, oldest first.
    pub fn list(&self) -> Vec<TaskSummary> {
        self.tasks().iter().map(|t| t.summary()).collect()
    }

    /// Tell `listener` whenever a task starts or ends (the front end's
    /// count of running tasks); it replaces the one before.
    pub fn set_listener(&self, listener: Listener) {
        *self.listener.lock_or_recover() = Some(listener);
    }

    /// Enter a bash call running in the foreground in the list of calls
    /// [`Self::move_foreground`] can move.
    pub(crate) fn enter_foreground(self: &Arc<Self>) -> ForegroundSlot {
        // One request at a time: a second Ctrl+B while the first is answered finds the queue full.
        let (tx, requests) = tokio::sync::mpsc::channel(1);
        let key = self.next_foreground.fetch_add(1, Ordering::SeqCst);
        self.foreground.lock_or_recover().push((key, tx));
        ForegroundSlot { tasks: self.clone(), key, requests }
    }

    /// Move every bash call running in the foreground to the background:
    /// for each, the id of the task it goes on as, or why it could not
    /// (no room for another task). Empty: none was running (a call that
    /// ends while it is asked is not counted).
    pub async fn move_foreground(&self) -> Vec<Result<String, String>> {
        let asks: Vec<_> = self.foreground.lock_or_recover().iter().map(|(_, tx)| tx.clone()).collect();
        let mut out = Vec::new();
        for ask in asks {
            let (reply, answer) = tokio::sync::oneshot::channel();
            // Full: a move of that call is being answered already; closed: it ended.
            if ask.try_send(reply).is_err() {
                continue;
            }
            if let Ok(Ok(moved)) = tokio::time::timeout(MOVE_ANSWER_WAIT, answer).await {
                out.push(moved);
            }
        }
        out
    }

    /// A task for a foreground call being moved, counted from `started`;
    /// [`Self::hand_over`] gives it the process.
    pub(crate) fn adopt(
        &self,
        output_dir: &std::path::Path,
        command: &str,
        started: Instant,
    ) -> Result<Arc<Task>, ToolError> {
        self.register(output_dir, command, started, None)
    }

    /// The moved call's process, and its output from now on, go to `task`.
    pub(crate) fn hand_over(
        task: Arc<Task>,
        child: tokio::process::Child,
        pgid: u32,
        output: mpsc::Receiver<Vec<u8>>,
        open: bool,
    ) {
        let _ = task.pgid.set(pgid);
        tokio::spawn(watch(task, child, output, open));
    }

    /// A new task, with its id and log, or why no more may start.
    fn register(
        &self,
        output_dir: &std::path::Path,
        label: &str,
        started: Instant,
        subagent: Option<Arc<crate::task_append::SubagentLink>>,
    ) -> Result<Arc<Task>, ToolError> {
        let id = format!("bg-{}", self.next.fetch_add(1, Ordering::SeqCst) + 1);
        let log_path = output_dir.join(format!("{id}.log"));
        let log = std::fs::create_dir_all(output_dir).ok().and_then(|()| std::fs::File::create(&log_path).ok());
        let task = Arc::new(Task {
            id,
            command: label.to_string(),
            pgid: std::sync::OnceLock::new(),
            started,
            log_path,
            stop: CancellationToken::new(),
            ended: tokio::sync::Notify::new(),
            state: Mutex::new(State {
                pending: VecDeque::new(),
                dropped: 0,
                total: 0,
                status: TaskStatus::Running,
                log,
                log_bytes: 0,
                decoder: Utf8Carry::default(),
            }),
            listener: self.listener.clone(),
            subagent,
        });
        {
            // Counted and added in one step: two starts at once cannot both take the last place.
            let mut tasks = self.tasks();
            room_in(&tasks)?;
            if tasks.len() >= MAX_KEPT
                && let Some(i) = tasks.iter().position(|t| t.state().status != TaskStatus::Running)
            {
                tasks.remove(i);
            }
            tasks.push(task.clone());
        }
        task.announce();
        Ok(task)
    }

    /// Start `command` in the background (confined as `sandbox` says); its
    /// id, and the confinement it got (with the one-time sandbox warning).
    pub(crate) fn start(
        &self,
        env: &ToolEnv,
        command: &str,
        sandbox: CallSandbox,
    ) -> Result<(String, crate::bash_sandbox::Applied), ToolError> {
        // Its place is taken before anything runs: a task refused for room never starts.
        let task = self.register(&env.output_dir, command, Instant::now(), None)?;
        let (child, pgid, reader, applied) = match crate::bash::spawn(env, command, sandbox) {
            Ok(spawned) => spawned,
            Err(e) => {
                task.finish(TaskStatus::Exited { exit_code: None });
                return Err(e);
            }
        };
        let id = task.id.clone();
        let (tx, rx) = mpsc::channel::<Vec<u8>>(16);
        tokio::spawn(crate::bash::pump(reader, tx));
        Self::hand_over(task, child, pgid, rx, true);
        Ok((id, applied))
    }

    /// A task the caller runs itself (a subagent): what it writes goes
    /// where `task_output` reads; `task_stop` cancels its token.
    pub fn start_detached(&self, output_dir: &std::path::Path, label: &str) -> Result<DetachedTask, ToolError> {
        let task = self.register(output_dir, label, Instant::now(), None)?;
        Ok(DetachedTask { task })
    }

    /// A background subagent: a detached task whose progress `link` reports
    /// and which `task_append` gives more work through it.
    pub fn start_subagent(
        &self,
        output_dir: &std::path::Path,
        label: &str,
        link: Arc<crate::task_append::SubagentLink>,
    ) -> Result<DetachedTask, ToolError> {
        let task = self.register(output_dir, label, Instant::now(), Some(link))?;
        Ok(DetachedTask { task })
    }

    /// Queue `text` for background subagent `id` (`task_append`); how it stands then.
    pub fn append(&self, id: &str, text: &str) -> Result<TaskSummary, ToolError> {
        let task = self.get(id)?;
        let Some(link) = &task.subagent else {
            return Err(ToolError::new(format!(
                "{} is a background command, not a subagent: task_append gives a background subagent (task \
                 run_in_background) more work",
                task.id
            )));
        };
        link.append(&task.id, text).map_err(ToolError::new)?;
        task.announce();
        Ok(task.summary())
    }

    /// What task `id` printed since the last read (the lines matching
    /// `filter`, when given), and how it stands.
    pub fn output(&self, id: &str, filter: Option<&str>) -> Result<(String, TaskSummary), ToolError> {
        let task = self.get(id)?;
        let matcher = match filter.filter(|f| !f.is_empty()) {
            Some(f) => Some(
                grep_regex::RegexMatcher::new(f)
                    .map_err(|e| ToolError::new(format!("`filter` is not a valid regex: {e}")))?,
            ),
            None => None,
        };
        let (bytes, dropped) = {
            let mut s = task.state();
            let bytes: Vec<u8> = s.pending.drain(..).collect();
            (s.decoder.decode(&bytes), std::mem::take(&mut s.dropped))
        };
        let mut text: String = match &matcher {
            Some(m) => {
                bytes.lines().filter(|l| m.is_match(l.as_bytes()).unwrap_or(false)).map(|l| format!("{l}\n")).collect()
            }
            None => bytes,
        };
        let mut notes = Vec::new();
        if dropped > 0 {
            notes.push(format!("{dropped} older bytes were not kept"));
        }
        if text.len() > SHOWN_CAP {
            let cut = text.len() - SHOWN_CAP;
            let start = tern_protocol::text::floor_char_boundary(&text, cut);
            let start = text[start..].find('\n').map_or(start, |i| start + i + 1);
            notes.push(format!(
                "showing the last {} of this read",
                crate::output_tail::human_bytes(text.len() as u64 - start as u64)
            ));
            text = text[start..].to_string();
        }
        let summary = task.summary();
        if !notes.is_empty() {
            text.insert_str(0, &format!("[{}; the whole log: {}]\n", notes.join("; "), summary.log.display()));
        }
        Ok((text, summary))
    }

    /// Wait (at most `limit`, or until `cancel`) for task `id` to end.
    pub async fn wait(
        &self,
        id: &str,
        limit: std::time::Duration,
        cancel: &CancellationToken,
    ) -> Result<(), ToolError> {
        let task = self.get(id)?;
        let ended = task.ended.notified();
        if task.state().status != TaskStatus::Running {
            return Ok(());
        }
        tokio::select! {
            _ = tokio::time::timeout(limit, ended) => Ok(()),
            () = cancel.cancelled() => Err(ToolError::new("cancelled while waiting for the task")),
        }
    }

    /// End task `id`'s process group (TERM, then KILL).
    pub async fn stop(&self, id: &str) -> Result<TaskSummary, ToolError> {
        let task = self.get(id)?;
        let ended = task.ended.notified();
        task.stop.cancel();
        // The watcher records the end (after terminate_group's own bounded grace).
        if task.state().status == TaskStatus::Running {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(10), ended).await;
        }
        Ok(task.summary())
    }

    /// Wait (at most `limit`) until no task runs: after [`Self::stop_all`],
    /// for those that end by themselves on their stop (subagents).
    pub async fn wait_ended(&self, limit: std::time::Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        let tasks: Vec<Arc<Task>> = self.tasks().iter().cloned().collect();
        for t in tasks {
            let ended = t.ended.notified();
            if t.state().status == TaskStatus::Running {
                let _ = tokio::time::timeout_at(deadline, ended).await;
            }
        }
    }

    /// Stop every running task at once (tern exits): KILL to each group.
    pub fn stop_all(&self) {
        for t in self.tasks().iter() {
            t.stop.cancel();
            if let Some(&pgid) = t.pgid.get().filter(|_| t.state().status == TaskStatus::Running) {
                signal_group(pgid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for BackgroundTasks {
    fn drop(&mut self) {
        self.stop_all();
    }
}

/// Whether `tasks` leave room for one more running task.
fn room_in(tasks: &[Arc<Task>]) -> Result<(), ToolError> {
    let running = tasks.iter().filter(|t| t.state().status == TaskStatus::Running).count();
    if running >= MAX_RUNNING {
        return Err(ToolError::new(format!(
            "{MAX_RUNNING} background tasks are already running; stop one with task_stop first"
        )));
    }
    Ok(())
}

/// Follow one task until it exits or is stopped; then leave nothing of its
/// group. `rx` brings its output (`open`: its pipe has not closed yet).
async fn watch(task: Arc<Task>, mut child: tokio::process::Child, mut rx: mpsc::Receiver<Vec<u8>>, mut open: bool) {
    let Some(&pgid) = task.pgid.get() else { return };
    let status = loop {
        tokio::select! {
            chunk = rx.recv(), if open => match chunk {
                Some(c) => task.push(&c),
                None => open = false,
            },
            status = child.wait() => {
                use std::os::unix::process::ExitStatusExt;
                break match status {
                    Ok(s) => TaskStatus::Exited { exit_code: s.code().or(s.signal().map(|sig| 128 + sig)) },
                    Err(_) => TaskStatus::Exited { exit_code: None },
                };
            }
            () = task.stop.cancelled() => {
                terminate_group(&mut child, pgid).await;
                break TaskStatus::Stopped;
            }
        }
    };
    if matches!(status, TaskStatus::Exited { .. }) && open {
        crate::bash::drain_after_exit(&mut rx, |c| task.push(&c)).await;
    }
    while let Ok(c) = rx.try_recv() {
        task.push(&c);
    }
    reap_leftovers(pgid).await;
    task.finish(status);
}

/// A background task run by the caller (a subagent), not a process.
#[derive(Clone)]
pub struct DetachedTask {
    task: Arc<Task>,
}

impl DetachedTask {
    /// Its id (`bg-N`).
    pub fn id(&self) -> &str {
        &self.task.id
    }

    /// Fires when `task_stop` (or tern's exit) stops it.
    pub fn stopped(&self) -> CancellationToken {
        self.task.stop.clone()
    }

    /// Add to what `task_output` reads.
    pub fn push(&self, text: &str) {
        self.task.push(text.as_bytes());
    }

    /// It ended: `status` is how.
    pub fn finish(&self, status: TaskStatus) {
        self.task.finish(status);
    }

    /// Tell the listener how it stands (a subagent read an append).
    pub fn announce(&self) {
        self.task.announce();
    }
}

/// `task_output`.
pub fn output_definition() -> ToolDefinition {
    ToolDefinition {
        name: "task_output".into(),
        description: "New output of a background task (bash or task `run_in_background`) since the last read, and \
                      its status (a subagent's: state, turns, tokens, last activity, appends not yet read). \
                      `filter`: a regex for the lines to keep."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "e.g. bg-1"},
                "filter": {"type": "string"},
                "wait": {"type": "boolean", "description": "Wait (up to `timeout` ms, default 120000) for it to end first."},
                "timeout": {"type": "integer", "minimum": 1}
            },
            "required": ["id"],
            "additionalProperties": false
        }),
        snippet: Some("task_output: read new output of a background task".into()),
        execution_mode: ExecutionMode::Parallel,
    }
}

/// `task_stop`.
pub fn stop_definition() -> ToolDefinition {
    ToolDefinition {
        name: "task_stop".into(),
        description: "Stop a background task and its child processes.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {"id": {"type": "string", "description": "e.g. bg-1"}},
            "required": ["id"],
            "additionalProperties": false
        }),
        snippet: Some("task_stop: stop a background task".into()),
        execution_mode: ExecutionMode::Sequential,
    }
}

fn status_line(s: &TaskSummary) -> String {
    format!("[{} {} · {} printed in all]", s.id, s.status, crate::output_tail::human_bytes(s.output_bytes))
}

/// The `task_output` tool.
pub struct TaskOutputTool {
    env: Arc<ToolEnv>,
}

impl TaskOutputTool {
    /// Over `env`'s background tasks.
    pub fn new(env: Arc<ToolEnv>) -> Self {
        Self { env }
    }
}

impl Tool for TaskOutputTool {
    fn execute<'a>(
        &'a self,
        _ctx: ToolContext,
        input: Value,
        cancel: CancellationToken,
        _updates: UpdateSink,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let id = input.get("id").and_then(Value::as_str).unwrap_or_default();
            let filter = input.get("filter").and_then(Value::as_str);
            if input.get("wait").and_then(Value::as_bool) == Some(true) {
                let ms = input.get("timeout").and_then(Value::as_u64).unwrap_or(crate::bash::DEFAULT_TIMEOUT_MS);
                let limit = std::time::Duration::from_millis(ms.clamp(1, crate::bash::MAX_TIMEOUT_MS));
                self.env.background.wait(id, limit, &cancel).await?;
            }
            let (text, summary) = self.env.background.output(id, filter)?;
            let body = if text.is_empty() { "(no new output)\n".to_string() } else { text };
            let report = summary.subagent.as_ref().map(|r| format!("\n{}", r.describe()));
            Ok(ToolOutput {
                content: vec![ToolResultContent::text(format!(
                    "{body}{}{}",
                    status_line(&summary),
                    report.unwrap_or_default()
                ))],
                details: Some(Box::new(tern_protocol::ToolDetails::BackgroundTask(summary.clone()))),
            })
        })
    }
}

/// The `task_stop` tool.
pub struct TaskStopTool {
    env: Arc<ToolEnv>,
}

impl TaskStopTool {
    /// Over `env`'s background tasks.
    pub fn new(env: Arc<ToolEnv>) -> Self {
        Self { env }
    }
}

impl Tool for TaskStopTool {
    fn execute<'a>(
        &'a self,
        _ctx: ToolContext,
        input: Value,
        _cancel: CancellationToken,
        _updates: UpdateSink,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let id = input.get("id").and_then(Value::as_str).unwrap_or_default();
            let summary = self.env.background.stop(id).await?;
            Ok(ToolOutput {
                content: vec![ToolResultContent::text(status_line(&summary))],
                details: Some(Box::new(tern_protocol::ToolDetails::BackgroundTask(summary.clone()))),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_sixteen_run_even_when_started_at_once() {
        let tasks = Arc::new(BackgroundTasks::default());
        let dir = tempfile::tempdir().unwrap();
        let started: Vec<_> = (0..32)
            .map(|_| {
                let (tasks, dir) = (tasks.clone(), dir.path().to_path_buf());
                std::thread::spawn(move || tasks.start_detached(&dir, "x").ok())
            })
            .collect();
        let handles: Vec<DetachedTask> = started.into_iter().filter_map(|t| t.join().unwrap()).collect();
        assert_eq!(handles.len(), MAX_RUNNING, "exactly the limit started");
        let refused = tasks.start_detached(dir.path(), "one more").err().unwrap();
        assert!(refused.message.contains("already running"), "{}", refused.message);
        handles[0].finish(TaskStatus::Exited { exit_code: Some(0) });
        assert!(tasks.start_detached(dir.path(), "room again").is_ok());
    }
}
