//! All cleanup of stdio server processes in one place. A server runs as the
//! leader of its own process group, so stopping it signals everything it
//! started (an `npx` wrapper and the node server under it, say). Dropping a
//! [`ServerProcess`] kills the group at once; [`ServerProcess::terminate`]
//! asks politely first.

use std::{collections::BTreeMap, path::PathBuf, process::Stdio, time::Duration};

use tern_process::signal_group;
use tokio::{
    process::{ChildStdin, ChildStdout, Command},
    sync::watch,
};

use crate::server_log::ServerLog;

/// How long to wait for the exit status of a server whose pipe just closed:
/// the pipe closes a moment before the exit is reaped, and the status makes
/// a better error message.
pub const EXIT_STATUS_WAIT: Duration = Duration::from_millis(500);

/// How long `terminate` waits after SIGTERM before SIGKILL.
const TERM_GRACE: Duration = Duration::from_millis(1000);

/// A running server process; its exit is watched by a background task.
pub struct ServerProcess {
    pgid: u32,
    exit: watch::Receiver<Option<String>>,
}

/// What spawning yields: the process and the pipes the MCP transport uses.
pub struct Spawned {
    pub process: ServerProcess,
    pub stdout: ChildStdout,
    pub stdin: ChildStdin,
}

/// Why a stdio server's program could not be started; each variant names
/// the server and the program (`command` as configured).
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// The working directory is not there.
    #[error("could not start `{program}`: the working directory {} does not exist", cwd.display())]
    NoWorkingDirectory {
        /// The server.
        server: String,
        /// The program.
        program: String,
        /// The directory it was to start in.
        cwd: PathBuf,
    },
    /// No such program.
    #[error(
        "could not start `{program}`: command not found ({error}); check `command` in this server's configuration \
         and that the program is installed and on PATH"
    )]
    NotFound {
        /// The server.
        server: String,
        /// The program.
        program: String,
        /// What the system said.
        error: std::io::Error,
    },
    /// The program may not be run.
    #[error("could not start `{program}`: permission denied ({error}); is the file executable?")]
    PermissionDenied {
        /// The server.
        server: String,
        /// The program.
        program: String,
        /// What the system said.
        error: std::io::Error,
    },
    /// Any other failure to start it.
    #[error("could not start `{program}`: {error}")]
    Failed {
        /// The server.
        server: String,
        /// The program.
        program: String,
        /// What the system said.
        error: std::io::Error,
    },
    /// It started and was gone before its pipes could be taken.
    #[error("`{program}` exited before tern could talk to it")]
    ExitedAtOnce {
        /// The server.
        server: String,
        /// The program.
        program: String,
    },
}

/// Start `command args…` with `env` added to `base` (tern's own environment
/// when `None`), in `cwd`, with stderr copied into `log` (or discarded when
/// there is no log).
pub fn spawn(
    server: &str,
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    base: Option<&tern_protocol::ChildEnv>,
    cwd: Option<&PathBuf>,
    log: &ServerLog,
) -> Result<Spawned, SpawnError> {
    let mut cmd = Command::new(command);
    if let Some(base) = base {
        cmd.env_clear().envs(base.iter());
    }
    cmd.args(args)
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(if log.is_enabled() { Stdio::piped() } else { Stdio::null() })
        .process_group(0)
        .kill_on_drop(true);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    let mut child = cmd.spawn().map_err(|e| spawn_error(server, command, cwd, e))?;
    let (Some(pgid), Some(stdin), Some(stdout)) = (child.id(), child.stdin.take(), child.stdout.take()) else {
        return Err(SpawnError::ExitedAtOnce { server: server.to_string(), program: command.to_string() });
    };
    if let Some(stderr) = child.stderr.take() {
        tokio::spawn(log.clone().pump(server.to_string(), stderr));
    }
    let (exit_tx, exit_rx) = watch::channel(None);
    tokio::spawn(async move {
        let status = match child.wait().await {
            Ok(status) => describe_exit(status),
            Err(e) => format!("could not be waited for: {e}"),
        };
        let _ = exit_tx.send(Some(status));
    });
    Ok(Spawned { process: ServerProcess { pgid, exit: exit_rx }, stdout, stdin })
}

fn spawn_error(server: &str, command: &str, cwd: Option<&PathBuf>, error: std::io::Error) -> SpawnError {
    let (server, program) = (server.to_string(), command.to_string());
    match (error.kind(), cwd) {
        (std::io::ErrorKind::NotFound, Some(dir)) if !dir.is_dir() => {
            SpawnError::NoWorkingDirectory { server, program, cwd: dir.clone() }
        }
        (std::io::ErrorKind::NotFound, _) => SpawnError::NotFound { server, program, error },
        (std::io::ErrorKind::PermissionDenied, _) => SpawnError::PermissionDenied { server, program, error },
        _ => SpawnError::Failed { server, program, error },
    }
}

fn describe_exit(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with code {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => format!("exited ({status})"),
    }
}

impl ServerProcess {
    /// How the process ended, once it has.
    pub fn exit_status(&self) -> Option<String> {
        self.exit.borrow().clone()
    }

    /// Wait until the process has exited; returns how.
    pub async fn exited(&self) -> String {
        self.exited_future().await
    }

    /// [`Self::exited`] as a future that does not borrow `self`.
    pub fn exited_future(&self) -> impl Future<Output = String> + Send + 'static {
        let mut exit = self.exit.clone();
        async move {
            match exit.wait_for(Option::is_some).await {
                Ok(status) => status.clone().unwrap_or_default(),
                // The watcher task is gone: the runtime is shutting down.
                Err(_) => "exit unknown".to_string(),
            }
        }
    }

    /// Wait up to `limit` for the exit status (a crash is noticed on the pipe
    /// a moment before the exit is reaped).
    pub async fn exit_status_within(&self, limit: Duration) -> Option<String> {
        tokio::time::timeout(limit, self.exited()).await.ok()
    }

    /// SIGTERM to the group, then SIGKILL after a grace period if the leader
    /// is still running.
    pub async fn terminate(&self) {
        if self.exit_status().is_none() {
            signal_group(self.pgid, libc::SIGTERM);
            if self.exit_status_within(TERM_GRACE).await.is_none() {
                signal_group(self.pgid, libc::SIGKILL);
                let _ = self.exit_status_within(TERM_GRACE).await;
            }
        }
        // Children the leader left behind.
        signal_group(self.pgid, libc::SIGKILL);
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        signal_group(self.pgid, libc::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn missing_command_says_what_to_check() {
        let err =
            spawn("s", "/definitely/not/here", &[], &BTreeMap::new(), None, None, &ServerLog::default()).err().unwrap();
        assert!(
            matches!(&err, SpawnError::NotFound { server, program, .. } if server == "s" && program == "/definitely/not/here"),
            "{err:?}"
        );
        let text = err.to_string();
        assert!(text.starts_with("could not start `/definitely/not/here`: command not found"), "{text}");
        assert!(text.contains("PATH"), "{text}");
    }

    #[tokio::test]
    async fn a_missing_working_directory_is_named() {
        let dir = PathBuf::from("/definitely/not/a/dir");
        let err = spawn("fs", "sh", &[], &BTreeMap::new(), None, Some(&dir), &ServerLog::default()).err().unwrap();
        assert!(matches!(&err, SpawnError::NoWorkingDirectory { server, .. } if server == "fs"), "{err:?}");
        assert_eq!(err.to_string(), "could not start `sh`: the working directory /definitely/not/a/dir does not exist");
    }

    #[tokio::test]
    async fn env_and_cwd_are_applied_and_drop_kills_the_group() {
        let dir = tempfile::tempdir().unwrap();
        let log_path = dir.path().join("log");
        let log = ServerLog::open(Some(&log_path));
        let env = BTreeMap::from([("TERN_MCP_TEST_VAR".to_string(), "hello".to_string())]);
        let script = "echo \"$TERN_MCP_TEST_VAR $(pwd)\" >&2; sleep 30 & sleep 30";
        let spawned =
            spawn("sh", "sh", &["-c".into(), script.into()], &env, None, Some(&dir.path().to_path_buf()), &log)
                .unwrap();
        let pgid = spawned.process.pgid;
        let canonical = dir.path().canonicalize().unwrap();
        let expected = format!("[sh] hello {}", canonical.display());
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while !std::fs::read_to_string(&log_path).unwrap_or_default().contains(&expected) {
            assert!(tokio::time::Instant::now() < deadline, "stderr never reached the log");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(signal_group(pgid, 0), "group is running");
        drop(spawned);
        // The group receives SIGKILL synchronously in drop; wait for the kernel to reap it.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while group_has_live_members(pgid) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(!group_has_live_members(pgid), "group {pgid} survived the drop");
    }

    #[tokio::test]
    async fn terminate_reports_the_exit() {
        let spawned = spawn("s", "sleep", &["30".into()], &BTreeMap::new(), None, None, &ServerLog::default()).unwrap();
        spawned.process.terminate().await;
        assert_eq!(spawned.process.exit_status().as_deref(), Some("killed by signal 15"));
    }

    /// Whether any non-zombie process is in the group (zombies linger where
    /// nothing reaps orphans).
    fn group_has_live_members(pgid: u32) -> bool {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read_to_string(e.path().join("stat")).is_ok_and(|stat| {
                let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else { return false };
                let fields: Vec<&str> = rest.split_whitespace().collect();
                fields.len() > 2 && fields[2] == pgid.to_string() && fields[0] != "Z" && fields[0] != "X"
            })
        })
    }
}
