//! The PDF parser runs in a child process: tern started again with
//! [`HELPER_ARG`], the already opened file as its stdin, no environment, and
//! limits the kernel enforces: address space, CPU seconds, no files written,
//! no core dump, plus a wall-clock deadline after which its group is killed.
//! A deflate bomb, a reference cycle or a parser panic costs that child, never
//! tern. The child answers one [`Reply`] as JSON on stdout.
//!
//! The tern binary registers itself ([`register_program`]) and dispatches
//! [`HELPER_ARG`] to [`child_main`] before anything else runs.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use crate::pdf::{MAX_FILE_BYTES, PageRange, Reply};

/// The first argument that makes tern a PDF text helper.
pub const HELPER_ARG: &str = "__pdf-text";

/// The most of the child's answer read (20 pages of at most 64 KB of text,
/// escaped as JSON).
const MAX_REPLY_BYTES: usize = 8 * 1024 * 1024;

static PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// Make `program` (the running tern binary) the helper `read` starts for PDFs.
pub fn register_program(program: PathBuf) {
    let _ = PROGRAM.set(program);
}

/// The registered helper, if any (none in library tests).
pub fn program() -> Option<&'static Path> {
    PROGRAM.get().map(PathBuf::as_path)
}

/// What the child may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Address space (RLIMIT_AS), bytes.
    pub memory_bytes: u64,
    /// CPU time (RLIMIT_CPU), seconds.
    pub cpu_secs: u64,
    /// Wall-clock time before its group is killed.
    pub wall: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self { memory_bytes: 1024 * 1024 * 1024, cpu_secs: 20, wall: Duration::from_secs(30) }
    }
}

/// Why the child gave no answer.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ChildError {
    /// It could not be started.
    #[error("the PDF text helper could not start: {0}")]
    Spawn(String),
    /// It ran past the wall-clock deadline and was killed.
    #[error("reading the PDF took longer than {} s and was stopped", .0.as_secs())]
    TimedOut(Duration),
    /// It used up its CPU seconds.
    #[error("reading the PDF used more than {0} s of CPU and was stopped")]
    Cpu(u64),
    /// It ran out of its address space.
    #[error("reading the PDF needed more than {} MB of memory and was stopped", .0 / (1024 * 1024))]
    Memory(u64),
    /// It ended some other way.
    #[error("the PDF text helper failed ({0})")]
    Failed(String),
}

/// Extract `range` of the PDF open as `file` (read from its start) in a
/// child of `program` under `limits`.
pub fn run(program: &Path, file: File, range: PageRange, limits: Limits) -> Result<Reply, ChildError> {
    // Reads run in parallel: at most this many helpers (each allowed its
    // address-space limit) run at once; the others wait their turn.
    let _turn = Turn::take();
    let mut cmd = Command::new(program);
    cmd.arg(HELPER_ARG).arg(range.first.to_string()).arg(range.last.map_or("-".to_string(), |l| l.to_string()));
    let out = run_limited(cmd, Stdio::from(file), limits)?;
    serde_json::from_slice(&out).map_err(|e| ChildError::Failed(format!("its answer could not be read: {e}")))
}

/// PDF helpers running at once, at most: a batch of parallel reads of a
/// hostile file costs two helpers' memory, not one per read.
pub const MAX_RUNNING: usize = 2;

static RUNNING: (std::sync::Mutex<usize>, std::sync::Condvar) = (std::sync::Mutex::new(0), std::sync::Condvar::new());

/// One of the [`MAX_RUNNING`] turns, held while a helper runs.
struct Turn;

impl Turn {
    fn take() -> Turn {
        let (count, freed) = &RUNNING;
        let mut n = count.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        while *n >= MAX_RUNNING {
            n = freed.wait(n).unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        *n += 1;
        Turn
    }

    /// Helpers running now.
    #[cfg(test)]
    fn running() -> usize {
        *RUNNING.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let (count, freed) = &RUNNING;
        let mut n = count.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *n = n.saturating_sub(1);
        freed.notify_one();
    }
}

/// Run `cmd` with `stdin`, an empty environment and `limits`; its stdout
/// when it exits successfully.
fn run_limited(mut cmd: Command, stdin: Stdio, limits: Limits) -> Result<Vec<u8>, ChildError> {
    cmd.env_clear();
    let Limits { memory_bytes, cpu_secs, wall } = limits;
    // SAFETY: between fork and exec the closure only makes async-signal-safe
    // system calls (setrlimit, prctl, close_range/fcntl) on the child itself.
    unsafe {
        cmd.pre_exec(move || {
            let set = |resource, soft: u64, hard: u64| {
                let lim = libc::rlimit { rlim_cur: soft as libc::rlim_t, rlim_max: hard as libc::rlim_t };
                if libc::setrlimit(resource, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            };
            set(libc::RLIMIT_AS, memory_bytes, memory_bytes)?;
            // SIGXCPU at the soft limit, SIGKILL a second later.
            set(libc::RLIMIT_CPU, cpu_secs, cpu_secs + 1)?;
            set(libc::RLIMIT_FSIZE, 0, 0)?;
            set(libc::RLIMIT_CORE, 0, 0)?;
            #[cfg(target_os = "linux")]
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            // Only stdin, stdout and stderr reach it.
            tern_process::cloexec_inherited_fds();
            Ok(())
        });
    }
    let out = tern_process::run_bounded_with_stdin(cmd, stdin, wall, MAX_REPLY_BYTES)
        .map_err(|e| ChildError::Spawn(e.to_string()))?
        .ok_or(ChildError::TimedOut(wall))?;
    if out.status.success() {
        return Ok(out.stdout);
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.signal() {
        Some(libc::SIGXCPU) => Err(ChildError::Cpu(cpu_secs)),
        Some(libc::SIGKILL) if out.stderr.is_empty() => Err(ChildError::Cpu(cpu_secs)),
        // Rust aborts when an allocation fails.
        _ if stderr.contains("memory allocation of") => Err(ChildError::Memory(memory_bytes)),
        _ => {
            let last = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
            let last: String = last.chars().take(300).collect();
            Err(ChildError::Failed(if last.is_empty() {
                out.status.to_string()
            } else {
                format!("{}: {last}", out.status)
            }))
        }
    }
}

/// The helper's entry point: `tern __pdf-text FIRST LAST|-`, the PDF on
/// stdin, one [`Reply`] as JSON on stdout. Returns the exit code.
pub fn child_main(args: &[String]) -> u8 {
    // A parser panic is caught and answered; its message must not also go to stderr.
    std::panic::set_hook(Box::new(|_| {}));
    let number = |s: Option<&String>| s.and_then(|s| s.parse::<u32>().ok()).filter(|n| *n >= 1);
    let Some(first) = number(args.first()) else {
        let _ = writeln!(std::io::stderr(), "usage: tern {HELPER_ARG} FIRST LAST|- < file.pdf");
        return 2;
    };
    let last = match args.get(1).map(String::as_str) {
        Some("-") => None,
        other => match other.and_then(|s| s.parse::<u32>().ok()) {
            Some(n) => Some(n),
            None => {
                let _ = writeln!(std::io::stderr(), "usage: tern {HELPER_ARG} FIRST LAST|- < file.pdf");
                return 2;
            }
        },
    };
    let mut bytes = Vec::new();
    if let Err(e) = std::io::stdin().lock().take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes) {
        let _ = writeln!(std::io::stderr(), "cannot read the PDF from stdin: {e}");
        return 1;
    }
    let reply = if bytes.len() as u64 > MAX_FILE_BYTES {
        Reply::TooLarge { message: format!("the file is over {} MB", MAX_FILE_BYTES / (1024 * 1024)) }
    } else {
        crate::pdf::extract(&bytes, PageRange { first, last })
    };
    let Ok(json) = serde_json::to_vec(&reply) else { return 1 };
    let mut stdout = std::io::stdout().lock();
    if stdout.write_all(&json).and_then(|()| stdout.flush()).is_err() {
        return 1;
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut cmd = Command::new("bash");
        cmd.args(["-c", script]);
        cmd
    }

    /// A third helper waits until one of the two running ends.
    #[test]
    fn at_most_two_helpers_run_at_once() {
        let (first, second) = (Turn::take(), Turn::take());
        assert_eq!(Turn::running(), MAX_RUNNING);
        let (tx, rx) = std::sync::mpsc::channel();
        let third = std::thread::spawn(move || {
            let turn = Turn::take();
            tx.send(Turn::running()).unwrap();
            drop(turn);
        });
        assert!(rx.recv_timeout(Duration::from_millis(200)).is_err(), "a third ran while two did");
        drop(first);
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), MAX_RUNNING, "it ran once one ended");
        third.join().unwrap();
        drop(second);
        assert_eq!(Turn::running(), 0);
    }

    #[test]
    fn a_child_past_its_deadline_is_killed() {
        let limits = Limits { wall: Duration::from_millis(300), ..Limits::default() };
        let started = std::time::Instant::now();
        assert_eq!(run_limited(sh("sleep 30"), Stdio::null(), limits), Err(ChildError::TimedOut(limits.wall)));
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn a_child_gets_no_more_memory_than_its_limit() {
        // 300 MB in one bash string: fine without the limit, refused under 64 MB.
        let script = "x=$(head -c 300000000 /dev/zero | tr '\\0' a); echo ${#x}";
        let generous = Limits { memory_bytes: 4 << 30, ..Limits::default() };
        assert_eq!(run_limited(sh(script), Stdio::null(), generous).unwrap(), b"300000000\n");
        let tight = Limits { memory_bytes: 64 << 20, ..Limits::default() };
        assert!(run_limited(sh(script), Stdio::null(), tight).is_err());
    }

    #[test]
    fn a_child_gets_no_more_cpu_than_its_limit() {
        let limits = Limits { cpu_secs: 1, ..Limits::default() };
        assert_eq!(run_limited(sh("while :; do :; done"), Stdio::null(), limits), Err(ChildError::Cpu(1)));
    }

    #[test]
    fn a_child_sees_no_environment_and_writes_no_files() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        // The subshell that writes is killed (SIGXFSZ); the file stays empty.
        let script = format!("env | grep -v '^PWD=\\|^SHLVL=\\|^_=' ; (echo x > {}); echo done", file.display());
        let out = run_limited(sh(&script), Stdio::null(), Limits::default()).unwrap();
        assert_eq!(String::from_utf8_lossy(&out), "done\n");
        assert_eq!(std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0), 0);
    }
}
