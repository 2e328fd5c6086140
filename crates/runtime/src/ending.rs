//! How a run without a screen (headless `-p`, stream-json, ACP) ends early:
//! a signal (SIGINT, SIGTERM, SIGHUP), or its output gone (a write to stdout
//! or stderr failing with EPIPE, or the reader of a stdout pipe closing).
//!
//! Signals are watched on a thread of their own, with its own small async
//! runtime, so a write blocked on a stdout nobody reads never holds them up.
//! Writes to stdout and stderr go through [`write_stdout`] and
//! [`write_stderr`]: they never panic, and a failed one ends the run.
//!
//! The first reason to end stops the run (the hooks given to [`on_stop`]:
//! the running prompt is cancelled, its tools killed, the session file is
//! already written line by line). A second signal, or a SIGTERM/SIGHUP
//! whose orderly end does not come in time (a write stuck on a full pipe,
//! a tool ignoring SIGTERM), exits at once: every tracked command's group
//! is killed first, and the hooks given to [`on_exit_now`] run.
//!
//! The exit code is the shell's rule, 128 + the signal
//! ([`tern_protocol::exit::signalled`]): 130 for SIGINT, 143 for SIGTERM,
//! 129 for SIGHUP, 141 for a reader gone (SIGPIPE's number, as a classic
//! tool killed by it would report).

use std::io::Write;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use tern_protocol::exit;
use tern_protocol::sync::LockExt as _;

/// Something to run when the run must end.
pub type Hook = Arc<dyn Fn() + Send + Sync>;

/// How long a SIGTERM or SIGHUP waits for the orderly end (the prompt
/// cancelled, its tools' grace period, the result written) before exiting.
const ORDERLY_END: Duration = Duration::from_secs(10);

/// How long a write to stdout or stderr may be stuck, after a SIGTERM or
/// SIGHUP, before tern stops waiting for it.
const STUCK_WRITE: Duration = Duration::from_secs(1);

/// The process's one record of why it ends.
struct Ending {
    /// The exit code of the first reason to end; 0 while there is none.
    code: AtomicU8,
    /// What stops the run: cancel the prompt, wake the loop.
    stop: Mutex<Vec<Hook>>,
    /// What runs before an exit that cannot wait (background tasks).
    exit_now: Mutex<Vec<Hook>>,
    /// When the write under way began (ms since `epoch`, plus one); 0 when none is.
    writing_since: AtomicU64,
    epoch: Instant,
    /// Set when the run must end, for what waits on it ([`requested`]).
    ended: tokio::sync::watch::Sender<bool>,
}

static ENDING: LazyLock<Ending> = LazyLock::new(|| Ending {
    code: AtomicU8::new(0),
    stop: Mutex::default(),
    exit_now: Mutex::default(),
    writing_since: AtomicU64::new(0),
    epoch: Instant::now(),
    ended: tokio::sync::watch::Sender::new(false),
});

/// Run `hook` when the run must end (a first signal, the output gone).
pub fn on_stop(hook: Hook) {
    ENDING.stop.lock_or_recover().push(hook);
}

/// Run `hook` just before an exit that cannot wait for the run to end.
pub fn on_exit_now(hook: Hook) {
    ENDING.exit_now.lock_or_recover().push(hook);
}

/// The exit code the run ends with because of a signal or its output gone;
/// `None` while nothing asked it to end.
pub fn code() -> Option<u8> {
    match ENDING.code.load(Ordering::SeqCst) {
        0 => None,
        code => Some(code),
    }
}

/// Returns once the run is asked to end (a signal, the output gone): what
/// start-up waits for (MCP servers still starting) gives way to it.
pub async fn requested() {
    let _ = ENDING.ended.subscribe().wait_for(|ended| *ended).await;
}

/// Why the run ended, said on stderr by the front end (None: it was not asked to).
pub fn reason() -> Option<&'static str> {
    Some(match code()? {
        c if c == exit::signalled(libc::SIGINT) => "interrupted (SIGINT)",
        c if c == exit::signalled(libc::SIGTERM) => "terminated (SIGTERM)",
        c if c == exit::signalled(libc::SIGHUP) => "hung up (SIGHUP)",
        c if c == exit::BROKEN_PIPE => "the reader of its output went away",
        _ => "its output could not be written",
    })
}

/// Ask the run to end with `code`. The first reason wins and stops the run;
/// true when this was the first.
fn end(code: u8) -> bool {
    if ENDING.code.compare_exchange(0, code, Ordering::SeqCst, Ordering::SeqCst).is_err() {
        return false;
    }
    let hooks = ENDING.stop.lock_or_recover().clone();
    for hook in hooks {
        hook();
    }
    // After the hooks: what gives way to `requested` (an agent's servers
    // starting) finds the run already interrupted, and does not go on to
    // its next request.
    ENDING.ended.send_replace(true);
    true
}

/// Exit at once with `code`: no command tern started may outlive it.
fn exit_now(code: u8) -> ! {
    crate::process::kill_tracked();
    let hooks = ENDING.exit_now.lock_or_recover().clone();
    for hook in hooks {
        hook();
    }
    std::process::exit(i32::from(code))
}

/// Write `bytes` to stdout and flush; false when it failed, which ends the
/// run (141 for a reader gone, 1 for any other error, said on stderr).
pub fn write_stdout(bytes: &[u8]) -> bool {
    let mut out = std::io::stdout().lock();
    let written = timed(|| out.write_all(bytes).and_then(|()| out.flush()));
    drop(out);
    match written {
        Ok(()) => true,
        Err(e) => {
            if e.kind() != std::io::ErrorKind::BrokenPipe {
                write_stderr(format!("tern: cannot write to stdout ({e}); stopping\n").as_bytes());
            }
            output_failed(&e);
            false
        }
    }
}

/// Write `bytes` to stderr; false when it failed, which ends the run.
pub fn write_stderr(bytes: &[u8]) -> bool {
    let mut err = std::io::stderr().lock();
    let written = timed(|| err.write_all(bytes).and_then(|()| err.flush()));
    drop(err);
    match written {
        Ok(()) => true,
        Err(e) => {
            output_failed(&e);
            false
        }
    }
}

/// One line on stderr (a newline is added); see [`write_stderr`].
pub fn say_line(text: &str) -> bool {
    write_stderr(format!("{text}\n").as_bytes())
}

/// A write failed: the output is gone, the run ends.
fn output_failed(e: &std::io::Error) {
    end(if e.kind() == std::io::ErrorKind::BrokenPipe { exit::BROKEN_PIPE } else { exit::FAILED });
}

/// Run a write, noting when it began (a SIGTERM does not wait long for one that is stuck).
fn timed<T>(write: impl FnOnce() -> T) -> T {
    let since = u64::try_from(ENDING.epoch.elapsed().as_millis()).unwrap_or(u64::MAX - 1) + 1;
    ENDING.writing_since.store(since, Ordering::SeqCst);
    let result = write();
    ENDING.writing_since.store(0, Ordering::SeqCst);
    result
}

/// Whether a write has been under way for at least `for_at_least`.
fn write_stuck(for_at_least: Duration) -> bool {
    match ENDING.writing_since.load(Ordering::SeqCst) {
        0 => false,
        since => {
            let began = Duration::from_millis(since - 1);
            ENDING.epoch.elapsed().saturating_sub(began) >= for_at_least
        }
    }
}

/// Watch SIGINT, SIGTERM and SIGHUP on a thread of their own (see the
/// module's doc); call once, before the run starts.
pub fn watch_signals() {
    use tokio::signal::unix::{SignalKind, signal};
    // Registered here, before this returns: a signal from now on is seen.
    let (tx, rx) = std::sync::mpsc::channel::<std::io::Result<()>>();
    let spawned = std::thread::Builder::new().name("tern-signals".into()).spawn(move || {
        let rt = match tokio::runtime::Builder::new_current_thread().enable_io().build() {
            Ok(rt) => rt,
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        };
        rt.block_on(async move {
            let registered =
                (signal(SignalKind::interrupt()), signal(SignalKind::terminate()), signal(SignalKind::hangup()));
            let (mut int, mut term, mut hup) = match registered {
                (Ok(i), Ok(t), Ok(h)) => (i, t, h),
                (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            };
            let _ = tx.send(Ok(()));
            loop {
                let signo = tokio::select! {
                    _ = int.recv() => libc::SIGINT,
                    _ = term.recv() => libc::SIGTERM,
                    _ = hup.recv() => libc::SIGHUP,
                };
                let code = exit::signalled(signo);
                if !end(code) {
                    exit_now(code);
                }
                if signo != libc::SIGINT {
                    std::thread::spawn(move || orderly_or_now(code));
                }
            }
        });
    });
    let ready = match spawned {
        Ok(_) => rx.recv().unwrap_or_else(|_| Err(std::io::Error::other("the signal thread ended"))),
        Err(e) => Err(e),
    };
    if let Err(e) = ready {
        say_line(&format!("tern: cannot watch signals ({e}); SIGINT and SIGTERM end tern without its cleanup"));
    }
}

/// After a SIGTERM or SIGHUP: wait for the orderly end, but not for a write
/// that is stuck, nor longer than [`ORDERLY_END`].
fn orderly_or_now(code: u8) {
    let deadline = Instant::now() + ORDERLY_END;
    while Instant::now() < deadline && !write_stuck(STUCK_WRITE) {
        std::thread::sleep(Duration::from_millis(50));
    }
    exit_now(code);
}

/// Watch the readers of stdout and stderr, where they are pipes or
/// sockets: one going away (a stream-json client that died, `| head` that
/// has read enough) ends the run at once, as a failed write would, not at
/// tern's next write. A file or a terminal has no reader to lose.
pub fn watch_readers() {
    use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
    use std::os::unix::fs::FileTypeExt;
    let piped = |fd: BorrowedFd<'_>| {
        let kind = fd.try_clone_to_owned().and_then(|fd| std::fs::File::from(fd).metadata());
        kind.is_ok_and(|m| m.file_type().is_fifo() || m.file_type().is_socket())
    };
    let mut fds: Vec<libc::pollfd> = Vec::new();
    let (stdout, stderr) = (std::io::stdout(), std::io::stderr());
    for fd in [stdout.as_fd(), stderr.as_fd()] {
        if piped(fd) {
            // No events asked for: poll reports only POLLERR (a pipe's reader closed) and POLLHUP
            // (a socket's peer gone).
            fds.push(libc::pollfd { fd: fd.as_raw_fd(), events: 0, revents: 0 });
        }
    }
    if fds.is_empty() {
        return;
    }
    let _ = std::thread::Builder::new().name("tern-reader-watch".into()).spawn(move || {
        loop {
            let n = fds.len() as libc::nfds_t;
            // SAFETY: `fds` is a valid array of `n` pollfds for the whole call; no timeout.
            let ready = unsafe { libc::poll(fds.as_mut_ptr(), n, -1) };
            if ready < 0 {
                if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return;
            }
            if fds.iter().any(|p| p.revents & (libc::POLLERR | libc::POLLHUP) != 0) {
                end(exit::BROKEN_PIPE);
                return;
            }
        }
    });
}
